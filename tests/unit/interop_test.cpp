// Exports of a scenario's launch settings (models/launch_export.hpp) and the import of Megatron-LM
// arguments (models/megatron_import.hpp).

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"
#include "models/launch_export.hpp"
#include "models/megatron_import.hpp"
#include "models/scenario.hpp"
#include "models/transformer_config.hpp"
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string scenario_path(const char* name) { return (testing::source_dir() / "scenarios" / name).string(); }

// Megatron-LM's own argument names and kinds, read from the committed data file (not through the
// embedded copy the import uses).
const nlohmann::json& megatron_names() {
  static const nlohmann::json j =
      nlohmann::json::parse(slurp(testing::source_dir() / "tests/data/interop/megatron_arguments.json"));
  return j;
}

// Parses an exported MEGATRON_ARGS array as argparse would with Megatron's names: every argument
// known, each value of its kind (int, float, one of the choices), flags without values.
std::map<std::string, std::string> parse_megatron_export(const std::string& text) {
  std::map<std::string, std::string> out;
  std::vector<std::string> words;
  std::istringstream lines(text);
  std::string line;
  bool in_array = false;
  while (std::getline(lines, line)) {
    if (line.rfind("MEGATRON_ARGS=(", 0) == 0) {
      in_array = true;
      continue;
    }
    if (line == ")") in_array = false;
    if (!in_array) continue;
    std::istringstream ws(line);
    std::string w;
    while (ws >> w) {
      if (w.size() >= 2 && w.front() == '\'' && w.back() == '\'') w = w.substr(1, w.size() - 2);
      words.push_back(w);
    }
  }
  const auto& args = megatron_names().at("arguments");
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& name = words[i];
    INFO(name);
    REQUIRE(name.rfind("--", 0) == 0);
    REQUIRE(args.contains(name));
    const std::string kind = args.at(name).at("kind");
    if (kind == "flag") {
      out[name] = "";
      continue;
    }
    REQUIRE(i + 1 < words.size());
    const std::string value = words[++i];
    REQUIRE(value.rfind("--", 0) != 0);
    if (kind == "int") {
      std::size_t used = 0;
      (void)std::stoll(value, &used);
      CHECK(used == value.size());
    } else if (kind == "float") {
      std::size_t used = 0;
      (void)std::stod(value, &used);
      CHECK(used == value.size());
    }
    if (args.at(name).contains("choices")) {
      bool found = false;
      for (const auto& c : args.at(name).at("choices")) found = found || (c.is_string() && c == value);
      CHECK(found);
    }
    out[name] = value;
  }
  return out;
}

LaunchExport export_of(const Scenario& s, ExportTarget t) { return export_launch(s, resolve_model(s.model), t); }

Scenario with_training(const char* file, const nlohmann::json& training_patch) {
  nlohmann::json j = nlohmann::json::parse(slurp(scenario_path(file)));
  j["training"].merge_patch(training_patch);
  return read_scenario(parse_json_text(j.dump(), file), testing::source_dir() / "scenarios");
}

}  // namespace

TEST_CASE("megatron_arguments.json names its source and holds the arguments the export uses", "[unit][interop]") {
  const auto& j = megatron_names();
  CHECK(j.at("source").at("tag") == "core_v0.19.0");
  CHECK(j.at("source").at("file") == "megatron/training/arguments.py");
  CHECK(j.at("source").at("commit").get<std::string>().size() == 40);
  CHECK(j.at("arguments").size() > 500);
  CHECK(j["arguments"]["--tensor-model-parallel-size"]["kind"] == "int");
  CHECK(j["arguments"]["--sequence-parallel"]["kind"] == "flag");
  CHECK(j["arguments"]["--recompute-method"]["choices"] == nlohmann::json({"uniform", "block"}));
  // The embedded copy is the same list.
  CHECK(find_megatron_argument("--recompute-num-layers") != nullptr);
  CHECK(find_megatron_argument("--virtual-pipeline-model-parallel-size") == nullptr);  // gone by core_v0.19.0
}

