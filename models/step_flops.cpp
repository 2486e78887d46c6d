#include "models/step_flops.hpp"

#include "models/parameter_tensors.hpp"
#include "models/recompute.hpp"

namespace clustersim::models {

double megatron_eq3_flops(double B, double s, double l, double h, double V) {
  return 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
}

double layer_gemm_flops_per_token(const TransformerConfig& m, std::int64_t layer, const LoraSpec* lora) {
  double active = 0;
  for (const auto& t : layer_parameter_tensors(m, layer, lora)) {
    if (!t.gemm) continue;
    active += t.shard == ShardKind::EXPERT
                  ? static_cast<double>(t.numel) / static_cast<double>(m.moe.num_experts) * m.moe.experts_per_token
                  : static_cast<double>(t.numel);
  }
  return 2.0 * active;
}

double step_flops(const TransformerConfig& m, const TrainingSpec& t, const StepFlopsOptions& o) {
  const LoraSpec* lora = t.fine_tuning == FineTuning::LORA ? &t.lora : nullptr;
  const double s = static_cast<double>(t.seq_len);
  const double tokens = static_cast<double>(t.global_batch_size) * s;
  const double square = o.attention == AttentionCounting::FULL_SQUARE ? 1.0 : 0.5;
  // Attention forward per query token: QK^T 2 s H d_qk and PV 2 s H d_v.
  const double attention = 2.0 * s * m.num_heads * (m.qk_head_dim() + m.v_head_dim()) * square;
  double per_token = 0;
  for (std::int64_t i = 0; i < m.num_layers; ++i) {
    double gemm_passes = 3, attention_passes = 3;
    if (o.include_recompute) {
      if (layer_recompute(t, i, m.num_layers, o.chunks).replayed) gemm_passes = attention_passes = 4;
      if (t.activation_checkpointing == Checkpointing::SELECTIVE) attention_passes = 4;
    }
    per_token += gemm_passes * layer_gemm_flops_per_token(m, i, lora) + attention_passes * attention;
  }
  const double vocab = static_cast<double>(o.vocab_size > 0 ? o.vocab_size : m.vocab_size);
  per_token += 3.0 * 2.0 * static_cast<double>(m.hidden_size) * vocab;
  return tokens * per_token;
}

}  // namespace clustersim::models
