#pragma once
// The parameter tensors of a transformer, layer by layer, with how each is split across ranks.
//
// Every count in the model (totals, active parameters, per-rank shards, FSDP/ZeRO gather sizes,
// DeepSpeed's persistence threshold) is a sum over this list, so it is written once here.
//
// Per layer (h hidden, H heads, Hkv kv heads, d head_dim, f MLP width, E experts, fe expert width):
//   GQA attention  q: h x H d, k and v: h x Hkv d, o: H d x h (+ q/k/v biases: H d, Hkv d; o bias: h)
//   MLA attention  q_a: h x q_lora, q_a_norm: q_lora, q_b: q_lora x H (nope+rope)
//                  kv_a: h x (kv_lora + rope), kv_a_norm: kv_lora, kv_b: kv_lora x H (nope + v), o: H v x h
//   gated MLP      gate, up: h x f, down: f x h          two-matrix MLP  fc1: h x f (+f), fc2: f x h (+h)
//   MoE            router: h x E (+E bias, DeepSeek-V3), experts: E x 3 h fe, shared: 3 h fs
//                  (+ h x 1 shared-expert gate, Qwen2-MoE)
//   norms          2 x h (RMSNorm) or 2 x 2h (LayerNorm with bias)
// Outside the layers: embedding V x h (+ learned positions P x h), final norm, LM head V x h
// unless tied to the embedding.
//
// Shards: TENSOR tensors are split across tensor-parallel ranks (heads, MLP columns, vocabulary
// rows: Megatron's column/row-parallel linears and vocab-parallel embedding); REPLICATED tensors
// are whole on each (norms, row-parallel biases, MLA down-projections, the router); EXPERT tensors
// hold all routed experts of a layer, split across expert-parallel ranks and, within an expert,
// across tensor-parallel ranks (Megatron-Core's expert tensor parallelism defaults to TP).
//
// LoRA (Hu et al. 2021, as NeMo's and PEFT's adapters): a targeted linear W (in -> out) gains
// A: in x r and B: r x out; W is frozen. For a column-parallel W, A is replicated and B split; for
// a row-parallel W (o_proj, down_proj), A is split and B replicated (NeMo ParallelLinearAdapter).
// Targets name the logical projection (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj,
// down_proj); on MLA q_proj is q_b (or q) and k_proj/v_proj are kv_b; MLP targets apply to the
// dense MLP and shared experts, not to routed experts.

#include <cstdint>
#include <string>
#include <vector>

#include "models/scenario.hpp"
#include "models/transformer_config.hpp"

namespace clustersim::models {

enum class ShardKind { REPLICATED, TENSOR, EXPERT };

struct ParamTensor {
  std::string name;          // "q_proj.weight", "experts.gate_proj.weight", "lora.q_proj.A"
  std::int64_t numel = 0;    // elements in the whole model (EXPERT: all routed experts of the layer)
  std::int64_t count = 1;    // tensors this entry stands for (EXPERT: E, one per expert)
  ShardKind shard = ShardKind::TENSOR;
  bool trainable = true;     // false for frozen base weights under LoRA
  bool lora = false;
  bool gemm = false;         // a matrix multiplied with every token (2 FLOP per element per token)
  std::int64_t numel_each() const { return numel / count; }
};

// How the tensors are split on one rank.
struct ShardFactors {
  std::int64_t tensor = 1;  // tensor-parallel size
  std::int64_t expert = 1;  // expert-parallel size
};

// Elements of `t` held by one rank (rounded up: vocabulary rows are padded to a multiple of TP).
std::int64_t numel_on_rank(const ParamTensor& t, const ShardFactors& s);

std::vector<ParamTensor> layer_parameter_tensors(const TransformerConfig& c, std::int64_t layer,
                                                 const LoraSpec* lora = nullptr);
// Token embedding and learned positions (the first pipeline stage).
std::vector<ParamTensor> embedding_parameter_tensors(const TransformerConfig& c, bool frozen = false);
// Final norm and the LM head (the last pipeline stage). With tied embeddings the head has no
// weight of its own; `tied_copy` adds the copy Megatron keeps on the last stage when it is not
// also the first.
std::vector<ParamTensor> head_parameter_tensors(const TransformerConfig& c, bool tied_copy = false, bool frozen = false);

struct ParameterCounts {
  std::int64_t total = 0;
  std::int64_t active = 0;     // per token: routed experts count k of E
  std::int64_t embedding = 0;  // input token embedding (+ learned positions)
  std::int64_t lm_head = 0;    // 0 when tied
  std::int64_t non_embedding() const { return total - embedding - lm_head; }
};
ParameterCounts count_parameters(const TransformerConfig& c);

// LoRA adapter elements of one layer (rank r on each targeted projection).
std::int64_t lora_parameters(const TransformerConfig& c, std::int64_t layer, const LoraSpec& lora);

}  // namespace clustersim::models
