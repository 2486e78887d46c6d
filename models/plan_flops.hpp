#pragma once
// Model FLOPs for the planner's MFU, as Megatron-LM (Narayanan et al., SC'21; Korthikanti et al.,
// 2022) and PaLM (Chowdhery et al., 2022, appendix B) define them: the FLOPs of the matrix
// multiplications the training method runs, forward and backward, each counted once.
// Recomputation is not counted (hardware FLOPs, HFU's numerator, would count it), so recomputing
// activations lowers MFU instead of raising it.
//
// Per token, for a weight of N elements multiplied with every token (step_flops.hpp counts the
// same GEMMs, attention and LM head):
//   forward 2N, input gradient 2N, weight gradient 2N:  6N trained,  4N frozen (no weight gradient)
//   attention (no weights): forward a = 2 s H (d_qk + d_v) over the full s x s square, 3a in all
//   LM head h x V: 6 h V trained, 4 h V frozen
// so full training counts 6N + 3a + 6hV per token (step_flops without recomputation), and LoRA,
// whose base weights and LM head are frozen and whose adapters A, B are trained:
//   4 N_base + 6 N_adapters + 3a + 4 h V
// Llama-3-8B, s = 4096, LoRA r16 on q, k, v, o: N_base 6.979e9, N_adapters 1.363e7,
// 32 a = 2.147e9, 2 h V = 1.051e9: 36.54 GFLOP per token instead of 51.55 (x 0.7089).
// Not counted: the input gradient of the first layer's projections, which a frozen embedding does
// not need (q, k, v of one layer: 0.14% for Llama-3-8B).
//
// The planner's MFU = these FLOPs per step / (step time x GPUs x peak): the step model's MFU
// rescaled by the ratio of these FLOPs to the ones it counted (same peak, same step time).

#include "models/scenario.hpp"
#include "models/step_estimate.hpp"
#include "models/transformer_config.hpp"

namespace clustersim::models {

// Model FLOPs of one step over all ranks (training.global_batch_size sequences of seq_len).
double method_model_flops(const TransformerConfig& model, const TrainingSpec& training);

// Sets `estimate`'s model FLOPs to method_model_flops and rescales its MFU to match (an estimate
// that counted no FLOPs is left as it is).
void count_method_flops(StepEstimate& estimate, const TransformerConfig& model, const TrainingSpec& training);

// The definition, in one sentence, for the report's assumptions.
const char* mfu_definition();

}  // namespace clustersim::models
