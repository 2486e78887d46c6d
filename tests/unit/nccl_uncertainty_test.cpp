// A prediction's uncertainty: the parameters' part and the profile's held-out error for the op and
// transport (collective_predictor.hpp, 4), and how validation counts the points it covers
// (collective_validation.hpp, GroupResult::within68).

#include <catch2/catch.hpp>

#include <cmath>

#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"
#include "sim/nccl/collective_predictor.hpp"
#include "sim/nccl/collective_validation.hpp"
#include "support/profile_parameters.hpp"

using namespace clustersim;
using namespace clustersim::sim::nccl;

namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

CollectivePredictor predictor(const hardware::CalibrationProfile* profile, int gpus = 4) {
  PredictorConfig cfg;
  cfg.node = hardware::resolve_node(catalog(), "hgx-h200");
  cfg.shape = {1, gpus};
  cfg.version = "2.28.9";
  cfg.profile = profile;
  return CollectivePredictor(cfg);
}

// A profile with one calibrated parameter and the given held-out entries (the fitter's layout).
hardware::CalibrationProfile profile_with(const nlohmann::json& entries) {
  auto p = testing::ratio_parameter("nccl.nvlink.efficiency", 0.9);
  p.uncertainty = 0.02;
  return hardware::CalibrationProfile::from_parts("held-out", {}, {p},
                                                  nlohmann::json{{"nccl", {{"cross_validation", entries}}}});
}

nlohmann::json entry(const std::string& op, const std::string& transport, int points, double median) {
  return {{"op", op}, {"transport", transport}, {"points", points}, {"median_abs_error", median}, {"worst_abs_error", 0.5}};
}

}  // namespace

TEST_CASE("a profile's held-out error for the op and transport widens the prediction", "[unit][nccl]") {
  const auto bare = profile_with(nlohmann::json::array());
  const CollectivePredictor plain = predictor(&bare);
  const std::string transport = plain.intra_transport();  // the 4 GPUs' ring inside the node
  REQUIRE_FALSE(transport.empty());
  const double u0 = plain.predict(CollectiveOp::ALL_REDUCE, Bytes::mib(1)).uncertainty;
  REQUIRE(u0 > 0);

  // All-reduce over this transport held out at a median of 10% over 100 points: the model's part
  // is 1.4826 x 0.10 = 0.14826 (a normal error's standard deviation for that median), added in
  // quadrature to the parameters' part, which the entries do not change.
  const auto with = profile_with(nlohmann::json::array({entry("all_reduce", transport, 100, 0.10),
                                                        entry("broadcast", transport, 19, 0.30),
                                                        entry("all_gather", "NET/Socket/0", 100, 0.30),
                                                        entry("p2p", transport, 40, 0.05),
                                                        {{"op", "reduce"}, {"transport", transport}}}));
  const CollectivePredictor p = predictor(&with);
  CHECK(p.predict(CollectiveOp::ALL_REDUCE, Bytes::mib(1)).uncertainty ==
        Approx(std::sqrt(u0 * u0 + 0.14826 * 0.14826)));
  // 19 held-out points are fewer than kMinHeldOutPoints (20): the parameters' part alone.
  CHECK(p.predict(CollectiveOp::BROADCAST, Bytes::mib(1)).uncertainty == Approx(u0));
  // Another transport's entry, or one without a median, does not apply.
  CHECK(p.predict(CollectiveOp::ALL_GATHER, Bytes::mib(1)).uncertainty == Approx(u0));
  CHECK(p.predict(CollectiveOp::REDUCE, Bytes::mib(1)).uncertainty == Approx(u0));
  // A pair takes the "p2p" entry: sqrt(u0^2 + (1.4826 x 0.05)^2), 0.07413 the model's part.
  CHECK(p.predict_pair(Bytes::mib(1), 0, 1).uncertainty == Approx(std::sqrt(u0 * u0 + 0.07413 * 0.07413)));
  // Without a profile nothing is held out: the fallbacks' widths alone.
  const CollectivePredictor none = predictor(nullptr);
  const double uf = none.predict(CollectiveOp::ALL_REDUCE, Bytes::mib(1)).uncertainty;
  CHECK(uf == Approx(none.predict(CollectiveOp::BROADCAST, Bytes::mib(1)).uncertainty));
}

TEST_CASE("validation counts the points inside the 68% and 90% bands", "[unit][nccl]") {
  ValidationSet set;
  set.name = "machine/results/all_reduce/4ranks";  // a measured set: pooled into a group
  set.machine = "test machine";
  std::vector<SetResult> results(1);
  results[0].set = &set;
  // Five counted points at a stated 10%: the measured time m against the predicted p = m (1 +
  // error) is |m / p - 1| = |1 / (1 + error) - 1| off:
  //   error -0.05 -> 5.3% (inside the 68% band, 10%); +0.08 -> 7.4% (inside); +0.15 -> 13.0%
  //   (inside the 90% band, 1.6449 x 10% = 16.4%); -0.15 -> 17.6% and +0.30 -> 23.1% (outside).
  // 68%: 2 of 5 = 40%; 90%: 3 of 5 = 60%. A point below 64 KB is not counted.
  for (double e : {-0.05, 0.08, 0.15, -0.15, 0.30, 0.9}) {
    PointResult r;
    r.point.system = "hgx-h200";
    r.point.size = e == 0.9 ? Bytes::kib(8) : Bytes::mib(1);
    r.point.measured_time_us = 100;
    r.prediction.uncertainty = 0.10;
    r.error = e;
    r.counted = e != 0.9;
    results[0].points.push_back(r);
  }
  const auto groups = group_results(results);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].points == 5);
  CHECK(groups[0].within68 == Approx(0.4));
  CHECK(groups[0].within90 == Approx(0.6));
}
