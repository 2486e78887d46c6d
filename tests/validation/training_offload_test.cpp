// This project's own offload steps on one H100 of a 16-vCPU guest (DeepSpeed ZeRO-2/3 with and
// without offload_optimizer / offload_param, FSDP2 with and without CPUOffloadPolicy; Hugging Face
// Llama-3.2 in eager mode; tests/validation/data/training_offload_probes_1xh100.json) against the
// step model with the host profile fitted on the same machine
// (the built-in profile lent-1xh100-2026-12-host, calibrate/profiles/: CPU optimizers and copies from their
// benchmarks, ZeRO-3's module hooks from one of these steps; the GPU's parameters keep the
// catalog's). Prints each step beside its prediction and, for every offloaded step with a
// measured twin without offload, the offload / no-offload ratio against the predicted ratio.
// Fails when the step or ratio errors grow past training_thresholds.json.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <vector>

#include "hardware/catalog.hpp"
#include "hardware/statistics.hpp"
#include "models/training_validation.hpp"
#include "support/source_text.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

// The label of a step's twin without offload: "... ga 1 offload optimizer+params" -> "... ga 1";
// FSDP2 "... CPUOffloadPolicy" -> "..."; "" when the step is not offloaded.
std::string twin(const std::string& label) {
  for (const char* tag : {" offload ", " CPUOffloadPolicy"}) {
    const auto at = label.find(tag);
    if (at != std::string::npos) return label.substr(0, at);
  }
  return "";
}

}  // namespace

TEST_CASE("offload steps measured on one H100", "[validation][step][offload]") {
  const hardware::Catalog catalog = hardware::Catalog::load();
  const std::string profile = "lent-1xh100-2026-12-host";  // built in (calibrate/profiles/)
  const auto set = run_probe_validation(
      testing::read_source_text("tests/validation/data/training_offload_probes_1xh100.json"), catalog, profile);
  const auto thresholds = load_training_thresholds(
      testing::read_source_text("tests/validation/data/training_thresholds.json"), "training_thresholds.json");
  REQUIRE(set.rows.size() == 14);
  std::cout << "== " << set.name << " (" << set.provenance << ")\n";
  std::map<std::string, const ProbeValidationRow*> by_label;
  for (const auto& r : set.rows) {
    by_label[r.label] = &r;
    char line[400];
    std::snprintf(line, sizeof line, "   %-62s step Expectation: %.3f s  Prediction: %.3f s (fast %.3f)  %+6.1f%%\n",
                  r.label.c_str(), r.measured_step_s, r.predicted_step_s, r.fast_step_s, 100 * r.step_error);
    std::cout << line;
    CHECK(r.predicted_step_s > 0);
  }
  // Offload / no-offload: each offloaded step over its twin, measured and predicted.
  std::vector<double> ratio_errors;
  for (const auto& r : set.rows) {
    const std::string base = twin(r.label);
    if (base.empty() || !by_label.count(base)) continue;
    const ProbeValidationRow& b = *by_label[base];
    const double measured = r.measured_step_s / b.measured_step_s;
    const double predicted = r.predicted_step_s / b.predicted_step_s;
    ratio_errors.push_back(std::abs(predicted / measured - 1));
    char line[300];
    std::snprintf(line, sizeof line, "   ratio %-56s Expectation: %5.2fx  Prediction: %5.2fx  %+6.1f%%\n",
                  r.label.c_str(), measured, predicted, 100 * (predicted / measured - 1));
    std::cout << line;
  }
  const double ratio_median = median(ratio_errors);
  const double ratio_worst = ratio_errors.empty() ? 0 : *std::max_element(ratio_errors.begin(), ratio_errors.end());
  std::cout << "   step |error| median " << 100 * set.median_step_error << "%, worst " << 100 * set.worst_step_error
            << "%; offload ratio |error| median " << 100 * ratio_median << "%, worst " << 100 * ratio_worst << "% ("
            << ratio_errors.size() << " pairs)\n";
  REQUIRE(ratio_errors.size() >= 6);
  const auto step = thresholds.find(set.name + ".step");
  const auto ratio = thresholds.find(set.name + ".offload_ratio");
  REQUIRE(step != thresholds.end());
  REQUIRE(ratio != thresholds.end());
  CHECK(set.median_step_error <= step->second.median_abs_error);
  CHECK(set.worst_step_error <= step->second.worst_abs_error);
  CHECK(ratio_median <= ratio->second.median_abs_error);
  CHECK(ratio_worst <= ratio->second.worst_abs_error);
}
