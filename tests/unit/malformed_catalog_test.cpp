// The malformed-input catalogue for catalog files: each broken file must make the command exit 2
// with a message that names the file, the key (JSON pointer) and what was expected.

#include <catch2/catch.hpp>
#include <sstream>

#include "cli/app.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;

namespace {

// A valid user catalog: one GPU and one instance built on it. Each case edits one spot.
const std::string kValid = R"({
  "schema_version": 1,
  "sources": {"ds": {"kind": "datasheet", "title": "vendor sheet", "date": "2025-01"}},
  "gpus": [{
    "name": "X100", "vendor": "NVIDIA", "architecture": "hopper", "compute_capability": "9.0",
    "sm_count": 132,
    "peak_bf16": {"value": "989.4 TFLOP/s", "source": "ds"},
    "peak_fp32": {"value": "66.9 TFLOP/s", "source": "ds"},
    "hbm_capacity": {"value": "80 GB", "source": "ds"},
    "hbm_usable": {"value": "79 GiB", "source": "ds"},
    "hbm_type": "HBM3",
    "hbm_bandwidth": {"value": "3.35 TB/s", "source": "ds"},
    "nvlink": {"generation": 4, "links": 18, "link_bandwidth": {"value": "25 GB/s", "source": "ds"}},
    "pcie": {"generation": 5, "lanes": 16, "bandwidth": {"value": "63 GB/s", "source": "ds"}}
  }],
  "instances": [{
    "name": "x100.8x", "provider": "acme", "system": "hgx-h100", "gpu": "X100",
    "vcpus": 96, "memory": {"value": "1 TiB", "source": "ds"}, "virtualized": false,
    "network": {"fabric": "ib-ndr", "nics": 8, "nic_bandwidth": {"value": "400 Gb/s", "source": "ds"},
                "gpudirect_rdma": true, "topology": {"kind": "rail_optimized"}},
    "pcie_switches": [{"numa_node": 0, "gpus": [0, 1, 2, 3], "nics": [0, 1, 2, 3]},
                      {"numa_node": 1, "gpus": [4, 5, 6, 7], "nics": [4, 5, 6, 7]}],
    "pcie_layout_source": "ds"
  }],
  "capacity_block_rules": {
    "daily_up_to_days": {"value": 14, "source": "ds"}, "weekly_step_days": {"value": 7, "source": "ds"},
    "max_days": {"value": 182, "source": "ds"}, "max_instances_per_block": {"value": 64, "source": "ds"},
    "max_instances_across_blocks": {"value": 256, "source": "ds"}, "max_lead_days": {"value": 56, "source": "ds"}},
  "prices": [{"instance": "x100.8x", "region": "mars-1", "on_demand_per_hour": {"value": "40 USD/h", "source": "ds"}}]
})";

struct Case {
  const char* name;
  const char* from;  // text replaced in kValid (must occur)
  const char* to;
  std::vector<const char*> expect;  // substrings of the error message
};

