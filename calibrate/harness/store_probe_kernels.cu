#include "calibrate/harness/store_probe_kernels.hpp"

#include <cstdint>

namespace clustersim::harness {

namespace {

__device__ __forceinline__ float4 add4(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

// All loads of a trip are issued before its first store, as NCCL's reduceCopyPacks does with its
// Unroll packs per thread, so the block keeps unroll x 16 B x 512 threads in flight.
template <StorePattern P, int U>
__global__ void __launch_bounds__(kStoreProbeThreads, 1)
    store_probe_kernel(float4* __restrict__ out0, float4* __restrict__ out1, const float4* __restrict__ in0,
                       const float4* __restrict__ in1, std::uint64_t n) {
  constexpr std::uint64_t stride = kStoreProbeThreads;
  for (std::uint64_t base = threadIdx.x; base < n; base += U * stride) {
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = in0[base + u * stride];
    if constexpr (P == StorePattern::SUM2) {
      float4 w[U];
#pragma unroll
      for (int u = 0; u < U; ++u) w[u] = in1[base + u * stride];
#pragma unroll
      for (int u = 0; u < U; ++u) v[u] = add4(v[u], w[u]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) out0[base + u * stride] = v[u];
    if constexpr (P == StorePattern::DUAL) {
#pragma unroll
      for (int u = 0; u < U; ++u) out1[base + u * stride] = v[u];
    }
  }
}

template <int U>
void launch_unrolled(StorePattern pattern, float4* o0, float4* o1, const float4* i0, const float4* i1, std::uint64_t n,
                     cudaStream_t stream) {
  switch (pattern) {
    case StorePattern::COPY:
      store_probe_kernel<StorePattern::COPY, U><<<1, kStoreProbeThreads, 0, stream>>>(o0, o1, i0, i1, n);
      break;
    case StorePattern::SUM2:
      store_probe_kernel<StorePattern::SUM2, U><<<1, kStoreProbeThreads, 0, stream>>>(o0, o1, i0, i1, n);
      break;
    case StorePattern::DUAL:
      store_probe_kernel<StorePattern::DUAL, U><<<1, kStoreProbeThreads, 0, stream>>>(o0, o1, i0, i1, n);
      break;
  }
}

}  // namespace

cudaError_t launch_store_probe(StorePattern pattern, int unroll, void* out0, void* out1, const void* in0,
                               const void* in1, std::size_t bytes, cudaStream_t stream) {
  auto* o0 = static_cast<float4*>(out0);
  auto* o1 = static_cast<float4*>(out1);
  const auto* i0 = static_cast<const float4*>(in0);
  const auto* i1 = static_cast<const float4*>(in1);
  const std::uint64_t n = bytes / sizeof(float4);
  switch (unroll) {
    case 1: launch_unrolled<1>(pattern, o0, o1, i0, i1, n, stream); break;
    case 2: launch_unrolled<2>(pattern, o0, o1, i0, i1, n, stream); break;
    case 4: launch_unrolled<4>(pattern, o0, o1, i0, i1, n, stream); break;
    case 8: launch_unrolled<8>(pattern, o0, o1, i0, i1, n, stream); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace clustersim::harness