TEST_CASE("simulate --export megatron: every flag is a Megatron-LM argument of the right kind", "[unit][interop]") {
  SECTION("Llama 3 70B, TP8 PP4 interleaved (5 virtual stages), SP, selective recompute") {
    const Scenario s = load_scenario(scenario_path("llama3-70b-megatron-tp8pp4-p5-8n.json"));
    const auto e = export_of(s, ExportTarget::MEGATRON);
    const auto a = parse_megatron_export(e.text);
    CHECK(a.at("--tensor-model-parallel-size") == "8");
    CHECK(a.at("--pipeline-model-parallel-size") == "4");
    // 80 layers / (4 stages x 5 virtual stages) = 4 layers a chunk.
    CHECK(a.at("--num-layers-per-virtual-pipeline-stage") == "4");
    CHECK(a.count("--sequence-parallel") == 1);
    CHECK(a.at("--recompute-granularity") == "selective");
    CHECK(a.count("--recompute-method") == 0);
    CHECK(a.at("--num-layers") == "80");
    CHECK(a.at("--hidden-size") == "8192");
    CHECK(a.at("--ffn-hidden-size") == "28672");
    CHECK(a.at("--num-attention-heads") == "64");
    CHECK(a.at("--num-query-groups") == "8");
    CHECK(a.count("--group-query-attention") == 1);
    CHECK(a.at("--seq-length") == "8192");
    CHECK(a.at("--global-batch-size") == "512");
    CHECK(a.count("--bf16") == 1);
    CHECK(a.count("--use-distributed-optimizer") == 1);
    CHECK(a.count("--overlap-grad-reduce") == 1);
    CHECK(a.count("--overlap-param-gather") == 1);
    CHECK(a.count("--tp-comm-overlap") == 1);
    // 15e12 tokens / (512 x 8192 tokens a step) = 3,576,278.7 -> 3,576,279 iterations.
    CHECK(a.at("--train-iters") == "3576279");
  }
  SECTION("Llama 3.1 405B: 126 layers on 16 stages is Megatron's first/last-stage split") {
    nlohmann::json j = nlohmann::json::parse(slurp(scenario_path("llama3.1-405b-megatron-tp8pp16-p5-32n.json")));
    // With its 2 virtual stages, 126 layers in 32 chunks (30 of 4, 2 of 3) need Megatron's
    // --pipeline-model-parallel-layout, which is not exported: a warning names it.
    const Scenario interleaved = read_scenario(parse_json_text(j.dump(), "405b.json"), ".");
    const auto w = export_of(interleaved, ExportTarget::MEGATRON).warnings;
    REQUIRE(!w.empty());
    CHECK_THAT(w.front(), Catch::Contains("--pipeline-model-parallel-layout"));
    j["parallelism"]["virtual_stages"] = 1;
    j["parallelism"]["pipeline_schedule"] = "1f1b";
    const Scenario s = read_scenario(parse_json_text(j.dump(), "405b.json"), ".");
    const auto a = parse_megatron_export(export_of(s, ExportTarget::MEGATRON).text);
    // 126 = 7 x 16 + 14: clustersim's 14 stages of 8 and 2 of 7 are Megatron's first 7, last 7
    // and (126 - 14) / 14 = 8 for the 14 between.
    CHECK(a.at("--decoder-first-pipeline-num-layers") == "7");
    CHECK(a.at("--decoder-last-pipeline-num-layers") == "7");
  }
  SECTION("full recompute carries Megatron's method and layer count") {
    const Scenario s = with_training("llama3-70b-megatron-tp8pp4-p5-8n.json",
                                     {{"activation_checkpointing", "full"},
                                      {"recompute_method", "block"},
                                      {"recompute_num_layers", 2}});
    const auto a = parse_megatron_export(export_of(s, ExportTarget::MEGATRON).text);
    CHECK(a.at("--recompute-granularity") == "full");
    CHECK(a.at("--recompute-method") == "block");
    CHECK(a.at("--recompute-num-layers") == "2");
    // "full" alone is uniform groups of one layer (every layer checkpointed).
    const Scenario f = with_training("llama3-70b-megatron-tp8pp4-p5-8n.json", {{"activation_checkpointing", "full"}});
    const auto b = parse_megatron_export(export_of(f, ExportTarget::MEGATRON).text);
    CHECK(b.at("--recompute-method") == "uniform");
    CHECK(b.at("--recompute-num-layers") == "1");
  }
  SECTION("Mixtral: experts as Megatron's MoE arguments") {
    const char* text = R"({"schema_version": 1, "model": {"preset": "mixtral-8x7b"},
      "training": {"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 64},
      "parallelism": {"framework": "megatron", "data": 8, "tensor": 2, "pipeline": 4, "expert": 8},
      "cluster": {"system": "p5.48xlarge", "nodes": 8, "gpus_per_node": 8}})";
    const Scenario s = read_scenario(parse_json_text(text, "moe.json"), ".");
    const auto a = parse_megatron_export(export_of(s, ExportTarget::MEGATRON).text);
    CHECK(a.at("--num-experts") == "8");
    CHECK(a.at("--moe-router-topk") == "2");
    CHECK(a.at("--expert-model-parallel-size") == "8");
  }
}

