#include "calibrate/harness/memory_kernels.hpp"

#include "calibrate/harness/cuda_checks.hpp"

namespace clustersim::harness {

namespace {

constexpr int kUnroll = 4;

__global__ void copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, std::uint64_t n) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) dst[i + u * stride] = v[u];
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

__global__ void read_kernel(const uint4* __restrict__ src, std::uint64_t n, std::uint32_t* sink) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::uint32_t acc = 0;
  for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < n; i += stride) {
    const uint4 v = src[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

__global__ void write_kernel(uint4* __restrict__ dst, std::uint64_t n) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint32_t x = static_cast<std::uint32_t>(i) * 2654435761u;
    dst[i] = make_uint4(x, x ^ 0x55555555u, x + 1u, ~x);
  }
}

__global__ void triad_kernel(float4* __restrict__ c, const float4* __restrict__ a, const float4* __restrict__ b,
                             std::uint64_t n, float s) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
    float4 x[kUnroll], y[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      x[u] = a[i + u * stride];
      y[u] = b[i + u * stride];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      c[i + u * stride] = make_float4(x[u].x + s * y[u].x, x[u].y + s * y[u].y, x[u].z + s * y[u].z, x[u].w + s * y[u].w);
    }
  }
  for (; i < n; i += stride) {
    const float4 x = a[i], y = b[i];
    c[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
  }
}

__global__ void empty_kernel(std::uint32_t* word) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *word += 1u;
}

__device__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void hold_kernel(std::uint64_t ns) {
  const std::uint64_t t0 = global_ns();
  while (global_ns() - t0 < ns) {
  }
}

}  // namespace

void launch_empty_kernel(std::uint32_t* word, unsigned blocks, unsigned threads, cudaStream_t stream) {
  empty_kernel<<<blocks, threads, 0, stream>>>(word);
  CHECK_LAUNCH();
}

void launch_hold_kernel(std::uint64_t nanoseconds, cudaStream_t stream) {
  hold_kernel<<<1, 1, 0, stream>>>(nanoseconds);
  CHECK_LAUNCH();
}

void launch_memory_kernel(MemoryKernel kind, void* dst, const void* src_a, const void* src_b, std::size_t bytes,
                          unsigned blocks, std::uint32_t* sink, cudaStream_t stream) {
  const std::uint64_t n = bytes / 16;
  switch (kind) {
    case MemoryKernel::COPY:
      copy_kernel<<<blocks, 256, 0, stream>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src_a), n);
      break;
    case MemoryKernel::READ:
      read_kernel<<<blocks, 256, 0, stream>>>(static_cast<const uint4*>(src_a), n, sink);
      break;
    case MemoryKernel::WRITE:
      write_kernel<<<blocks, 256, 0, stream>>>(static_cast<uint4*>(dst), n);
      break;
    case MemoryKernel::ELEMENTWISE:
      triad_kernel<<<blocks, 256, 0, stream>>>(static_cast<float4*>(dst), static_cast<const float4*>(src_a),
                                               static_cast<const float4*>(src_b), n, 1.5f);
      break;
  }
  CHECK_LAUNCH();
}

}  // namespace clustersim::harness
