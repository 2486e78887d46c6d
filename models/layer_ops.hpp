#pragma once
// The kernels of one transformer layer on one rank, forward and backward, in execution order, for
// one micro-batch of b x s tokens under a parallel layout (kernel_op.hpp gives the counting).
//
// Token counts on a rank (parallel_layout.hpp): T = b s / cp tokens through the GEMMs and the
// attention; T_sp = T / tp with sequence parallelism (else T) through norms, dropout, residual
// adds and the router. Widths on a rank: tensor-split projections use H/tp heads, Hkv/tp kv
// heads, f/tp MLP columns, V/tp vocabulary rows; MLA's down-projections (q_a, kv_a) are whole.
//
// Forward of a pre-norm decoder layer:
//   input_norm (T_sp h) | q, k, v (one fused qkv GEMM under Megatron) or MLA q_a, q_a_norm, q_b,
//   kv_a, kv_a_norm, kv_b | rotary | flash_attn | attn_out | attn_residual (+dropout) |
//   post_attn_norm | MLP: gate+up (fused under Megatron), swiglu or gelu, down
//                  | MoE: router, router_topk, moe_permute, expert_gate_up, expert_act,
//                    expert_down (grouped GEMMs over E/ep local experts of T k ep / E tokens each:
//                    T k routed tokens per rank under balanced routing), moe_unpermute, shared
//                    expert GEMMs (+ Qwen's shared-expert gate)
//   | mlp_residual (+dropout)
// With training.attention "unfused" the flash_attn kernel is replaced by Megatron-LM's pre-2022
// core attention: attn_scores (batched QK^T GEMM), attn_softmax, attn_dropout, attn_values
// (batched PV GEMM) over the full s x s square (see unfused_attention in layer_ops.cpp).
// LoRA adds, per targeted projection, lora.<p>.A (T x in -> r), lora.<p>.B (T x r -> out) and an
// add; the frozen base GEMMs keep their dgrad (gradients still flow to earlier adapters) but have no
// wgrad, and activations are still stored for the backward through the frozen layers.
// Backward: every op of the forward in reverse, GEMMs as dgrad then wgrad; element-wise backward
// bytes as each kernel reads and writes them. Activation checkpointing adds recomputation:
//   full       the whole layer's forward replayed (Pass::RECOMPUTE) before its backward, for the
//              layers training.recompute_method replays (recompute.hpp: every layer under
//              "uniform", the first recompute_num_layers of each chunk under "block")
//   selective  the attention core (flash attention forward) replayed just before its backward
//              (Korthikanti et al. 2022: recompute the attention core; with flash attention it
//              saves little memory)
// The embedding (first stage) and the final norm, LM head and cross-entropy (last stage) are
// separate lists.
//
// training.implementation "hf_eager" (Hugging Face transformers modules run eagerly by PyTorch,
// as profiled on H200 with torch 2.11 / transformers 5.17): per eager op a group of vectorized
// kernels (bytes at the HBM rate) and a group of strided ones (kernel_op.hpp MemoryPath::STRIDED:
// elements at PyTorch's generic-kernel rate); e = elements of the op's tensor, B/e bytes each:
//   RMSNorm      forward  8 kernels: up-cast (strided 6), pow (8), mean (4), + eps and rsqrt per
//                         row, x * rstd (strided 8), down-cast (6), weight * y (strided 4)
//                backward 16 kernels: strided 4 + 6 + 8 + 4, vectorized 70 (+ 6 per extra
//                         consumer of the output whose gradient autograd adds: 2 for q, k, v)
//   rotary       per q and k, 5 strided kernels forward (20 B/e, 4.5 e elements), 9 backward
//   SwiGLU       silu (4) and the product (6); backward 3 kernels of 6
//   loss         logits.float() (strided 6), log_softmax (16), nll; backward fill (4), log_softmax
//                backward (16), down-cast (6); over T V logits
// and the separate q, k, v and gate, up GEMMs of the PyTorch modules.
//
// training.implementation "eager" (plain PyTorch modules, profiled on H100 with torch 2.11 by
// calibrate/training_probe/impl_profile.py; per-layer lists in
// calibrate/results/lent-1xh100-2026-12-07-impl/impl-kernels.json, B/e as above):
//   RMSNorm      F.rms_norm: forward 1 kernel (4); backward 2 (input gradient 6, weight partials
//                4) + one add (6) per extra consumer
//   rotary       forward as hf_eager; backward per q and k: 5 strided kernels and one cat
//   SwiGLU, loss as hf_eager; residual adds 1 kernel each way
//   attention    SDPA (cuDNN flash attention) + 4 backward kernels (dO.O, dQ down-cast, the GQA
//                head reductions of dK and dV)
// 16 + 7 GEMM + 1 attention kernels forward, 24 + 14 + 5 backward per Llama layer, as profiled.
// training.implementation "compiled" (torch.compile of those modules, same profile):
//   residual add + next norm in one kernel (8); backward 3 kernels per norm (22.9 effective)
//   rotary 1 kernel per q and k (9.3 effective; backward 18); SwiGLU 1 kernel (6; backward 10)
//   loss: online log-softmax (4 B per logit; backward 4); attention as eager
// 5 + 7 + 1 kernels forward, 9 + 14 + 5 backward per layer. "Effective" bytes: the profiled
// duration at the measured 3.0 TB/s copy rate, where a kernel computes cos/sin or reduces.

#include <cstdint>
#include <vector>

#include "models/kernel_op.hpp"
#include "models/parallel_layout.hpp"
#include "models/scenario.hpp"
#include "models/transformer_config.hpp"

namespace clustersim::models {

struct LayerOps {
  std::vector<KernelOp> forward;
  std::vector<KernelOp> backward;  // recomputation included, in execution order
};

class LayerOpBuilder {
 public:
  // The three arguments must outlive the builder.
  LayerOpBuilder(const TransformerConfig& model, const ParallelLayout& layout, const TrainingSpec& training);

  LayerOps layer(std::int64_t layer) const;
  LayerOps embedding() const;  // token (and position) embedding: stage 0, chunk 0
  LayerOps head() const;       // final norm, LM head, loss: last stage, last chunk

 private:
  const TransformerConfig& model_;
  const ParallelLayout& layout_;
  const TrainingSpec& training_;
};

}  // namespace clustersim::models
