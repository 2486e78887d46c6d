#include "calibrate/harness/gemm_check.hpp"

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <vector>

#include "calibrate/harness/cuda_checks.hpp"

namespace clustersim::harness {

namespace {

__device__ inline double load(const void* p, std::int64_t i, bool fp8) {
  if (fp8) return static_cast<double>(static_cast<float>(static_cast<const __nv_fp8_e4m3*>(p)[i]));
  return static_cast<double>(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]));
}

__device__ inline std::uint64_t hash(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// One block per sample: the block reduces the k products of one output element in float64.
__global__ void check_kernel(GemmCheckArgs g, std::uint64_t seed, double* err) {
  const std::int64_t i = static_cast<std::int64_t>(hash(seed + 2 * blockIdx.x) % static_cast<std::uint64_t>(g.m));
  const std::int64_t j = static_cast<std::int64_t>(hash(seed + 2 * blockIdx.x + 1) % static_cast<std::uint64_t>(g.n));
  double sum = 0, mag = 0;
  for (std::int64_t p = threadIdx.x; p < g.k; p += blockDim.x) {
    const double a = load(g.a, g.a_transposed ? p * g.m + i : i * g.k + p, g.fp8);
    const double b = load(g.b, g.b_transposed ? j * g.k + p : p * g.n + j, g.fp8);
    sum += a * b;
    mag += fabs(a * b);
  }
  __shared__ double s_sum[256];
  __shared__ double s_mag[256];
  s_sum[threadIdx.x] = sum;
  s_mag[threadIdx.x] = mag;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      s_sum[threadIdx.x] += s_sum[threadIdx.x + w];
      s_mag[threadIdx.x] += s_mag[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const double c = static_cast<double>(__bfloat162float(static_cast<const __nv_bfloat16*>(g.c)[i * g.n + j]));
    err[blockIdx.x] = fabs(c - s_sum[0]) / (s_mag[0] + 1e-30);
  }
}

}  // namespace

double gemm_max_error(const GemmCheckArgs& args, int samples, std::uint64_t seed, cudaStream_t stream) {
  double* err = nullptr;
  CHECK_CUDA(cudaMalloc(&err, sizeof(double) * static_cast<std::size_t>(samples)));
  std::vector<double> host(static_cast<std::size_t>(samples), 0.0);
  cudaError_t rc = cudaSuccess;
  check_kernel<<<samples, 256, 0, stream>>>(args, seed, err);
  rc = cudaGetLastError();
  if (rc == cudaSuccess) rc = cudaMemcpyAsync(host.data(), err, sizeof(double) * host.size(), cudaMemcpyDeviceToHost, stream);
  if (rc == cudaSuccess) rc = cudaStreamSynchronize(stream);
  cudaFree(err);
  CHECK_CUDA(rc);
  double worst = 0;
  for (const double e : host) {
    if (std::isnan(e)) return e;
    worst = std::max(worst, e);
  }
  return worst;
}

}  // namespace clustersim::harness
