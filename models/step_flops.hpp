#pragma once
// FLOPs of a whole training step counted the way papers count them, for achieved TFLOP/s and MFU.
//
// Narayanan et al., SC'21, "Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM", Eq. 3, for a GPT of l layers, width h, vocabulary V, sequence s, batch B, with full
// activation recomputation:
//   F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h))
// Derivation: a layer's forward GEMMs are QKV 6 B s h^2, attention output 2 B s h^2 and the 4h MLP
// 16 B s h^2 (24 B s h^2), plus the attention scores and values 4 B s^2 h (counted over the whole
// s x s square); backward is twice the forward and full recomputation one more forward: 4 x
// (24 B s h^2 + 4 B s^2 h) = 96 B s h^2 (1 + s/(6h)). The LM head's 2 B s h V forward and twice that
// backward (not recomputed) give 6 B s h V = 96 B s l h^2 x V/(16 l h).
//
// Generalised (any family): per token and layer, forward = 2 x (active GEMM weight elements:
// projections, MLP or k routed + shared experts, router, LoRA adapters) + attention 2 s H (d_qk +
// d_v) x (1 for the paper's square, 1/2 for the causal half); passes = 3 (forward, 2x backward) +
// 1 with full recomputation of the GEMMs and attention, + 1 of the attention alone under selective
// recomputation; the LM head 2 h V forward, 3x with backward. For a GPT this is Eq. 3 exactly.

#include <cstdint>

#include "models/scenario.hpp"
#include "models/transformer_config.hpp"

namespace clustersim::models {

// Eq. 3 as printed (B = global batch in sequences).
double megatron_eq3_flops(double global_batch, double seq_len, double layers, double hidden, double vocab);

enum class AttentionCounting { FULL_SQUARE, CAUSAL_HALF };

struct StepFlopsOptions {
  AttentionCounting attention = AttentionCounting::FULL_SQUARE;
  bool include_recompute = true;  // count the recomputation passes (Eq. 3 does; "model FLOPs" for MFU do not)
  std::int64_t vocab_size = 0;    // 0: the model's; Megatron pads the vocabulary (51200 in SC'21)
  // Model chunks (pipeline x virtual stages) that recompute_method "block" counts its layers in
  // (recompute.hpp); 1: the whole model is one chunk.
  std::int64_t chunks = 1;
};

// FLOPs of one step over all ranks (training.global_batch_size sequences of training.seq_len).
double step_flops(const TransformerConfig& model, const TrainingSpec& training, const StepFlopsOptions& options = {});
// Forward FLOPs per token of one layer, excluding attention (2 x active GEMM weight elements).
double layer_gemm_flops_per_token(const TransformerConfig& model, std::int64_t layer, const LoraSpec* lora = nullptr);

}  // namespace clustersim::models
