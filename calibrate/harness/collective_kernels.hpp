#pragma once
// Device kernels that give the collectives their data and check their results, as nccl-tests -c 1
// does, but without an "expected" buffer: the expected value of every output element is recomputed
// on the GPU from the same formula that filled the inputs.
//
// Input element i of rank r, for a seed s: v(s, r, i) = (h(s, r, i) mod 64) - 32, an integer in
// [-32, 31] held in a float. Sums of up to 2^18 such values are exact in float32 (|sum| < 2^23), so
// a reduction is exact whatever order NCCL adds in, and the check compares bit for bit; a poisoned
// (NaN) element that a collective failed to write never compares equal.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace clustersim::harness {

enum class CollectiveKind : int { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, REDUCE, ALLTOALL, SENDRECV };

// dst[i] = v(seed, rank, first_index + i) for i in [0, n).
void fill_pattern(float* dst, std::size_t n, std::uint64_t seed, int rank, std::size_t first_index, cudaStream_t stream);
// dst[i] = NaN for i in [0, n).
void fill_poison(float* dst, std::size_t n, cudaStream_t stream);

struct CollectiveCheck {
  CollectiveKind kind;
  std::uint64_t seed;
  int rank;
  int nranks;
  int root;
  std::size_t count;        // nccl-tests' paramcount: per-rank count for all_gather/reduce_scatter/alltoall
  std::size_t out_elements; // elements of the output region to check on this rank
};

// Counts output elements that differ from the expected value; adds the count to *wrong (device).
void verify_collective(const CollectiveCheck& check, const float* out, unsigned long long* wrong, cudaStream_t stream);

}  // namespace clustersim::harness
