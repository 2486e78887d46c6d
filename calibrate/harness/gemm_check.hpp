#pragma once
// Checks a matrix product at sampled output elements against a float64 dot product on the GPU.
//
// C[m x n] (row-major, bf16) = A . B with A stored m x k (or k x m when a_transposed) and B stored
// k x n (or n x k when b_transposed), inputs bf16 or fp8 e4m3. For each sampled (i, j):
//   err = |C[i][j] - ref| / sum_p |A[i][p] B[p][j]|
// normalised by the sum of magnitudes so cancellation does not inflate it. bf16 output rounding
// alone gives up to 2^-8 = 3.9e-3; a wrong layout gives errors near 1; NaN never passes.

#include <cuda_runtime.h>

#include <cstdint>

namespace clustersim::harness {

struct GemmCheckArgs {
  const void* a;
  const void* b;
  const void* c;
  std::int64_t m, n, k;
  bool a_transposed, b_transposed;
  bool fp8;  // inputs fp8 e4m3 (else bf16)
};

// Largest error over `samples` elements (NaN when any sample is NaN). Synchronizes `stream`.
double gemm_max_error(const GemmCheckArgs& args, int samples, std::uint64_t seed, cudaStream_t stream);

}  // namespace clustersim::harness
