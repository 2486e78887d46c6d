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

// The same copy in steps of `per_slice` vectors, each step synchronised as NCCL's Simple protocol
// synchronises one over SHM (prims_simple.h): a thread polls the step's flag before the block
// copies (here a volatile load of the slice's first input vector), and after the copy the block
// waits for all its threads, one thread makes the stores visible to the whole system
// (__threadfence_system) and posts the step's flag (here a volatile store of the slice's first
// output vector, with the value it already holds, so the copy stays exact).
__global__ void __launch_bounds__(kHostProbeThreads, 1)
    host_probe_step_kernel(float4* __restrict__ out, const float4* __restrict__ in, std::uint64_t per_block,
                           std::uint64_t per_slice) {
  constexpr int U = 8;
  constexpr std::uint64_t stride = kHostProbeThreads;
  const std::uint64_t begin = per_block * blockIdx.x;
  for (std::uint64_t slice = begin; slice < begin + per_block; slice += per_slice) {
    if (threadIdx.x == 0) (void)*reinterpret_cast<const volatile float*>(in + slice);
    __syncthreads();
    for (std::uint64_t base = slice + threadIdx.x; base < slice + per_slice; base += U * stride) {
      float4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) v[u] = in[base + u * stride];
#pragma unroll
      for (int u = 0; u < U; ++u) out[base + u * stride] = v[u];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();
      const float4 flag = in[slice];
      *reinterpret_cast<volatile float*>(out + slice) = flag.x;
    }
    __syncthreads();
  }
}

}  // namespace

cudaError_t launch_host_probe(int blocks, void* out, const void* in, std::size_t bytes, cudaStream_t stream,
                              std::size_t slice_bytes) {
  const std::uint64_t vectors = bytes / sizeof(float4);
  if (slice_bytes == 0) {
    host_probe_kernel<<<blocks, kHostProbeThreads, 0, stream>>>(static_cast<float4*>(out),
                                                                static_cast<const float4*>(in), vectors / blocks);
  } else {
    host_probe_step_kernel<<<blocks, kHostProbeThreads, 0, stream>>>(
        static_cast<float4*>(out), static_cast<const float4*>(in), vectors / blocks, slice_bytes / sizeof(float4));
  }
  return cudaGetLastError();
}

}  // namespace clustersim::harness
