#include "models/plan_flops.hpp"

#include "models/parameter_tensors.hpp"
#include "models/step_flops.hpp"

namespace clustersim::models {

double method_model_flops(const TransformerConfig& m, const TrainingSpec& t) {
  const double all = step_flops(m, t, {.attention = AttentionCounting::FULL_SQUARE, .include_recompute = false});
  if (t.fine_tuning != FineTuning::LORA) return all;
  // step_flops counts every GEMM weight three times its forward FLOPs; a frozen one runs no
  // weight-gradient GEMM, one forward's worth less.
  double frozen = 0;  // forward FLOPs per token of the frozen GEMM weights
  for (std::int64_t l = 0; l < m.num_layers; ++l) {
    for (const auto& x : layer_parameter_tensors(m, l, &t.lora)) {
      if (!x.gemm || x.trainable) continue;
      const double active = x.shard == ShardKind::EXPERT ? static_cast<double>(x.numel) /
                                                               static_cast<double>(m.moe.num_experts) *
                                                               m.moe.experts_per_token
                                                         : static_cast<double>(x.numel);
      frozen += 2.0 * active;
    }
  }
  frozen += 2.0 * static_cast<double>(m.hidden_size) * static_cast<double>(m.vocab_size);  // the LM head
  const double tokens = static_cast<double>(t.global_batch_size) * static_cast<double>(t.seq_len);
  return all - tokens * frozen;
}

void count_method_flops(StepEstimate& e, const TransformerConfig& m, const TrainingSpec& t) {
  if (!(e.model_flops_per_step > 0)) return;
  const double f = method_model_flops(m, t);
  e.mfu *= f / e.model_flops_per_step;
  e.model_flops_per_step = f;
}

const char* mfu_definition() {
  return "model FLOPs as Megatron-LM and PaLM define them: the GEMMs and attention the method runs, forward and "
         "backward, counted once; recomputation not counted (hardware FLOPs would count it); frozen weights (LoRA's "
         "base and LM head) have no weight-gradient GEMM, 4 FLOPs per weight per token instead of 6; attention over "
         "the full s x s square; divided by step time x GPUs x the GPU's dense peak at the training precision";
}

}  // namespace clustersim::models
