// The step band's split-conformal arithmetic (models/step_band.hpp) on hand-made score tables.

#include <catch2/catch.hpp>

#include <cmath>

#include "models/step_band.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

BandScore score(StepRegime r, bool calibrated, double residual, const std::string& row) {
  BandScore s;
  s.set = "test";
  s.row = row;
  s.regime = r;
  s.calibrated = calibrated;
  s.residual = residual;
  return s;
}

// Residuals 0.01 .. n / 100 of one regime and basis.
std::vector<BandScore> ladder(int n, StepRegime r, bool calibrated) {
  std::vector<BandScore> v;
  for (int i = 1; i <= n; ++i) v.push_back(score(r, calibrated, i / 100.0, "r" + std::to_string(i)));
  return v;
}

}  // namespace

TEST_CASE("conformal bands take the order statistics (n + 1) a / 2 and (n + 1)(1 - a / 2)", "[unit][band]") {
  const StepBandTable table(ladder(19, StepRegime::COMPUTE, true));
  // n = 19, 90%: kl = floor(20 x 0.05) = 1, kh = ceil(20 x 0.95) = 19 -> residuals 0.01 and 0.19.
  auto b90 = table.central(StepRegime::COMPUTE, true, 0.90);
  REQUIRE(b90);
  CHECK(b90->low == Approx(0.01));
  CHECK(b90->high == Approx(0.19));
  CHECK(b90->cell.name == "calibrated");
  CHECK(b90->cell.scores == 19);
  // 68%: kl = floor(20 x 0.16) = 3, kh = ceil(20 x 0.84) = 17.
  auto b68 = table.central(StepRegime::COMPUTE, true, 0.68);
  REQUIRE(b68);
  CHECK(b68->low == Approx(0.03));
  CHECK(b68->high == Approx(0.17));
  // One-sided 0.9: k = ceil(20 x 0.9) = 18.
  auto q = table.upper(StepRegime::COMPUTE, true, 0.9);
  REQUIRE(q);
  CHECK(q->low == Approx(0.18));
  // Leaving 0.19 out: 18 residuals, kh = ceil(19 x 0.95) = 19 > 18 in the basis and in "all",
  // so there is no 90% band.
  const BandScore own = score(StepRegime::COMPUTE, true, 0.19, "r19");
  CHECK_FALSE(table.central(StepRegime::COMPUTE, true, 0.90, &own));
  // The 68% band without it: n = 18, kl = floor(19 x 0.16) = 3, kh = ceil(19 x 0.84) = 16.
  auto lo = table.central(StepRegime::COMPUTE, true, 0.68, &own);
  REQUIRE(lo);
  CHECK(lo->cell.name == "calibrated");
  CHECK(lo->low == Approx(0.03));
  CHECK(lo->high == Approx(0.16));
}

TEST_CASE("a basis with too few residuals takes every residual", "[unit][band]") {
  // 19 default compute residuals 0.01..0.19, 5 calibrated compute ones -0.01..-0.05 and 2
  // calibrated host ones, 1 and 2.
  std::vector<BandScore> v = ladder(19, StepRegime::COMPUTE, false);
  for (int i = 1; i <= 5; ++i) v.push_back(score(StepRegime::COMPUTE, true, -i / 100.0, "c" + std::to_string(i)));
  v.push_back(score(StepRegime::HOST, true, 1, "h1"));
  v.push_back(score(StepRegime::HOST, true, 2, "h2"));
  const StepBandTable table(v);
  // Calibrated compute: the calibrated basis, 7 residuals (-0.05..-0.01, 1, 2), whatever the
  // regime; 68% kl = floor(8 x 0.16) = 1 -> -0.05, kh = ceil(8 x 0.84) = 7 -> 2.
  auto b = table.central(StepRegime::COMPUTE, true, 0.68);
  REQUIRE(b);
  CHECK(b->cell.name == "calibrated");
  CHECK(b->cell.scores == 7);
  CHECK(b->low == Approx(-0.05));
  CHECK(b->high == Approx(2));
  // Host 90%: the basis' 7 are too few (kh = ceil(8 x 0.95) = 8 > 7), so every residual (26):
  // kl = floor(27 x 0.05) = 1 -> -0.05, kh = ceil(27 x 0.95) = 26 -> 2.
  auto h = table.central(StepRegime::HOST, true, 0.90);
  REQUIRE(h);
  CHECK(h->cell.name == "all");
  CHECK(h->low == Approx(-0.05));
  CHECK(h->high == Approx(2));
  // Default compute: the 19 default residuals answer.
  auto d = table.central(StepRegime::COMPUTE, false, 0.90);
  REQUIRE(d);
  CHECK(d->cell.name == "catalog defaults");
  CHECK(d->high == Approx(0.19));
}

TEST_CASE("the band table reads back what it writes", "[unit][band]") {
  BandScore a = score(StepRegime::HOST, false, -0.25, "a");
  a.in_sample = true;
  const StepBandTable table({a, score(StepRegime::COMMUNICATION, true, 1.5, "b")});
  const StepBandTable back = StepBandTable::parse(table.to_json("note"), "bands.json");
  REQUIRE(back.scores().size() == 2);
  CHECK(back.scores()[0].regime == StepRegime::HOST);
  CHECK_FALSE(back.scores()[0].calibrated);
  CHECK(back.scores()[0].in_sample);
  CHECK(back.scores()[0].residual == -0.25);
  CHECK(back.scores()[1].regime == StepRegime::COMMUNICATION);
  CHECK(back.scores()[1].residual == 1.5);
}

TEST_CASE("a step's band is its time scaled by exp(residual quantile)", "[unit][band]") {
  // A compute-bound step of 2 s on no parameters (catalog defaults); 19 default compute residuals
  // 0.01..0.19: 68% [0.03, 0.17] -> 2 exp(0.03) and 2 exp(0.17); 90% [0.01, 0.19]; the 0.9
  // quantile 0.18 -> 2 exp(0.18).
  StepEstimate e;
  e.step_time_s = 2;
  e.breakdown.compute_s = 2;
  const StepBandTable table(ladder(19, StepRegime::COMPUTE, false));
  apply_step_band(e, table);
  CHECK(e.band.regime == "compute");
  CHECK_FALSE(e.band.calibrated);
  CHECK(e.low_s == Approx(2 * std::exp(0.03)));
  CHECK(e.high_s == Approx(2 * std::exp(0.17)));
  CHECK(e.band.low90_s == Approx(2 * std::exp(0.01)));
  CHECK(e.band.high90_s == Approx(2 * std::exp(0.19)));
  CHECK(e.band.cell == "catalog defaults");
  CHECK(e.band.scores == 19);
  CHECK(step_time_quantile(e, 0.9, table) == Approx(2 * std::exp(0.18)));
}
TEST_CASE("the regime follows the breakdown's shares", "[unit][band]") {
  StepEstimate e;
  e.step_time_s = 1;
  e.breakdown.compute_s = 0.7;
  e.breakdown.exposed_comm_s = 0.3;  // 30% >= 25%: communication
  CHECK(step_regime(e) == StepRegime::COMMUNICATION);
  e.breakdown.exposed_comm_s = 0.2;
  e.breakdown.host_s = 0.1;  // neither reaches 25%: compute
  CHECK(step_regime(e) == StepRegime::COMPUTE);
  e.breakdown.host_s = 0.3;  // host 30% >= communication 20%: host
  CHECK(step_regime(e) == StepRegime::HOST);
}
