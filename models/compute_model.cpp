#include "models/compute_model.hpp"

#include <algorithm>

#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"
#include "models/compute_parameters.hpp"

namespace clustersim::models {

namespace cp = compute_params;

namespace {

// A profile value outside what the model can use is a bad profile, not a crash later.
double checked(hardware::ParameterSet& ps, std::string_view name, double value, double min_exclusive, double max) {
  if (!(value > min_exclusive) || value > max) {
    const std::string file = ps.profile() != nullptr ? ps.profile()->file() : "";
    throw InputError(file, "/parameters/" + json_pointer_token(name),
                     "expected a value above " + format_significant(min_exclusive, 4) + " and at most " +
                         format_significant(max, 4) + ", got " + format_significant(value, 4));
  }
  return value;
}

}  // namespace

ComputeModel::ComputeModel(const hardware::GpuSpec& gpu, hardware::ParameterSet& ps) : gpu_(gpu) {
  using D = cp::Defaults;
  auto gemm_curve = [&](Precision p, double fallback, const char* why) {
    GemmCurve c;
    c.max_efficiency = checked(ps, cp::gemm_max_efficiency(p), ps.ratio(cp::gemm_max_efficiency(p), fallback, why, 0.2),
                               0, 1);
    c.half_k = checked(ps, cp::gemm_half_k(p),
                       ps.ratio(cp::gemm_half_k(p), D::gemm_half_k,
                                "default: efficiency halves at a reduction depth of ~180 (cuBLASLt on Hopper)", 0.5),
                       -1e-12, 1e9);
    c.half_mn = checked(ps, cp::gemm_half_mn(p),
                        ps.ratio(cp::gemm_half_mn(p), D::gemm_half_mn,
                                 "default: efficiency halves at an output side of ~40 (cuBLASLt on Hopper)", 0.5),
                        -1e-12, 1e9);
    return c;
  };
  bf16_ = gemm_curve(Precision::BF16, D::gemm_max_efficiency_bf16,
                     "default: cuBLAS reaches ~75% of the dense bf16 peak on large GEMMs");
  fp16_ = gemm_curve(Precision::FP16, D::gemm_max_efficiency_bf16,
                     "default: cuBLAS reaches ~75% of the dense fp16 peak on large GEMMs");
  fp8_ = gemm_curve(Precision::FP8, D::gemm_max_efficiency_fp8,
                    "default: fp8 GEMMs reach ~65% of the dense fp8 peak (H100 ~1300 of 1979 TFLOP/s)");
  fp32_ = gemm_curve(Precision::FP32, D::gemm_max_efficiency_fp32, "default: 80% of the fp32 peak");
  tile_m_ = ps.ratio(cp::kGemmTileM, D::gemm_tile_m, "default: 128-row output tiles", 0.5);
  tile_n_ = ps.ratio(cp::kGemmTileN, D::gemm_tile_n, "default: 128-column output tiles", 0.5);
  attn_max_[0] = checked(ps, cp::attention_max_efficiency(false),
                         ps.ratio(cp::attention_max_efficiency(false), D::attention_fwd_max_efficiency,
                                  "default: flash attention forward at ~55% of the bf16 peak", 0.3),
                         0, 1);
  attn_max_[1] = checked(ps, cp::attention_max_efficiency(true),
                         ps.ratio(cp::attention_max_efficiency(true), D::attention_bwd_max_efficiency,
                                  "default: flash attention backward at ~45% of the bf16 peak", 0.3),
                         0, 1);
  attn_half_[0] = ps.ratio(cp::attention_half_seq(false), D::attention_half_seq,
                           "default: attention efficiency halves at 256 key tokens", 0.5);
  attn_half_[1] = ps.ratio(cp::attention_half_seq(true), D::attention_half_seq,
                           "default: attention efficiency halves at 256 key tokens", 0.5);
  const double mem_eff = checked(ps, cp::kMemoryEfficiency,
                                 ps.ratio(cp::kMemoryEfficiency, D::memory_efficiency,
                                          "default: memory-bound kernels reach 80% of the catalog HBM bandwidth", 0.15),
                                 0, 1);
  memory_bandwidth_ = gpu.hbm_bandwidth.value * mem_eff;
  strided_rate_ = gpu.peak_fp32.value.flops_per_second() *
                  checked(ps, cp::kStridedElementsPerFlop,
                          ps.ratio(cp::kStridedElementsPerFlop, D::strided_elements_per_flop,
                                   "default: PyTorch's generic element-wise kernel at ~1 element per 200 fp32 FLOP",
                                   0.5),
                          0, 1);
  overhead_ = ps.duration(cp::kKernelOverhead, Duration::from_seconds(D::kernel_overhead_us * 1e-6),
                          "default: 2 us of fixed GPU time per kernel (H200: 1.95 us per queued empty kernel)", 0.5);
  sustained_ = checked(ps, cp::kSustainedRatio,
                       ps.ratio(cp::kSustainedRatio, D::sustained_ratio,
                                "default: tensor-core kernels at 0.96 of the curves' throughput in a training step "
                                "(an H200 at its 700 W limit)",
                                0.05),
                       0, 1.5);
}

const ComputeModel::GemmCurve& ComputeModel::curve(Precision p) const {
  switch (p) {
    case Precision::BF16: return bf16_;
    case Precision::FP16: return fp16_;
    case Precision::FP8: return fp8_;
    case Precision::FP32: return fp32_;
  }
  return bf16_;
}

FlopRate ComputeModel::peak(Precision dtype) const {
  switch (dtype) {
    case Precision::BF16:
    case Precision::FP16: return gpu_.peak_bf16.value;
    case Precision::FP8: return gpu_.peak_fp8 ? gpu_.peak_fp8->value : gpu_.peak_bf16.value;
    case Precision::FP32: return gpu_.peak_fp32.value;
  }
  return gpu_.peak_bf16.value;
}

double ComputeModel::gemm_efficiency(const GemmShape& g, Precision dtype) const {
  const GemmCurve& c = curve(dtype);
  return cp::gemm_efficiency(static_cast<double>(g.m), static_cast<double>(g.n), static_cast<double>(g.k),
                             static_cast<double>(g.batch), c.max_efficiency, c.half_k, c.half_mn, tile_m_, tile_n_,
                             static_cast<double>(gpu_.sm_count));
}

double ComputeModel::attention_efficiency(const AttentionShape& a, bool backward) const {
  const int i = backward ? 1 : 0;
  return cp::attention_efficiency(static_cast<double>(a.seq_kv), attn_max_[i], attn_half_[i]);
}

Duration ComputeModel::memory_time(Bytes bytes, int kernels) const {
  return transfer_time(bytes, memory_bandwidth_) + overhead_ * kernels;
}

Duration ComputeModel::time(const KernelOp& op) const {
  const Duration memory = transfer_time(op.bytes, memory_bandwidth_);
  Duration compute;
  switch (op.kind) {
    case OpKind::GEMM: {
      if (op.flops.count() > 0) {
        compute = compute_time(op.flops, peak(op.dtype) * (gemm_efficiency(op.gemm, op.dtype) * sustained_));
      }
      break;
    }
    case OpKind::ATTENTION: {
      const Precision p = op.dtype == Precision::FP32 ? Precision::FP32 : Precision::BF16;
      if (op.flops.count() > 0) {
        compute = compute_time(op.flops,
                               peak(p) * (attention_efficiency(op.attention, op.pass == Pass::BACKWARD) * sustained_));
      }
      break;
    }
    case OpKind::MEMORY:
      if (op.path == MemoryPath::STRIDED && op.elements > 0 && strided_rate_ > 0) {
        compute = Duration::from_seconds(static_cast<double>(op.elements) / strided_rate_);
      }
      break;
  }
  return std::max(compute, memory) + overhead_ * op.kernels;
}

void ComputeModel::annotate(std::vector<KernelOp>& ops) const {
  for (auto& op : ops) op.time = time(op);
}

HostModel::HostModel(const hardware::NodeSpec& node, hardware::ParameterSet& ps) {
  using D = cp::Defaults;
  const hardware::GpuSpec& gpu = *node.gpu;
  const hardware::HostSpec& host = node.host();
  cores_ = std::max(1, host.cores);
  const double host_eff = ps.ratio(cp::kHostMemoryEfficiency, D::host_memory_efficiency,
                                   "default: streaming reaches 60% of the catalog host memory bandwidth", 0.3);
  const Bandwidth host_memory = host.memory_bandwidth_per_socket.value * (host.sockets * host_eff);
  for (int h2d = 0; h2d < 2; ++h2d) {
    const Bandwidth pcie = gpu.pcie.bandwidth.value * D::host_pinned_fraction_of_pcie;
    pinned_[h2d] = ps.bandwidth(cp::host_copy_bandwidth(h2d == 1, true), pcie,
                                "default: pinned copies reach 80% of the catalog PCIe bandwidth", 0.25);
    pageable_[h2d] = ps.bandwidth(cp::host_copy_bandwidth(h2d == 1, false),
                                  pinned_[h2d] * D::host_pageable_fraction_of_pinned,
                                  "default: pageable copies reach 40% of pinned", 0.5);
    // The node-wide limit: per switch, its GPUs share its uplink; all share host memory.
    Bandwidth through_switches;
    int placed = 0;
    for (const auto& sw : node.pcie_switches) {
      const Bandwidth gpus_here = pinned_[h2d] * static_cast<double>(sw.gpus.size());
      through_switches = through_switches + std::min(gpus_here, node.pcie_switch_uplink().value);
      placed += static_cast<int>(sw.gpus.size());
    }
    if (placed < node.gpus()) through_switches = through_switches + pinned_[h2d] * (node.gpus() - placed);
    Bandwidth fallback = std::min(pinned_[h2d] * node.gpus(), through_switches);
    if (host_memory.bytes_per_second() > 0) fallback = std::min(fallback, host_memory);
    aggregate_[h2d] = ps.bandwidth(cp::host_aggregate_bandwidth(h2d == 1), fallback,
                                   "default: least of GPUs x one GPU, PCIe switch uplinks and host memory", 0.3);
  }
  adam_per_core_ = ps.ratio(cp::kCpuAdamPerCore, D::cpu_adam_params_per_core,
                            "default: DeepSpeed CPU Adam on one thread, measured on one host", 0.5);
  const double node_limit = host_memory.bytes_per_second() > 0
                                ? host_memory.bytes_per_second() / D::cpu_adam_bytes_per_param
                                : adam_per_core_ * cores_;
  adam_node_ = ps.ratio(cp::kCpuAdamNode, node_limit,
                        "default: host memory bandwidth x efficiency / 30 B per parameter", 0.4);
  torch_adamw_per_core_ = ps.ratio(cp::kTorchAdamwPerCore, D::torch_adamw_params_per_core,
                                   "default: torch AdamW on CPU tensors, one thread, measured on one host", 0.5);
  torch_adamw_node_fraction_ = ps.ratio(cp::kTorchAdamwNodeFraction, D::torch_adamw_node_fraction,
                                        "default: torch AdamW's node limit over CPU Adam's, measured on one host", 0.3);
  zero3_hook_[0] = ps.duration(cp::kZero3ModuleHookForward, Duration::from_seconds(D::zero3_module_hook_forward_s),
                               "default: DeepSpeed ZeRO-3's hooks around one module's forward, measured on one host",
                               0.5);
  zero3_hook_[1] = ps.duration(cp::kZero3ModuleHookBackward, Duration::from_seconds(D::zero3_module_hook_backward_s),
                               "default: DeepSpeed ZeRO-3's hooks around one module's backward, measured on one host",
                               0.5);
  dispatch_[0] = ps.duration(cp::kDispatchForward, Duration::from_seconds(D::dispatch_forward_s),
                             "default: CPU time per kernel of an eager forward, measured on one host", 0.4);
  dispatch_[1] = ps.duration(cp::kDispatchBackward, Duration::from_seconds(D::dispatch_backward_s),
                             "default: CPU time per kernel of an eager backward, measured on one host", 0.4);
  dtensor_[0] = ps.duration(cp::kDtensorForward, Duration::from_seconds(D::dtensor_forward_s),
                            "default: DTensor's CPU time per tensor-parallel linear forward, measured on one host", 0.4);
  dtensor_[1] = ps.duration(cp::kDtensorBackward, Duration::from_seconds(D::dtensor_backward_s),
                            "default: DTensor's CPU time per tensor-parallel linear backward, measured on one host", 0.4);
}

HostThreads host_threads(const ClusterSpec& c, const hardware::NodeSpec& node) {
  HostThreads h;
  const hardware::HostSpec& host = node.host();
  const int physical = std::max(1, host.cores);
  const int logical = node.instance != nullptr && node.instance->vcpus > 0 ? node.instance->vcpus : 2 * physical;
  h.ranks_on_node = std::max(1, c.gpus_per_node);
  h.ranks_per_pod = std::max(1, std::min(c.gpus_per_pod, c.gpus_per_node));
  const double visible = c.cpus_per_pod ? std::min<double>(*c.cpus_per_pod, logical) : logical;
  if (c.omp_num_threads) {
    h.threads = *c.omp_num_threads;
    h.why = "OMP_NUM_THREADS=" + std::to_string(h.threads) + " in the pod";
  } else if (c.launcher == Launcher::TORCHRUN && h.ranks_per_pod > 1) {
    h.threads = 1;
    h.why = "torchrun sets OMP_NUM_THREADS=1 when it starts " + std::to_string(h.ranks_per_pod) +
            " processes per pod";
  } else {
    h.threads = std::max(1, static_cast<int>(std::floor(visible)));
    h.why = std::string("OpenMP's default under ") + std::string(to_string(c.launcher)) + ": every CPU the pod sees (" +
            std::to_string(h.threads) + (c.cpus_per_pod ? ", its CPU limit)" : " logical CPUs of the host)");
  }
  const double limit = (c.cpus_per_pod ? *c.cpus_per_pod : static_cast<double>(physical)) / h.ranks_per_pod;
  h.cores = std::min({static_cast<double>(h.threads), limit, static_cast<double>(physical) / h.ranks_on_node});
  return h;
}

Bandwidth HostModel::copy_bandwidth(bool host_to_device, bool pinned, int concurrent) const {
  const int i = host_to_device ? 1 : 0;
  const Bandwidth one = pinned ? pinned_[i] : pageable_[i];
  if (concurrent <= 1) return one;
  return std::min(one, aggregate_[i] / static_cast<double>(concurrent));
}

double HostModel::cpu_adam_rate(int ranks) const {
  ranks = std::max(1, ranks);
  return cpu_adam_rate(std::max(1.0, static_cast<double>(cores_) / ranks), ranks);
}

double HostModel::cpu_adam_rate(double cores, int ranks) const {
  ranks = std::max(1, ranks);
  return std::min(adam_per_core_ * std::max(cores, 1e-3), adam_node_ / ranks);
}

Duration HostModel::cpu_adam_time(std::int64_t params, double cores, int ranks) const {
  return Duration::from_seconds(static_cast<double>(params) / cpu_adam_rate(cores, ranks));
}

double HostModel::torch_adamw_rate(double cores, int ranks) const {
  ranks = std::max(1, ranks);
  return std::min(torch_adamw_per_core_ * std::max(cores, 1e-3), adam_node_ * torch_adamw_node_fraction_ / ranks);
}

Duration HostModel::torch_adamw_time(std::int64_t params, double cores, int ranks) const {
  return Duration::from_seconds(static_cast<double>(params) / torch_adamw_rate(cores, ranks));
}

Duration HostModel::torch_pass_time(Bytes bytes, double cores, int ranks) const {
  constexpr double kBytesPerAdamwParam = 75;
  return Duration::from_seconds(bytes.as_double() / (kBytesPerAdamwParam * torch_adamw_rate(cores, ranks)));
}

void check_gpu_supports(const TrainingSpec& training, const hardware::GpuSpec& gpu, const std::string& file) {
  if (training.precision == Precision::FP8 && !gpu.peak_fp8) {
    throw InputError(file, "/training/precision",
                     "fp8 training needs FP8 tensor cores; the " + gpu.name + " has none (expected bf16, fp16 or fp32)");
  }
}

}  // namespace clustersim::models
