// cuBLASLt matrix products of transformer-layer shapes (transformer_shapes.hpp), bf16 and, on GPUs
// of compute capability 8.9 and later, fp8 e4m3 (bf16 output, float32 accumulation).
//
// Method: random inputs (never zeros); the algorithm cuBLASLt's heuristic ranks first, as PyTorch
// and Transformer Engine take it, with a 32 MiB workspace; operand sets rotated so that together they
// are at least four times the L2 cache (small products would otherwise run from L2); a warm-up;
// then three repeats of back-to-back launches timed with CUDA events, the median repeat reported;
// the launch count per repeat adapts so a repeat lasts about 10 ms (at least 3, at most --gemm-iters).
// Every shape is checked at sampled elements against a float64 dot product (gemm_check.hpp).
// The shapes are spread over the GPUs of the sub-run (shape i on rank i mod n).
//
// cuBLASLt is column-major; the row-major C[m x n] = A . B runs as C^T = B^T A^T, i.e. cuBLASLt's
// (m', n', k') = (n, m, k) with its A the row-major B and its B the row-major A. "transa"/"transb"
// in the results are the operations passed to cuBLASLt (the forward pass is "T", "N").

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "calibrate/harness/cublas_checks.hpp"
#include "calibrate/harness/cuda_checks.hpp"
#include "calibrate/harness/gemm_check.hpp"
#include "calibrate/harness/gemm_sustained_bench.hpp"
#include "calibrate/harness/harness_json_writer.hpp"
#include "calibrate/harness/random_fill.hpp"
#include "calibrate/harness/transformer_shapes.hpp"
#include "calibrate/harness/worker_context.hpp"

