// The step band's coverage on every committed training-step measurement (models/step_band.hpp,
// models/step_residuals.hpp): each measurement's 68% and 90% bands are made from the other
// measurements' residuals (leave-one-out, so no width comes from the point it is checked on), and
// each set must hold at least 60% of its steps in the 68% band and 85% in the 90% band (three sets
// known to fall short have their floors, with the reasons, below). And
// the built-in scores (models/data/step_band_scores.json) must be this model's: re-record them
// with `clustersim validate training --record-bands models/data/step_band_scores.json` when a
// model change moves a residual.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include "hardware/catalog.hpp"
#include "models/step_residuals.hpp"
#include "support/source_text.hpp"

using namespace clustersim;
using namespace clustersim::models;

TEST_CASE("step bands cover what they claim on every committed set", "[validation][band]") {
  const hardware::Catalog catalog = hardware::Catalog::load();
  const auto residuals = collect_step_residuals(testing::read_validation_data, catalog);
  REQUIRE(residuals.size() >= 60);
  const StepBandTable table = step_band_table(residuals);
  const auto checks = check_step_bands(residuals, table);
  for (const auto& c : checks) {
    const StepResidual& r = *c.residual;
    char line[400];
    std::snprintf(line, sizeof line, "   %-26s %-56s measured %9.4f s  predicted %9.4f s  %+6.1f%%  %s%s  %s\n",
                  r.set.c_str(), r.row.c_str(), r.measured_s, r.predicted_s, 100 * (r.predicted_s / r.measured_s - 1),
                  c.in68 ? "68" : "--", c.in90 ? " 90" : " --", c.cell.c_str());
    std::cout << line;
  }
  for (const auto& g : band_coverage(checks)) {
    std::cout << "   " << g.group << ": " << g.measurements << " steps, " << 100 * g.within68 << "% in the 68% band, "
              << 100 * g.within90 << "% in the 90% band, 90% half-width median " << 100 * g.median_half_width90
              << "%\n";
    INFO(g.group);
    // Regime and in-sample groups are reported, not held to the claim (step_band.hpp: the cells
    // do not split by them).
    if (g.group.rfind("regime ", 0) == 0 || g.group == "in sample") continue;
    // Sets known to fall short of 60% / 85%, with their floors today (a floor may only rise):
    //  - eager_probes_1xh100: the same shapes measured twice (run2, run3) differ by up to 34%
    //    (32 tokens: 54.2 against 72.5 ms), more than the model misses by elsewhere;
    //  - impl_probes_1xh100: every step predicted 8 to 35% too slow (GEMMs and attention about 12%
    //    slower per layer than profiled, fp32 AdamW states against the probe's bf16), a bias the
    //    catalog-default residuals, centred near zero, do not hold;
    //  - deepspeed_published: DeepSpeed's 2021 ZeRO-3 steps, 31 to 53% slower than predicted.
    static const std::map<std::string, std::pair<double, double>> known_short{
        {"eager_probes_1xh100", {0.60, 0.85}}, {"impl_probes_1xh100", {0.40, 0.85}}, {"deepspeed_published", {0.58, 0.85}}};
    if (auto k = known_short.find(g.group); k != known_short.end()) {
      CHECK(g.within68 >= k->second.first);
      CHECK(g.within90 >= k->second.second);
      continue;
    }
    CHECK(g.within68 >= 0.60);
    CHECK(g.within90 >= 0.85);
    // The calibrated 4 x H200 probes: 3 calibrated out-of-sample steps are too few for a band of
    // their own, so their 90% band is the calibrated steps' (+-27% today); it may not widen.
    if (g.group == "fsdp2_probes_4xh200") CHECK(g.median_half_width90 <= 0.30);
  }
}

TEST_CASE("the built-in band scores are this model's", "[validation][band]") {
  const hardware::Catalog catalog = hardware::Catalog::load();
  const StepBandTable fresh = step_band_table(collect_step_residuals(testing::read_validation_data, catalog));
  const StepBandTable& builtin = StepBandTable::builtin();
  INFO("re-record: clustersim validate training --record-bands models/data/step_band_scores.json");
  REQUIRE(builtin.scores().size() == fresh.scores().size());
  for (std::size_t i = 0; i < fresh.scores().size(); ++i) {
    const BandScore& a = fresh.scores()[i];
    const BandScore& b = builtin.scores()[i];
    INFO(a.set << " " << a.row);
    CHECK(a.row == b.row);
    CHECK(a.regime == b.regime);
    CHECK(a.calibrated == b.calibrated);
    // Residuals within 1% (ln): rounding and compilers' floating point, not a model change.
    CHECK(std::abs(a.residual - b.residual) <= 0.01);
  }
}
