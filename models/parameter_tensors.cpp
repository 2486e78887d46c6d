#include "models/parameter_tensors.hpp"

#include <algorithm>

namespace clustersim::models {

namespace {

bool targeted(const LoraSpec* lora, std::string_view module) {
  if (lora == nullptr) return false;
  return std::find(lora->target_modules.begin(), lora->target_modules.end(), module) != lora->target_modules.end();
}

struct Linear {
  std::string name;
  std::int64_t in = 0;
  std::int64_t out = 0;
  bool column_parallel = true;  // output columns split across TP (else the input rows: row-parallel)
  bool bias = false;
  bool replicated = false;      // not split at all (MLA down-projections)
};

void add_linear(std::vector<ParamTensor>& out, const Linear& l, bool frozen) {
  out.push_back({.name = l.name + ".weight",
                 .numel = l.in * l.out,
                 .shard = l.replicated ? ShardKind::REPLICATED : ShardKind::TENSOR,
                 .trainable = !frozen,
                 .gemm = true});
  if (l.bias) {
    // Column-parallel biases are split with their columns; a row-parallel bias is added after the
    // reduction and is whole on each rank.
    out.push_back({.name = l.name + ".bias",
                   .numel = l.out,
                   .shard = (l.column_parallel && !l.replicated) ? ShardKind::TENSOR : ShardKind::REPLICATED,
                   .trainable = !frozen});
  }
}

void add_adapter(std::vector<ParamTensor>& out, const Linear& l, std::int64_t r) {
  // Column-parallel: A (in x r) whole, B (r x out) split. Row-parallel: A split, B whole.
  const bool split_a = !l.column_parallel && !l.replicated;
  const bool split_b = l.column_parallel && !l.replicated;
  out.push_back({.name = "lora." + l.name + ".A",
                 .numel = l.in * r,
                 .shard = split_a ? ShardKind::TENSOR : ShardKind::REPLICATED,
                 .trainable = true,
                 .lora = true,
                 .gemm = true});
  out.push_back({.name = "lora." + l.name + ".B",
                 .numel = r * l.out,
                 .shard = split_b ? ShardKind::TENSOR : ShardKind::REPLICATED,
                 .trainable = true,
                 .lora = true,
                 .gemm = true});
}

void add_norm(std::vector<ParamTensor>& out, const TransformerConfig& c, const std::string& name, std::int64_t width,
              bool frozen) {
  out.push_back({.name = name + ".weight", .numel = width, .shard = ShardKind::REPLICATED, .trainable = !frozen});
  if (c.norm == NormKind::LAYER_NORM) {
    out.push_back({.name = name + ".bias", .numel = width, .shard = ShardKind::REPLICATED, .trainable = !frozen});
  }
}

// The linears of one layer with their LoRA target names.
struct TargetedLinear {
  Linear linear;
  std::vector<std::string_view> targets;
};

TargetedLinear make(std::string name, std::int64_t in, std::int64_t out, bool column_parallel, bool bias,
                    bool replicated, std::vector<std::string_view> targets) {
  TargetedLinear t;
  t.linear.name = std::move(name);
  t.linear.in = in;
  t.linear.out = out;
  t.linear.column_parallel = column_parallel;
  t.linear.bias = bias;
  t.linear.replicated = replicated;
  t.targets = std::move(targets);
  return t;
}

std::vector<TargetedLinear> attention_linears(const TransformerConfig& c) {
  const std::int64_t h = c.hidden_size;
  std::vector<TargetedLinear> out;
  if (c.attention == AttentionKind::MLA) {
    const MlaSpec& m = c.mla;
    const std::int64_t q_out = c.num_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim);
    if (m.q_lora_rank > 0) {
      out.push_back(make("q_a_proj", h, m.q_lora_rank, true, c.qkv_bias, true, {}));
      out.push_back(make("q_b_proj", m.q_lora_rank, q_out, true, false, false, {"q_proj"}));
    } else {
      out.push_back(make("q_proj", h, q_out, true, false, false, {"q_proj"}));
    }
    out.push_back(make("kv_a_proj_with_mqa", h, m.kv_lora_rank + m.qk_rope_head_dim, true, c.qkv_bias, true, {}));
    out.push_back(make("kv_b_proj", m.kv_lora_rank, c.num_heads * (m.qk_nope_head_dim + m.v_head_dim), true, false, false, {"k_proj", "v_proj"}));
    out.push_back(make("o_proj", c.num_heads * m.v_head_dim, h, false, c.attn_out_bias, false, {"o_proj"}));
    return out;
  }
  out.push_back(make("q_proj", h, c.q_width(), true, c.qkv_bias, false, {"q_proj"}));
  out.push_back(make("k_proj", h, c.kv_width(), true, c.qkv_bias, false, {"k_proj"}));
  out.push_back(make("v_proj", h, c.kv_width(), true, c.qkv_bias, false, {"v_proj"}));
  out.push_back(make("o_proj", c.q_width(), h, false, c.attn_out_bias, false, {"o_proj"}));
  return out;
}

std::vector<TargetedLinear> mlp_linears(const TransformerConfig& c, const std::string& prefix, std::int64_t f) {
  const std::int64_t h = c.hidden_size;
  std::vector<TargetedLinear> out;
  if (c.mlp == MlpKind::GATED_SILU) {
    out.push_back(make(prefix + "gate_proj", h, f, true, c.mlp_bias, false, {"gate_proj"}));
    out.push_back(make(prefix + "up_proj", h, f, true, c.mlp_bias, false, {"up_proj"}));
  } else {
    out.push_back(make(prefix + "fc1", h, f, true, c.mlp_bias, false, {"up_proj"}));
  }
  out.push_back(make(prefix + (c.mlp == MlpKind::GATED_SILU ? "down_proj" : "fc2"), f, h, false, c.mlp_bias, false, {"down_proj"}));
  return out;
}

void add_targeted(std::vector<ParamTensor>& out, const std::vector<TargetedLinear>& linears, const LoraSpec* lora) {
  const bool frozen = lora != nullptr;
  for (const auto& tl : linears) {
    add_linear(out, tl.linear, frozen);
    bool hit = false;
    for (auto t : tl.targets) hit = hit || targeted(lora, t);
    if (hit) add_adapter(out, tl.linear, lora->rank);
  }
}

}  // namespace

