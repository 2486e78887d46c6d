#pragma once
// The matrix products and attention calls of one transformer layer (plus the LM head), for the
// Llama-3 shapes the GEMM and attention tests measure, split by tensor parallelism as Megatron-LM
// splits them (column-parallel QKV and MLP up/gate, row-parallel attention output and MLP down,
// vocabulary-parallel LM head).
//
// A linear layer Y[T x N] = X[T x K] W[N x K]^T (T tokens) runs three products in training:
//   fwd:   Y  = X  W^T   m = T, n = N, k = K
//   dgrad: dX = dY W     m = T, n = K, k = N
//   wgrad: dW = dY^T X   m = N, n = K, k = T
// each 2mnk FLOPs. Shapes (per TP rank, TP = t):
//   qkv      N = (heads + 2 kv_heads) head_dim / t,  K = hidden
//   attn_out N = hidden,                            K = heads head_dim / t
//   mlp_up   N = intermediate / t,                  K = hidden   (mlp_gate has the same shape)
//   mlp_down N = hidden,                            K = intermediate / t
//   lm_head  N = vocab / t,                         K = hidden
// Attention of a layer per TP rank: heads / t query heads, max(1, kv_heads / t) key/value heads.

#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/harness/harness_options.hpp"

namespace clustersim::harness {

struct ModelDims {
  std::string name;
  std::int64_t hidden;
  std::int64_t intermediate;
  std::int64_t heads;
  std::int64_t kv_heads;
  std::int64_t head_dim;
  std::int64_t vocab;
};

// llama3-8b and llama3-70b (Hugging Face meta-llama/Meta-Llama-3-8B and -70B config.json).
ModelDims model_dims(const std::string& name);

struct GemmShape {
  std::string name;   // qkv, attn_out, mlp_up, mlp_down, lm_head, square
  std::string model;  // "" for square
  int tp = 1;
  std::int64_t tokens = 0;
  std::string pass;   // fwd, dgrad, wgrad
  std::string dtype;  // bf16, fp8
  std::int64_t m = 0, n = 0, k = 0;
  // Storage of the row-major operands of C[m x n] = A . B: A is m x k ("N") or stored k x m ("T");
  // B is k x n ("N") or stored n x k ("T"). fp8 always runs with A "N", B "T" (cuBLASLt's fp8
  // kernels on Hopper take only this layout; Transformer Engine keeps transposed copies for it).
  bool a_transposed = false;
  bool b_transposed = true;
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
};

std::vector<GemmShape> gemm_shapes(const Options& opt);

struct AttentionShape {
  std::string model;
  int tp = 1;
  std::int64_t batch = 1, heads = 1, kv_heads = 1, seq_len = 1, head_dim = 128;
  std::string direction;  // fwd, bwd
  // Causal attention FLOPs (FlashAttention's count): fwd 4 b h s^2 d / 2, bwd 2.5 times fwd.
  double flops() const;
};

std::vector<AttentionShape> attention_shapes(const Options& opt);

}  // namespace clustersim::harness
