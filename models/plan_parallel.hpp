#pragma once
// Runs independent evaluations of the planner on every core. Each index is handed to exactly one
// worker; results are written by index, so the output does not depend on the thread count or on
// which worker finished first.

#include <cstddef>
#include <functional>

namespace clustersim::models {

struct ParallelOptions {
  int threads = 1;  // <= 1: run on the calling thread
  // Called on the calling thread with the number of indices done, about every `progress_every_ms`
  // and once at the end.
  std::function<void(std::size_t done)> progress;
  int progress_every_ms = 200;
};

// Calls fn(i) for every i in [0, n). fn must only touch state owned by index i (and read shared
// state). When calls throw, the exception of the lowest index is rethrown after every worker has
// stopped.
void parallel_for_index(std::size_t n, const ParallelOptions& options, const std::function<void(std::size_t)>& fn);

// The number of hardware threads (at least 1).
int hardware_threads();

}  // namespace clustersim::models
