// Attention throughput: cuDNN's fused scaled dot-product attention (flash attention) through the
// cuDNN frontend graph API, forward and backward, causal, bf16, "BSHD" layout, grouped-query heads
// as the Llama-3 models have them (transformer_shapes.hpp).
//
// Built only where the cuDNN frontend header (header-only, NVIDIA/cudnn-frontend) is found at
// configure time (CLUSTERSIM_CUDNN_FRONTEND_INCLUDE_DIR); the frontend then loads libcudnn at run
// time. Without it, or when cuDNN or the engine is missing at run time, the section records
// "unavailable" and no number.
//
// Timing: random inputs, one warm-up execution, three repeats of --attn-iters executions timed with
// CUDA events, the median repeat. FLOPs (FlashAttention's accounting): forward 4 b h s^2 d / 2 with
// the causal half, backward 2.5 times the forward. The forward output is checked at sampled rows
// against a float64 reference (attention_check.hpp).

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "calibrate/harness/attention_check.hpp"
#include "calibrate/harness/cuda_checks.hpp"
#include "calibrate/harness/harness_json_writer.hpp"
#include "calibrate/harness/random_fill.hpp"
#include "calibrate/harness/transformer_shapes.hpp"
#include "calibrate/harness/worker_context.hpp"

#if defined(CLUSTERSIM_HAVE_CUDNN_FRONTEND)
#include <cudnn_frontend.h>
#endif

namespace clustersim::harness {

#if defined(CLUSTERSIM_HAVE_CUDNN_FRONTEND)

namespace {

namespace fe = cudnn_frontend;

struct Timing {
  double time_us = 0;
  double max_error = NAN;
};

class CudnnHandle {
 public:
  CudnnHandle() {
    const cudnnStatus_t rc = cudnnCreate(&h_);
    if (rc != CUDNN_STATUS_SUCCESS) throw Unavailable(std::string("cudnnCreate: ") + cudnnGetErrorString(rc));
  }
  ~CudnnHandle() {
    if (h_) cudnnDestroy(h_);
  }
  cudnnHandle_t get() const { return h_; }

