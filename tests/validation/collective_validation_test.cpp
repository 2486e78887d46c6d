// Predicted against published nccl-tests measurements (tests/validation/data/): fails when a set's
// median or worst absolute time error (sizes >= 64 KB) grows past the threshold recorded in
// collective_thresholds.json. Prints every point: the measurement (the expectation), the
// prediction, the error, with the set's provenance.

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "hardware/catalog.hpp"
#include "support/source_text.hpp"
#include "sim/nccl/collective_validation.hpp"

using namespace clustersim;
using namespace clustersim::sim::nccl;

namespace {

std::string read_data(const std::string& name) { return testing::read_validation_data(name); }

}  // namespace

TEST_CASE("collectives against published nccl-tests results", "[validation][nccl]") {
  const hardware::Catalog catalog = hardware::Catalog::load();
  const auto sets = load_published_sets(read_data("collective_sets.json"), "collective_sets.json", read_data);
  const auto thresholds = load_thresholds(read_data("collective_thresholds.json"), "collective_thresholds.json");
  for (const ValidationSet& set : sets) {
    const SetResult r = run_validation(set, catalog, nullptr);
    std::cout << "== " << set.name << " (" << set.provenance << ")\n";
    for (const PointResult& p : r.points) {
      char line[256];
      std::snprintf(line, sizeof line, "   %-14s %3d nodes %-11s %12lld B  Expectation: %10.1f us  Prediction: %10.1f us  %+6.1f%%%s\n",
                    p.point.system.c_str(), p.point.nodes, std::string(to_string(p.point.op)).c_str(),
                    static_cast<long long>(p.point.size.count()), p.point.measured_time_us,
                    p.prediction.time.microseconds(), 100 * p.error, p.counted ? "" : " (not counted)");
      std::cout << line;
    }
    std::cout << "   median |error| " << 100 * r.median_abs_error << "%, worst " << 100 * r.worst_abs_error << "%\n";
    INFO(set.name << ": median " << r.median_abs_error << ", worst " << r.worst_abs_error);
    const auto t = thresholds.find(set.name);
    REQUIRE(t != thresholds.end());
    CHECK(r.median_abs_error <= t->second.median_abs_error);
    CHECK(r.worst_abs_error <= t->second.worst_abs_error);
  }
}
