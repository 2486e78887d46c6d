#pragma once
// Fits the compute model's "compute.*" and "host.*" parameters (models/compute_model.hpp) from the
// gemm, attention, memory, host and cpu_adam sections of a calibration results file (the results
// schema), with robust least squares and k-fold cross-validation.
//
// Fits (each linear in its unknowns; iteratively reweighted least squares with Huber weights on
// relative residuals, so a few disturbed points do not move the fit):
//   launch gap t0 = the median time per empty full-grid kernel queued back to back ("launch_gap"
//              memory entries with a full queue)          -> compute.kernel_overhead
//   memory     t = t0 + B / (BW_hbm e_mem)                 -> compute.memory.efficiency (and
//              compute.kernel_overhead, the intercept, where no launch gap was measured)
//              (kernels copy, read, write, elementwise; "reduce" and "cuda_memcpy" are references)
//   strided    t = t0 + max(B / (BW_hbm e_mem), N / (P_fp32 r)), N the elements of a "strided"
//              memory entry (PyTorch's non-vectorized element-wise kernel): r the median of
//              N / ((t - t0) P_fp32) over the element-bound points -> compute.memory.strided_elements_per_flop
//   gemm       (t - t0) P / F = 1/e_max + (k_half/e_max) / k + (mn_half/e_max) / min(m, n), per dtype
//              -> compute.gemm.<dtype>.max_efficiency, .half_k, .half_mn  (memory-bound shapes are
//              left out; a negative term is dropped and the rest refitted)
//   sustained  r = (t_curve - t0) / (t_load - t0) for the square bf16 product of the continuous-load
//              test ("sustained" GEMM entries, phase "mixed", else "sustained"; t_curve from the
//              bf16 curve above)                           -> compute.sustained_ratio
//   attention  (t - t0) P_bf16 / F = 1/e_max + (s_half/e_max) / s_kv, per direction
//              -> compute.attention.<fwd|bwd>.max_efficiency, .half_seq
//   host       t = latency + S / bw for one GPU copying alone, per direction and pinned/pageable
//              -> host.<h2d|d2h>.<pinned|pageable>.bandwidth; several GPUs at once (pinned):
//              -> host.<h2d|d2h>.pinned.aggregate_bandwidth (GPUs x the per-GPU bandwidth measured)
//   cpu_adam   rate = min(per_core x threads, node): per_core from the unsaturated half of the
//              thread counts, node from the plateau when the largest runs saturate
//              -> host.cpu_adam.params_per_second_per_core, host.cpu_adam.node_params_per_second
// F and B are counted as models/kernel_op.hpp counts them; P, BW_hbm and the SM count come from the
// catalog's GPU; t0 (the per-kernel fixed time) from the memory fit, else the model's default.
// Cross-validation: the points of each kind are split into k = min(5, n) folds (in order of size,
// every k-th point to a fold), each fold predicted from a fit on the others; the report gives the
// in-sample and held-out mean and maximum relative time errors per kind.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/results.hpp"
#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"

namespace clustersim::calibrate {

struct KindFitError {
  std::string kind;  // "gemm.bf16", "attention.fwd", "memory", "host.h2d.pinned", "cpu_adam", ...
  int samples = 0;
  int folds = 0;
  double fit_mean_abs = 0;  // relative time error of the fit on all points
  double cv_mean_abs = 0;   // relative error of held-out predictions
  double cv_max_abs = 0;
};

struct ComputeFitReport {
  std::vector<KindFitError> kinds;
  std::vector<std::string> notes;  // sections absent, points left out, parameters not identifiable
  nlohmann::json to_json() const;  // for the profile's "cross_validation" field
  std::string to_text() const;     // the per-kind error table
};

// Fits from calibration results (read strictly by results.hpp, typically merged by fit_input.hpp);
// the collectives and p2p sections belong to nccl_fit.hpp; absent sections simply fit nothing.
std::vector<hardware::ProfileParameter> fit_compute_parameters(const CalibrationResults& results,
                                                               const hardware::GpuSpec& gpu, ComputeFitReport& report);

}  // namespace clustersim::calibrate