namespace clustersim::harness {

namespace {

constexpr std::size_t kWorkspace = 32u << 20;

struct LtResources {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtResources() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  Events() {
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
  }
  ~Events() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
};

struct Pools {
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  void* workspace = nullptr;
  std::size_t a_bytes = 0, b_bytes = 0, c_bytes = 0;
  ~Pools() {
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaFree(workspace);
  }
};

struct Measured {
  double time_us = 0;
  int iters = 0;
  double max_error = 0;
  std::string transa, transb;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Measured measure(cublasLtHandle_t handle, const GemmShape& g, const Pools& pools, cudaStream_t stream, int max_iters,
                 std::size_t l2_bytes) {
  const bool fp8 = g.dtype == "fp8";
  const cudaDataType_t in_type = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  const std::size_t in_size = fp8 ? 1 : 2;
  // cuBLASLt operand A' = row-major B, B' = row-major A (see the top of this file).
  const cublasOperation_t opa = g.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opb = g.a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const std::uint64_t a_rows = g.b_transposed ? g.k : g.n, a_cols = g.b_transposed ? g.n : g.k;
  const std::uint64_t b_rows = g.a_transposed ? g.m : g.k, b_cols = g.a_transposed ? g.k : g.m;

  LtResources r;
  CHECK_CUBLAS(cublasLtMatmulDescCreate(&r.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(r.op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa)));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(r.op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb)));
  if (fp8) {
    // Transformer Engine accumulates fp8 forward products in the fast mode and gradients in the
    // split (precise) mode; the results record which one ran.
    const std::int8_t fast = g.pass == "fwd" ? 1 : 0;
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(r.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)));
  }
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&r.a, in_type, a_rows, a_cols, static_cast<std::int64_t>(a_rows)));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&r.b, in_type, b_rows, b_cols, static_cast<std::int64_t>(b_rows)));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&r.c, CUDA_R_16BF, g.n, g.m, g.n));
  CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&r.pref));
  const std::size_t ws = kWorkspace;
  CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(r.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(handle, r.op, r.a, r.b, r.c, r.c, r.pref, 1, &heur, &found));
  if (found == 0) throw Unavailable("cuBLASLt has no algorithm for this shape and type");

  const std::size_t a_set = static_cast<std::size_t>(g.m) * g.k * in_size;
  const std::size_t b_set = static_cast<std::size_t>(g.k) * g.n * in_size;
  const std::size_t c_set = static_cast<std::size_t>(g.m) * g.n * 2;
  if (a_set > pools.a_bytes || b_set > pools.b_bytes || c_set > pools.c_bytes) {
    throw Unavailable("shape larger than the buffers this GPU could hold");
  }
  std::size_t sets = std::min<std::size_t>({8, pools.a_bytes / a_set, pools.b_bytes / b_set, pools.c_bytes / c_set});
  sets = std::min<std::size_t>(sets, std::max<std::size_t>(1, (4 * l2_bytes + a_set + b_set + c_set - 1) / (a_set + b_set + c_set)));
  sets = std::max<std::size_t>(sets, 1);

  const float alpha = 1.0f, beta = 0.0f;
  auto launch = [&](std::size_t set) {
    const char* a_ptr = static_cast<const char*>(pools.a) + set * a_set;
    const char* b_ptr = static_cast<const char*>(pools.b) + set * b_set;
    char* c_ptr = static_cast<char*>(pools.c) + set * c_set;
    CHECK_CUBLAS(cublasLtMatmul(handle, r.op, &alpha, b_ptr, r.a, a_ptr, r.b, &beta, c_ptr, r.c, c_ptr, r.c, &heur.algo,
                                pools.workspace, kWorkspace, stream));
  };

  Events ev;
  // Warm-up, and a first timing to size the repeats.
  launch(0);
  CHECK_CUDA(cudaEventRecord(ev.start, stream));
  launch(1 % sets);
  CHECK_CUDA(cudaEventRecord(ev.stop, stream));
  CHECK_CUDA(cudaEventSynchronize(ev.stop));
  float first_ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&first_ms, ev.start, ev.stop));
  const int iters = std::clamp(static_cast<int>(std::ceil(10.0 / std::max(first_ms, 1e-3f))), 3, std::max(3, max_iters));

  std::vector<double> per_launch;
  std::size_t next = 0;
  for (int rep = 0; rep < 3; ++rep) {
    CHECK_CUDA(cudaEventRecord(ev.start, stream));
    for (int i = 0; i < iters; ++i) launch(next++ % sets);
    CHECK_CUDA(cudaEventRecord(ev.stop, stream));
    CHECK_CUDA(cudaEventSynchronize(ev.stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    per_launch.push_back(ms * 1e3 / iters);
  }

  // Check: poison the output of set 0, run once more, compare sampled elements.
  CHECK_CUDA(cudaMemsetAsync(pools.c, 0xff, c_set, stream));
  launch(0);
  GemmCheckArgs chk{pools.a, pools.b, pools.c, g.m, g.n, g.k, g.a_transposed, g.b_transposed, fp8};
  Measured out;
  out.max_error = gemm_max_error(chk, 32, static_cast<std::uint64_t>(g.m * 31 + g.n * 7 + g.k), stream);
  out.time_us = median(per_launch);
  out.iters = iters;
  out.transa = opa == CUBLAS_OP_T ? "T" : "N";
  out.transb = opb == CUBLAS_OP_T ? "T" : "N";
  return out;
}

std::string gemm_entry(const GemmShape& g, const Measured& m, int device, const std::string& gpu_name) {
  JsonWriter w;
  w.begin_object()
      .field("name", g.name)
      .field("dtype", g.dtype)
      .field("m", g.m)
      .field("n", g.n)
      .field("k", g.k)
      .field("transa", m.transa)
      .field("transb", m.transb)
      .field("time_us", m.time_us)
      .field("tflops", g.flops() / (m.time_us * 1e-6) / 1e12)
      .field("pass", g.pass)
      .field("model", g.model)
      .field("tp", g.tp)
      .field("tokens", g.tokens)
      .field("iters", m.iters)
      .field("max_rel_error", m.max_error)
      .field("gpu", device)
      .field("gpu_name", gpu_name);
  if (g.dtype == "fp8") w.field("fast_accum", g.pass == "fwd");
  w.end_object();
  return w.take();
}

}  // namespace

