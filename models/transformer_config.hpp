#pragma once
// The shape of a decoder-only transformer, resolved from a Hugging Face config.json, inline
// scenario fields or a built-in preset (models/presets/*.json, real config.json files).
//
// Families and what `model_type` decides (as the transformers modeling code of each family does):
//   llama, mistral, mixtral, qwen2, qwen2_moe, deepseek_v2, deepseek_v3
//       RMSNorm, rotary positions, gated SwiGLU MLP: down(silu(gate(x)) * up(x)), three h x f
//       matrices; GQA from num_key_value_heads; head_dim where given (else hidden/heads);
//       qwen2 and qwen2_moe carry q/k/v biases; llama `attention_bias` / `mlp_bias` where set.
//   gpt2 (n_embd, n_layer, n_head, n_inner, n_positions), gpt_neox, opt
//       LayerNorm with bias, learned positions (gpt2, opt) or rotary (gpt_neox), two-matrix GELU
//       (or ReLU for opt) MLP with biases, multi-head attention with biases.
// MoE fields:
//   mixtral    num_local_experts, num_experts_per_tok (every layer MoE, experts of width
//              intermediate_size, router h x E)
//   qwen2_moe  num_experts, num_experts_per_tok, moe_intermediate_size, shared_expert_intermediate_size
//              (one shared expert with a sigmoid gate h x 1), decoder_sparse_step, mlp_only_layers
//   deepseek   n_routed_experts, n_shared_experts (each of width moe_intermediate_size),
//              num_experts_per_tok, first_k_dense_replace, moe_layer_freq; layer i is MoE when
//              i >= first_k_dense_replace and i % moe_layer_freq == 0; the router has a bias of E
//              (deepseek_v3 e_score_correction_bias).
// DeepSeek MLA attention (q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim):
//   q  = W_qb * norm(W_qa * x)         W_qa: h x q_lora, W_qb: q_lora x H(nope+rope)
//                                      (without q_lora_rank: W_q: h x H(nope+rope))
//   kv = W_kvb * norm(W_kva_nope * x)  W_kva: h x (kv_lora + rope) (the rope part is one shared key),
//                                      W_kvb: kv_lora x H(nope + v)
//   o  = W_o * attn                    W_o: H v x h
// The multi-token-prediction module of DeepSeek-V3 (num_nextn_predict_layers) is not part of the
// 671 B main model and is not modelled.
//
// Parameter counts (elements) come from the per-tensor list of each layer (parameter_tensors.hpp).

#include <cstdint>
#include <string>
#include <vector>

#include "hardware/json_reader.hpp"
#include "models/scenario.hpp"

namespace clustersim::models {

enum class MlpKind { GATED_SILU, GELU, RELU };
enum class NormKind { RMS_NORM, LAYER_NORM };
enum class PositionKind { ROTARY, LEARNED };
enum class AttentionKind { GQA, MLA };  // GQA covers MHA (kv heads = heads) and MQA (1 kv head)

struct MlaSpec {
  std::int64_t q_lora_rank = 0;  // 0: a plain h x H(nope+rope) query projection
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

struct MoeSpec {
  std::int64_t num_experts = 0;        // routed experts (0: a dense model)
  std::int64_t experts_per_token = 0;  // top-k
  std::int64_t expert_intermediate_size = 0;
  std::int64_t shared_intermediate_size = 0;  // total width of the always-active shared expert(s)
  bool shared_expert_gate = false;            // qwen2_moe: sigmoid(x W_g), W_g: h x 1
  bool router_bias = false;                   // deepseek_v3: e_score_correction_bias (E)
  std::int64_t first_dense_layers = 0;        // deepseek first_k_dense_replace
  std::int64_t layer_frequency = 1;           // deepseek moe_layer_freq, qwen2_moe decoder_sparse_step
  std::vector<std::int64_t> dense_layers;     // qwen2_moe mlp_only_layers
  bool enabled() const { return num_experts > 0; }
};

struct TransformerConfig {
  std::string name;        // preset name, file stem or the scenario's inline name
  std::string model_type;  // as in config.json
  std::string source;      // where it was read ("preset llama3-8b", a file path, "scenario.json: /model")
  std::int64_t hidden_size = 0;
  std::int64_t num_layers = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t intermediate_size = 0;  // dense MLP width
  std::int64_t vocab_size = 0;
  std::int64_t max_position_embeddings = 0;
  MlpKind mlp = MlpKind::GATED_SILU;
  NormKind norm = NormKind::RMS_NORM;
  PositionKind position = PositionKind::ROTARY;
  AttentionKind attention = AttentionKind::GQA;
  bool tied_embeddings = false;
  bool qkv_bias = false;       // biases on the q, k, v projections
  bool attn_out_bias = false;  // bias on the output projection
  bool mlp_bias = false;
  double rotary_fraction = 1.0;    // gpt_neox rotary_pct: share of head_dim that is rotated
  double attention_dropout = 0.0;  // on attention probabilities (regenerated from RNG by flash attention)
  double hidden_dropout = 0.0;     // after the attention and MLP output projections
  double embedding_dropout = 0.0;
  MlaSpec mla;
  MoeSpec moe;

  bool is_moe_layer(std::int64_t layer) const;
  std::int64_t num_moe_layers() const;
  // Query/key head width and value head width (MLA: nope + rope and v_head_dim).
  std::int64_t qk_head_dim() const;
  std::int64_t v_head_dim() const;
  // Columns of the query projection (H x qk_head_dim) and of the k and v projections (GQA).
  std::int64_t q_width() const { return num_heads * qk_head_dim(); }
  std::int64_t kv_width() const { return num_kv_heads * head_dim; }
};

// Reads a Hugging Face config.json as users have it: the keys a family needs are read and
// type-checked, HF's other keys are ignored; a missing or ill-typed needed key is an InputError
// naming the file, the key and what was expected.
TransformerConfig read_hf_config(const JsonDocument& doc);
TransformerConfig load_hf_config(const std::string& path);
// Reads the model fields written inline in a scenario (the same keys as config.json, strictly:
// an unknown key is an InputError with the nearest known key).
TransformerConfig read_inline_model(ValueReader model);
// A built-in preset (models/presets/NAME.json); an unknown name is an InputError suggesting the
// nearest. `file`/`pointer` locate the reference in the user's file for the error.
TransformerConfig builtin_model_preset(std::string_view name, const std::string& file = "",
                                       const std::string& pointer = "");
std::vector<std::string> builtin_model_preset_names();
// The model a scenario names, whichever way it names it.
TransformerConfig resolve_model(const ModelRef& ref);

std::string_view to_string(MlpKind k);
std::string_view to_string(AttentionKind k);

}  // namespace clustersim::models