 private:
  cudnnHandle_t h_ = nullptr;
};

void fe_check(fe::error_t e, const char* step) {
  if (!e.is_good()) throw Unavailable(std::string("cuDNN frontend ") + step + ": " + e.get_message());
}

struct DeviceMem {
  void* p = nullptr;
  explicit DeviceMem(std::size_t bytes) { CHECK_CUDA(cudaMalloc(&p, std::max<std::size_t>(bytes, 16))); }
  ~DeviceMem() { cudaFree(p); }
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
};

Timing run_shape(cudnnHandle_t handle, const AttentionShape& a, int iters, cudaStream_t stream) {
  const std::int64_t b = a.batch, h = a.heads, hk = a.kv_heads, s = a.seq_len, d = a.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const std::vector<std::int64_t> q_dim{b, h, s, d}, q_stride{s * h * d, d, h * d, 1};
  const std::vector<std::int64_t> kv_dim{b, hk, s, d}, kv_stride{s * hk * d, d, hk * d, 1};
  const std::vector<std::int64_t> stats_dim{b, h, s, 1}, stats_stride{h * s, s, 1, 1};

  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto Q = graph->tensor(fe::graph::Tensor_attributes().set_name("Q").set_dim(q_dim).set_stride(q_stride));
  auto K = graph->tensor(fe::graph::Tensor_attributes().set_name("K").set_dim(kv_dim).set_stride(kv_stride));
  auto V = graph->tensor(fe::graph::Tensor_attributes().set_name("V").set_dim(kv_dim).set_stride(kv_stride));

  const std::size_t q_bytes = static_cast<std::size_t>(b * h * s * d) * 2;
  const std::size_t kv_bytes = static_cast<std::size_t>(b * hk * s * d) * 2;
  DeviceMem q(q_bytes), k(kv_bytes), v(kv_bytes), o(q_bytes), stats(static_cast<std::size_t>(b * h * s) * 4);
  fill_uniform(q.p, FillType::BF16, q_bytes / 2, 41, 1.0f, stream);
  fill_uniform(k.p, FillType::BF16, kv_bytes / 2, 42, 1.0f, stream);
  fill_uniform(v.p, FillType::BF16, kv_bytes / 2, 43, 1.0f, stream);
  std::unordered_map<std::shared_ptr<fe::graph::Tensor_attributes>, void*> pack{{Q, q.p}, {K, k.p}, {V, v.p}};

  std::unique_ptr<DeviceMem> d_o, dq, dk, dv;
  if (a.direction == "fwd") {
    auto opts = fe::graph::SDPA_attributes().set_name("sdpa").set_causal_mask(true).set_attn_scale(scale);
#if CUDNN_FRONTEND_VERSION >= 11300
    opts.set_generate_stats(true);  // the statistics the backward pass needs, as in training
#else
    opts.set_is_inference(false);
#endif
    auto [O, Stats] = graph->sdpa(Q, K, V, opts);
    O->set_output(true).set_dim(q_dim).set_stride(q_stride);
    Stats->set_output(true).set_data_type(fe::DataType_t::FLOAT);
    pack[O] = o.p;
    pack[Stats] = stats.p;
  } else {
    auto O = graph->tensor(fe::graph::Tensor_attributes().set_name("O").set_dim(q_dim).set_stride(q_stride));
    auto dO = graph->tensor(fe::graph::Tensor_attributes().set_name("dO").set_dim(q_dim).set_stride(q_stride));
    auto Stats = graph->tensor(fe::graph::Tensor_attributes()
                                   .set_name("Stats")
                                   .set_dim(stats_dim)
                                   .set_stride(stats_stride)
                                   .set_data_type(fe::DataType_t::FLOAT));
    auto opts = fe::graph::SDPA_backward_attributes().set_name("sdpa_bwd").set_causal_mask(true).set_attn_scale(scale);
    auto [dQ, dK, dV] = graph->sdpa_backward(Q, K, V, O, dO, Stats, opts);
    dQ->set_output(true).set_dim(q_dim).set_stride(q_stride);
    dK->set_output(true).set_dim(kv_dim).set_stride(kv_stride);
    dV->set_output(true).set_dim(kv_dim).set_stride(kv_stride);
    d_o = std::make_unique<DeviceMem>(q_bytes);
    dq = std::make_unique<DeviceMem>(q_bytes);
    dk = std::make_unique<DeviceMem>(kv_bytes);
    dv = std::make_unique<DeviceMem>(kv_bytes);
    fill_uniform(o.p, FillType::BF16, q_bytes / 2, 44, 0.1f, stream);
    fill_uniform(d_o->p, FillType::BF16, q_bytes / 2, 45, 0.1f, stream);
    // Log-sum-exp statistics of plausible size (the backward pass only reads them).
    fill_uniform(stats.p, FillType::F32, static_cast<std::size_t>(b * h * s), 46, 1.0f, stream);
    pack[O] = o.p;
    pack[dO] = d_o->p;
    pack[Stats] = stats.p;
    pack[dQ] = dq->p;
    pack[dK] = dk->p;
    pack[dV] = dv->p;
  }

  fe_check(graph->validate(), "validate");
  fe_check(graph->build_operation_graph(handle), "build_operation_graph");
  fe_check(graph->create_execution_plans({fe::HeurMode_t::A}), "create_execution_plans");
  fe_check(graph->check_support(handle), "check_support");
  fe_check(graph->build_plans(handle), "build_plans");
  std::int64_t ws_bytes = 0;
  fe_check(graph->get_workspace_size(ws_bytes), "get_workspace_size");
  DeviceMem ws(static_cast<std::size_t>(ws_bytes));
  CHECK_CUDA(cudaStreamSynchronize(stream));

  if (cudnnSetStream(handle, stream) != CUDNN_STATUS_SUCCESS) throw HarnessError("cudnnSetStream failed");
  cudaEvent_t start = nullptr, stop = nullptr;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  struct Release {
    cudaEvent_t a, b;
    ~Release() {
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
  } release{start, stop};
  fe_check(graph->execute(handle, pack, ws.p), "execute");
  std::vector<double> per_call;
  for (int rep = 0; rep < 3; ++rep) {
    CHECK_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < iters; ++i) fe_check(graph->execute(handle, pack, ws.p), "execute");
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    per_call.push_back(ms * 1e3 / iters);
  }
  std::sort(per_call.begin(), per_call.end());
  Timing t;
  t.time_us = per_call[1];
  if (a.direction == "fwd") {
    AttentionCheckArgs chk{q.p, k.p, v.p, o.p, b, h, hk, s, d, scale};
    t.max_error = attention_max_error(chk, 8, static_cast<std::uint64_t>(b * 131 + s), stream);
  }
  return t;
}

}  // namespace

void run_attention(WorkerContext& ctx) {
  const int rank = ctx.group.rank();
  const int n = ctx.group.size();
  CHECK_CUDA(cudaSetDevice(ctx.device));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, ctx.device));
  std::unique_ptr<CudnnHandle> handle;
  try {
    handle = std::make_unique<CudnnHandle>();
  } catch (const std::exception& e) {
    // The frontend loads libcudnn on first use; a missing library surfaces here.
    if (rank == 0) ctx.failure("attention", "unavailable", e.what());
    return;
  }
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  struct Release {
    cudaStream_t s;
    ~Release() { cudaStreamDestroy(s); }
  } release{stream};
  const auto shapes = attention_shapes(ctx.opt);
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    if (static_cast<int>(i % static_cast<std::size_t>(n)) != rank) continue;
    const auto& a = shapes[i];
    const std::string test = a.direction + " " + a.model + " tp" + std::to_string(a.tp) + " b=" + std::to_string(a.batch) +
                             " s=" + std::to_string(a.seq_len);
    if (ctx.seconds_left() < 3.0) {
      ctx.failure(test, "skipped", "time budget");
      continue;
    }
    try {
      const Timing t = run_shape(handle->get(), a, ctx.opt.attn_iters, stream);
      JsonWriter w;
      w.begin_object()
          .field("impl", "cudnn_sdpa")
          .field("dtype", "bf16")
          .field("batch", a.batch)
          .field("heads", a.heads)
          .field("kv_heads", a.kv_heads)
          .field("seq_len", a.seq_len)
          .field("head_dim", a.head_dim)
          .field("causal", true)
          .field("direction", a.direction)
          .field("time_us", t.time_us)
          .field("tflops", a.flops() / (t.time_us * 1e-6) / 1e12)
          .field("model", a.model)
          .field("tp", a.tp)
          .field("layout", "bshd")
          .field("cudnn_version", static_cast<std::int64_t>(cudnnGetVersion()))
          .field("max_rel_error", t.max_error)
          .field("gpu", ctx.device)
          .field("gpu_name", prop.name)
          .end_object();
      ctx.sink.add(Section::ATTENTION, w.take());
      if (a.direction == "fwd" && !(t.max_error <= 2e-2)) {
        ctx.failure(test, "failed", "result check: relative error " + std::to_string(t.max_error));
      }
    } catch (const Unavailable& e) {
      ctx.failure(test, "unavailable", e.what());
    } catch (const std::exception& e) {
      ctx.failure(test, "failed", e.what());
      if (cudaDeviceSynchronize() != cudaSuccess) throw;
    }
  }
}

#else  // no cuDNN frontend at build time

void run_attention(WorkerContext& ctx) {
  if (ctx.group.rank() == 0) {
    ctx.failure("attention", "unavailable",
                "clustersim-calibrate was built without the cuDNN frontend header (cudnn_frontend.h); configure "
                "with -DCLUSTERSIM_CUDNN_FRONTEND_INCLUDE_DIR=<cudnn-frontend>/include to measure cuDNN attention");
  }
}

#endif

}  // namespace clustersim::harness
