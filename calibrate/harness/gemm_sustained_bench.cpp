#include "calibrate/harness/gemm_sustained_bench.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "calibrate/harness/cublas_checks.hpp"
#include "calibrate/harness/cuda_checks.hpp"
#include "calibrate/harness/harness_json_writer.hpp"
#include "calibrate/harness/memory_kernels.hpp"
#include "calibrate/harness/nvml_dynamic.hpp"
#include "calibrate/harness/random_fill.hpp"

namespace clustersim::harness {

namespace {

constexpr std::size_t kWorkspace = 32u << 20;
constexpr int kRing = 8;  // launches (or pairs) in flight before the host waits for the oldest

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Everything the four phases use, released in reverse order.
struct Resources {
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  void* workspace = nullptr;
  void* ma = nullptr;
  void* mb = nullptr;
  void* mc = nullptr;
  std::uint32_t* sink = nullptr;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  std::vector<cudaEvent_t> events;
  ~Resources() {
    for (auto e : events) cudaEventDestroy(e);
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (op) cublasLtMatmulDescDestroy(op);
    if (handle) cublasLtDestroy(handle);
    if (stream) cudaStreamDestroy(stream);
    for (void* p : {a, b, c, workspace, ma, mb, mc}) cudaFree(p);
    cudaFree(sink);
  }
  cudaEvent_t event(std::size_t i) {
    while (events.size() <= i) {
      cudaEvent_t e = nullptr;
      CHECK_CUDA(cudaEventCreate(&e));
      events.push_back(e);
    }
    return events[i];
  }
};

float elapsed_ms(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, from, to));
  return ms;
}

struct PhaseResult {
  double time_us = 0;
  double busy_ms = 0;
  double gemm_share = 1;
  int launches = 0;
  std::vector<double> clocks, powers;
};

}  // namespace

