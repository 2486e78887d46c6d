#include "calibrate/harness/attention_check.hpp"

#include <cuda_bf16.h>

#include <cmath>
#include <vector>

#include "calibrate/harness/cuda_checks.hpp"

namespace clustersim::harness {

namespace {

constexpr int kMaxHeadDim = 256;

__device__ inline double ld(const void* p, std::int64_t i) {
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

// One block of head_dim threads per sampled row; thread c owns output dimension c. Online softmax:
// a running maximum m and denominator l, the accumulator rescaled when m grows.
__global__ void attention_ref_kernel(AttentionCheckArgs a, std::uint64_t seed, double* err) {
  __shared__ double partial[kMaxHeadDim];
  __shared__ double score;
  __shared__ double num[kMaxHeadDim];
  const int c = threadIdx.x;
  const std::int64_t d = a.head_dim;
  const std::int64_t b = static_cast<std::int64_t>(hash(seed + 3 * blockIdx.x) % static_cast<std::uint64_t>(a.batch));
  const std::int64_t h = static_cast<std::int64_t>(hash(seed + 3 * blockIdx.x + 1) % static_cast<std::uint64_t>(a.heads));
  const std::int64_t i = static_cast<std::int64_t>(hash(seed + 3 * blockIdx.x + 2) % static_cast<std::uint64_t>(a.seq_len));
  const std::int64_t hk = h / (a.heads / a.kv_heads);
  auto q_at = [&](std::int64_t s) { return ((b * a.seq_len + s) * a.heads + h) * d; };
  auto kv_at = [&](std::int64_t s) { return ((b * a.seq_len + s) * a.kv_heads + hk) * d; };
  const double qc = ld(a.q, q_at(i) + c);
  double m = -1e300, l = 0, acc = 0;
  for (std::int64_t j = 0; j <= i; ++j) {
    partial[c] = qc * ld(a.k, kv_at(j) + c);
    __syncthreads();
    if (c == 0) {
      double s = 0;
      for (int t = 0; t < d; ++t) s += partial[t];
      score = s * a.scale;
    }
    __syncthreads();
    const double sj = score;
    const double m_new = sj > m ? sj : m;
    const double alpha = exp(m - m_new);
    const double p = exp(sj - m_new);
    l = l * alpha + p;
    acc = acc * alpha + p * ld(a.v, kv_at(j) + c);
    m = m_new;
    __syncthreads();
  }
  const double ref = acc / l;
  const double got = ld(a.o, q_at(i) + c);
  partial[c] = (got - ref) * (got - ref);
  num[c] = ref * ref;
  __syncthreads();
  if (c == 0) {
    double e = 0, r = 0;
    for (int t = 0; t < d; ++t) {
      e += partial[t];
      r += num[t];
    }
    err[blockIdx.x] = sqrt(e) / (sqrt(r) + 1e-30);
  }
}

}  // namespace

double attention_max_error(const AttentionCheckArgs& args, int samples, std::uint64_t seed, cudaStream_t stream) {
  if (args.head_dim > kMaxHeadDim || args.head_dim < 1) return NAN;
  double* err = nullptr;
  CHECK_CUDA(cudaMalloc(&err, sizeof(double) * static_cast<std::size_t>(samples)));
  std::vector<double> host(static_cast<std::size_t>(samples), 0.0);
  attention_ref_kernel<<<samples, static_cast<unsigned>(args.head_dim), 0, stream>>>(args, seed, err);
  cudaError_t rc = cudaGetLastError();
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