const std::vector<Case> kCases = {
    {"unknown key", R"("sm_count": 132)", R"("sm_cont": 132)",
     {"/gpus/0/sm_cont", "unknown key 'sm_cont'", "did you mean 'sm_count'"}},
    {"number without a unit", R"("3.35 TB/s")", R"("3350")",
     {"/gpus/0/hbm_bandwidth/value", "'3350'", "without a unit"}},
    {"wrong type", R"("sm_count": 132)", R"("sm_count": "132")", {"/gpus/0/sm_count", "expected an integer"}},
    {"unknown top-level key", R"("instances": [{)",
     R"("gpus_extra_never_used": null, "instances": [{)", {"/gpus_extra_never_used", "unknown key"}},
    {"negative bandwidth", R"("25 GB/s")", R"("-25 GB/s")",
     {"/gpus/0/nvlink/link_bandwidth/value", "a bandwidth > 0"}},
    {"unknown unit", R"("63 GB/s")", R"("63 GB/sec")", {"/gpus/0/pcie/bandwidth/value", "unknown unit 'GB/sec'"}},
    {"unknown source", R"("peak_fp32": {"value": "66.9 TFLOP/s", "source": "ds"})",
     R"("peak_fp32": {"value": "66.9 TFLOP/s", "source": "dss"})",
     {"/gpus/0/peak_fp32/source", "unknown source 'dss'", "did you mean 'ds'"}},
    {"broken JSON", R"("hbm_type": "HBM3",)", R"("hbm_type": "HBM3",,)", {"not valid JSON", "line"}},
    {"duplicate key", R"("hbm_type": "HBM3",)", R"("hbm_type": "HBM3", "hbm_type": "HBM3e",)",
     {"/gpus/0/hbm_type", "duplicate key 'hbm_type'"}},
    {"missing required key", R"("hbm_type": "HBM3",)", "", {"/gpus/0/hbm_type", "missing required key 'hbm_type'"}},
    {"unknown system", R"("system": "hgx-h100")", R"("system": "hgx-h300")",
     {"instance 'x100.8x'", "unknown system 'hgx-h300'", "did you mean"}},
    {"schema version", R"("schema_version": 1)", R"("schema_version": 2)",
     {"/schema_version", "an integer from 1 to 1"}},
    {"boolean as string", R"("virtualized": false)", R"("virtualized": "no")",
     {"/instances/0/virtualized", "expected true or false"}},
    {"GPU beyond the board", R"("gpus": [4, 5, 6, 7])", R"("gpus": [4, 5, 6, 9])",
     {"pcie_switches", "GPU 9 of 8"}},
    {"price without a unit", R"("40 USD/h")", R"("40")", {"/prices/0/on_demand_per_hour/value", "55.04 USD/h"}},
    {"negative count", R"("links": 18)", R"("links": -1)", {"/gpus/0/nvlink/links", "an integer from 0 to 64"}},
    {"zero NICs", R"("nics": 8,)", R"("nics": 0,)", {"/instances/0/network/nics", "an integer from 1 to 1024"}},
    {"unknown choice", R"("kind": "rail_optimized")", R"("kind": "rail-optimised")",
     {"/instances/0/network/topology/kind", "did you mean 'rail_optimized'"}},
    {"NaN-like overflow", R"("vcpus": 96)", R"("vcpus": 1e999)", {"not valid JSON"}},
    {"Capacity Block days not whole", R"("max_days": {"value": 182,)", R"("max_days": {"value": 182.5,)",
     {"/capacity_block_rules/max_days/value", "a whole number from 1 to 3650"}},
    {"Capacity Block longest below the daily steps", R"("max_days": {"value": 182,)", R"("max_days": {"value": 10,)",
     {"/capacity_block_rules/max_days", "at least daily_up_to_days"}},
    {"Capacity Block rule missing", R"("max_lead_days": {"value": 56, "source": "ds"})", R"("lead": 1)",
     {"/capacity_block_rules", "max_lead_days"}},
};

std::string replace_once(const std::string& text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  REQUIRE(pos != std::string::npos);
  return text.substr(0, pos) + to + text.substr(pos + from.size());
}

}  // namespace

TEST_CASE("the valid base of the malformed catalogue loads", "[unit][catalog][bad-input]") {
  testing::TempDir dir;
  dir.write("bad.json", kValid);
  std::ostringstream out, err;
  const int rc = cli::run({"--catalog", dir.path().string(), "hardware", "show", "x100.8x"}, out, err);
  INFO(err.str());
  CHECK(rc == 0);
  CHECK_THAT(out.str(), Catch::Contains("X100"));
}

TEST_CASE("each malformed catalog file exits 2 naming file, key and expectation", "[unit][catalog][bad-input]") {
  for (const auto& c : kCases) {
    DYNAMIC_SECTION(c.name) {
      testing::TempDir dir;
      const auto file = dir.write("bad.json", replace_once(kValid, c.from, c.to));
      std::ostringstream out, err;
      const int rc = cli::run({"--catalog", dir.path().string(), "hardware", "list"}, out, err);
      INFO(err.str());
      CHECK(rc == 2);
      CHECK(out.str().empty());
      CHECK_THAT(err.str(), Catch::Contains(file.string()));
      for (const char* e : c.expect) CHECK_THAT(err.str(), Catch::Contains(e));
    }
  }
}

TEST_CASE("a name defined twice in one catalog layer is an error", "[unit][catalog][bad-input]") {
  testing::TempDir dir;
  dir.write("a.json", kValid);
  dir.write("b.json", replace_once(kValid, R"("name": "x100.8x")", R"("name": "x100.8x-other")"));
  std::ostringstream out, err;
  CHECK(cli::run({"--catalog", dir.path().string(), "hardware", "list"}, out, err) == 2);
  CHECK_THAT(err.str(), Catch::Contains("b.json") && Catch::Contains("duplicate gpu name 'X100'") &&
                            Catch::Contains("a.json"));
}
