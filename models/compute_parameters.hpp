#pragma once
// Names, efficiency curves and documented defaults of the "compute.*" and "host.*" calibration
// parameters: shared by the compute model (models/compute_model.hpp, which documents them) and
// the fitter (calibrate/compute_fit.hpp), so both read the same curves. Header-only on purpose:
// the fitter uses it without linking the models library.
//
// GEMM efficiency (fraction of the dtype's catalog peak) for C[m,n] += A[m,k] B[k,n], batch b:
//   eff = e_max x wave(m, n, b) / (1 + k_half / k + mn_half / min(m, n))
// Two hyperbolas: in the reduction depth k (the main loop's prologue and epilogue, and the
// split-K reduction of shallow or narrow GEMMs, cost about k_half of k) and in the narrower
// output side (tiles left partly empty). Wave quantization charges only grouped GEMMs (b > 1):
//   wave = tiles / (ceil(tiles / SMs) x SMs),  tiles = ceil(m / tile_m) ceil(n / tile_n) b
// for a single GEMM, cuBLAS's split-K and stream-K kernels keep the SMs busy on small output
// grids (measured on H200: 1024 x 512 x 4096 in bf16 at 0.28 of the peak, where a 32-tile wave
// of 128 x 128 tiles would give 0.24 x e_max / ...; no wave steps across 361 shapes).
// Linear in (1/e_max, k_half/e_max, mn_half/e_max) for the fitter:
//   t - t0 = F / (P wave) x (1/e_max + (k_half/e_max) / k + (mn_half/e_max) / min(m, n)).
// The curve describes products timed as the calibration sweep times them (repeats of ~10 ms); in
// a training step the GPU stays at its power limit and the step model multiplies GEMM and
// attention efficiencies by compute.sustained_ratio (the harness's continuous-load test:
// (t_curve - t0) / (t_load - t0) for one square product).
//
// Attention efficiency (fraction of the bf16 peak, FLOPs counted as in kernel_op.hpp):
//   eff = e_max / (1 + s_half / s_kv), fitted separately for forward and backward.
//
// Strided element-wise kernels (kernel_op.hpp MemoryPath::STRIDED), N elements, B bytes:
//   t = max(B / (BW_hbm e_mem), N / (P_fp32 r_strided)) + t0

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "models/scenario.hpp"

