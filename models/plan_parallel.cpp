#include "models/plan_parallel.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace clustersim::models {

int hardware_threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

void parallel_for_index(std::size_t n, const ParallelOptions& options, const std::function<void(std::size_t)>& fn) {
  std::exception_ptr first_error;
  std::size_t first_error_index = n;
  std::mutex error_mutex;
  auto record = [&](std::size_t i, std::exception_ptr e) {
    std::lock_guard lock(error_mutex);
    if (i < first_error_index) {
      first_error_index = i;
      first_error = std::move(e);
    }
  };

  const int threads =
      static_cast<int>(std::min<std::size_t>(std::max(1, options.threads), std::max<std::size_t>(n, 1)));
  if (threads <= 1) {
    auto last = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < n; ++i) {
      try {
        fn(i);
      } catch (...) {
        record(i, std::current_exception());
      }
      if (options.progress) {
        const auto now = std::chrono::steady_clock::now();
        if (now - last >= std::chrono::milliseconds(options.progress_every_ms)) {
          options.progress(i + 1);
          last = now;
        }
      }
    }
    if (options.progress) options.progress(n);
    if (first_error) std::rethrow_exception(first_error);
    return;
  }

  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  std::mutex m;
  std::condition_variable cv;
  int running = threads;
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&]() {
      for (std::size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
        try {
          fn(i);
        } catch (...) {
          record(i, std::current_exception());
        }
        done.fetch_add(1);
      }
      std::lock_guard lock(m);
      --running;
      cv.notify_all();
    });
  }
  {
    std::unique_lock lock(m);
    while (running > 0) {
      cv.wait_for(lock, std::chrono::milliseconds(options.progress_every_ms));
      if (options.progress && running > 0) {
        lock.unlock();
        options.progress(done.load());
        lock.lock();
      }
    }
  }
  for (auto& w : workers) w.join();
  if (options.progress) options.progress(n);
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace clustersim::models