TEST_CASE("exports refuse what the target cannot run and warn about what it cannot express", "[unit][interop]") {
  const char* lora = R"({"schema_version": 1, "model": {"preset": "llama3-8b"},
    "training": {"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 8, "fine_tuning": {"method": "lora"}},
    "parallelism": {"framework": "pytorch", "data": 8, "zero_stage": 3},
    "cluster": {"system": "p5.48xlarge", "nodes": 1, "gpus_per_node": 8}})";
  const Scenario s = read_scenario(parse_json_text(lora, "lora.json"), ".");
  CHECK_THROWS_WITH(export_of(s, ExportTarget::MEGATRON), Catch::Contains("LoRA"));
  CHECK_THROWS_WITH(export_of(s, ExportTarget::TORCHTITAN), Catch::Contains("LoRA"));
  const auto n = export_of(s, ExportTarget::NEMO);
  bool warned = false;
  for (const auto& w : n.warnings) warned = warned || w.find("lora") != std::string::npos;
  CHECK(warned);
  // ZeRO-3 under Megatron-LM: exported as the distributed optimizer, with a warning.
  const auto m = export_of(s, ExportTarget::DEEPSPEED);
  CHECK(nlohmann::json::parse(m.text)["zero_optimization"]["stage"] == 3);

  const Scenario b = with_training("llama3-70b-megatron-tp8pp4-p5-8n.json",
                                   {{"activation_checkpointing", "full"},
                                    {"recompute_method", "block"},
                                    {"recompute_num_layers", 2}});
  const auto t = export_of(b, ExportTarget::TORCHTITAN);
  CHECK_THAT(t.text, Catch::Contains("[parallelism]") && Catch::Contains("tensor_parallel_degree = 8") &&
                         Catch::Contains("pipeline_parallel_degree = 4") &&
                         Catch::Contains("pipeline_parallel_schedule = \"Interleaved1F1B\"") &&
                         Catch::Contains("mode = \"full\""));
  bool block_warned = false;
  for (const auto& w : t.warnings) block_warned = block_warned || w.find("recompute_method \"block\"") != std::string::npos;
  CHECK(block_warned);
}

TEST_CASE("a DeepSpeed export reads back as the same ZeRO settings", "[unit][interop]") {
  const Scenario s = load_scenario(scenario_path("seed004-llama3-8b-zero3-offload-p4d-1pod-4gpu.json"));
  const auto e = export_of(s, ExportTarget::DEEPSPEED);
  const auto j = nlohmann::json::parse(e.text);
  CHECK(j["train_micro_batch_size_per_gpu"] == s.training.micro_batch_size);
  CHECK(j["train_batch_size"] == s.training.global_batch_size);
  ParallelismSpec back;
  back.data = s.parallelism.data;
  apply_deepspeed_config(parse_json_text(e.text, "export.json"), s.training, s.world_size(), back);
  CHECK(back.zero_stage == s.parallelism.zero_stage);
  CHECK(back.offload_optimizer == s.parallelism.offload_optimizer);
  CHECK(back.offload_params == s.parallelism.offload_params);
}

TEST_CASE("import megatron: the export reads back as the same layout", "[unit][interop]") {
  const Scenario s = with_training("llama3-70b-megatron-tp8pp4-p5-8n.json",
                                   {{"activation_checkpointing", "full"},
                                    {"recompute_method", "block"},
                                    {"recompute_num_layers", 2}});
  const auto e = export_of(s, ExportTarget::MEGATRON);
  MegatronImportOptions o;
  o.system = "p5.48xlarge";
  o.nodes = 8;
  o.vocab_size = 128256;
  const auto r = import_megatron_arguments(split_launch_arguments(e.text), o);
  const Scenario back = read_scenario(parse_json_text(r.scenario.dump(), "import.json"), ".");
  CHECK(back.parallelism.framework == Framework::MEGATRON);
  CHECK(back.parallelism.tensor == 8);
  CHECK(back.parallelism.pipeline == 4);
  CHECK(back.parallelism.virtual_stages == 5);
  CHECK(back.parallelism.data == 2);  // 64 GPUs / (8 x 4)
  CHECK(back.parallelism.sequence_parallel);
  CHECK(back.parallelism.megatron.tp_comm_overlap);
  CHECK(back.training.activation_checkpointing == Checkpointing::FULL);
  CHECK(back.training.recompute_method == RecomputeMethod::BLOCK);
  CHECK(back.training.recompute_num_layers == 2);
  CHECK(back.training.global_batch_size == 512);
  const TransformerConfig m = resolve_model(back.model);
  const TransformerConfig want = resolve_model(s.model);
  CHECK(m.model_type == "llama");
  CHECK(m.num_layers == want.num_layers);
  CHECK(m.hidden_size == want.hidden_size);
  CHECK(m.intermediate_size == want.intermediate_size);
  CHECK(m.num_kv_heads == want.num_kv_heads);
  CHECK(m.tied_embeddings == want.tied_embeddings);
  CHECK(m.vocab_size == 128256);
  CHECK(r.warnings.empty());
}

