#include "models/transformer_config.hpp"

#include <algorithm>
#include <filesystem>
#include <span>

#include "hardware/errors.hpp"
#include "models/model_presets.hpp"

namespace clustersim::models {

namespace {

// Bounds that keep every size product (parameters, activations) inside 64-bit integers: widths,
// heads and vocabularies up to 2^24, layers up to 16384 (published models have at most a few
// hundred), and at most 10^15 parameters in all (checked once the family's fields are read).
constexpr IntRange kPositive{.min = 1, .max = std::int64_t{1} << 24};
constexpr IntRange kNonNegative{.min = 0, .max = std::int64_t{1} << 24};
constexpr IntRange kLayers{.min = 1, .max = 16384};
constexpr double kMaxParameters = 1e15;
constexpr NumberRange kProbability{.min = 0, .max = 1};

const std::vector<std::string>& supported_model_types() {
  static const std::vector<std::string> types{"llama",       "mistral",     "mixtral", "qwen2",    "qwen2_moe",
                                              "deepseek_v2", "deepseek_v3", "gpt2",    "gpt_neox", "opt"};
  return types;
}

// Keys of a Hugging Face config.json that this model does not need but that users paste inline
// with the rest; accepted (and ignored) in strict inline reading so that only typos are errors.
const std::vector<std::string_view>& hf_boilerplate() {
  static const std::vector<std::string_view> keys{
    "architectures", "auto_map", "bos_token_id", "eos_token_id", "pad_token_id", "torch_dtype", "dtype",
    "transformers_version", "initializer_range", "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon",
    "rope_theta", "rope_scaling", "rope_parameters", "use_cache", "hidden_act", "activation_function",
    "pretraining_tp", "sliding_window", "use_sliding_window", "max_window_layers", "use_mrope",
    "output_router_logits", "router_aux_loss_coef", "norm_topk_prob", "n_group", "topk_group",
    "topk_method", "scoring_func", "routed_scaling_factor", "ep_size", "num_nextn_predict_layers",
    "quantization_config", "n_ctx", "summary_type", "summary_use_proj", "summary_activation",
    "summary_proj_to_labels", "summary_first_dropout", "task_specific_params", "rotary_emb_base",
    "use_parallel_residual", "do_layer_norm_before", "_name_or_path", "aux_loss_alpha", "seq_aux",
    "scale_attn_weights", "reorder_and_upcast_attn", "scale_attn_by_inverse_layer_idx", "classifier_dropout",
    "bias", "attention_probs_dropout_prob", "init_std", "layerdrop", "_remove_final_layer_norm",
    "enable_bias", "layer_norm_elementwise_affine", "prefix", "use_qk_norm"};
  return keys;
}

// One entry of a transformers config class's `attribute_map`: transformers stores a value given
// under `alias` as `key` (PretrainedConfig.__setattr__), so a config.json may use either name.
struct KeyAlias {
  std::string_view alias;
  std::string_view key;
};

// The attribute maps of the supported families, as transformers declares them in
// src/transformers/models/<model_type>/configuration_<model_type>.py:
//   gpt2         GPT2Config.attribute_map: hidden_size -> n_embd, max_position_embeddings ->
//                n_positions, num_attention_heads -> n_head, num_hidden_layers -> n_layer
//   mixtral      MixtralConfig.attribute_map: num_experts -> num_local_experts
//   deepseek_v2  DeepseekV2Config.attribute_map: num_experts -> n_routed_experts
//   deepseek_v3  DeepseekV3Config.attribute_map: num_local_experts -> n_routed_experts
// llama, mistral, qwen2, qwen2_moe, gpt_neox and opt declare none.
std::span<const KeyAlias> attribute_map(std::string_view model_type) {
  static constexpr KeyAlias kGpt2[] = {{"hidden_size", "n_embd"},
                                       {"max_position_embeddings", "n_positions"},
                                       {"num_attention_heads", "n_head"},
                                       {"num_hidden_layers", "n_layer"}};
  static constexpr KeyAlias kMixtral[] = {{"num_experts", "num_local_experts"}};
  static constexpr KeyAlias kDeepseekV2[] = {{"num_experts", "n_routed_experts"}};
  static constexpr KeyAlias kDeepseekV3[] = {{"num_local_experts", "n_routed_experts"}};
  if (model_type == "gpt2") return kGpt2;
  if (model_type == "mixtral") return kMixtral;
  if (model_type == "deepseek_v2") return kDeepseekV2;
  if (model_type == "deepseek_v3") return kDeepseekV3;
  return {};
}

// The keys of one config object as its family reads them: each reader asks for transformers'
// own attribute name, and gets the value under that name or under its alias. A key and its alias
// that are both given must agree (transformers would silently keep the alias's value).
class ConfigFields {
 public:
  ConfigFields(ObjectReader& o, std::span<const KeyAlias> aliases, std::string_view model_type)
      : o_(o), aliases_(aliases) {
    for (const KeyAlias& a : aliases_) {
      if (!o_.has(a.alias) || !o_.has(a.key)) continue;
      const nlohmann::json& given = o_.at(a.alias).raw();
      const nlohmann::json& own = o_.at(a.key).raw();
      if (given == own) continue;
      throw InputError(o_.file(), o_.child_pointer(a.alias),
                       "'" + std::string(a.alias) + "' = " + describe_json(given) + " conflicts with '" +
                           std::string(a.key) + "' = " + describe_json(own) + " (for model_type " +
                           std::string(model_type) + " transformers reads " + std::string(a.alias) + " as " +
                           std::string(a.key) + "; expected one of the two keys, or the same value in both)");
    }
  }

