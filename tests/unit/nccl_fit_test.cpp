// The NCCL fitter recovers known parameters from synthetic results made by the model itself.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>

#include "calibrate/nccl_fit.hpp"
#include "hardware/errors.hpp"
#include "hardware/catalog.hpp"
#include "sim/nccl/collective_predictor.hpp"

using namespace clustersim;
using namespace clustersim::sim::nccl;

namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

hardware::ProfileParameter ratio(const std::string& name, double v) {
  hardware::ProfileParameter p;
  p.name = name;
  p.kind = hardware::ProfileParameter::Kind::RATIO;
  p.value = v;
  p.text = std::to_string(v);
  return p;
}

// Results JSON of an nccl-tests sweep predicted with `truth`, times multiplied by lognormal noise.
nlohmann::json synthetic_results(const hardware::CalibrationProfile& truth, double noise) {
  std::mt19937 rng(20261121);
  std::normal_distribution<double> gauss(0.0, noise);
  nlohmann::json results = {{"schema_version", 1},
                            {"kind", "clustersim-calibration-results"},
                            {"tool", {{"name", "nccl-tests"}, {"version", "synthetic"}, {"command", "-b 8 -e 4G -f 4"}}},
                            {"environment", {{"gpu_name", "NVIDIA H200"}, {"gpu_count", 4}, {"nccl_version", "2.28.9"}}},
                            {"collectives", nlohmann::json::array()}};
  for (const std::string op : {"all_reduce", "all_gather", "reduce_scatter"}) {
    PredictorConfig cfg;
    cfg.node = hardware::resolve_node(catalog(), "hgx-h200");
    cfg.shape = {1, 4};
    cfg.env = {{"NCCL_NVLS_ENABLE", "0"}};
    cfg.profile = &truth;
    const CollectivePredictor pred(cfg);
    nlohmann::json points = nlohmann::json::array();
    for (long long s = 1024; s <= (4LL << 30); s *= 4) {
      const double t = pred.predict(*parse_op(op), Bytes::of(s)).time.microseconds() * std::exp(gauss(rng));
      points.push_back({{"size_bytes", s}, {"time_us", t}});
    }
    results["collectives"].push_back({{"op", op},
                                      {"nodes", 1},
                                      {"gpus_per_node", 4},
                                      {"env", {{"NCCL_NVLS_ENABLE", "0"}}},
                                      {"points", points}});
  }
  return results;
}

double fitted(const std::vector<hardware::ProfileParameter>& ps, const std::string& name) {
  for (const auto& p : ps) {
    if (p.name == name) return p.value;
  }
  FAIL("parameter " << name << " was not fitted");
  return 0;
}

}  // namespace

TEST_CASE("the NCCL fitter recovers known parameters with cross-validation", "[unit][nccl][fit]") {
  // Truth differs from the fallbacks: NVLink efficiency 0.70 (fallback 20.6/25 = 0.824), NVLink
  // step latencies twice NCCL's, base latency 1.5 times NCCL's.
  const auto truth = hardware::CalibrationProfile::from_parts(
      "truth", {},
      {ratio("nccl.nvlink.efficiency", 0.70), ratio("nccl.latency.nvlink_scale", 2.0),
       ratio("nccl.latency.base_scale", 1.5)},
      nlohmann::json::object());
  calibrate::FitReport report;
  const auto params = calibrate::fit_nccl_parameters(synthetic_results(truth, 0.02), report);
  CHECK(report.system == "hgx-h200");
  CHECK(report.points == 3 * 12);
  INFO(report.to_json().dump(2));
  if (std::getenv("SHOW_FIT")) std::cout << report.to_json().dump(2) << "\n";
  // 2% noise on 36 points: the bandwidth parameter comes back within 3%, the latency scales within 15%.
  CHECK(fitted(params, "nccl.nvlink.efficiency") == Approx(0.70).epsilon(0.03));
  CHECK(fitted(params, "nccl.latency.nvlink_scale") == Approx(2.0).epsilon(0.15));
  CHECK(fitted(params, "nccl.latency.base_scale") == Approx(1.5).epsilon(0.15));
  // The fit explains the data to about the noise (2% rms in log time).
  CHECK(report.rms_log_residual_after < 0.03);
  CHECK(report.rms_log_residual_before > 0.1);
  // Cross-validation: halves of the sizes predict the other halves to a few percent.
  REQUIRE_FALSE(report.cross_validation.empty());
  for (const auto& c : report.cross_validation) {
    CHECK(c.transport == "P2P/CUMEM");
    CHECK(c.median_abs_error < 0.05);
  }
}

TEST_CASE("the NCCL fitter names what it cannot place", "[unit][nccl][fit]") {
  calibrate::FitReport report;
  nlohmann::json no_env = {{"schema_version", 1}, {"kind", "clustersim-calibration-results"}};
  CHECK_THROWS_AS(calibrate::fit_nccl_parameters(no_env, report), InputError);
}