std::int64_t numel_on_rank(const ParamTensor& t, const ShardFactors& s) {
  auto ceil_div = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
  switch (t.shard) {
    case ShardKind::REPLICATED: return t.numel;
    case ShardKind::TENSOR: return ceil_div(t.numel, s.tensor);
    case ShardKind::EXPERT: {
      // Whole experts per expert-parallel rank, each split across tensor-parallel ranks.
      const std::int64_t experts_here = ceil_div(t.count, s.expert);
      return experts_here * ceil_div(t.numel_each(), s.tensor);
    }
  }
  return t.numel;
}

std::vector<ParamTensor> layer_parameter_tensors(const TransformerConfig& c, std::int64_t layer, const LoraSpec* lora) {
  const bool frozen = lora != nullptr;
  const std::int64_t h = c.hidden_size;
  std::vector<ParamTensor> out;
  add_norm(out, c, "input_layernorm", h, frozen);
  add_targeted(out, attention_linears(c), lora);
  if (c.attention == AttentionKind::MLA) {
    if (c.mla.q_lora_rank > 0) add_norm(out, c, "q_a_layernorm", c.mla.q_lora_rank, frozen);
    add_norm(out, c, "kv_a_layernorm", c.mla.kv_lora_rank, frozen);
  }
  add_norm(out, c, "post_attention_layernorm", h, frozen);
  if (!c.is_moe_layer(layer)) {
    add_targeted(out, mlp_linears(c, "", c.intermediate_size), lora);
    return out;
  }
  const MoeSpec& m = c.moe;
  out.push_back({.name = "router.weight", .numel = h * m.num_experts, .shard = ShardKind::REPLICATED,
                 .trainable = !frozen, .gemm = true});
  if (m.router_bias) {
    out.push_back({.name = "router.bias", .numel = m.num_experts, .shard = ShardKind::REPLICATED, .trainable = !frozen});
  }
  const std::int64_t fe = m.expert_intermediate_size;
  const int matrices = c.mlp == MlpKind::GATED_SILU ? 3 : 2;
  for (int i = 0; i < matrices; ++i) {
    static const char* gated[] = {"experts.gate_proj.weight", "experts.up_proj.weight", "experts.down_proj.weight"};
    static const char* plain[] = {"experts.fc1.weight", "experts.fc2.weight"};
    out.push_back({.name = matrices == 3 ? gated[i] : plain[i],
                   .numel = m.num_experts * h * fe,
                   .count = m.num_experts,
                   .shard = ShardKind::EXPERT,
                   .trainable = !frozen,
                   .gemm = true});
  }
  if (m.shared_intermediate_size > 0) {
    add_targeted(out, mlp_linears(c, "shared_expert.", m.shared_intermediate_size), lora);
    if (m.shared_expert_gate) {
      out.push_back({.name = "shared_expert_gate.weight", .numel = h, .shard = ShardKind::REPLICATED,
                     .trainable = !frozen, .gemm = true});
    }
  }
  return out;
}