void run_gemm_sustained(WorkerContext& ctx) {
  const double seconds = ctx.opt.gemm_sustained_s;
  if (seconds <= 0) return;
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, ctx.device));
  const std::int64_t s = ctx.opt.gemm_square > 0 ? ctx.opt.gemm_square : 8192;
  const std::string test = "sustained bf16 " + std::to_string(s) + "^3";
  if (ctx.seconds_left() < 2.5 * seconds + 5) {
    ctx.failure(test, "skipped", "time budget");
    return;
  }
  try {
    Resources r;
    const std::size_t operand = static_cast<std::size_t>(s) * static_cast<std::size_t>(s) * 2;
    CHECK_CUDA(cudaMalloc(&r.a, operand));
    CHECK_CUDA(cudaMalloc(&r.b, operand));
    CHECK_CUDA(cudaMalloc(&r.c, operand));
    CHECK_CUDA(cudaMalloc(&r.workspace, kWorkspace));
    CHECK_CUDA(cudaMalloc(&r.sink, sizeof(std::uint32_t)));
    CHECK_CUDA(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
    fill_uniform(r.a, FillType::BF16, operand / 2, 31, 1.0f, r.stream);
    fill_uniform(r.b, FillType::BF16, operand / 2, 32, 1.0f, r.stream);

    // The square product as the sweep runs it: row-major C = A B^T (cuBLASLt "T", "N").
    CHECK_CUBLAS(cublasLtCreate(&r.handle));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&r.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(r.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(r.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&r.la, CUDA_R_16BF, s, s, s));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&r.lb, CUDA_R_16BF, s, s, s));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&r.lc, CUDA_R_16BF, s, s, s));
    CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&r.pref));
    const std::size_t ws = kWorkspace;
    CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(r.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    cublasLtMatmulHeuristicResult_t heur{};
    int found = 0;
    CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(r.handle, r.op, r.la, r.lb, r.lc, r.lc, r.pref, 1, &heur, &found));
    if (found == 0) throw Unavailable("cuBLASLt has no algorithm for the square bf16 product");
    const float alpha = 1.0f, beta = 0.0f;
    auto gemm = [&]() {
      CHECK_CUBLAS(cublasLtMatmul(r.handle, r.op, &alpha, r.b, r.la, r.a, r.lb, &beta, r.c, r.lc, r.c, r.lc,
                                  &heur.algo, r.workspace, kWorkspace, r.stream));
    };

    Nvml nvml;
    std::optional<Nvml::Device> dev;
    char bus[64] = {};
    if (nvml.loaded() && cudaDeviceGetPCIBusId(bus, sizeof(bus), ctx.device) == cudaSuccess) {
      std::string id(bus);
      for (auto& ch : id) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      dev = nvml.device_by_bus_id(id);
    }
    auto sample = [&](PhaseResult& p) {
      if (!dev) return;
      if (auto v = nvml.sm_clock_mhz(*dev)) p.clocks.push_back(*v);
      if (auto v = nvml.power_usage_mw(*dev)) p.powers.push_back(*v / 1000.0);
    };
    const double flops = 2.0 * static_cast<double>(s) * static_cast<double>(s) * static_cast<double>(s);
    auto emit = [&](const char* phase, const PhaseResult& p) {
      JsonWriter w;
      w.begin_object()
          .field("name", "sustained")
          .field("phase", phase)
          .field("dtype", "bf16")
          .field("m", s)
          .field("n", s)
          .field("k", s)
          .field("transa", "T")
          .field("transb", "N")
          .field("time_us", p.time_us)
          .field("tflops", flops / (p.time_us * 1e-6) / 1e12)
          .field("launches", p.launches)
          .field("busy_ms", p.busy_ms)
          .field("gemm_share", p.gemm_share);
      if (!p.clocks.empty()) w.field("sm_clock_MHz", median_of(p.clocks));
      if (!p.powers.empty()) w.field("power_W", median_of(p.powers));
      w.field("gpu", ctx.device).field("gpu_name", prop.name).end_object();
      ctx.sink.add(Section::GEMM, w.take());
    };

    // harness: the sweep's method.
    PhaseResult harness;
    {
      gemm();
      CHECK_CUDA(cudaEventRecord(r.event(0), r.stream));
      gemm();
      CHECK_CUDA(cudaEventRecord(r.event(1), r.stream));
      CHECK_CUDA(cudaEventSynchronize(r.event(1)));
      const float first = elapsed_ms(r.event(0), r.event(1));
      const int iters = std::clamp(static_cast<int>(10.0 / std::max(first, 1e-3f)) + 1, 3, 20);
      std::vector<double> reps;
      for (int rep = 0; rep < 3; ++rep) {
        CHECK_CUDA(cudaEventRecord(r.event(0), r.stream));
        for (int i = 0; i < iters; ++i) gemm();
        CHECK_CUDA(cudaEventRecord(r.event(1), r.stream));
        CHECK_CUDA(cudaEventSynchronize(r.event(1)));
        reps.push_back(elapsed_ms(r.event(0), r.event(1)) * 1e3 / iters);
      }
      harness.time_us = median_of(reps);
      harness.launches = 3 * iters + 2;
      sample(harness);
    }

    // burst: after an idle second, each launch timed alone.
    PhaseResult burst;
    {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      gemm();
      for (int i = 0; i < 5; ++i) {
        CHECK_CUDA(cudaEventRecord(r.event(2 * i), r.stream));
        gemm();
        CHECK_CUDA(cudaEventRecord(r.event(2 * i + 1), r.stream));
      }
      CHECK_CUDA(cudaEventSynchronize(r.event(9)));
      sample(burst);
      std::vector<double> t;
      for (int i = 0; i < 5; ++i) t.push_back(elapsed_ms(r.event(2 * i), r.event(2 * i + 1)) * 1e3);
      burst.time_us = median_of(t);
      burst.busy_ms = elapsed_ms(r.event(0), r.event(9));
      burst.launches = 6;
    }

    // sustained and mixed: a ring of event pairs around each product; the host waits for the
    // oldest pair before reusing it, so it stays at most kRing launches ahead.
    const std::size_t mixed_bytes = [&] {
      // Elementwise c = a + s b moves 3 S bytes: about half the product's time at ~4 TB/s.
      const double want = 0.5 * harness.time_us * 1e-6 * 4.0e12 / 3.0;
      std::size_t b = static_cast<std::size_t>(std::clamp(want, 64.0 * (1 << 20), 2.0 * (1 << 30)));
      return b / 4096 * 4096;
    }();
    CHECK_CUDA(cudaMalloc(&r.ma, mixed_bytes));
    CHECK_CUDA(cudaMalloc(&r.mb, mixed_bytes));
    CHECK_CUDA(cudaMalloc(&r.mc, mixed_bytes));
    fill_uniform(r.ma, FillType::F32, mixed_bytes / 4, 33, 1.0f, r.stream);
    fill_uniform(r.mb, FillType::F32, mixed_bytes / 4, 34, 1.0f, r.stream);
    CHECK_CUDA(cudaStreamSynchronize(r.stream));
    const unsigned blocks = static_cast<unsigned>(prop.multiProcessorCount) * 8;

    auto continuous = [&](bool mixed) {
      PhaseResult p;
      std::vector<double> product_ms;  // per launch, in launch order
      std::vector<double> pair_ms;     // product start to the next product start (mixed)
      cudaEvent_t epoch = r.event(2 * kRing);  // the phase's first product start
      CHECK_CUDA(cudaEventRecord(epoch, r.stream));
      const auto t0 = std::chrono::steady_clock::now();
      auto host_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
      std::vector<float> started_ms;  // product start relative to the epoch
      int i = 0;
      double last_sample = 0;
      auto collect = [&](int j) {
        const int slot = j % kRing;
        CHECK_CUDA(cudaEventSynchronize(r.event(2 * slot + 1)));
        product_ms.push_back(elapsed_ms(r.event(2 * slot), r.event(2 * slot + 1)));
        started_ms.push_back(elapsed_ms(epoch, r.event(2 * slot)));
      };
      for (; host_s() < seconds; ++i) {
        if (i >= kRing) collect(i - kRing);
        const int slot = i % kRing;
        CHECK_CUDA(cudaEventRecord(r.event(2 * slot), r.stream));
        gemm();
        CHECK_CUDA(cudaEventRecord(r.event(2 * slot + 1), r.stream));
        if (mixed) launch_memory_kernel(MemoryKernel::ELEMENTWISE, r.mc, r.ma, r.mb, mixed_bytes, blocks, r.sink, r.stream);
        // NVML every 50 ms at most: the host must stay ahead of the GPU.
        if (host_s() > 0.75 * seconds && host_s() > last_sample + 0.05) {
          sample(p);
          last_sample = host_s();
        }
      }
      for (int j = std::max(0, i - kRing); j < i; ++j) collect(j);
      const std::size_t n = product_ms.size();
      const std::size_t from = n * 3 / 4;
      std::vector<double> last(product_ms.begin() + static_cast<std::ptrdiff_t>(from), product_ms.end());
      p.time_us = median_of(last) * 1e3;
      p.launches = static_cast<int>(n);
      p.busy_ms = started_ms[from];
      if (mixed && n > from + 1) {
        double products = 0;
        for (std::size_t j = from; j + 1 < n; ++j) products += product_ms[j];
        const double span = started_ms[n - 1] - started_ms[from];
        p.gemm_share = span > 0 ? products / span : 1;
      }
      return p;
    };
    const PhaseResult sustained = continuous(false);
    const PhaseResult mixed = continuous(true);
    emit("harness", harness);
    emit("burst", burst);
    emit("sustained", sustained);
    emit("mixed", mixed);
  } catch (const Unavailable& e) {
    ctx.failure(test, "unavailable", e.what());
  } catch (const HarnessError& e) {
    ctx.failure(test, "failed", e.what());
    if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) throw;
  }
}

}  // namespace clustersim::harness
