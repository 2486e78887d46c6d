// Regression tests for robustness bugs: each reproduces, with its input inline, a crash, hang,
// wrong exit code or misleading message that a fuzzer or the bad-input catalogue found, and checks
// the fixed behaviour (exit 2, InputError naming the file, the key or flag, and the expectation).

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "cli/app.hpp"
#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;

namespace {

using Output = testing::CliResult;
constexpr auto run = &testing::run_cli;

// The default scenario with `from` replaced by `to` in its text.
std::string scenario_with(const std::string& from, const std::string& to) {
  std::string s = R"({"schema_version": 1, "model": {"preset": "llama3-8b"},
    "training": {"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 16, "tokens": 1e12},
    "parallelism": {"framework": "pytorch", "data": 4, "zero_stage": 3},
    "cluster": {"system": "hgx-h200", "nodes": 1, "gpus_per_node": 4},
    "nccl": {"env": {}}})";
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("Fix: a directory or a missing file given as JSON says so (not 'not valid JSON')", "[unit][robust]") {
  testing::TempDir dir;
  try {
    (void)load_json_file(dir.path().string());
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.file() == dir.path().string());
    CHECK(e.message() == "is a directory; expected a JSON file");
  }
  CHECK_THROWS_WITH(load_json_file((dir.path() / "none.json").string()), Catch::EndsWith("none.json: no such file"));
}

TEST_CASE("Fix: a number beyond the double range (1e999) is reported at its JSON pointer", "[unit][robust]") {
  CHECK_THROWS_WITH(parse_json_text(R"({"a": {"b": 1e999}})", "f.json"),
                    Catch::StartsWith("f.json: /a/b: not valid JSON: number overflow parsing '1e999'"));
  CHECK_THROWS_WITH(parse_json_text(R"({"a": [1, 2, -1e999]})", "f.json"), Catch::StartsWith("f.json: /a/2: "));
}

TEST_CASE("Fix: a config.json with 2^40 layers is refused up front instead of hanging", "[unit][robust]") {
  // Before: sizes up to 2^40 were accepted; counting the parameters of 2^40 layers never ended.
  testing::TempDir dir;
  dir.write("config.json", R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
      "num_hidden_layers": 1099511627776, "num_attention_heads": 32, "vocab_size": 128256})");
  const auto s = dir.write("s.json", scenario_with(R"({"preset": "llama3-8b"})", R"({"hf_config": "config.json"})"));
  const Output r = run({"simulate", s.string(), "--fidelity", "fast"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("config.json: /num_hidden_layers: expected an integer from 1 to 16384"));
  // Sizes each within bounds but 10^18 parameters together: refused with the estimate.
  dir.write("big.json", R"({"model_type": "llama", "hidden_size": 1048576, "intermediate_size": 16777216,
      "num_hidden_layers": 16384, "num_attention_heads": 1024, "vocab_size": 128256})");
  const auto b = dir.write("b.json", scenario_with(R"({"preset": "llama3-8b"})", R"({"hf_config": "big.json"})"));
  const Output rb = run({"simulate", b.string(), "--fidelity", "fast"});
  CHECK(rb.rc == 2);
  CHECK_THAT(rb.err, Catch::Contains("big.json: /: expected a model of at most 1e15 parameters"));
}

TEST_CASE("Fix: parallel sizes whose product overflows 64 bits are a layout error, not undefined behaviour",
          "[unit][robust]") {
  // Before: data x tensor x pipeline x context (each up to 2^20) was multiplied in int64: 2^80.
  testing::TempDir dir;
  const auto s = dir.write("s.json", scenario_with(R"("data": 4,)", R"("data": 1048576, "tensor": 1048576,
      "pipeline": 1048576, "context": 1048576,)"));
  const Output r = run({"simulate", s.string()});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("s.json: /parallelism: data x tensor x pipeline x context = 1048576 x 1048576 x "
                                    "1048576 x 1048576 = more than 4, but the cluster has 4 GPUs"));
}

TEST_CASE("Fix: an unknown NCCL version in a scenario is reported at /nccl/version", "[unit][robust]") {
  // Before: at /nccl/env (where the NCCL model's errors were relocated).
  testing::TempDir dir;
  const auto s = dir.write("s.json", scenario_with(R"("nccl": {"env": {}})", R"("nccl": {"version": "9.99"})"));
  const Output r = run({"simulate", s.string()});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("s.json: /nccl/version: unknown NCCL version '9.99'"));
}

