// This project's own one-GPU steps of Hugging Face Llama-3.2-1B run eagerly (one H100 of a
// 16-vCPU guest, shapes from 32 tokens, where the CPU issuing the kernels sets the step, to
// 4 x 2048, where the GPU does; tests/validation/data/training_eager_probes_1xh100.json) against
// the step model with the host profile whose host.dispatch.* costs were fitted on the same
// machine (calibrate/training_probe/fit_dispatch.py). Prints each step beside its prediction.
// Fails when the step errors grow past training_thresholds.json.

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "hardware/catalog.hpp"
#include "models/training_validation.hpp"
#include "support/source_text.hpp"

using namespace clustersim;
using namespace clustersim::models;

TEST_CASE("eager steps measured on one H100", "[validation][step][eager]") {
  const hardware::Catalog catalog = hardware::Catalog::load();
  const std::string profile = "lent-1xh100-2026-12-host";  // built in (calibrate/profiles/)
  const auto set = run_probe_validation(
      testing::read_source_text("tests/validation/data/training_eager_probes_1xh100.json"), catalog, profile);
  const auto thresholds = load_training_thresholds(
      testing::read_source_text("tests/validation/data/training_thresholds.json"), "training_thresholds.json");
  REQUIRE(set.rows.size() == 8);
  std::cout << "== " << set.name << " (" << set.provenance << ")\n";
  for (const auto& r : set.rows) {
    char line[400];
    std::snprintf(line, sizeof line, "   %-40s step Expectation: %.4f s  Prediction: %.4f s (fast %.4f)  %+6.1f%%\n",
                  r.label.c_str(), r.measured_step_s, r.predicted_step_s, r.fast_step_s, 100 * r.step_error);
    std::cout << line;
    CHECK(r.predicted_step_s > 0);
  }
  std::cout << "   step |error| median " << 100 * set.median_step_error << "%, worst " << 100 * set.worst_step_error
            << "%\n";
  const auto step = thresholds.find(set.name + ".step");
  REQUIRE(step != thresholds.end());
  CHECK(set.median_step_error <= step->second.median_abs_error);
  CHECK(set.worst_step_error <= step->second.worst_abs_error);
}
