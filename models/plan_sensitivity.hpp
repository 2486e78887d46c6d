#pragma once
// Sensitivity of the best candidate: which link or parameter moves the answer most. The best
// candidate is evaluated again, at the fidelity of its final estimate (EVENT when re-checked), with
// one change at a time, and priced with the same plan; each row gives the change in step time, in
// days to train and in dollars under the best candidate's cheapest option.
//
// Perturbations:
//   nic_bandwidth_xF     cluster.network.nic_bandwidth = F x the node's NIC bandwidth (the
//                        catalog's, or the scenario's override): "what a 2x faster EFA would buy".
//                        Skipped on one node or a node without NICs.
//   nccl:NAME=VALUE,...  each of the plan's NCCL settings applied on top of the candidate's env.
//   gemm_efficiency_+P%  compute.gemm.<dtype>.max_efficiency x (1 +- P), through a calibration
//   gemm_efficiency_-P%  profile derived from the candidate's (its parameters, with this one
//                        replaced; the value in use when the profile lacks it, capped at 1), written
//                        to the scratch directory and named by the scenario's "calibration". Skipped
//                        without a scratch directory.

#include <filesystem>
#include <vector>

#include "hardware/catalog.hpp"
#include "models/plan_result.hpp"
#include "models/plan_runner.hpp"
#include "models/step_estimate.hpp"

namespace clustersim::models {

struct SensitivityContext {
  const PlanResult& result;  // with best set
  const CandidatePricer& pricer;
  const hardware::Catalog& catalog;
  const StepEvaluator& evaluate;
  std::filesystem::path scratch_dir;
  int threads = 1;
};

std::vector<SensitivityRow> run_sensitivity(const SensitivityContext& ctx);

// Writes a profile derived from `base` (may be null) with `name` scaled by `factor` (value in use
// read through the compute model's defaults), capped at `cap`, to `path`. Returns the new value.
double write_scaled_profile(const hardware::CalibrationProfile* base, const hardware::GpuSpec& gpu,
                            const std::string& name, double factor, double cap, const std::filesystem::path& path);

}  // namespace clustersim::models
