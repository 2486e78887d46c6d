#include "calibrate/harness/random_fill.hpp"

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "calibrate/harness/cuda_checks.hpp"

namespace clustersim::harness {

namespace {

__device__ inline float uniform_value(std::uint64_t seed, std::uint64_t i, float scale) {
  std::uint64_t x = i + seed * 0x9e3779b97f4a7c15ULL;
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  // 24 random bits -> [-1, 1)
  const float u = static_cast<float>(x >> 40) * (1.0f / 8388608.0f) - 1.0f;
  return u * scale;
}

template <class T>
__device__ inline T convert(float v);
template <>
__device__ inline float convert<float>(float v) {
  return v;
}
template <>
__device__ inline __nv_bfloat16 convert<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}
template <>
__device__ inline __nv_fp8_e4m3 convert<__nv_fp8_e4m3>(float v) {
  return __nv_fp8_e4m3(v);
}

template <class T>
__global__ void fill_kernel(T* dst, std::uint64_t n, std::uint64_t seed, float scale) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] = convert<T>(uniform_value(seed, i, scale));
  }
}

}  // namespace

void fill_uniform(void* dst, FillType type, std::size_t n, std::uint64_t seed, float scale, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t blocks_wanted = (n + 255) / 256;
  const unsigned blocks = static_cast<unsigned>(blocks_wanted > 65536 ? 65536 : blocks_wanted);
  switch (type) {
    case FillType::F32:
      fill_kernel<<<blocks, 256, 0, stream>>>(static_cast<float*>(dst), n, seed, scale);
      break;
    case FillType::BF16:
      fill_kernel<<<blocks, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(dst), n, seed, scale);
      break;
    case FillType::FP8_E4M3:
      fill_kernel<<<blocks, 256, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(dst), n, seed, scale);
      break;
  }
  CHECK_LAUNCH();
}

}  // namespace clustersim::harness
