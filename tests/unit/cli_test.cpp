#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/app.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;

namespace {
struct Result {
  int rc;
  std::string out, err;
};
Result run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int rc = cli::run(args, out, err);
  return {rc, out.str(), err.str()};
}
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