TEST_CASE("import megatron: unknown arguments warn by name, bad values exit 2 naming the argument", "[unit][interop][cli]") {
  const std::vector<std::string> base = {"import", "megatron", "--system", "p5.48xlarge", "--nodes", "1", "--vocab-size",
                                         "32000", "--"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::run_cli(args);
  };
  const std::vector<std::string> ok = {"--tensor-model-parallel-size", "2", "--num-layers", "4", "--hidden-size", "512",
                                       "--num-attention-heads", "8", "--seq-length", "1024", "--micro-batch-size", "1",
                                       "--swiglu", "--normalization", "RMSNorm", "--position-embedding-type", "rope",
                                       "--bf16"};
  auto good = with(ok);
  REQUIRE(good.rc == 0);
  const auto j = nlohmann::json::parse(good.out);
  CHECK(j["parallelism"]["tensor"] == 2);
  CHECK(j["parallelism"]["data"] == 4);  // 8 GPUs / TP 2
  CHECK(j["training"]["global_batch_size"] == 4);  // Megatron's default: micro-batch x data parallel
  CHECK(j["model"]["model_type"] == "llama");
  CHECK(j["model"]["intermediate_size"] == 2048);  // Megatron's default --ffn-hidden-size 4h

  auto extra = ok;
  extra.insert(extra.end(), {"--frobnicate-widgets", "3", "--lr", "3e-4", "--no-gradient-accumulation-fusion"});
  auto warned = with(extra);
  CHECK(warned.rc == 0);
  CHECK_THAT(warned.err, Catch::Contains("--frobnicate-widgets is not an argument of Megatron-LM"));
  CHECK_THAT(warned.err, Catch::Contains("--no-gradient-accumulation-fusion is a Megatron-LM argument that clustersim "
                                         "does not model"));
  CHECK_THAT(warned.err, !Catch::Contains("--lr"));

  auto bad = ok;
  bad[1] = "two";
  auto r = with(bad);
  CHECK(r.rc == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("--tensor-model-parallel-size") && Catch::Contains("expected an integer"));

  auto choice = ok;
  choice.insert(choice.end(), {"--recompute-granularity", "sometimes"});
  r = with(choice);
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("--recompute-granularity") && Catch::Contains("full, selective"));

  auto half = ok;
  half.insert(half.end(), {"--recompute-granularity", "full"});
  r = with(half);
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("--recompute-method"));
}

TEST_CASE("simulate --export and plan --export write files; bad targets exit 2", "[unit][interop][cli]") {
  testing::TempDir dir;
  const std::string s = scenario_path("llama3-70b-megatron-tp8pp4-p5-8n.json");
  auto out = testing::run_cli({"simulate", s, "--export", "nemo"});
  REQUIRE(out.rc == 0);
  CHECK_THAT(out.out, Catch::Contains("trainer.strategy.tensor_model_parallel_size=8") &&
                          Catch::Contains("trainer.strategy.virtual_pipeline_model_parallel_size=5") &&
                          Catch::Contains("model.config.recompute_granularity=selective"));
  CHECK_THAT(out.out, !Catch::Contains("Step time"));  // the export replaces the report
  const auto file = dir.path() / "args.sh";
  auto both = testing::run_cli({"simulate", s, "--fidelity", "fast", "--export", "megatron", "--export-file", file.string()});
  REQUIRE(both.rc == 0);
  CHECK_THAT(both.out, Catch::Contains("Step time"));
  CHECK_THAT(slurp(file), Catch::Contains("MEGATRON_ARGS=("));
  CHECK(testing::run_cli({"simulate", s, "--export", "mpi"}).rc == 2);
  CHECK(testing::run_cli({"simulate", s, "--export-file", file.string()}).rc == 2);

  const auto plan = dir.write("plan.json", R"({"schema_version": 1, "name": "export", "model": {"preset": "llama3.2-1b"},
    "training": {"seq_len": 2048, "global_batch_size": 32, "micro_batch_size": 1, "activation_checkpointing": "none"},
    "parallelism": {"framework": "megatron", "tensor": [1, 2], "pipeline": 1},
    "cluster": {"system": "p5.48xlarge", "nodes": 1},
    "job": {"tokens": 1e9},
    "search": {"top_k": 2}})");
  const auto pdir = dir.path() / "exports";
  auto p = testing::run_cli({"plan", plan.string(), "--quiet", "--export", "torchtitan", "--export-top", "2",
                             "--export-dir", pdir.string()});
  REQUIRE(p.rc == 0);
  CHECK_THAT(slurp(pdir / "rank01-torchtitan.toml"), Catch::Contains("[parallelism]"));
  CHECK_THAT(slurp(pdir / "rank02-torchtitan.toml"), Catch::Contains("[parallelism]"));
  CHECK(testing::run_cli({"plan", plan.string(), "--quiet", "--export", "megatron"}).rc == 2);  // no --export-file
}