TEST_CASE("Fix: collective rejects a NaN or infinite -f, -n 0, pods not dividing the node, and names --nccl-version",
          "[unit][robust]") {
  const std::vector<std::string> base{"collective", "--op", "all_reduce", "--system", "p5.48xlarge"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return run(a);
  };
  // Before: -f nan fell through to the additive sweep and -f inf to a single size, silently.
  for (const char* f : {"nan", "inf", "-2"}) {
    INFO(f);
    const Output r = with({"-b", "8", "-e", "1M", "-f", f});
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains("-f: expected a finite step factor >= 0"));
  }
  const Output n = with({"-n", "0"});
  CHECK(n.rc == 2);
  CHECK_THAT(n.err, Catch::Contains("--iters"));
  // Before: "/cluster/placement/gpus_per_pod: ..." (a scenario's pointer for a command-line flag).
  const Output pod = with({"--gpus-per-pod", "3"});
  CHECK(pod.rc == 2);
  CHECK_THAT(pod.err, Catch::Contains("--gpus-per-pod: expected a divisor of the GPUs per node (8), got 3"));
  // Before: the message did not say which flag.
  const Output v = with({"--nccl-version", "1.0"});
  CHECK(v.rc == 2);
  CHECK_THAT(v.err, Catch::Contains("--nccl-version: unknown NCCL version '1.0'"));
}

TEST_CASE("Fix: calibrate fit reads each results file strictly and names it", "[unit][robust]") {
  // Before: the fitters read the merged document: errors said "results: /collectives/0/nodes", and
  // 10^12 nodes was truncated to int ("--nodes: expected at least 1 node, got -727379968").
  testing::TempDir dir;
  const std::string entry = R"({"schema_version": 1, "kind": "clustersim-calibration-results",
    "tool": {"name": "nccl-tests", "version": "2.13", "command": "all_reduce_perf"},
    "environment": {"hostname": "h", "date": "2026-01-01", "gpu_name": "NVIDIA H200", "gpu_count": 4},
    "collectives": [{"op": "all_reduce", "nodes": NODES, "gpus_per_node": 4, "nranks": 4, "algo": "auto",
      "proto": "auto", "channels": null, "env": {}, "dtype": "float", "redop": "sum", "root": -1, "in_place": false,
      "warmup_iters": 5, "iters": 20, "points": [{"size_bytes": 1048576, "count": 262144, "time_us": 20.5,
      "algbw_GBps": 51.2, "busbw_GBps": 76.7, "errors": 0}]}]})";
  for (const char* nodes : {"1000000000000", "\"one\""}) {
    INFO(nodes);
    std::string text = entry;
    text.replace(text.find("NODES"), 5, nodes);
    const auto f = dir.write("r.json", text);
    const Output r = run({"calibrate", "fit", f.string(), "-o", (dir.path() / "p.json").string()});
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains(f.string() + ": /collectives/0/nodes: expected an integer"));
    CHECK(!std::filesystem::exists(dir.path() / "p.json"));
  }
}

