// Transformer shapes from presets, Hugging Face config.json files and inline scenario fields, and
// parameter counts against the published totals.

#include <catch2/catch.hpp>

#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"
#include "models/parameter_tensors.hpp"
#include "models/transformer_config.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

std::string data_path(const std::string& rel) { return std::string(CLUSTERSIM_SOURCE_DIR) + "/tests/data/hf_configs/" + rel; }

TransformerConfig inline_model(const std::string& text) {
  const JsonDocument doc = parse_json_text(text, "scenario.json");
  return read_inline_model(doc.root());
}

}  // namespace

TEST_CASE("every built-in preset loads and is one of the required models", "[unit][models]") {
  const auto names = builtin_model_preset_names();
  for (const char* want : {"llama3-8b", "llama3-70b", "llama3.1-405b", "llama3.2-1b", "llama3.2-3b", "mixtral-8x7b",
                           "qwen2.5-7b", "qwen2.5-72b", "gpt3-175b", "deepseek-v3"}) {
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
  }
  for (const auto& n : names) CHECK_NOTHROW(builtin_model_preset(n));
}

TEST_CASE("preset parameter counts match the published totals", "[unit][models]") {
  SECTION("Llama-3-8B: 8,030,261,248 (the count the seed's trainer prints)") {
    // Layer: q,o 2 x 4096^2 = 33,554,432; k,v 2 x 4096 x 1024 = 8,388,608; MLP 3 x 4096 x 14336 =
    // 176,160,768; norms 2 x 4096 = 8,192: 218,112,000 x 32 = 6,979,584,000.
    // Embedding and untied head 2 x 128256 x 4096 = 1,050,673,152; final norm 4096.
    const auto p = count_parameters(builtin_model_preset("llama3-8b"));
    CHECK(p.total == 8'030'261'248);
    CHECK(p.active == p.total);
    CHECK(p.embedding == 525'336'576);
    CHECK(p.lm_head == 525'336'576);
  }
  SECTION("Llama-3-70B: 70.6 B") {
    // Layer: 2 x 8192^2 + 2 x 8192 x 1024 = 150,994,944; MLP 3 x 8192 x 28672 = 704,643,072;
    // norms 16,384: 855,654,400 x 80 = 68,452,352,000; + 2 x 128256 x 8192 = 2,101,346,304 + 8192.
    CHECK(count_parameters(builtin_model_preset("llama3-70b")).total == 70'553'706'496);
  }
  SECTION("Llama-3.1-405B: 405.9 B") {
    // Layer: 2 x 16384^2 + 2 x 16384 x 1024 = 570,425,344; MLP 3 x 16384 x 53248 = 2,617,245,696;
    // norms 32,768: 3,187,703,808 x 126 = 401,650,679,808; + 2 x 128256 x 16384 = 4,202,692,608 + 16384.
    CHECK(count_parameters(builtin_model_preset("llama3.1-405b")).total == 405'853'388'800);
  }
  SECTION("Llama-3.2-1B and 3B: 1.24 B and 3.21 B, tied embeddings") {
    // 1B: layer 2 x 2048^2 + 2 x 2048 x 512 + 3 x 2048 x 8192 + 4096 = 60,821,504 x 16
    //     = 973,144,064; + 128256 x 2048 = 262,668,288 (tied) + 2048 = 1,235,814,400.
    CHECK(count_parameters(builtin_model_preset("llama3.2-1b")).total == 1'235'814'400);
    // 3B: head_dim 128: layer 2 x 3072^2 + 2 x 3072 x 1024 + 3 x 3072 x 8192 + 6144 = 100,669,440
    //     x 28 = 2,818,744,320; + 128256 x 3072 = 394,002,432 + 3072 = 3,212,749,824.
    CHECK(count_parameters(builtin_model_preset("llama3.2-3b")).total == 3'212'749'824);
  }
  SECTION("Mixtral-8x7B: 46.7 B total, 12.9 B active") {
    // Layer: attention 41,943,040 + 8 experts x 3 x 4096 x 14336 = 1,409,286,144 + router
    // 4096 x 8 = 32,768 + norms 8,192 = 1,451,270,144 x 32 = 46,440,644,608; + 2 x 32000 x 4096
    // = 262,144,000 + 4096 = 46,702,792,704.
    // Active: 2 of 8 experts: 41,943,040 + 352,321,536 + 32,768 + 8,192 = 394,305,536 x 32
    // = 12,617,777,152 + 262,144,000 + 4096 = 12,879,925,248.
    const auto p = count_parameters(builtin_model_preset("mixtral-8x7b"));
    CHECK(p.total == 46'702'792'704);
    CHECK(p.active == 12'879'925'248);
  }
  SECTION("Qwen2.5-7B and 72B: 7.61 B and 72.7 B with q/k/v biases") {
    // 7B: attention 2 x 3584^2 + 2 x 3584 x 512 = 29,360,128 + biases 3584 + 2 x 512 = 4,608;
    // MLP 3 x 3584 x 18944 = 203,685,888; norms 7,168: 233,057,792 x 28 = 6,525,618,176;
    // + 2 x 152064 x 3584 = 1,089,994,752 + 3584 = 7,615,616,512 (non-embedding 6.53 B).
    const auto p7 = count_parameters(builtin_model_preset("qwen2.5-7b"));
    CHECK(p7.total == 7'615'616'512);
    CHECK(p7.non_embedding() == 6'525'621'760);
    // 72B: 150,994,944 + 10,240 + 3 x 8192 x 29568 = 726,663,168 + 16,384 = 877,684,736 x 80
    // = 70,214,778,880; + 2 x 152064 x 8192 = 2,491,416,576 + 8192 = 72,706,203,648.
    CHECK(count_parameters(builtin_model_preset("qwen2.5-72b")).total == 72'706'203'648);
  }
  SECTION("GPT-3 175B (paper shape): 174.6 B, within 0.3% of the paper's 175.0 B") {
    // Layer: qkv 3h^2 + 3h, proj h^2 + h, MLP 8h^2 + 5h, two LayerNorms 4h with h = 12288:
    // 12 x 12288^2 + 13 x 12288 = 1,812,099,072 x 96 = 173,961,510,912; + 50257 x 12288
    // = 617,558,016 (tied) + 2048 x 12288 = 25,165,824 positions + 24,576 final LayerNorm.
    const auto p = count_parameters(builtin_model_preset("gpt3-175b"));
    CHECK(p.total == 174'604'259'328);
    CHECK(static_cast<double>(p.total) == Approx(175.0e9).epsilon(0.003));
  }
  SECTION("DeepSeek-V3: 671 B total, 37 B active (36.6 B without the input embedding)") {
    // MLA: q_a 7168 x 1536 = 11,010,048 + 1536 norm; q_b 1536 x 128 x 192 = 37,748,736;
    // kv_a 7168 x 576 = 4,128,768 + 512 norm; kv_b 512 x 128 x 256 = 16,777,216;
    // o 128 x 128 x 7168 = 117,440,512: 187,107,328. Norms 14,336.
    // 3 dense layers: + 3 x 7168 x 18432 = 396,361,728 -> 583,483,392 x 3 = 1,750,450,176.
    // 58 MoE layers: 256 experts x 3 x 7168 x 2048 = 11,274,289,152 + shared 44,040,192 + router
    // 1,835,008 + bias 256 -> 11,507,286,272 x 58 = 667,422,603,776.
    // Embedding and head 2 x 129280 x 7168 = 1,853,358,080; final norm 7168.
    const auto p = count_parameters(builtin_model_preset("deepseek-v3"));
    CHECK(p.total == 671'026'419'200);
    // Active MoE layer: 8 routed + shared = 9 x 44,040,192 + the rest: 585,318,656 x 58
    // = 33,948,482,048 + 1,750,450,176 + 1,853,358,080 + 7168 = 37,552,297,472.
    CHECK(p.active == 37'552'297'472);
    // DeepSeek's README_WEIGHTS: 36.6 B activated including the 0.9 B output head, i.e. without
    // the input embedding lookup (926,679,040).
    CHECK(static_cast<double>(p.active - p.embedding) == Approx(36.6e9).epsilon(0.002));
  }
}

TEST_CASE("Hugging Face configs as users have them", "[unit][models]") {
  SECTION("gpt2: n_embd/n_layer/n_head keys, LayerNorm, learned positions, tied head: 124,439,808") {
    const auto c = load_hf_config(data_path("gpt2.json"));
    CHECK(c.name == "gpt2");
    CHECK(c.hidden_size == 768);
    CHECK(c.intermediate_size == 3072);  // n_inner null: 4 x n_embd
    CHECK(c.mlp == MlpKind::GELU);
    CHECK(c.norm == NormKind::LAYER_NORM);
    CHECK(c.position == PositionKind::LEARNED);
    CHECK(c.tied_embeddings);
    CHECK(c.hidden_dropout == Approx(0.1));
    // Layer: 4 x 768^2 + 4 x 768 (attention with biases) + 8 x 768^2 + 5 x 768 (MLP with biases)
    // + 4 x 768 (two LayerNorms) = 7,087,872 x 12 = 85,054,464; + 50257 x 768 = 38,597,376 +
    // 1024 x 768 = 786,432 positions + 1,536 final LayerNorm = 124,439,808.
    CHECK(count_parameters(c).total == 124'439'808);
  }
  SECTION("qwen2_moe: routed and gated shared experts, 14.3 B total and 2.7 B active") {
    const auto c = load_hf_config(data_path("qwen1.5-moe-a2.7b.json"));
    CHECK(c.moe.num_experts == 60);
    CHECK(c.moe.shared_intermediate_size == 5632);
    CHECK(c.moe.shared_expert_gate);
    CHECK(c.qkv_bias);
    // Layer: attention 4 x 2048^2 + 3 x 2048 = 16,783,360; experts 60 x 3 x 2048 x 1408
    // = 519,045,120; shared 3 x 2048 x 5632 = 34,603,008; router 2048 x 60 = 122,880; shared gate
    // 2048; norms 4096: 570,560,512 x 24 = 13,693,452,288; + 2 x 151936 x 2048 = 622,329,856 + 2048.
    const auto p = count_parameters(c);
    CHECK(p.total == 14'315'784'192);
    // Active: 4 of 60 experts = 34,603,008: 86,118,400 x 24 = 2,066,841,600 + 622,331,904.
    CHECK(p.active == 2'689'173'504);
  }
  SECTION("deepseek_v2 MLA without a query rank, first layer dense: 15.7 B total, 2.4 B active") {
    const auto c = load_hf_config(data_path("deepseek-v2-lite.json"));
    CHECK(c.attention == AttentionKind::MLA);
    CHECK(c.mla.q_lora_rank == 0);
    CHECK_FALSE(c.is_moe_layer(0));
    CHECK(c.is_moe_layer(1));
    CHECK_FALSE(c.moe.router_bias);
    // MLA: q 2048 x 16 x 192 = 6,291,456; kv_a 2048 x 576 = 1,179,648 + 512; kv_b 512 x 16 x 256
    // = 2,097,152; o 16 x 128 x 2048 = 4,194,304: 13,763,072; norms 4096.
    // Dense layer + 3 x 2048 x 10944 = 67,239,936 -> 81,007,104.
    // MoE layer: 66 experts (64 routed + 2 shared) x 8,650,752 = 570,949,632 + router 131,072
    // -> 584,847,872 x 26 = 15,206,044,672; + 2 x 102400 x 2048 = 419,430,400 + 2048.
    const auto p = count_parameters(c);
    CHECK(p.total == 15'706'484'224);
    // Active, without the input embedding (DeepSeek's convention): MoE layer 8 x 8,650,752 +
    // 13,763,072 + 4096 + 131,072 = 83,104,256 x 26 = 2,160,710,656 + 81,007,104 + 209,715,200
    // head + 2048 = 2,451,435,008.
    CHECK(static_cast<double>(p.active - p.embedding) == Approx(2.4e9).epsilon(0.025));
  }
}

TEST_CASE("transformers' attribute_map aliases are read as the keys they stand for", "[unit][models]") {
  auto hf = [](const std::string& text) { return read_hf_config(parse_json_text(text, "config.json")); };
  SECTION("gpt2 with hidden_size/num_hidden_layers/num_attention_heads/max_position_embeddings") {
    // GPT2Config.attribute_map sends each alias to n_embd, n_layer, n_head and n_positions, so this is
    // the shape of tests/data/hf_configs/gpt2.json and the same 124,439,808 parameters as there.
    const auto c = hf(R"({"model_type": "gpt2", "hidden_size": 768, "num_hidden_layers": 12,
                          "num_attention_heads": 12, "max_position_embeddings": 1024, "vocab_size": 50257})");
    CHECK(c.hidden_size == 768);
    CHECK(c.num_layers == 12);
    CHECK(c.num_heads == 12);
    CHECK(c.max_position_embeddings == 1024);
    CHECK(c.intermediate_size == 3072);  // n_inner absent: 4 x the width given as hidden_size
    CHECK(count_parameters(c).total == count_parameters(load_hf_config(data_path("gpt2.json"))).total);
    CHECK(count_parameters(c).total == 124'439'808);
  }
  SECTION("a key and its alias may both be given when they agree") {
    const auto c = hf(R"({"model_type": "gpt2", "n_embd": 768, "hidden_size": 768, "n_layer": 12, "n_head": 12,
                          "n_positions": 1024, "vocab_size": 50257})");
    CHECK(c.hidden_size == 768);
  }
  SECTION("inline fields take the aliases too") {
    // The SC'21 row of the test below, written with the llama-style names transformers maps for gpt2.
    const auto c = inline_model(R"({"model_type": "gpt2", "hidden_size": 2304, "num_hidden_layers": 24,
                                    "num_attention_heads": 24, "max_position_embeddings": 2048, "vocab_size": 51200})");
    CHECK(c.head_dim == 96);  // 2304 / 24
  }
  SECTION("MoE expert counts: mixtral num_experts, deepseek_v2 num_experts, deepseek_v3 num_local_experts") {
    // MixtralConfig maps num_experts to num_local_experts: 8 experts, each of intermediate_size.
    const auto m = hf(R"({"model_type": "mixtral", "hidden_size": 64, "intermediate_size": 128,
                          "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                          "vocab_size": 100, "num_experts": 8, "num_experts_per_tok": 2})");
    CHECK(m.moe.num_experts == 8);
    CHECK(m.moe.expert_intermediate_size == 128);
    const std::string mla = R"("hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "vocab_size": 100, "kv_lora_rank": 16, "qk_nope_head_dim": 8,
        "qk_rope_head_dim": 8, "v_head_dim": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32)";
    // DeepseekV2Config maps num_experts, DeepseekV3Config num_local_experts, to n_routed_experts.
    CHECK(hf(R"({"model_type": "deepseek_v2", "num_experts": 6, )" + mla + "}").moe.num_experts == 6);
    CHECK(hf(R"({"model_type": "deepseek_v3", "num_local_experts": 6, )" + mla + "}").moe.num_experts == 6);
  }
  SECTION("families without an attribute_map do not take another family's alias") {
    // LlamaConfig declares no attribute_map: n_embd means nothing to it, inline it is a typo.
    CHECK_THROWS_WITH(inline_model(R"({"n_embd": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                                       "num_attention_heads": 4, "vocab_size": 100})"),
                      Catch::Contains("/hidden_size") && Catch::Contains("missing required key 'hidden_size'"));
  }
}

TEST_CASE("a key and its alias that disagree are an input error naming both", "[unit][models][bad-input]") {
  try {
    (void)read_hf_config(parse_json_text(R"({"model_type": "gpt2", "n_embd": 768, "hidden_size": 1024, "n_layer": 12,
                                             "n_head": 12, "n_positions": 1024, "vocab_size": 50257})",
                                         "config.json"));
    FAIL("no error");
  } catch (const InputError& e) {
    // transformers would keep 1024 silently (the alias is set after n_embd); the model refuses to guess.
    CHECK_THAT(e.what(), Catch::Contains("config.json: /hidden_size") && Catch::Contains("'hidden_size' = 1024") &&
                             Catch::Contains("'n_embd' = 768") && Catch::Contains("same value"));
  }
  // Neither the key nor its alias: the error names both spellings.
  CHECK_THROWS_WITH(read_hf_config(parse_json_text(R"({"model_type": "gpt2", "n_layer": 12, "n_head": 12,
                                                       "n_positions": 1024, "vocab_size": 50257})",
                                                   "config.json")),
                    Catch::Contains("/n_embd") && Catch::Contains("'n_embd' or its alias 'hidden_size'"));
}

TEST_CASE("inline model fields, as the validation tables need them", "[unit][models]") {
  // SC'21 Table 1, first row: 24 heads, hidden 2304, 24 layers, vocabulary 51200, sequence 2048.
  const auto c = inline_model(R"({"model_type": "gpt2", "n_embd": 2304, "n_layer": 24, "n_head": 24,
                                  "n_positions": 2048, "vocab_size": 51200, "name": "gpt-1.7b"})");
  CHECK(c.name == "gpt-1.7b");
  CHECK(c.head_dim == 96);
  // 12 h^2 l = 12 x 2304^2 x 24 = 1,528,823,808 plus embeddings 51200 x 2304 = 117,964,800:
  // about 1.7 B as the table says.
  CHECK(static_cast<double>(count_parameters(c).total) == Approx(1.7e9).epsilon(0.04));
  // Llama-style with GQA and head_dim.
  const auto l = inline_model(R"({"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 2,
                                  "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 1000})");
  CHECK(l.model_type == "llama");
  CHECK(l.kv_width() == 1024);
}

TEST_CASE("bad model inputs name the file, the key and what was expected", "[unit][models][bad-input]") {
  SECTION("unknown preset with a suggestion") {
    try {
      (void)builtin_model_preset("llama3-8B", "scenario.json", "/model/preset");
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK_THAT(e.what(), Catch::Contains("scenario.json") && Catch::Contains("/model/preset") &&
                               Catch::Contains("did you mean 'llama3-8b'"));
    }
  }
  SECTION("a config.json without hidden_size") {
    try {
      (void)load_hf_config(data_path("missing-hidden-size.json"));
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK_THAT(e.what(), Catch::Contains("missing-hidden-size.json") && Catch::Contains("/hidden_size") &&
                               Catch::Contains("positive integer"));
    }
  }
  SECTION("MoE fields that contradict each other") {
    try {
      (void)load_hf_config(data_path("moe-inconsistent.json"));
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK_THAT(e.what(), Catch::Contains("/num_experts_per_tok") && Catch::Contains("MoE fields inconsistent") &&
                               Catch::Contains("num_local_experts = 8"));
    }
  }
  SECTION("an unknown inline key is a typo with a suggestion") {
    try {
      (void)inline_model(R"({"hidden_size": 64, "intermediate_size": 128, "num_hiden_layers": 2,
                             "num_attention_heads": 4, "vocab_size": 100})");
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK_THAT(e.what(), Catch::Contains("/num_hiden_layers") && Catch::Contains("did you mean 'num_hidden_layers'"));
    }
  }
  SECTION("a key of another family inline is unknown") {
    CHECK_THROWS_WITH(inline_model(R"({"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                                       "num_attention_heads": 4, "vocab_size": 100, "n_embd": 64})"),
                      Catch::Contains("unknown key 'n_embd'"));
  }
  SECTION("an unsupported model_type suggests the nearest family") {
    CHECK_THROWS_WITH(inline_model(R"({"model_type": "lama", "hidden_size": 64})"), Catch::Contains("did you mean 'llama'"));
  }
  SECTION("kv heads that do not divide the query heads") {
    CHECK_THROWS_WITH(inline_model(R"({"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                                       "num_attention_heads": 4, "num_key_value_heads": 3, "vocab_size": 100})"),
                      Catch::Contains("/num_key_value_heads") && Catch::Contains("divisor of num_attention_heads = 4"));
  }
}

TEST_CASE("a scenario names its model by preset, hf_config path or inline fields", "[unit][models]") {
  clustersim::testing::TempDir dir;
  auto scenario = [&](const std::string& model) {
    return dir.write("s.json", R"({"schema_version": 1, "model": )" + model + R"(,
      "training": {"seq_len": 2048, "micro_batch_size": 1, "global_batch_size": 8},
      "parallelism": {"framework": "megatron", "data": 8},
      "cluster": {"system": "hgx-h100", "nodes": 1, "gpus_per_node": 8}})");
  };
  SECTION("preset") {
    CHECK(resolve_model(load_scenario(scenario(R"({"preset": "qwen2.5-7b"})").string()).model).hidden_size == 3584);
  }
  SECTION("hf_config, relative to the scenario") {
    dir.write("my-model.json", R"({"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
      "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
      "rope_theta": 1000000.0, "sliding_window": null, "torch_dtype": "bfloat16"})");
    const auto m = resolve_model(load_scenario(scenario(R"({"hf_config": "my-model.json"})").string()).model);
    CHECK(m.name == "my-model");
    CHECK(m.model_type == "mistral");
    CHECK(m.num_kv_heads == 8);
  }
  SECTION("inline, with errors located under /model") {
    const auto s = load_scenario(scenario(R"({"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                                              "num_attention_heads": 4, "vocab_sise": 100})")
                                     .string());
    CHECK_THROWS_WITH(resolve_model(s.model), Catch::Contains("s.json") && Catch::Contains("/model/vocab_sise") &&
                                                  Catch::Contains("did you mean 'vocab_size'"));
  }
  SECTION("an unknown preset is located at /model/preset") {
    const auto s = load_scenario(scenario(R"({"preset": "mixtral-8x7"})").string());
    CHECK_THROWS_WITH(resolve_model(s.model), Catch::Contains("/model/preset") &&
                                                  Catch::Contains("did you mean 'mixtral-8x7b'"));
  }
}
