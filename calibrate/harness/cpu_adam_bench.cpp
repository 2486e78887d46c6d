// CPU AdamW update throughput, the optimizer step of DeepSpeed ZeRO-Offload (its cpu_adam is a
// fused, vectorized loop over fp32 parameters, gradients and both moments, split over threads).
//
// One step for each fp32 element (decoupled weight decay, bias corrections folded in as DeepSpeed
// does):
//   m = b1 m + (1 - b1) g
//   v = b2 v + (1 - b2) g^2
//   p = p (1 - lr wd) - (lr / c1) m / (sqrt(v) / sqrt(c2) + eps),  c1 = 1 - b1^t, c2 = 1 - b2^t
// 16 bytes read and 12 written per parameter. The loop is written so the compiler vectorizes it
// (no aliasing, no branches); the build uses -O3 and, in run_calibration.sh, -march=native, as
// DeepSpeed builds its op for the machine. Threads are persistent and meet at a barrier each step;
// a step's time is from the barrier that starts it to the barrier that ends it. The median of
// --adam-steps steps (after one warm-up step) is reported, for 1, 2, 4, ... threads up to all
// hardware threads.

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "calibrate/harness/harness_json_writer.hpp"
#include "calibrate/harness/worker_context.hpp"

namespace clustersim::harness {

namespace {

using Clock = std::chrono::steady_clock;

struct AdamState {
  std::unique_ptr<float[]> p, g, m, v;
  std::size_t n = 0;
};

void adamw_slice(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
                 std::size_t n, float lr, float b1, float b2, float eps, float wd, float step_size,
                 float inv_sqrt_c2) {
  const float decay = 1.0f - lr * wd;
  for (std::size_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = b1 * m[i] + (1.0f - b1) * gi;
    const float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * decay - step_size * mi / (std::sqrt(vi) * inv_sqrt_c2 + eps);
  }
}

const char* vector_isa() {
#if defined(__AVX512F__)
  return "avx512";
#elif defined(__AVX2__)
  return "avx2";
#elif defined(__AVX__)
  return "avx";
#elif defined(__ARM_NEON)
  return "neon";
#else
  return "sse2-or-none";
#endif
}

// Median seconds per step with `threads` threads.
double time_steps(AdamState& s, int threads, int steps) {
  const float lr = 1e-4f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f;
  std::barrier sync(threads);
  std::vector<double> step_seconds;
  Clock::time_point t0;
  auto body = [&](int t) {
    const std::size_t per = (s.n + static_cast<std::size_t>(threads) - 1) / static_cast<std::size_t>(threads);
    const std::size_t lo = std::min(s.n, per * static_cast<std::size_t>(t));
    const std::size_t hi = std::min(s.n, lo + per);
    for (int step = 0; step <= steps; ++step) {
      sync.arrive_and_wait();
      if (t == 0) t0 = Clock::now();
      const int k = step + 1;
      const float c1 = 1.0f - std::pow(b1, static_cast<float>(k));
      const float c2 = 1.0f - std::pow(b2, static_cast<float>(k));
      adamw_slice(s.p.get() + lo, s.g.get() + lo, s.m.get() + lo, s.v.get() + lo, hi - lo, lr, b1, b2, eps, wd,
                  lr / c1, 1.0f / std::sqrt(c2));
      sync.arrive_and_wait();
      if (t == 0 && step > 0) step_seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(body, t);
  body(0);
  for (auto& th : pool) th.join();
  std::sort(step_seconds.begin(), step_seconds.end());
  return step_seconds[step_seconds.size() / 2];
}

}  // namespace

void run_cpu_adam(WorkerContext& ctx) {
  const int hw = std::max(1u, std::thread::hardware_concurrency());
  std::vector<int> counts = ctx.opt.adam_threads;
  if (counts.empty()) {
    for (int t = 1; t < hw; t *= 2) counts.push_back(t);
    counts.push_back(hw);
  }
  AdamState s;
  s.n = static_cast<std::size_t>(ctx.opt.adam_params);
  try {
    s.p.reset(new float[s.n]);
    s.g.reset(new float[s.n]);
    s.m.reset(new float[s.n]);
    s.v.reset(new float[s.n]);
  } catch (const std::bad_alloc&) {
    ctx.failure("cpu adam", "failed", "cannot allocate 4 x " + std::to_string(s.n) + " floats");
    return;
  }
  // First touch in parallel with every hardware thread, random non-zero values.
  {
    std::vector<std::thread> pool;
    const std::size_t per = (s.n + static_cast<std::size_t>(hw) - 1) / static_cast<std::size_t>(hw);
    for (int t = 0; t < hw; ++t) {
      pool.emplace_back([&, t] {
        const std::size_t lo = std::min(s.n, per * static_cast<std::size_t>(t));
        const std::size_t hi = std::min(s.n, lo + per);
        std::uint32_t x = 2463534242u + static_cast<std::uint32_t>(t) * 7919u;
        for (std::size_t i = lo; i < hi; ++i) {
          x ^= x << 13;
          x ^= x >> 17;
          x ^= x << 5;
          const float u = static_cast<float>(x >> 8) * (1.0f / 16777216.0f) - 0.5f;
          s.p[i] = u;
          s.g[i] = 0.01f * u;
          s.m[i] = 0.001f * u;
          s.v[i] = 1e-6f * (u * u + 0.01f);
        }
      });
    }
    for (auto& th : pool) th.join();
  }
  for (const int threads : counts) {
    const std::string test = "cpu adam " + std::to_string(threads) + " threads";
    if (ctx.seconds_left() < 2.0) {
      ctx.failure(test, "skipped", "time budget");
      continue;
    }
    const double seconds = time_steps(s, threads, ctx.opt.adam_steps);
    if (!std::isfinite(s.p[s.n / 2])) ctx.failure(test, "failed", "parameters became non-finite");
    JsonWriter w;
    w.begin_object()
        .field("threads", threads)
        .field("params", static_cast<std::int64_t>(s.n))
        .field("time_us", seconds * 1e6)
        .field("params_per_second", static_cast<double>(s.n) / seconds)
        .field("bytes_per_param", 28)
        .field("steps", ctx.opt.adam_steps)
        .field("hardware_threads", hw)
        .field("vector_isa", vector_isa())
        .end_object();
    ctx.sink.add(Section::CPU_ADAM, w.take());
  }
}

}  // namespace clustersim::harness
