// The NCCL fitter recovers known parameters from synthetic results made by the model itself.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <stdexcept>
#include <vector>

#include "calibrate/nccl_fit.hpp"
#include "hardware/errors.hpp"
#include "hardware/catalog.hpp"
#include "sim/nccl/collective_predictor.hpp"
#include "support/profile_parameters.hpp"

using namespace clustersim;
using namespace clustersim::sim::nccl;

namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

// Results of an nccl-tests sweep predicted with `truth`, times multiplied by lognormal noise.
calibrate::CalibrationResults synthetic_results(const hardware::CalibrationProfile& truth, double noise) {
  std::mt19937 rng(20261121);
  std::normal_distribution<double> gauss(0.0, noise);
  calibrate::CalibrationResults results;
  results.tool.name = "nccl-tests";
  results.tool.version = "synthetic";
  results.tool.command = "-b 8 -e 4G -f 4";
  results.environment.emplace();
  results.environment->gpu_name = "NVIDIA H200";
  results.environment->gpu_count = 4;
  results.environment->nccl_version = "2.28.9";
  for (const std::string op : {"all_reduce", "all_gather", "reduce_scatter"}) {
    PredictorConfig cfg;
    cfg.node = hardware::resolve_node(catalog(), "hgx-h200");
    cfg.shape = {1, 4};
    cfg.env = {{"NCCL_NVLS_ENABLE", "0"}};
    cfg.profile = &truth;
    const CollectivePredictor pred(cfg);
    calibrate::CollectiveSeries series;
    series.op = op;
    series.gpus_per_node = series.nranks = 4;
    series.env = {{"NCCL_NVLS_ENABLE", "0"}};
    for (long long s = 1024; s <= (4LL << 30); s *= 4) {
      calibrate::CollectivePoint p;
      p.size_bytes = s;
      p.time_us = pred.predict(*parse_op(op), Bytes::of(s)).time.microseconds() * std::exp(gauss(rng));
      series.points.push_back(p);
    }
    results.collectives.push_back(series);
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
  // step latencies twice NCCL's, base latency 1.5 times NCCL's, and an NVLink ramp within each
  // launch (d 0.2, tau 100 us; seeded at 0.1 and 1 ms, no fallback).
  using testing::ratio_parameter;
  const auto truth = testing::profile_of(
      "truth", {ratio_parameter("nccl.nvlink.efficiency", 0.70), ratio_parameter("nccl.latency.nvlink_scale", 2.0),
                ratio_parameter("nccl.latency.base_scale", 1.5), ratio_parameter("nccl.nvlink.ramp_deficit", 0.2),
                testing::duration_parameter("nccl.nvlink.ramp_time", 100e-6)});
  calibrate::FitReport report;
  const auto params = calibrate::fit_nccl_parameters(synthetic_results(truth, 0.02), report);
  CHECK(report.system == "hgx-h200");
  CHECK(report.points == 3 * 12);
  INFO(report.to_json().dump(2));
  if (std::getenv("SHOW_FIT")) std::cout << report.to_json().dump(2) << "\n";
  // 2% noise on 36 points: the bandwidth parameter comes back within 3%, the latency scales within
  // 15%. The ramp itself is not pinned down by one channel count's sweep (it comes back near
  // d 0.13, tau 0.8 ms, trading with the knee); it is left unchecked.
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
  const calibrate::CalibrationResults no_env;
  CHECK_THROWS_AS(calibrate::fit_nccl_parameters(no_env, report), InputError);
  // A zero-byte point (the format allows nccl-tests' zero-byte rows; load_fit_input rejects them
  // naming the file) is refused here too, rather than fitted as a transfer of nothing.
  calibrate::CalibrationResults zero;
  zero.collectives.emplace_back();
  zero.collectives[0].op = "all_reduce";
  zero.collectives[0].points.emplace_back().time_us = 10.0;  // size_bytes 0
  CHECK_THROWS_WITH(calibrate::fit_nccl_parameters(zero, report, catalog(), "hgx-h200"),
                    Catch::Contains("/collectives") && Catch::Contains("at least 1 byte"));
}

TEST_CASE("the fit's uncertainty follows the spread between sessions", "[unit][nccl][fit]") {
  // One parameter, the common level of 100 points (d log t / d phi = 1, weight 1, no prior), so
  // A = J'WJ = 100 and A^-1 = 0.01. Session 0's 50 points sit 0.1 above the fitted level and
  // session 1's 50 points 0.1 below (r = +-0.1). Each session's gradient share is
  // u_g = sum of its residuals = +-5, so the sandwich is G / (G - 1) A^-1 (5^2 + 5^2) A^-1
  // = 2 x 0.01 x 50 x 0.01 = 0.01: a standard deviation of 0.1, the sessions' own offset.
  // Independent residuals would give s^2 A^-1 = (100 x 0.01 / 99) x 0.01 = 1.01e-4 (0.01).
  const int n = 100;
  std::vector<double> jac(n, 1.0), w(n, 1.0), r(n);
  std::vector<int> session(n);
  for (int i = 0; i < n; ++i) {
    session[static_cast<std::size_t>(i)] = i < 50 ? 0 : 1;
    r[static_cast<std::size_t>(i)] = i < 50 ? 0.1 : -0.1;
  }
  const std::vector<double> cov = calibrate::session_covariance(1, {0.01}, jac, w, r, session);
  REQUIRE(cov.size() == 1);
  CHECK(std::sqrt(cov[0]) == Approx(0.1).epsilon(1e-9));
  // One session: no spread between sessions to measure (the fit keeps the independent estimate).
  const std::vector<int> one(n, 0);
  CHECK(calibrate::session_covariance(1, {0.01}, jac, w, r, one)[0] == 0.0);
  // Residuals that alternate within each session cancel in its share: nothing between sessions.
  for (int i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = i % 2 == 0 ? 0.1 : -0.1;
  CHECK(calibrate::session_covariance(1, {0.01}, jac, w, r, session)[0] == Approx(0.0).margin(1e-15));
  CHECK_THROWS_AS(calibrate::session_covariance(2, {0.01}, jac, w, r, session), std::invalid_argument);
}
