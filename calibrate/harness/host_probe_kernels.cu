#include "calibrate/harness/host_probe_kernels.hpp"

#include <cstdint>

namespace clustersim::harness {

namespace {

// The block copies vectors [from, to) (whole trips of its threads); a thread issues all 8 loads of
// a trip before its stores, as NCCL's reduceCopyPacks does.
__device__ __forceinline__ void copy_span(float4* __restrict__ out, const float4* __restrict__ in, std::uint64_t from,
                                          std::uint64_t to) {
  constexpr int U = 8;
  constexpr std::uint64_t stride = kHostProbeThreads;
  for (std::uint64_t base = from + threadIdx.x; base < to; base += U * stride) {
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = in[base + u * stride];
#pragma unroll
    for (int u = 0; u < U; ++u) out[base + u * stride] = v[u];
  }
}

// Each block copies its contiguous share in one go.
__global__ void __launch_bounds__(kHostProbeThreads, 1)
    host_probe_kernel(float4* __restrict__ out, const float4* __restrict__ in, std::uint64_t per_block) {
  const std::uint64_t begin = per_block * blockIdx.x;
  copy_span(out, in, begin, begin + per_block);
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
  const std::uint64_t begin = per_block * blockIdx.x;
  for (std::uint64_t slice = begin; slice < begin + per_block; slice += per_slice) {
    if (threadIdx.x == 0) (void)*reinterpret_cast<const volatile float*>(in + slice);
    __syncthreads();
    copy_span(out, in, slice, slice + per_slice);
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
