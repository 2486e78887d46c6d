#pragma once
// Reference for causal scaled dot-product attention at sampled rows, in float64 on the GPU.
//
// Layout "BSHD" (batch, sequence, head, head_dim; the layout Megatron-LM and Transformer Engine
// hand to cuDNN), bf16. Grouped-query attention: query head h reads key/value head h / (H / Hk).
// For a sampled (b, h, i): o_ref = sum_{j<=i} softmax_j(scale q_i . k_j) v_j, and the error is
// ||o - o_ref||_2 / ||o_ref||_2 (bf16 inputs and output give about 4e-3).

#include <cuda_runtime.h>

#include <cstdint>

namespace clustersim::harness {

struct AttentionCheckArgs {
  const void* q;
  const void* k;
  const void* v;
  const void* o;
  std::int64_t batch, heads, kv_heads, seq_len, head_dim;
  float scale;
};

// Largest error over `samples` rows (NaN if any row is NaN). Synchronizes `stream`.
double attention_max_error(const AttentionCheckArgs& args, int samples, std::uint64_t seed, cudaStream_t stream);

}  // namespace clustersim::harness
