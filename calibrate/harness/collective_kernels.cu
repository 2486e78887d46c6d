#include "calibrate/harness/collective_kernels.hpp"

#include <cmath>

#include "calibrate/harness/cuda_checks.hpp"

namespace clustersim::harness {

namespace {

__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
  // splitmix64 finalizer: a bijection that spreads every input bit over the output.
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

__device__ inline float pattern_value(std::uint64_t seed, int rank, std::uint64_t index) {
  const std::uint64_t h = mix64(index ^ mix64(seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(rank) + 1));
  return static_cast<float>(static_cast<int>(h & 63) - 32);
}

__device__ inline std::uint64_t global_thread() {
  return static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ inline std::uint64_t grid_threads() { return static_cast<std::uint64_t>(gridDim.x) * blockDim.x; }

__global__ void fill_pattern_kernel(float* dst, std::uint64_t n, std::uint64_t seed, int rank, std::uint64_t first) {
  for (std::uint64_t i = global_thread(); i < n; i += grid_threads()) dst[i] = pattern_value(seed, rank, first + i);
}

__global__ void fill_poison_kernel(float* dst, std::uint64_t n) {
  for (std::uint64_t i = global_thread(); i < n; i += grid_threads()) dst[i] = __int_as_float(0x7fc00000);
}

__device__ float expected_value(const CollectiveCheck& c, std::uint64_t j) {
  switch (c.kind) {
    case CollectiveKind::ALL_REDUCE:
    case CollectiveKind::REDUCE: {
      float s = 0;
      for (int r = 0; r < c.nranks; ++r) s += pattern_value(c.seed, r, j);
      return s;
    }
    case CollectiveKind::ALL_GATHER:
      return pattern_value(c.seed, static_cast<int>(j / c.count), j % c.count);
    case CollectiveKind::REDUCE_SCATTER: {
      float s = 0;
      const std::uint64_t src = static_cast<std::uint64_t>(c.rank) * c.count + j;
      for (int r = 0; r < c.nranks; ++r) s += pattern_value(c.seed, r, src);
      return s;
    }
    case CollectiveKind::BROADCAST:
      return pattern_value(c.seed, c.root, j);
    case CollectiveKind::ALLTOALL: {
      const int peer = static_cast<int>(j / c.count);
      return pattern_value(c.seed, peer, static_cast<std::uint64_t>(c.rank) * c.count + j % c.count);
    }
    case CollectiveKind::SENDRECV:
      return pattern_value(c.seed, (c.rank - 1 + c.nranks) % c.nranks, j);
  }
  return 0;
}

__global__ void verify_kernel(CollectiveCheck c, const float* out, unsigned long long* wrong) {
  unsigned long long local = 0;
  for (std::uint64_t j = global_thread(); j < c.out_elements; j += grid_threads()) {
    // Bitwise: the values are exact integers, and NaN (poison) never equals anything.
    if (!(out[j] == expected_value(c, j))) ++local;
  }
  if (local != 0) atomicAdd(wrong, local);
}

unsigned grid_for(std::size_t n) {
  const std::size_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65536 ? 65536 : blocks));
}

}  // namespace

void fill_pattern(float* dst, std::size_t n, std::uint64_t seed, int rank, std::size_t first_index, cudaStream_t stream) {
  if (n == 0) return;
  fill_pattern_kernel<<<grid_for(n), 256, 0, stream>>>(dst, n, seed, rank, first_index);
  CHECK_LAUNCH();
}

void fill_poison(float* dst, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  fill_poison_kernel<<<grid_for(n), 256, 0, stream>>>(dst, n);
  CHECK_LAUNCH();
}

void verify_collective(const CollectiveCheck& check, const float* out, unsigned long long* wrong, cudaStream_t stream) {
  if (check.out_elements == 0) return;
  verify_kernel<<<grid_for(check.out_elements), 256, 0, stream>>>(check, out, wrong);
  CHECK_LAUNCH();
}

}  // namespace clustersim::harness
