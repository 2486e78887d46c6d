#pragma once
// What the fitters read: several calibration results files of one machine (results.hpp), each
// loaded once with the strict reader, checked for what a fit needs beyond the format, and merged
// into one CalibrationResults that nccl_fit.hpp and compute_fit.hpp take.
//
// Merging: the measurement sections (collectives, p2p, gemm, attention, memory, host, cpu_adam)
// and the run records (runs, failures) are concatenated in file order; the schema version, tool
// and environment are those of the file whose environment counts the most GPUs (the first such
// file; a file without an environment is passed over).
//
// Checks, each an InputError naming the file, the JSON pointer and what was expected:
//   - every file's environment names one kind of GPU (the first named);
//   - at least one file has an environment;
//   - collective and p2p points move at least one byte (the NCCL model times a transfer; the
//     format keeps nccl-tests' zero-byte rows);
//   - p2p GPU indices are at most 65536 (the NCCL fit places a pair in a node of that many GPUs).

#include <string>
#include <vector>

#include "calibrate/results.hpp"

namespace clustersim::calibrate {

// One results file as loaded; `path` names it in error messages.
struct LoadedResults {
  std::string path;
  CalibrationResults results;
};

// The files merged as above (no fit checks); InputError on mixed GPUs or no environment at all.
CalibrationResults merge_calibration_results(const std::vector<LoadedResults>& files);

// Loads each file (load_calibration_results), checks it for the fit and merges them.
CalibrationResults load_fit_input(const std::vector<std::string>& paths);

}  // namespace clustersim::calibrate
