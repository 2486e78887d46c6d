// The self-test section: the host-side plumbing every GPU test relies on, checked without a GPU.
// Each rank meets the others through the host group (all-gather, barrier, broadcast, sums), checks
// that ranks out of step are caught on every rank and that the group recovers, and measures the
// round-trip time of a meeting. With --selftest-mode fail or hang, rank 1 throws or sleeps, so the
// driver's handling of a failed or hung worker can be watched.

#include <chrono>
#include <cmath>
#include <string>
#include <thread>

#include "calibrate/harness/harness_errors.hpp"
#include "calibrate/harness/worker_context.hpp"

namespace clustersim::harness {

void run_selftest(WorkerContext& ctx) {
  HostGroup& g = ctx.group;
  const int rank = g.rank();
  const int n = g.size();
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) throw HarnessError("self-test: " + what);
  };

  barrier(g, "self-start");
  const double sum = allreduce_sum(g, "self-sum", static_cast<double>(rank));
  expect(sum == n * (n - 1) / 2.0, "sum of ranks is " + std::to_string(sum));
  expect(allreduce_max(g, "self-max", static_cast<double>(rank)) == n - 1, "max of ranks");
  expect(allreduce_sum(g, "self-isum", static_cast<std::int64_t>(rank + 1)) == static_cast<std::int64_t>(n) * (n + 1) / 2,
         "integer sum of ranks");
  const std::string from_last = broadcast(g, "self-bcast", n - 1, std::string(1000, 'x') + std::to_string(rank));
  expect(from_last == std::string(1000, 'x') + std::to_string(n - 1), "broadcast from the last rank");
  const auto all = tagged_allgather(g, "self-gather", std::string(static_cast<std::size_t>(rank) * 1000, 'a'));
  for (int r = 0; r < n; ++r) expect(all[static_cast<std::size_t>(r)].size() == static_cast<std::size_t>(r) * 1000, "all-gather sizes");
  expect(any_of(g, "self-any", rank == n - 1), "any_of");
  expect(!any_of(g, "self-none", false), "any_of of nothing");

  if (n > 1) {
    bool caught = false;
    try {
      tagged_allgather(g, rank % 2 ? "self-odd" : "self-even", "");
    } catch (const HarnessError&) {
      caught = true;
    }
    expect(caught, "ranks out of step were not detected");
    barrier(g, "self-recovered");
  }

  if (ctx.opt.selftest_mode == "fail" && rank == 1) throw HarnessError("self-test: rank 1 fails on purpose");
  if (ctx.opt.selftest_mode == "hang" && rank == 1) std::this_thread::sleep_for(std::chrono::hours(1));

  const int rounds = 200;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < rounds; ++i) allreduce_sum(g, "self-round", 1.0);
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / rounds;
  if (rank == 0) ctx.log("ok: " + std::to_string(n) + " ranks, host meeting round trip " + std::to_string(us) + " us");
}

}  // namespace clustersim::harness