std::vector<ParamTensor> embedding_parameter_tensors(const TransformerConfig& c, bool frozen) {
  std::vector<ParamTensor> out;
  out.push_back({.name = "embed_tokens.weight", .numel = c.vocab_size * c.hidden_size, .shard = ShardKind::TENSOR,
                 .trainable = !frozen});
  if (c.position == PositionKind::LEARNED) {
    // OPT's learned positions carry an offset of 2 (OPTLearnedPositionalEmbedding).
    const std::int64_t positions = c.max_position_embeddings + (c.model_type == "opt" ? 2 : 0);
    out.push_back({.name = "embed_positions.weight", .numel = positions * c.hidden_size,
                   .shard = ShardKind::REPLICATED, .trainable = !frozen});
  }
  return out;
}

std::vector<ParamTensor> head_parameter_tensors(const TransformerConfig& c, bool tied_copy, bool frozen) {
  std::vector<ParamTensor> out;
  add_norm(out, c, "norm", c.hidden_size, frozen);
  if (!c.tied_embeddings || tied_copy) {
    out.push_back({.name = "lm_head.weight", .numel = c.vocab_size * c.hidden_size, .shard = ShardKind::TENSOR,
                   .trainable = !frozen, .gemm = true});
  }
  return out;
}

ParameterCounts count_parameters(const TransformerConfig& c) {
  ParameterCounts p;
  for (const auto& t : embedding_parameter_tensors(c)) p.embedding += t.numel;
  for (const auto& t : head_parameter_tensors(c)) {
    if (t.name == "lm_head.weight") p.lm_head += t.numel;
    p.total += t.numel;
    p.active += t.numel;
  }
  p.total += p.embedding;
  p.active += p.embedding;
  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    for (const auto& t : layer_parameter_tensors(c, i)) {
      p.total += t.numel;
      p.active += t.shard == ShardKind::EXPERT ? t.numel / c.moe.num_experts * c.moe.experts_per_token : t.numel;
    }
  }
  return p;
}

std::int64_t lora_parameters(const TransformerConfig& c, std::int64_t layer, const LoraSpec& lora) {
  std::int64_t n = 0;
  for (const auto& t : layer_parameter_tensors(c, layer, &lora)) n += t.lora ? t.numel : 0;
  return n;
}

}  // namespace clustersim::models
