// This project's own measured PyTorch FSDP2 training steps (4 x H200, Hugging Face Llama in eager
// mode; tests/validation/data/training_fsdp2_probes.json) against the step model, with the
// compute parameters fitted here from the same machine's harness results
// (calibrate/results/lent-4xh200-2026-11-21 and the PyTorch element-wise kernels of
// calibrate/results/lent-1xh200-2026-11-21-torch, the launch gap and the continuous-load product of
// calibrate/results/lent-1xh200-2026-11-21-sustained; the NCCL parameters keep their catalog
// defaults: these steps expose ~2% of their time to communication). Prints, per probe, the
// measurement (the expectation) beside the prediction for the step time and for the peak memory
// the allocator hands out; fails when an error grows past training_thresholds.json.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "calibrate/compute_fit.hpp"
#include "calibrate/fit_input.hpp"
#include "hardware/atomic_file.hpp"
#include "hardware/catalog.hpp"
#include "hardware/json_reader.hpp"
#include "models/training_validation.hpp"
#include "support/source_text.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

std::string read_text(const std::string& relative_path) { return testing::read_source_text(relative_path); }

}  // namespace

TEST_CASE("the FSDP2 training steps measured on 4 x H200", "[validation][step]") {
  const hardware::Catalog catalog = hardware::Catalog::load();
  // The compute and host parameters, fitted from the harness results as `calibrate fit` does.
  std::vector<std::string> files;
  for (const char* f : {"calibrate/results/lent-4xh200-2026-11-21/results-4gpu.json",
                        "calibrate/results/lent-4xh200-2026-11-21/results-4gpu-extra.json",
                        "calibrate/results/lent-1xh200-2026-11-21-torch/results-torch-kernels.json",
                        "calibrate/results/lent-1xh200-2026-11-21-sustained/results-1gpu-sustained.json"}) {
    files.push_back((std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / f).string());
  }
  const calibrate::CalibrationResults merged = calibrate::load_fit_input(files);
  calibrate::ComputeFitReport report;
  const auto params = calibrate::fit_compute_parameters(merged, catalog.gpu("H200-SXM-141GB"), report);
  hardware::ProfileProvenance prov;
  prov.machine = "4 x H200 (lent), fitted in the test";
  prov.gpu = "NVIDIA H200";
  prov.gpu_count = 4;
  prov.date = "2026-11-21";
  const auto profile = hardware::CalibrationProfile::from_parts("h200-compute-fit", prov, params, report.to_json());
  const auto path = std::filesystem::temp_directory_path() / "clustersim-fsdp2-probes-profile.json";
  write_file_atomically(path.string(), profile.to_json().dump(1) + "\n");

  const auto set = run_probe_validation(read_text("tests/validation/data/training_fsdp2_probes.json"), catalog,
                                        path.string());
  const auto thresholds = load_training_thresholds(read_text("tests/validation/data/training_thresholds.json"),
                                                   "training_thresholds.json");
  std::filesystem::remove(path);
  REQUIRE(set.rows.size() == 3);
  std::cout << "== " << set.name << " (" << set.provenance << ")\n";
  for (const auto& r : set.rows) {
    char line[400];
    std::snprintf(line, sizeof line,
                  "   %-42s step Expectation: %.3f s  Prediction: %.3f s (fast %.3f)  %+5.1f%% | peak Expectation: "
                  "%.1f GiB  Prediction: %.1f GiB  %+5.1f%%\n",
                  r.label.c_str(), r.measured_step_s, r.predicted_step_s, r.fast_step_s, 100 * r.step_error,
                  r.measured_peak_bytes / 1073741824.0, r.predicted_peak_bytes / 1073741824.0, 100 * r.memory_error);
    std::cout << line;
    // Every probe is predicted, and the two fidelities agree (nothing contends on one NVSwitch node).
    CHECK(r.predicted_step_s > 0);
    CHECK(std::abs(r.fast_step_s / r.predicted_step_s - 1) < 0.03);
  }
  std::cout << "   step |error| median " << 100 * set.median_step_error << "%, worst " << 100 * set.worst_step_error
            << "%; peak memory |error| median " << 100 * set.median_memory_error << "%, worst "
            << 100 * set.worst_memory_error << "%\n";
  const auto step = thresholds.find(set.name + ".step");
  const auto memory = thresholds.find(set.name + ".memory");
  REQUIRE(step != thresholds.end());
  REQUIRE(memory != thresholds.end());
  CHECK(set.median_step_error <= step->second.median_abs_error);
  CHECK(set.worst_step_error <= step->second.worst_abs_error);
  CHECK(set.median_memory_error <= memory->second.median_abs_error);
  CHECK(set.worst_memory_error <= memory->second.worst_abs_error);
}