namespace clustersim::models::compute_params {

inline std::string_view dtype_name(Precision p) {
  switch (p) {
    case Precision::BF16: return "bf16";
    case Precision::FP16: return "fp16";
    case Precision::FP8: return "fp8";
    case Precision::FP32: return "fp32";
  }
  return "bf16";
}

inline std::string gemm_max_efficiency(Precision p) {
  return "compute.gemm." + std::string(dtype_name(p)) + ".max_efficiency";
}
inline std::string gemm_half_k(Precision p) { return "compute.gemm." + std::string(dtype_name(p)) + ".half_k"; }
inline std::string gemm_half_mn(Precision p) { return "compute.gemm." + std::string(dtype_name(p)) + ".half_mn"; }
inline constexpr std::string_view kGemmTileM = "compute.gemm.tile_m";
inline constexpr std::string_view kGemmTileN = "compute.gemm.tile_n";
inline std::string attention_max_efficiency(bool backward) {
  return std::string("compute.attention.") + (backward ? "bwd" : "fwd") + ".max_efficiency";
}
inline std::string attention_half_seq(bool backward) {
  return std::string("compute.attention.") + (backward ? "bwd" : "fwd") + ".half_seq";
}
inline constexpr std::string_view kMemoryEfficiency = "compute.memory.efficiency";
inline constexpr std::string_view kKernelOverhead = "compute.kernel_overhead";
// Throughput of tensor-core kernels (GEMMs, attention) in a training step, where the GPU stays at
// its power limit, over the throughput the efficiency curves describe (calibration sweeps).
inline constexpr std::string_view kSustainedRatio = "compute.sustained_ratio";
// Elements per second of PyTorch's non-vectorized element-wise kernels (MemoryPath::STRIDED),
// over the catalog fp32 peak (both scale with SMs x clock).
inline constexpr std::string_view kStridedElementsPerFlop = "compute.memory.strided_elements_per_flop";

// host.{h2d,d2h}.{pinned,pageable}.bandwidth: one GPU copying alone;
// host.{h2d,d2h}.pinned.aggregate_bandwidth: every GPU of the node copying at once, in total.
inline std::string host_copy_bandwidth(bool h2d, bool pinned) {
  return std::string("host.") + (h2d ? "h2d" : "d2h") + (pinned ? ".pinned" : ".pageable") + ".bandwidth";
}
inline std::string host_aggregate_bandwidth(bool h2d) {
  return std::string("host.") + (h2d ? "h2d" : "d2h") + ".pinned.aggregate_bandwidth";
}
inline constexpr std::string_view kHostMemoryEfficiency = "host.memory.efficiency";
inline constexpr std::string_view kCpuAdamPerCore = "host.cpu_adam.params_per_second_per_core";
inline constexpr std::string_view kCpuAdamNode = "host.cpu_adam.node_params_per_second";
inline constexpr std::string_view kZero3ModuleHookForward = "host.deepspeed.zero3_module_hook.forward";
inline constexpr std::string_view kZero3ModuleHookBackward = "host.deepspeed.zero3_module_hook.backward";
inline constexpr std::string_view kTorchAdamwPerCore = "host.torch_adamw.params_per_second_per_core";
inline constexpr std::string_view kTorchAdamwNodeFraction = "host.torch_adamw.node_fraction";
// The rank's CPU time to issue one kernel of an eager step: the Python call, PyTorch's dispatcher
// and the launch (forward and recomputed forward), or autograd's engine and the launch (backward).
inline constexpr std::string_view kDispatchForward = "host.dispatch.forward_per_kernel";
inline constexpr std::string_view kDispatchBackward = "host.dispatch.backward_per_kernel";
// DTensor's added CPU time per tensor-parallel linear (ColwiseParallel/RowwiseParallel), forward
// and backward: sharding propagation and redistribution checks on every DTensor op.
inline constexpr std::string_view kDtensorForward = "host.dispatch.dtensor.forward_per_linear";
inline constexpr std::string_view kDtensorBackward = "host.dispatch.dtensor.backward_per_linear";

// Documented defaults (used where no profile has the parameter; each comes with its reason in
// compute_model.hpp).
struct Defaults {
  static constexpr double gemm_max_efficiency_bf16 = 0.75;
  static constexpr double gemm_max_efficiency_fp8 = 0.65;
  static constexpr double gemm_max_efficiency_fp32 = 0.80;
  static constexpr double gemm_half_k = 180;
  static constexpr double gemm_half_mn = 40;
  static constexpr double gemm_tile_m = 128;
  static constexpr double gemm_tile_n = 128;
  static constexpr double attention_fwd_max_efficiency = 0.55;
  static constexpr double attention_bwd_max_efficiency = 0.45;
  static constexpr double attention_half_seq = 256;
  static constexpr double memory_efficiency = 0.80;
  static constexpr double kernel_overhead_us = 2.0;
  static constexpr double sustained_ratio = 0.96;
  static constexpr double strided_elements_per_flop = 1.0 / 200;
  static constexpr double host_pinned_fraction_of_pcie = 0.80;
  static constexpr double host_pageable_fraction_of_pinned = 0.40;
  static constexpr double host_memory_efficiency = 0.60;
  static constexpr double cpu_adam_params_per_core = 1.0e9;
  static constexpr double cpu_adam_bytes_per_param = 30;  // see compute_model.hpp
  static constexpr double zero3_module_hook_forward_s = 338e-6;
  static constexpr double zero3_module_hook_backward_s = 473e-6;
  static constexpr double torch_adamw_params_per_core = 2.0e8;
  static constexpr double torch_adamw_node_fraction = 0.30;
  static constexpr double dispatch_forward_s = 45e-6;
  static constexpr double dispatch_backward_s = 38e-6;
  static constexpr double dtensor_forward_s = 413e-6;
  static constexpr double dtensor_backward_s = 775e-6;
};

inline double wave_efficiency(double m, double n, double batch, double tile_m, double tile_n, double sms) {
  if (sms <= 0 || tile_m <= 0 || tile_n <= 0 || batch <= 1) return 1.0;
  const double tiles = std::ceil(m / tile_m) * std::ceil(n / tile_n) * std::max(1.0, batch);
  const double waves = std::ceil(tiles / sms);
  return waves > 0 ? tiles / (waves * sms) : 1.0;
}

inline double smallest_dim(double m, double n, double k) { return std::max(1.0, std::min({m, n, k})); }

inline double gemm_efficiency(double m, double n, double k, double batch, double max_efficiency, double half_k,
                              double half_mn, double tile_m, double tile_n, double sms) {
  return max_efficiency * wave_efficiency(m, n, batch, tile_m, tile_n, sms) /
         (1.0 + half_k / std::max(1.0, k) + half_mn / std::max(1.0, std::min(m, n)));
}

inline double attention_efficiency(double seq_kv, double max_efficiency, double half_seq) {
  return max_efficiency / (1.0 + half_seq / std::max(1.0, seq_kv));
}

}  // namespace clustersim::models::compute_params
