#include "unit/plan_fakes.hpp"

#include <stdexcept>

#include "hardware/calibration_profile.hpp"

namespace clustersim::testing {

models::StepEstimate FakeStepModel::operator()(const models::Scenario& s, models::Fidelity f) const {
  if (fail_when && fail_when(s)) throw std::runtime_error("fake step model: unsupported layout");
  double eff = 0.75;
  if (s.calibration != "default") {
    const auto profile = hardware::CalibrationProfile::load(s.calibration);
    if (const auto* p = profile.find("compute.gemm.bf16.max_efficiency")) eff = p->value;
  }
  const double compute = compute_s / s.world_size() * (0.75 / eff);
  double comm = 0;
  if (s.cluster.nodes > 1) {
    const double bw = s.cluster.network.nic_bandwidth ? s.cluster.network.nic_bandwidth->bytes_per_second() : 12.5e9;
    comm = comm_s * 12.5e9 / bw;
    const auto algo = s.nccl.env.find("NCCL_ALGO");
    if (algo != s.nccl.env.end() && algo->second == "Tree") comm *= 0.8;
  }
  models::StepEstimate e;
  e.fidelity = f;
  const double factor = f == models::Fidelity::EVENT ? event_factor : 1.0;
  e.step_time_s = (compute + comm) * factor;
  e.low_s = 0.9 * e.step_time_s;
  e.high_s = 1.2 * e.step_time_s;
  e.tokens_per_step = s.training.global_batch_size * s.training.seq_len;
  e.tokens_per_s = static_cast<double>(e.tokens_per_step) / e.step_time_s;
  e.mfu = 0.4;
  e.breakdown.compute_s = compute * factor;
  e.breakdown.exposed_comm_s = comm * factor;
  e.memory.peak = Bytes::gib(40);
  e.memory.usable = Bytes::gib(80);
  e.memory.fits = true;
  e.bottleneck = comm > compute ? "inter-node communication" : "compute";
  return e;
}

models::StepEvaluator constant_step(double step_s, double low_s, double high_s) {
  return [=](const models::Scenario& s, models::Fidelity f) {
    models::StepEstimate e;
    e.fidelity = f;
    e.step_time_s = step_s;
    e.low_s = low_s;
    e.high_s = high_s;
    e.tokens_per_step = s.training.global_batch_size * s.training.seq_len;
    e.memory.peak = Bytes::gib(40);
    e.memory.usable = Bytes::gib(80);
    e.memory.fits = true;
    return e;
  };
}

}  // namespace clustersim::testing