  // The key as the config spells it: `key` itself, or its alias where only the alias is given.
  std::string spelled(std::string_view key) const {
    if (o_.has(key)) return std::string(key);
    for (const KeyAlias& a : aliases_) {
      if (a.key == key && o_.has(a.alias)) return std::string(a.alias);
    }
    return std::string(key);
  }
  // " or its alias 'hidden_size'" for a key that has one, else empty.
  std::string alias_note(std::string_view key) const {
    std::string out;
    for (const KeyAlias& a : aliases_) {
      if (a.key == key) out += " or its alias '" + std::string(a.alias) + "'";
    }
    return out;
  }

  bool has(std::string_view key) const { return o_.has(spelled(key)); }
  ValueReader at(std::string_view key) { return o_.at(spelled(key)); }
  std::optional<ValueReader> maybe(std::string_view key) { return o_.maybe(spelled(key)); }
  bool get_or(std::string_view key, bool fallback) { return o_.get_or(spelled(key), fallback); }
  std::string get_or(std::string_view key, const char* fallback) { return o_.get_or(spelled(key), fallback); }
  double get_or(std::string_view key, double fallback, NumberRange range = {}) {
    return o_.get_or(spelled(key), fallback, range);
  }
  const std::string& file() const { return o_.file(); }
  const std::string& pointer() const { return o_.pointer(); }
  std::string child_pointer(std::string_view key) const { return o_.child_pointer(spelled(key)); }

