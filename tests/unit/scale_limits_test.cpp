// Limits of scale (README "Limits of scale"): beyond the documented bounds a command is refused up
// front, before any work, with exit 2 and a message giving the bound; inside them it runs (the
// time and memory at 100,000 GPUs are measured by tests/bench/scale_bench.cpp).

#include <catch2/catch.hpp>
#include <sstream>

#include "cli/app.hpp"
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;

namespace {

using Output = testing::CliResult;
constexpr auto run = &testing::run_cli;

// Llama-3.2-1B, data parallel over every GPU of `nodes` p5.48xlarge (the cluster section is read
// before the layout, so an impossible node count is the first thing reported).
std::string scenario(long long nodes) {
  const std::string dp = std::to_string(nodes <= 1'000'000 ? nodes * 8 : 8);
  return R"({"schema_version": 1, "model": {"preset": "llama3.2-1b"},
    "training": {"seq_len": 2048, "micro_batch_size": 1, "global_batch_size": )" + dp + R"(},
    "parallelism": {"data": )" + dp + R"(},
    "cluster": {"system": "p5.48xlarge", "nodes": )" + std::to_string(nodes) + R"(, "gpus_per_node": 8}})";
}

}  // namespace

TEST_CASE("simulate refuses clusters beyond 1,000,000 nodes up front, naming the bound", "[unit][scale]") {
  testing::TempDir dir;
  for (long long nodes : {1'000'001LL, 1'000'000'000'000LL}) {
    INFO(nodes);
    const auto file = dir.write("big.json", scenario(nodes));
    const Output r = run({"simulate", file.string(), "--fidelity", "fast"});
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains("big.json: /cluster/nodes: expected an integer from 1 to 1000000, got " +
                                      std::to_string(nodes)));
    CHECK(r.out.empty());
  }
}

TEST_CASE("collective refuses more than 100,000 nodes up front, naming the bound", "[unit][scale]") {
  const Output r = run({"collective", "--op", "all_reduce", "--system", "p5.48xlarge", "--nodes", "100001"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("--nodes: expected 1 to 100000 nodes, got 100001"));
  // 10^12 does not fit the option's integer type: still a usage error naming the flag.
  const Output big = run({"collective", "--op", "all_reduce", "--system", "p5.48xlarge", "--nodes", "1000000000000"});
  CHECK(big.rc == 2);
  CHECK_THAT(big.err, Catch::Contains("--nodes"));
}

TEST_CASE("plan refuses node counts and ranges beyond the bounds up front", "[unit][scale]") {
  testing::TempDir dir;
  const auto plan = dir.write("plan.json", R"({"schema_version": 1, "model": {"preset": "llama3.2-1b"},
      "training": {"seq_len": 2048, "global_batch_size": 1024}, "parallelism": "auto",
      "cluster": {"system": "p5.48xlarge", "nodes": {"min": 1, "max": 1000000000000, "scale": "+1"}},
      "job": {"tokens": 1e9}})");
  const Output r = run({"plan", plan.string(), "--quiet"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("plan.json: /cluster/nodes") && Catch::Contains("1000000"));
  const auto wide = dir.write("wide.json", R"({"schema_version": 1, "model": {"preset": "llama3.2-1b"},
      "training": {"seq_len": 2048, "global_batch_size": 1024}, "parallelism": "auto",
      "cluster": {"system": "p5.48xlarge", "nodes": {"min": 1, "max": 1000000, "scale": "+1"}},
      "job": {"tokens": 1e9}})");
  const Output w = run({"plan", wide.string(), "--quiet"});
  CHECK(w.rc == 2);
  CHECK_THAT(w.err, Catch::Contains("wide.json: /cluster/nodes") && Catch::Contains("at most 100000 values"));
}

TEST_CASE("100,000 GPUs run: the fast step model and a collective at 12,500 p5.48xlarge", "[unit][scale]") {
  testing::TempDir dir;
  const auto file = dir.write("100k.json", scenario(12'500));
  const Output s = run({"simulate", file.string(), "--fidelity", "fast", "--format", "json"});
  CHECK(s.rc == 0);
  CHECK_THAT(s.out, Catch::Contains("\"step_time_s\""));
  const Output c = run({"collective", "--op", "all_reduce", "--system", "p5.48xlarge", "--nodes", "12500", "-b", "1M",
                        "-e", "1G", "-f", "32", "--format", "csv"});
  CHECK(c.rc == 0);
  // The header and 3 sizes: 1 MiB, 32 MiB, 1 GiB.
  CHECK(std::count(c.out.begin(), c.out.end(), '\n') == 4);
}
