#pragma once
// Runs independent evaluations of the planner on every core. Each index is handed to exactly one
// worker; results are written by index, so the output does not depend on the thread count or on
// which worker finished first.

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

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

// An evaluator that is safe to call from several threads when the ones `make` builds are not:
// each calling thread gets its own, built on its first call (under a lock) and kept for the
// lifetime of the returned function. Evaluators that cache (a step simulator keeps its NCCL
// predictors) stay warm across a thread's calls; results do not depend on which thread ran what.
template <class Evaluator>
Evaluator per_thread(std::function<Evaluator()> make);

template <class Evaluator>
Evaluator per_thread(std::function<Evaluator()> make) {
  struct Pool {
    std::function<Evaluator()> make;
    std::mutex mutex;
    std::map<std::thread::id, Evaluator> by_thread;
    Evaluator& mine() {
      std::lock_guard lock(mutex);
      auto it = by_thread.find(std::this_thread::get_id());
      if (it == by_thread.end()) it = by_thread.emplace(std::this_thread::get_id(), make()).first;
      return it->second;  // std::map nodes are stable: safe to use after the lock is released
    }
  };
  auto pool = std::make_shared<Pool>();
  pool->make = std::move(make);
  return [pool](const auto&... args) { return pool->mine()(args...); };
}

}  // namespace clustersim::models