 private:
  ObjectReader& o_;
  std::span<const KeyAlias> aliases_;
};

// A required positive integer, with the expectation spelled out for a config that lacks it.
std::int64_t required_int(ConfigFields& o, std::string_view key, std::string_view meaning,
                          IntRange range = kPositive) {
  if (!o.has(key)) {
    throw InputError(o.file(), o.child_pointer(key),
                     "missing required key '" + std::string(key) + "'" + o.alias_note(key) + " (" +
                         std::string(meaning) + "; expected a positive integer)");
  }
  return o.at(key).as_int(range);
}

std::int64_t optional_int(ConfigFields& o, std::string_view key, std::int64_t fallback, IntRange range = kPositive) {
  auto v = o.maybe(key);
  return v ? v->as_int(range) : fallback;
}

double optional_probability(ConfigFields& o, std::string_view key, double fallback) {
  auto v = o.maybe(key);
  return v ? v->as_number(kProbability) : fallback;
}

[[noreturn]] void fail_at(const ConfigFields& o, std::string_view key, const std::string& message) {
  throw InputError(o.file(), o.child_pointer(key), message);
}

[[noreturn]] void fail_at(const ObjectReader& o, std::string_view key, const std::string& message) {
  throw InputError(o.file(), o.child_pointer(key), message);
}

void read_llama_like(ConfigFields& o, TransformerConfig& c) {
  c.hidden_size = required_int(o, "hidden_size", "the model width");
  c.intermediate_size = required_int(o, "intermediate_size", "the MLP width");
  c.num_layers = required_int(o, "num_hidden_layers", "the number of transformer layers", kLayers);
  c.num_heads = required_int(o, "num_attention_heads", "the number of query heads");
  c.vocab_size = required_int(o, "vocab_size", "the vocabulary size");
  c.num_kv_heads = optional_int(o, "num_key_value_heads", c.num_heads);
  c.max_position_embeddings = optional_int(o, "max_position_embeddings", 0, kNonNegative);
  c.tied_embeddings = o.get_or("tie_word_embeddings", false);
  c.attention_dropout = optional_probability(o, "attention_dropout", 0.0);
  if (auto hd = o.maybe("head_dim")) {
    c.head_dim = hd->as_int(kPositive);
  } else if (c.hidden_size % c.num_heads != 0) {
    fail_at(o, "num_attention_heads",
            "expected a divisor of hidden_size = " + std::to_string(c.hidden_size) +
                " (or give head_dim), got " + std::to_string(c.num_heads));
  } else {
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (c.num_heads % c.num_kv_heads != 0) {
    fail_at(o, "num_key_value_heads",
            "expected a divisor of num_attention_heads = " + std::to_string(c.num_heads) + " (grouped-query attention), got " +
                std::to_string(c.num_kv_heads));
  }
  c.mlp = MlpKind::GATED_SILU;
  c.norm = NormKind::RMS_NORM;
  c.position = PositionKind::ROTARY;
}

void check_moe(ConfigFields& o, const TransformerConfig& c, std::string_view experts_key) {
  const MoeSpec& m = c.moe;
  if (m.experts_per_token > m.num_experts) {
    fail_at(o, "num_experts_per_tok",
            "MoE fields inconsistent: num_experts_per_tok = " + std::to_string(m.experts_per_token) +
                " exceeds " + o.spelled(experts_key) + " = " + std::to_string(m.num_experts));
  }
  if (m.first_dense_layers > c.num_layers) {
    fail_at(o, "first_k_dense_replace",
            "MoE fields inconsistent: first_k_dense_replace = " + std::to_string(m.first_dense_layers) +
                " exceeds " + o.spelled("num_hidden_layers") + " = " + std::to_string(c.num_layers));
  }
  for (std::int64_t layer : m.dense_layers) {
    if (layer < 0 || layer >= c.num_layers) {
      fail_at(o, "mlp_only_layers",
              "MoE fields inconsistent: layer " + std::to_string(layer) + " is outside 0.." +
                  std::to_string(c.num_layers - 1));
    }
  }
  if (c.num_moe_layers() == 0) {
    fail_at(o, std::string(experts_key), "MoE fields inconsistent: the experts are given but no layer is a MoE layer");
  }
}

void read_mixtral(ConfigFields& o, TransformerConfig& c) {
  read_llama_like(o, c);
  c.moe.num_experts = required_int(o, "num_local_experts", "the number of experts per MoE layer");
  c.moe.experts_per_token = required_int(o, "num_experts_per_tok", "the experts each token is routed to");
  c.moe.expert_intermediate_size = c.intermediate_size;
  check_moe(o, c, "num_local_experts");
}

void read_qwen2(ConfigFields& o, TransformerConfig& c) {
  read_llama_like(o, c);
  c.qkv_bias = true;  // Qwen2Attention: q_proj, k_proj, v_proj with bias=True, o_proj without
}

void read_qwen2_moe(ConfigFields& o, TransformerConfig& c) {
  read_qwen2(o, c);
  c.moe.num_experts = required_int(o, "num_experts", "the number of routed experts per MoE layer");
  c.moe.experts_per_token = required_int(o, "num_experts_per_tok", "the experts each token is routed to");
  c.moe.expert_intermediate_size = required_int(o, "moe_intermediate_size", "the width of one routed expert");
  c.moe.shared_intermediate_size = optional_int(o, "shared_expert_intermediate_size", 0, kNonNegative);
  c.moe.shared_expert_gate = c.moe.shared_intermediate_size > 0;
  c.moe.layer_frequency = optional_int(o, "decoder_sparse_step", 1);
  if (auto dl = o.maybe("mlp_only_layers")) {
    for (const auto& e : dl->as_array()) c.moe.dense_layers.push_back(e.as_int(kNonNegative));
  }
  check_moe(o, c, "num_experts");
}

void read_deepseek(ConfigFields& o, TransformerConfig& c, bool v3) {
  c.hidden_size = required_int(o, "hidden_size", "the model width");
  c.intermediate_size = required_int(o, "intermediate_size", "the width of the dense MLP layers");
  c.num_layers = required_int(o, "num_hidden_layers", "the number of transformer layers", kLayers);
  c.num_heads = required_int(o, "num_attention_heads", "the number of attention heads");
  c.vocab_size = required_int(o, "vocab_size", "the vocabulary size");
  c.num_kv_heads = optional_int(o, "num_key_value_heads", c.num_heads);
  c.max_position_embeddings = optional_int(o, "max_position_embeddings", 0, kNonNegative);
  c.tied_embeddings = o.get_or("tie_word_embeddings", false);
  c.qkv_bias = o.get_or("attention_bias", false);
  c.attn_out_bias = c.qkv_bias;
  c.attention_dropout = optional_probability(o, "attention_dropout", 0.0);
  c.attention = AttentionKind::MLA;
  c.mla.q_lora_rank = optional_int(o, "q_lora_rank", 0, kNonNegative);
  c.mla.kv_lora_rank = required_int(o, "kv_lora_rank", "the MLA key/value compression rank");
  c.mla.qk_nope_head_dim = required_int(o, "qk_nope_head_dim", "the MLA query/key head width without rotary");
  c.mla.qk_rope_head_dim = required_int(o, "qk_rope_head_dim", "the MLA rotary query/key head width");
  c.mla.v_head_dim = required_int(o, "v_head_dim", "the MLA value head width");
  c.head_dim = c.mla.qk_nope_head_dim + c.mla.qk_rope_head_dim;
  c.mlp = MlpKind::GATED_SILU;
  c.norm = NormKind::RMS_NORM;
  c.position = PositionKind::ROTARY;
  if (o.has("n_routed_experts")) {
    c.moe.num_experts = o.at("n_routed_experts").as_int(kPositive);
    c.moe.experts_per_token = required_int(o, "num_experts_per_tok", "the experts each token is routed to");
    c.moe.expert_intermediate_size = required_int(o, "moe_intermediate_size", "the width of one routed expert");
    const std::int64_t shared = optional_int(o, "n_shared_experts", 0, kNonNegative);
    c.moe.shared_intermediate_size = shared * c.moe.expert_intermediate_size;
    c.moe.first_dense_layers = optional_int(o, "first_k_dense_replace", 0, kNonNegative);
    c.moe.layer_frequency = optional_int(o, "moe_layer_freq", 1);
    // DeepSeek-V3's noaux_tc routing adds a per-expert score-correction bias to the router.
    c.moe.router_bias = v3 && o.get_or("topk_method", v3 ? "noaux_tc" : "greedy") == "noaux_tc";
    check_moe(o, c, "n_routed_experts");
  }
}

void read_gpt2(ConfigFields& o, TransformerConfig& c) {
  c.hidden_size = required_int(o, "n_embd", "the model width");
  c.num_layers = required_int(o, "n_layer", "the number of transformer layers", kLayers);
  c.num_heads = required_int(o, "n_head", "the number of attention heads");
  c.vocab_size = required_int(o, "vocab_size", "the vocabulary size");
  c.max_position_embeddings = required_int(o, "n_positions", "the number of learned positions");
  c.intermediate_size = optional_int(o, "n_inner", 4 * c.hidden_size);  // GPT2MLP: n_inner or 4 * n_embd
  c.num_kv_heads = c.num_heads;
  if (c.hidden_size % c.num_heads != 0) {
    fail_at(o, "n_head", "expected a divisor of " + o.spelled("n_embd") + " = " + std::to_string(c.hidden_size));
  }
  c.head_dim = c.hidden_size / c.num_heads;
  c.tied_embeddings = o.get_or("tie_word_embeddings", true);
  c.attention_dropout = optional_probability(o, "attn_pdrop", 0.1);  // GPT2Config defaults
  c.hidden_dropout = optional_probability(o, "resid_pdrop", 0.1);
  c.embedding_dropout = optional_probability(o, "embd_pdrop", 0.1);
  c.mlp = MlpKind::GELU;
  c.norm = NormKind::LAYER_NORM;
  c.position = PositionKind::LEARNED;
  c.qkv_bias = c.attn_out_bias = c.mlp_bias = true;
}

void read_gpt_neox(ConfigFields& o, TransformerConfig& c) {
  c.hidden_size = required_int(o, "hidden_size", "the model width");
  c.intermediate_size = required_int(o, "intermediate_size", "the MLP width");
  c.num_layers = required_int(o, "num_hidden_layers", "the number of transformer layers", kLayers);
  c.num_heads = required_int(o, "num_attention_heads", "the number of attention heads");
  c.vocab_size = required_int(o, "vocab_size", "the vocabulary size");
  c.max_position_embeddings = optional_int(o, "max_position_embeddings", 0, kNonNegative);
  c.num_kv_heads = c.num_heads;
  if (c.hidden_size % c.num_heads != 0) {
    fail_at(o, "num_attention_heads", "expected a divisor of hidden_size = " + std::to_string(c.hidden_size));
  }
  c.head_dim = c.hidden_size / c.num_heads;
  c.rotary_fraction = o.get_or("rotary_pct", 0.25, {.min = 0, .max = 1});
  c.tied_embeddings = o.get_or("tie_word_embeddings", false);
  c.attention_dropout = optional_probability(o, "attention_dropout", 0.0);
  c.hidden_dropout = optional_probability(o, "hidden_dropout", 0.0);
  c.mlp = MlpKind::GELU;
  c.norm = NormKind::LAYER_NORM;
  c.position = PositionKind::ROTARY;
  c.qkv_bias = c.attn_out_bias = c.mlp_bias = true;
}

void read_opt(ConfigFields& o, TransformerConfig& c) {
  c.hidden_size = required_int(o, "hidden_size", "the model width");
  c.intermediate_size = required_int(o, "ffn_dim", "the MLP width");
  c.num_layers = required_int(o, "num_hidden_layers", "the number of transformer layers", kLayers);
  c.num_heads = required_int(o, "num_attention_heads", "the number of attention heads");
  c.vocab_size = required_int(o, "vocab_size", "the vocabulary size");
  c.max_position_embeddings = required_int(o, "max_position_embeddings", "the number of learned positions");
  if (auto p = o.maybe("word_embed_proj_dim")) {
    if (p->as_int(kPositive) != c.hidden_size) {
      p->fail_message("an embedding projection (word_embed_proj_dim != hidden_size) is not modelled");
    }
  }
  c.num_kv_heads = c.num_heads;
  if (c.hidden_size % c.num_heads != 0) {
    fail_at(o, "num_attention_heads", "expected a divisor of hidden_size = " + std::to_string(c.hidden_size));
  }
  c.head_dim = c.hidden_size / c.num_heads;
  c.tied_embeddings = o.get_or("tie_word_embeddings", true);
  c.attention_dropout = optional_probability(o, "attention_dropout", 0.0);
  c.hidden_dropout = optional_probability(o, "dropout", 0.1);
  c.mlp = MlpKind::RELU;
  c.norm = NormKind::LAYER_NORM;
  c.position = PositionKind::LEARNED;
  c.qkv_bias = c.attn_out_bias = c.mlp_bias = true;
}

TransformerConfig read_fields(ObjectReader& o, bool inline_fields, std::string default_name, std::string source) {
  TransformerConfig c;
  c.source = std::move(source);
  if (inline_fields) {
    c.name = o.get_or("name", std::move(default_name));
    c.model_type = o.get_or("model_type", "llama");
  } else {
    c.name = std::move(default_name);
    if (!o.has("model_type")) {
      fail_at(o, "model_type", "missing required key 'model_type' (expected one of the supported families: llama, "
                                "mistral, mixtral, qwen2, qwen2_moe, deepseek_v2, deepseek_v3, gpt2, gpt_neox, opt)");
    }
    c.model_type = o.at("model_type").as_string();
  }
  if (auto mt = o.maybe("model_type")) mt->as_choice(supported_model_types());
  const std::string& t = c.model_type;
  ConfigFields f(o, attribute_map(t), t);
  if (t == "llama" || t == "mistral") {
    read_llama_like(f, c);
    if (t == "llama") {
      c.qkv_bias = c.attn_out_bias = f.get_or("attention_bias", false);
      c.mlp_bias = f.get_or("mlp_bias", false);
    }
  } else if (t == "mixtral") {
    read_mixtral(f, c);
  } else if (t == "qwen2") {
    read_qwen2(f, c);
  } else if (t == "qwen2_moe") {
    read_qwen2_moe(f, c);
  } else if (t == "deepseek_v2" || t == "deepseek_v3") {
    read_deepseek(f, c, t == "deepseek_v3");
  } else if (t == "gpt2") {
    read_gpt2(f, c);
  } else if (t == "gpt_neox") {
    read_gpt_neox(f, c);
  } else {
    read_opt(f, c);
  }
  // Roughly the parameter count (attention, MLP, experts, embeddings), in floating point so that
  // it cannot overflow: beyond 10^15 the sizes are a typo, and the models' integer sums would not hold.
  const double h = static_cast<double>(c.hidden_size);
  const double heads_width = static_cast<double>(std::max({c.num_heads * std::max(c.head_dim, c.qk_head_dim()),
                                                           c.num_heads * c.v_head_dim(), c.hidden_size}));
  const double mlp = static_cast<double>(c.intermediate_size) +
                     static_cast<double>(c.moe.num_experts) * static_cast<double>(c.moe.expert_intermediate_size) +
                     static_cast<double>(c.moe.shared_intermediate_size);
  const double params = static_cast<double>(c.num_layers) * (4 * h * heads_width + 3 * h * mlp) +
                        2 * static_cast<double>(c.vocab_size) * h;
  if (params > kMaxParameters) {
    throw InputError(o.file(), o.pointer().empty() ? "/" : o.pointer(),
                     "expected a model of at most 1e15 parameters; these sizes describe about " +
                         format_significant(params, 3) + " (a typo in hidden_size, the MLP width, the layer "
                         "or expert count?)");
  }
  return c;
}

}  // namespace

bool TransformerConfig::is_moe_layer(std::int64_t layer) const {
  if (!moe.enabled()) return false;
  if (layer < moe.first_dense_layers) return false;
  if (std::find(moe.dense_layers.begin(), moe.dense_layers.end(), layer) != moe.dense_layers.end()) return false;
  // DeepSeek: layer_idx >= first_k_dense_replace and layer_idx % moe_layer_freq == 0.
  // Qwen2-MoE: (layer_idx + 1) % decoder_sparse_step == 0; both are "every layer" at frequency 1.
  if (moe.layer_frequency <= 1) return true;
  if (model_type == "qwen2_moe") return (layer + 1) % moe.layer_frequency == 0;
  return layer % moe.layer_frequency == 0;
}

std::int64_t TransformerConfig::num_moe_layers() const {
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < num_layers; ++i) n += is_moe_layer(i) ? 1 : 0;
  return n;
}

std::int64_t TransformerConfig::qk_head_dim() const {
  return attention == AttentionKind::MLA ? mla.qk_nope_head_dim + mla.qk_rope_head_dim : head_dim;
}

std::int64_t TransformerConfig::v_head_dim() const {
  return attention == AttentionKind::MLA ? mla.v_head_dim : head_dim;
}

TransformerConfig read_hf_config(const JsonDocument& doc) {
  ObjectReader o = doc.root().as_object();
  // HF configs carry many keys this model does not need: they are left unread, not rejected.
  return read_fields(o, false, std::filesystem::path(doc.file()).parent_path().filename().string(), doc.file());
}

TransformerConfig load_hf_config(const std::string& path) {
  TransformerConfig c = read_hf_config(load_json_file(path));
  // A config.json is named after its folder (the model id); any other file after its stem.
  const std::filesystem::path p(path);
  if (p.filename() != "config.json" || c.name.empty()) c.name = p.stem().string();
  return c;
}

// Every key some family reads: an inline key outside this set is a typo, reported before the
// family's required keys are looked for (so "num_hiden_layers" is named, not a missing key).
const std::vector<std::string>& all_model_keys() {
  static const std::vector<std::string> keys{
      "name", "model_type", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
      "num_key_value_heads", "head_dim", "vocab_size", "max_position_embeddings", "tie_word_embeddings",
      "attention_bias", "mlp_bias", "attention_dropout", "num_local_experts", "num_experts_per_tok", "num_experts",
      "moe_intermediate_size", "shared_expert_intermediate_size", "decoder_sparse_step", "mlp_only_layers",
      "n_routed_experts", "n_shared_experts", "first_k_dense_replace", "moe_layer_freq", "q_lora_rank",
      "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "n_embd", "n_layer", "n_head",
      "n_inner", "n_positions", "attn_pdrop", "resid_pdrop", "embd_pdrop", "rotary_pct", "hidden_dropout",
      "ffn_dim", "word_embed_proj_dim", "dropout"};
  return keys;
}

TransformerConfig read_inline_model(ValueReader model) {
  ObjectReader o = model.as_object();
  std::vector<std::string> known = all_model_keys();
  for (auto k : hf_boilerplate()) known.emplace_back(k);
  for (const auto& key : o.keys()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string msg = "unknown key '" + key + "'";
    if (auto near = nearest_word(key, known)) msg += "; did you mean '" + *near + "'?";
    throw InputError(o.file(), o.child_pointer(key), msg);
  }
  TransformerConfig c = read_fields(o, true, "inline", model.file() + ": " + model.pointer());
  for (auto key : hf_boilerplate()) (void)o.has(key);
  o.finish();
  return c;
}

std::vector<std::string> builtin_model_preset_names() {
  std::vector<std::string> out;
  for (const auto& f : builtin_model_preset_files()) {
    out.push_back(std::filesystem::path(std::string(f.path)).stem().string());
  }
  return out;
}

TransformerConfig builtin_model_preset(std::string_view name, const std::string& file, const std::string& pointer) {
  for (const auto& f : builtin_model_preset_files()) {
    if (std::filesystem::path(std::string(f.path)).stem().string() == name) {
      const std::string where = "models/presets/" + std::string(f.path);
      TransformerConfig c = read_hf_config(parse_json_text(f.text, where));
      c.name = std::string(name);
      c.source = "preset " + std::string(name);
      return c;
    }
  }
  std::string msg = "unknown model preset '" + std::string(name) + "'";
  const auto names = builtin_model_preset_names();
  if (auto near = nearest_word(name, names)) msg += "; did you mean '" + *near + "'?";
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  throw InputError(file, pointer, msg + " (built in: " + known + "; or give \"hf_config\": PATH)");
}

TransformerConfig resolve_model(const ModelRef& ref) {
  switch (ref.kind) {
    case ModelRef::Kind::PRESET: return builtin_model_preset(ref.preset, ref.file, ref.pointer + "/preset");
    case ModelRef::Kind::HF_CONFIG: return load_hf_config(ref.hf_config.string());
    case ModelRef::Kind::INLINE: return read_inline_model(ValueReader(ref.inline_fields, ref.file, ref.pointer));
  }
  throw InputError(ref.file, ref.pointer, "expected a model preset, hf_config or inline fields");
}

std::string_view to_string(MlpKind k) {
  switch (k) {
    case MlpKind::GATED_SILU: return "swiglu";
    case MlpKind::GELU: return "gelu";
    case MlpKind::RELU: return "relu";
  }
  return "swiglu";
}

std::string_view to_string(AttentionKind k) { return k == AttentionKind::MLA ? "mla" : "gqa"; }

}  // namespace clustersim::models