TEST_CASE("Fix: a misspelt NCCL variable is an error with the fix, not a silent no-op", "[unit][robust]") {
  // Before: NCCL_ALGOO=Ring was ignored with a warning, so the run used NCCL's default algorithm.
  testing::TempDir dir;
  const auto s = dir.write("s.json", scenario_with(R"("env": {})", R"("env": {"NCCL_ALGOO": "Ring"})"));
  const Output r = run({"simulate", s.string(), "--fidelity", "fast"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("s.json: /nccl/env: NCCL_ALGOO: not a variable NCCL reads; did you mean NCCL_ALGO?"));
  const Output c = run({"collective", "--op", "all_reduce", "--system", "p5.48xlarge", "--env", "NCCL_P2P_LEVLE=NVL"});
  CHECK(c.rc == 2);
  CHECK_THAT(c.err, Catch::Contains("--env: NCCL_P2P_LEVLE: not a variable NCCL reads; did you mean NCCL_P2P_LEVEL?"));
  // A name far from every known one may be an NCCL variable this model does not follow: a
  // warning that says which, from the release's list of the variables it reads (NCCL 2.28.9 reads
  // NCCL_NVB_DISABLE, paths.cc; it has no NCCL_NVB_DISABLED).
  const Output w = run({"collective", "--op", "all_reduce", "--system", "p5.48xlarge", "--env", "NCCL_NVB_DISABLE=1"});
  CHECK(w.rc == 0);
  CHECK_THAT(w.out, Catch::Contains("NCCL_NVB_DISABLE: NCCL 2.28.9 reads it, this model does not follow it "
                                    "(predicted as if unset)"));
  const Output u = run({"collective", "--op", "all_reduce", "--system", "p5.48xlarge", "--env", "NCCL_NVB_DISABLED=1"});
  CHECK(u.rc == 0);
  CHECK_THAT(u.out, Catch::Contains("NCCL_NVB_DISABLED is not a variable NCCL 2.28.9 reads (ignored)"));
}

TEST_CASE("Fix: a misspelt subcommand is named, with a suggestion", "[unit][robust]") {
  // Before: "A subcommand is required", as if none had been given.
  const Output r = run({"simulat", "x.json"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("unknown subcommand 'simulat'; did you mean 'simulate'?"));
  const Output c = run({"--catalog", ".", "colective"});
  CHECK(c.rc == 2);
  CHECK_THAT(c.err, Catch::Contains("unknown subcommand 'colective'; did you mean 'collective'?"));
}

TEST_CASE("Fix: nccl-tests logs with numbers too long for an int are bad input, not a crash", "[unit][robust]") {
  // Before: std::stoi threw std::out_of_range: "clustersim: failure: stoi", exit 1.
  testing::TempDir dir;
  const auto log = dir.write("rank.log",
                             "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 99999999999 "
                             "iters: 20 agg iters: 1 validation: 1 graph: 0\n"
                             "#  Rank 99999999999 Group  0 Pid   1 on h device  0 [0000:01:00] NVIDIA H200\n");
  const Output r = run({"calibrate", "import-nccl-tests", log.string(), "--op", "all_reduce"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("rank.log: line 1: expected a warmup count of at most 9 digits, got '99999999999'"));
}

TEST_CASE("Fix: a log line of megabytes is skipped with a warning instead of overflowing std::regex's stack",
          "[unit][robust]") {
  // Before: a 2 MB line that a regex had to scan to its end crashed the process (SIGSEGV).
  testing::TempDir dir;
  std::ifstream in(testing::source_dir() / "tests" / "data" / "nccl_tests_logs" / "all_reduce_4gpu_format_sample.log");
  std::stringstream sample;
  sample << in.rdbuf();
  const auto log = dir.write("long.log", "# nccl-tests version 2.13.10 " + std::string(2'000'000, 'x') +
                                             " nccl-library=22809\n" + sample.str());
  const Output r = run({"calibrate", "import-nccl-tests", log.string(), "--op", "all_reduce"});
  CHECK(r.rc == 0);
  CHECK_THAT(r.err, Catch::Contains("long.log: skipped 1 line(s) longer than 8192 characters (first: line 1)"));
  CHECK_THAT(r.out, Catch::Contains("\"size_bytes\""));
}

TEST_CASE("Fix: an nccl-tests log with bytes that are not UTF-8 imports, the bytes written as U+FFFD", "[unit][robust]") {
  // Found by fuzz_nccl_tests (tests/fuzz/regression/nccl_tests/): one byte 0x9D in the command
  // line's binary path. Before: writing the results threw nlohmann's type_error 316 (invalid
  // UTF-8), exit 1.
  const auto log = testing::source_dir() / "tests" / "fuzz" / "regression" / "nccl_tests" /
                   "invalid-utf8-in-command-line.log";
  const Output r = run({"calibrate", "import-nccl-tests", log.string()});
  CHECK(r.rc == 0);
  // U+FFFD in UTF-8 is EF BF BD.
  CHECK_THAT(r.out, Catch::Contains("/opt/nccl-tests/bu\xEF\xBF\xBDld/reduce_scatter_perf"));
  // What was written reads back.
  CHECK_NOTHROW(parse_json_text(r.out, "again.json"));
}

TEST_CASE("Fix: an nccl-tests row with an unknown reduction op is bad input, not results that cannot be read back",
          "[unit][robust]") {
  // Found by fuzz_nccl_tests (tests/fuzz/regression/nccl_tests/unknown-redop.log, redop "non" and
  // a byte 0xD4 on line 17). Before: the import succeeded and wrote a redop that reading the
  // results back rejects.
  const auto log = testing::source_dir() / "tests" / "fuzz" / "regression" / "nccl_tests" / "unknown-redop.log";
  const Output r = run({"calibrate", "import-nccl-tests", log.string()});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("unknown-redop.log: line 17: unknown reduction op 'non"));
  testing::TempDir dir;
  const auto ascii = dir.write("redop.log",
                               "# Collective test starting: all_reduce_perf\n"
                               "#  Rank  0 Group  0 Pid  1 on h device  0 [0000:18:00] NVIDIA H200\n"
                               "#  Rank  1 Group  0 Pid  2 on h device  1 [0000:2a:00] NVIDIA H200\n"
                               "   8  2  float  sum2  -1  11.50  0.00  0.00  0  11.16  0.00  0.00  0\n");
  const Output a = run({"calibrate", "import-nccl-tests", ascii.string()});
  CHECK(a.rc == 2);
  CHECK_THAT(a.err, Catch::Contains("redop.log: line 4: unknown reduction op 'sum2' in the redop column"));
}

TEST_CASE("Fix: an nccl-tests row with a root below -1 is bad input, not results that cannot be read back",
          "[unit][robust]") {
  // Found by fuzz_nccl_tests (tests/fuzz/regression/nccl_tests/root-below-minus-one.log, root -2 on
  // line 34). Before: the import succeeded and wrote a root that reading the results back rejects.
  const auto log =
      testing::source_dir() / "tests" / "fuzz" / "regression" / "nccl_tests" / "root-below-minus-one.log";
  const Output r = run({"calibrate", "import-nccl-tests", log.string()});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err,
             Catch::Contains("root-below-minus-one.log: line 34: root -2 is neither -1 (no root) nor a rank up to 16777216"));
}

TEST_CASE("Fix: nccl-tests counts beyond int64, or whose byte size overflows it, are bad input, not overflow",
          "[unit][robust]") {
  // Found by fuzz_nccl_tests under UBSan (tests/fuzz/regression/nccl_tests/count-beyond-int64.log):
  // strtoll saturated a 130-digit count to 2^63 - 1, then count x 4 bytes overflowed int64.
  const auto log = testing::source_dir() / "tests" / "fuzz" / "regression" / "nccl_tests" / "count-beyond-int64.log";
  const Output r = run({"calibrate", "import-nccl-tests", log.string()});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("count-beyond-int64.log: line 8: an integer in the count column out of range"));
  // 2^62 floats is 2^64 bytes: no rank count can be derived from it (before: undefined behaviour).
  testing::TempDir dir;
  const auto rs = dir.write("rs.log",
                            "# Collective test starting: reduce_scatter_perf\n"
                            "   8  4611686018427387904  float  sum  -1  11.50  0.00  0.00  0  11.16  0.00  0.00  0\n");
  const Output a = run({"calibrate", "import-nccl-tests", rs.string()});
  CHECK(a.rc == 2);
  CHECK_THAT(a.err, Catch::Contains("rs.log: line 2: cannot tell the number of ranks"));
}

TEST_CASE("Fix: the event simulation is refused up front beyond 262,144 GPUs instead of exhausting memory",
          "[unit][robust][scale]") {
  // Before: 1,000,000 nodes x 8 GPUs (accepted by the scenario reader) needed about 60 GB.
  testing::TempDir dir;
  const auto s = dir.write("big.json", R"({"schema_version": 1, "model": {"preset": "llama3.2-1b"},
    "training": {"seq_len": 2048, "micro_batch_size": 1, "global_batch_size": 65600},
    "parallelism": {"data": 65600, "tensor": 4},
    "cluster": {"system": "p5.48xlarge", "nodes": 32800, "gpus_per_node": 8}})");
  const Output r = run({"simulate", s.string()});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("big.json: /cluster/nodes: the event simulation is bounded at 262144 GPUs (about "
                                    "2 GB of memory); this cluster has 262400: use --fidelity fast, or fewer nodes"));
  // The closed form runs at that size.
  CHECK(run({"simulate", s.string(), "--fidelity", "fast"}).rc == 0);
}
