#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <fstream>
#include <sstream>

#include "reports/trace_check.hpp"

#include "cli/app.hpp"
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;

namespace {
using Result = testing::CliResult;
constexpr auto run = &testing::run_cli;
}  // namespace

TEST_CASE("--version and --help succeed", "[unit][cli]") {
  auto v = run({"--version"});
  CHECK(v.rc == 0);
  CHECK_THAT(v.out, Catch::StartsWith("clustersim "));
  auto h = run({"--help"});
  CHECK(h.rc == 0);
  CHECK_THAT(h.out, Catch::Contains("hardware") && Catch::Contains("simulate"));
  auto sub = run({"hardware", "show", "--help"});
  CHECK(sub.rc == 0);
  CHECK_THAT(sub.out, Catch::Contains("NAME"));
}

TEST_CASE("usage errors exit 2 on stderr", "[unit][cli]") {
  CHECK(run({}).rc == 2);
  CHECK(run({"frobnicate"}).rc == 2);
  auto r = run({"hardware", "list", "--format", "xml"});
  CHECK(r.rc == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("--format"));
}

TEST_CASE("hardware list shows every system and instance", "[unit][cli]") {
  auto r = run({"hardware", "list"});
  REQUIRE(r.rc == 0);
  for (const char* n : {"hgx-a100", "hgx-h100", "hgx-h200", "hgx-b200", "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge",
                        "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge", "dgx-a100", "dgx-h100"}) {
    CHECK_THAT(r.out, Catch::Contains(n));
  }
  auto j = run({"hardware", "list", "--format", "json"});
  REQUIRE(j.rc == 0);
  const auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["schema_version"] == 1);
  CHECK(doc["instances"].size() >= 8);
}

TEST_CASE("hardware show p5.48xlarge --format json gives GPUs, NVLink, EFA and dated prices", "[unit][cli]") {
  auto r = run({"hardware", "show", "p5.48xlarge", "--format", "json"});
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["gpu"]["model"] == "H100-SXM5-80GB");
  CHECK(j["gpu"]["count"] == 8);
  // NVLink4: 18 x 25 GB/s = 450 GB/s per direction.
  CHECK(j["nvlink"]["per_gpu_GBps_per_direction"].get<double>() == Approx(450));
  // 32 x 100 Gb/s EFA = 3200 Gb/s = 400 GB/s per node, 50 GB/s per GPU.
  CHECK(j["network"]["fabric"] == "efa-v2");
  CHECK(j["network"]["per_node_Gbps"].get<double>() == Approx(3200));
  CHECK(j["network"]["per_node_GBps"].get<double>() == Approx(400));
  CHECK(j["network"]["per_gpu_GBps"].get<double>() == Approx(50));
  const auto& od = j["prices"][0]["options"]["on_demand"];
  CHECK(od["per_hour"].get<double>() == Approx(55.04));
  // 55.04 / 8 = 6.88 $/GPU-hour.
  CHECK(od["per_gpu_hour"].get<double>() == Approx(6.88));
  CHECK(od["date"] == "2026-09-25");
  CHECK(j["sources"].contains(od["source"].get<std::string>()));
}

TEST_CASE("an unknown machine exits 2 with a suggestion", "[unit][cli]") {
  auto r = run({"hardware", "show", "p5.48xlarg"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("did you mean 'p5.48xlarge'"));
}

TEST_CASE("simulate loads a scenario strictly: a misspelt key exits 2 naming it", "[unit][cli]") {
  testing::TempDir dir;
  const auto file = dir.write("s.json", R"({
    "schema_version": 1,
    "model": {"preset": "llama3-8b"},
    "training": {"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 4},
    "parallelism": {"data": 4, "zero_stage": 3},
    "cluster": {"system": "hgx-h200", "nodes": 1, "gpus_per_node": 4, "placment": {"gpus_per_pod": 4}}
  })");
  auto r = run({"simulate", file.string()});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains(file.string()) && Catch::Contains("/cluster/placment") &&
                        Catch::Contains("did you mean 'placement'"));
}

TEST_CASE("simulate prints the step in json with the contract's fields", "[unit][cli][step]") {
  const auto scenario = (testing::source_dir() / "scenarios" / "default.json").string();
  auto r = run({"simulate", scenario, "--format", "json"});
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"schema_version", "step_time_s", "tokens_per_step", "tokens_per_s", "mfu", "breakdown", "memory",
                        "fits_in_memory", "uncertainty", "warnings", "comms", "bottleneck", "parameters"}) {
    CHECK(j.contains(k));
  }
  for (const char* k : {"compute_s", "exposed_comm_s", "pipeline_bubble_s", "optimizer_s", "offload_s"}) {
    CHECK(j["breakdown"].contains(k));
  }
  for (const char* k : {"peak_bytes", "weights_bytes", "gradients_bytes", "optimizer_state_bytes", "activations_bytes",
                        "buffers_bytes"}) {
    CHECK(j["memory"].contains(k));
  }
  CHECK(j["uncertainty"]["low_s"].get<double>() < j["step_time_s"].get<double>());
  auto t = run({"simulate", scenario});
  REQUIRE(t.rc == 0);
  CHECK_THAT(t.out, Catch::Contains("Step time") && Catch::Contains("Where the time goes") && Catch::Contains("Memory"));
}

TEST_CASE("simulate --require-fit exits 2 when the layout does not fit", "[unit][cli][step]") {
  testing::TempDir dir;
  const auto file = dir.write("big.json", R"({"schema_version": 1, "name": "big", "model": {"preset": "llama3-70b"},
    "training": {"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 4},
    "parallelism": {"framework": "pytorch", "data": 4},
    "cluster": {"system": "hgx-h200", "nodes": 1, "gpus_per_node": 4}})");
  auto plain = run({"simulate", file.string(), "--format", "json", "--fidelity", "fast"});
  REQUIRE(plain.rc == 0);
  CHECK_FALSE(nlohmann::json::parse(plain.out)["fits_in_memory"].get<bool>());
  auto strict = run({"simulate", file.string(), "--require-fit", "--fidelity", "fast"});
  CHECK(strict.rc == 2);
  CHECK_THAT(strict.err, Catch::Contains("big.json") && Catch::Contains("does not fit"));
}

TEST_CASE("simulate --trace writes a Perfetto trace the checker accepts", "[unit][cli][step]") {
  testing::TempDir dir;
  const auto trace = dir.path() / "step.json";
  const auto scenario = (testing::source_dir() / "scenarios" / "llama3-70b-megatron-tp8pp4-p5-8n.json").string();
  auto r = run({"simulate", scenario, "--trace", trace.string()});
  REQUIRE(r.rc == 0);
  std::ifstream in(trace);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(reports::check_chrome_trace(text.str()).empty());
  const auto j = nlohmann::json::parse(text.str());
  int flows = 0, stages = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "s") ++flows;
    if (e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"].get<std::string>().rfind("stage", 0) == 0) {
      ++stages;
    }
  }
  CHECK(stages == 4);  // one process per pipeline stage
  CHECK(flows > 0);    // pipeline sends and gradient collectives
}
