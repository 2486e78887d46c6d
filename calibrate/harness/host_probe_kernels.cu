#include "calibrate/harness/host_probe_kernels.hpp"

#include <cstdint>

namespace clustersim::harness {

namespace {

// Each block copies its contiguous share; a thread issues all 8 loads of a trip before its stores,
// as NCCL's reduceCopyPacks does.
__global__ void __launch_bounds__(kHostProbeThreads, 1)
    host_probe_kernel(float4* __restrict__ out, const float4* __restrict__ in, std::uint64_t per_block) {
  constexpr int U = 8;
  constexpr std::uint64_t stride = kHostProbeThreads;
  const std::uint64_t begin = per_block * blockIdx.x;
  for (std::uint64_t base = begin + threadIdx.x; base < begin + per_block; base += U * stride) {
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = in[base + u * stride];
#pragma unroll
    for (int u = 0; u < U; ++u) out[base + u * stride] = v[u];
  }
}

}  // namespace

cudaError_t launch_host_probe(int blocks, void* out, const void* in, std::size_t bytes, cudaStream_t stream) {
  const std::uint64_t vectors = bytes / sizeof(float4);
  host_probe_kernel<<<blocks, kHostProbeThreads, 0, stream>>>(static_cast<float4*>(out),
                                                              static_cast<const float4*>(in), vectors / blocks);
  return cudaGetLastError();
}

}  // namespace clustersim::harness
