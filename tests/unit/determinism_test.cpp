// Determinism (DESIGN.md "Deterministic"): the same inputs give byte-identical outputs, run after
// run and whatever the thread count. Each output is produced twice (or with 1 and 2 threads) and
// compared byte for byte: simulate (text, json, trace), collective (table, csv, json), plan (json,
// html) and report (re-rendered from the saved result). Two checks run the real binary in separate
// processes, so address-space layout and allocation order differ between the runs.

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli/app.hpp"
#include "support/cli_run.hpp"
#include "support/source_text.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;

namespace {

using Output = testing::CliResult;
constexpr auto run = &testing::run_cli;

constexpr auto slurp = &testing::read_file_text;

std::string scenario(const char* name) { return (testing::source_dir() / "scenarios" / name).string(); }

// The same command twice: both succeed and print the same bytes.
std::string same_twice(const std::vector<std::string>& args) {
  const Output a = run(args);
  const Output b = run(args);
  REQUIRE(a.rc == 0);
  REQUIRE(b.rc == 0);
  CHECK(a.out == b.out);
  CHECK(!a.out.empty());
  return a.out;
}

// A small plan: 2 systems x 2 node counts x a few layouts, quick with the fast step model.
constexpr const char* kPlan = R"({"schema_version": 1, "name": "determinism", "model": {"preset": "llama3.2-1b"},
  "training": {"seq_len": 2048, "global_batch_size": 32, "micro_batch_size": [1, 2]},
  "parallelism": {"framework": "megatron", "tensor": [1, 2], "pipeline": [1, 2]},
  "cluster": {"system": ["p4d.24xlarge", "p5.48xlarge"], "nodes": [1, 2]},
  "job": {"tokens": 1e9},
  "search": {"top_k": 1}})";

}  // namespace

TEST_CASE("simulate: text, json and trace are byte-identical run after run", "[unit][determinism]") {
  for (const char* name : {"default.json", "llama3-70b-megatron-tp8pp4-p5-8n.json",
                           "seed004-llama3-8b-zero3-offload-p4d-4pods-1gpu.json"}) {
    INFO(name);
    same_twice({"simulate", scenario(name)});
    same_twice({"simulate", scenario(name), "--format", "json"});
    same_twice({"simulate", scenario(name), "--format", "json", "--fidelity", "fast"});
  }
  testing::TempDir dir;
  const auto t1 = dir.path() / "a.json";
  const auto t2 = dir.path() / "b.json";
  const std::string s = scenario("llama3-70b-megatron-tp8pp4-p5-8n.json");
  REQUIRE(run({"simulate", s, "--trace", t1.string()}).rc == 0);
  REQUIRE(run({"simulate", s, "--trace", t2.string()}).rc == 0);
  const std::string trace = slurp(t1);
  CHECK(trace.size() > 1000);
  CHECK(trace == slurp(t2));
}

TEST_CASE("collective: table, csv and json are byte-identical run after run", "[unit][determinism]") {
  for (const char* format : {"table", "csv", "json"}) {
    INFO(format);
    same_twice({"collective", "--op", "all_reduce", "--system", "p5.48xlarge", "--nodes", "4", "-b", "8", "-e", "1G",
                "-f", "4", "--format", format});
    same_twice({"collective", "--op", "alltoall", "--system", "p4d.24xlarge", "--nodes", "2", "--gpus-per-pod", "1",
                "-b", "1K", "-e", "64M", "-f", "8", "--format", format});
  }
}

TEST_CASE("plan: json and html are byte-identical with 1 and 2 threads; report re-renders the same bytes",
          "[unit][determinism]") {
  // The report's date is SOURCE_DATE_EPOCH's when set (else now): fixed here, as for a
  // reproducible build, so that runs a second apart give the same bytes.
  setenv("SOURCE_DATE_EPOCH", "1765065600", 1);
  testing::TempDir dir;
  const auto plan = dir.write("plan.json", kPlan);
  const Output j1 = run({"plan", plan.string(), "--format", "json", "--threads", "1", "--quiet"});
  const Output j2 = run({"plan", plan.string(), "--format", "json", "--threads", "2", "--quiet"});
  const Output j2b = run({"plan", plan.string(), "--format", "json", "--threads", "2", "--quiet"});
  REQUIRE(j1.rc == 0);
  REQUIRE(j2.rc == 0);
  REQUIRE(j2b.rc == 0);
  CHECK(j1.out == j2.out);
  CHECK(j2.out == j2b.out);
  const Output h1 = run({"plan", plan.string(), "--format", "html", "--threads", "1", "--quiet"});
  const Output h2 = run({"plan", plan.string(), "--format", "html", "--threads", "2", "--quiet"});
  REQUIRE(h1.rc == 0);
  CHECK(h1.out == h2.out);

  // report: the saved result renders the plan's own html, the same twice, and -o writes those bytes.
  const auto saved = dir.write("result.json", j1.out);
  CHECK(same_twice({"report", saved.string(), "--format", "html"}) == h1.out);
  for (const char* format : {"text", "markdown", "csv", "json"}) {
    INFO(format);
    const std::string shown = same_twice({"report", saved.string(), "--format", format});
    const auto file = dir.path() / (std::string("report.") + format);
    REQUIRE(run({"report", saved.string(), "--format", format, "-o", file.string()}).rc == 0);
    CHECK(slurp(file) == shown);
  }
  // A report JSON re-read and written again is a fixed point.
  const auto report_json = dir.write("report.json", same_twice({"report", saved.string(), "--format", "json"}));
  CHECK(same_twice({"report", report_json.string(), "--format", "json"}) == slurp(report_json));
  unsetenv("SOURCE_DATE_EPOCH");
}

TEST_CASE("the real binary gives the same bytes in two processes", "[unit][determinism]") {
  testing::TempDir dir;
  const std::string bin = CLUSTERSIM_BINARY;
  const std::string s = scenario("default.json");
  const auto a = dir.path() / "a.json";
  const auto b = dir.path() / "b.json";
  for (const auto& p : {a, b}) {
    const std::string cmd = "'" + bin + "' simulate '" + s + "' --format json > '" + p.string() + "'";
    REQUIRE(std::system(cmd.c_str()) == 0);
  }
  CHECK(slurp(a).size() > 100);
  CHECK(slurp(a) == slurp(b));
  const auto c = dir.path() / "c.csv";
  const auto d = dir.path() / "d.csv";
  for (const auto& p : {c, d}) {
    const std::string cmd = "'" + bin + "' collective --op reduce_scatter --system p5en.48xlarge --nodes 8 -b 1M -e 1G "
                            "-f 2 --format csv --output '" + p.string() + "'";
    REQUIRE(std::system(cmd.c_str()) == 0);
  }
  CHECK(slurp(c).size() > 100);
  CHECK(slurp(c) == slurp(d));
}
