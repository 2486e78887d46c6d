#pragma once
// A deterministic stand-in for the step model in the planner tests: simple formulas whose numbers
// a test can derive by hand. None of its figures is a hardware fact.
//
//   compute   C = 320 s / GPUs x (0.75 / e), e = compute.gemm.bf16.max_efficiency of the scenario's
//             calibration profile file (0.75 with "default")
//   comm      M = 0.5 s x (12.5 GB/s / NIC bandwidth) on more than one node (12.5 GB/s without an
//             override), x 0.8 with NCCL_ALGO=Tree; 0 on one node
//   step      t = C + M, x 1.1 with EVENT fidelity; band [0.9 t, 1.2 t]
//   memory    fits, peak 40 GiB of 80 GiB usable;  MFU 0.4
// Scenarios whose name, nodes or layout match `fail_when` throw (the step model rejecting them).

#include <functional>
#include <string>

#include "models/scenario.hpp"
#include "models/step_estimate.hpp"

namespace clustersim::testing {

struct FakeStepModel {
  double compute_s = 320;  // seconds x GPUs
  double comm_s = 0.5;
  double event_factor = 1.1;
  std::function<bool(const models::Scenario&)> fail_when;
  models::StepEstimate operator()(const models::Scenario& s, models::Fidelity f) const;
};

// A constant step time with a band, for the cost arithmetic.
models::StepEvaluator constant_step(double step_s, double low_s, double high_s);

}  // namespace clustersim::testing
