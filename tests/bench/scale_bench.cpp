// Limits of scale (README "Limits of scale"): `clustersim simulate` and `clustersim collective` at
// 100,000 GPUs and beyond, each measured as one whole command run in a child process, so that
// peak_rss_MiB is that command's own high-water mark (wait4's rusage of the child), not the
// benchmark process's. wall_s is the child's wall time; the benchmark's own time is the same.
//
//   simulate:   Llama-3-70B, Megatron TP 8 x PP 4, on 12,500 p5.48xlarge = 100,000 GPUs (DP 3,125),
//               event and fast; event at its bound (32,768 nodes = 262,144 GPUs); fast on 125,000
//               nodes = 1,000,000 GPUs.
//   collective: all_reduce, all_gather and broadcast, 8 B to 1 GiB (x4 steps) on 12,500 p5.48xlarge,
//               and all_reduce and all_gather on the largest --nodes accepted (100,000 nodes).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/app.hpp"

namespace {

using namespace clustersim;

std::string scenario_file(int nodes, int dp, const char* name) {
  const std::string path = "/tmp/clustersim-scale-" + std::to_string(::getpid()) + "-" + name + ".json";
  std::ofstream out(path);
  out << R"({"schema_version": 1, "name": ")" << name << R"(", "model": {"preset": "llama3-70b"},
    "training": {"seq_len": 8192, "micro_batch_size": 1, "global_batch_size": )" << 2 * dp << R"(,
                 "activation_checkpointing": "selective"},
    "parallelism": {"framework": "megatron", "data": )" << dp << R"(, "tensor": 8, "pipeline": 4,
                    "sequence_parallel": true, "zero_stage": 1},
    "cluster": {"system": "p5.48xlarge", "nodes": )" << nodes << R"(, "gpus_per_node": 8}})";
  return path;
}

// Runs `clustersim ARGS` in a child; returns false when it did not exit 0.
bool run_child(const std::vector<std::string>& args, double& wall_s, double& peak_rss_mib) {
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::ostringstream out, err;
    const int rc = cli::run(args, out, err);
    if (rc != 0) std::fprintf(stderr, "%s", err.str().c_str());
    std::_Exit(rc);
  }
  int status = 0;
  rusage u{};
  ::wait4(pid, &status, 0, &u);
  wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  peak_rss_mib = static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void measure(benchmark::State& state, const std::vector<std::string>& args, double gpus) {
  double wall = 0, rss = 0;
  for (auto _ : state) {
    if (!run_child(args, wall, rss)) state.SkipWithError("the command failed");
    state.SetIterationTime(wall);
  }
  state.counters["gpus"] = gpus;
  state.counters["wall_s"] = wall;
  state.counters["peak_rss_MiB"] = rss;
}

void BM_ScaleSimulate(benchmark::State& state) {
  const bool event = state.range(0) == 0;
  const int nodes = static_cast<int>(state.range(1));
  const int dp = nodes * 8 / 32;
  const std::string file = scenario_file(nodes, dp, event ? "event" : "fast");
  measure(state, {"simulate", file, "--format", "json", "--fidelity", event ? "event" : "fast"}, nodes * 8.0);
  std::remove(file.c_str());
}
BENCHMARK(BM_ScaleSimulate)
    ->Args({0, 12'500})
    ->Args({1, 12'500})
    ->Args({0, 32'768})
    ->Args({1, 125'000})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

void BM_ScaleCollective(benchmark::State& state) {
  const char* op = state.range(0) == 0 ? "all_reduce" : state.range(0) == 1 ? "all_gather" : "broadcast";
  const std::string nodes = std::to_string(state.range(1));
  measure(state, {"collective", "--op", op, "--system", "p5.48xlarge", "--nodes", nodes, "-b", "8", "-e", "1G", "-f",
                  "4", "--format", "csv"},
          static_cast<double>(state.range(1)) * 8);
}
BENCHMARK(BM_ScaleCollective)
    ->Args({0, 12'500})
    ->Args({1, 12'500})
    ->Args({2, 12'500})
    ->Args({0, 100'000})
    ->Args({1, 100'000})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

}  // namespace