void run_gemm(WorkerContext& ctx) {
  const int rank = ctx.group.rank();
  const int n = ctx.group.size();
  CHECK_CUDA(cudaSetDevice(ctx.device));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, ctx.device));
  const bool has_fp8 = prop.major * 10 + prop.minor >= 89;

  std::vector<GemmShape> mine;
  const auto all = gemm_shapes(ctx.opt);
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (static_cast<int>(i % static_cast<std::size_t>(n)) != rank) continue;
    if (all[i].dtype == "fp8" && !has_fp8) continue;
    mine.push_back(all[i]);
  }
  if (!has_fp8 && rank == 0 &&
      std::find(ctx.opt.gemm_dtypes.begin(), ctx.opt.gemm_dtypes.end(), "fp8") != ctx.opt.gemm_dtypes.end()) {
    ctx.failure("fp8 GEMM", "unavailable",
                std::string(prop.name) + " has compute capability " + std::to_string(prop.major) + "." +
                    std::to_string(prop.minor) + "; fp8 matrix units need 8.9 or later");
  }
  if (mine.empty()) {
    run_gemm_sustained(ctx);
    return;
  }

  Pools pools;
  for (const auto& g : mine) {
    const std::size_t in_size = g.dtype == "fp8" ? 1 : 2;
    pools.a_bytes = std::max(pools.a_bytes, static_cast<std::size_t>(g.m) * g.k * in_size);
    pools.b_bytes = std::max(pools.b_bytes, static_cast<std::size_t>(g.k) * g.n * in_size);
    pools.c_bytes = std::max(pools.c_bytes, static_cast<std::size_t>(g.m) * g.n * 2);
  }
  // Room for the rotated sets of small shapes.
  const std::size_t l2 = static_cast<std::size_t>(prop.l2CacheSize);
  pools.a_bytes = std::max(pools.a_bytes, 8 * l2);
  pools.b_bytes = std::max(pools.b_bytes, 8 * l2);
  pools.c_bytes = std::max(pools.c_bytes, 8 * l2);
  CHECK_CUDA(cudaMalloc(&pools.a, pools.a_bytes));
  CHECK_CUDA(cudaMalloc(&pools.b, pools.b_bytes));
  CHECK_CUDA(cudaMalloc(&pools.c, pools.c_bytes));
  CHECK_CUDA(cudaMalloc(&pools.workspace, kWorkspace));

  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasLtHandle_t handle = nullptr;
  CHECK_CUBLAS(cublasLtCreate(&handle));
  struct Release {
    cudaStream_t s;
    cublasLtHandle_t h;
    ~Release() {
      cublasLtDestroy(h);
      cudaStreamDestroy(s);
    }
  } release{stream, handle};

  std::string filled;
  // Seconds per FLOP of the largest product measured so far: the budget estimate of the next one.
  double seconds_per_flop = 0;
  double largest_flops = 0;
  for (const auto& g : mine) {
    const std::string test = g.dtype + " " + g.name + " " + g.pass + " " + g.model + " tp" + std::to_string(g.tp) +
                             " m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k);
    if (ctx.seconds_left() < 1.0 + 12 * g.flops() * seconds_per_flop + 0.05) {
      ctx.failure(test, "skipped", "time budget");
      continue;
    }
    try {
      if (filled != g.dtype) {
        const FillType t = g.dtype == "fp8" ? FillType::FP8_E4M3 : FillType::BF16;
        const std::size_t in_size = g.dtype == "fp8" ? 1 : 2;
        fill_uniform(pools.a, t, pools.a_bytes / in_size, 11, 1.0f, stream);
        fill_uniform(pools.b, t, pools.b_bytes / in_size, 12, 1.0f, stream);
        CHECK_CUDA(cudaStreamSynchronize(stream));
        filled = g.dtype;
      }
      const Measured m = measure(handle, g, pools, stream, ctx.opt.gemm_iters, l2);
      if (g.flops() >= largest_flops) {
        largest_flops = g.flops();
        seconds_per_flop = m.time_us * 1e-6 / g.flops();
      }
      const double tolerance = g.dtype == "fp8" ? 5e-2 : 2e-2;
      if (!(m.max_error <= tolerance)) {
        ctx.failure(test, "failed", "result check: relative error " + std::to_string(m.max_error) + " above " +
                                        std::to_string(tolerance));
      }
      ctx.sink.add(Section::GEMM, gemm_entry(g, m, ctx.device, prop.name));
    } catch (const Unavailable& e) {
      ctx.failure(test, "unavailable", e.what());
    } catch (const HarnessError& e) {
      ctx.failure(test, "failed", e.what());
      // A sticky CUDA error leaves the context unusable; stop rather than fail every shape.
      if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) throw;
    }
  }
  run_gemm_sustained(ctx);
}

}  // namespace clustersim::harness
