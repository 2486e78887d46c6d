#include <catch2/catch.hpp>

#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;
using namespace clustersim::hardware;

TEST_CASE("every built-in catalog entry loads and cross-references resolve", "[unit][catalog]") {
  const Catalog c = Catalog::load();
  for (const char* g : {"A100-SXM4-40GB", "A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB", "B200"}) {
    CHECK(c.gpus().count(g) == 1);
  }
  for (const char* s : {"hgx-a100", "hgx-h100", "hgx-h200", "hgx-b200"}) CHECK(c.systems().count(s) == 1);
  for (const char* i : {"p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge",
                        "p6-b200.48xlarge", "dgx-a100", "dgx-h100"}) {
    CHECK(c.instances().count(i) == 1);
  }
  for (const char* f : {"efa-v1", "efa-v2", "ib-hdr", "ib-ndr", "roce-400g", "ethernet-25g", "ethernet-100g"}) {
    CHECK(c.fabrics().count(f) == 1);
  }
  for (const auto& name : c.machine_names()) {
    const NodeSpec n = resolve_node(c, name);
    CHECK(n.gpus() == 8);
    CHECK(n.pcie_switches.size() >= 1);
  }
}

TEST_CASE("derived figures of a p5.48xlarge", "[unit][catalog]") {
  const Catalog c = Catalog::load();
  const NodeSpec n = resolve_node(c, "p5.48xlarge");
  CHECK(n.gpus() == 8);
  CHECK(n.gpu->name == "H100-SXM5-80GB");
  // 32 EFA x 100 Gb/s = 3200 Gb/s = 400 GB/s per node; / 8 GPUs = 50 GB/s per GPU.
  CHECK(n.network_per_node().gigabits_per_second() == Approx(3200));
  CHECK(n.network_per_node().gigabytes_per_second() == Approx(400));
  CHECK(n.network_per_gpu().gigabytes_per_second() == Approx(50));
  // NVLink4: 18 links x 25 GB/s = 450 GB/s per direction per GPU.
  CHECK(n.nvlink_per_gpu().gigabytes_per_second() == Approx(450));
  // aws-ofi-nccl v1.16.3 src/platform-aws.cpp exports NCCL_NVLS_CHUNKSIZE and
  // NCCL_NVLSTREE_MAX_CHUNKSIZE = 524288 B (512 KiB) on p5 (fabric efa-v2).
  REQUIRE(n.fabric != nullptr);
  CHECK(n.fabric->nccl_nvls_chunksize == Bytes::kib(512));
  CHECK(n.fabric->nccl_nvlstree_max_chunksize == Bytes::kib(512));
  // Four EFA devices per GPU, each GPU on its own switch group.
  for (const auto& s : n.pcie_switches) CHECK(s.nics.size() == 4 * s.gpus.size());
  // On-demand 55.04 $/h over 8 GPUs = 6.88 $/GPU-hour, dated.
  const auto prices = c.prices("p5.48xlarge");
  REQUIRE(prices.size() == 1);
  REQUIRE(prices[0].on_demand.has_value());
  CHECK(prices[0].on_demand->per_hour / 8 == Approx(6.88));
  CHECK(c.source(prices[0].on_demand->source).date == "2026-09-25");
}

TEST_CASE("p4d places two GPUs and one EFA device on each PCIe switch", "[unit][catalog]") {
  const Catalog c = Catalog::load();
  const NodeSpec n = resolve_node(c, "p4d.24xlarge");
  REQUIRE(n.pcie_switches.size() == 4);
  for (const auto& s : n.pcie_switches) {
    CHECK(s.gpus.size() == 2);
    CHECK(s.nics.size() == 1);
  }
  // 4 x 100 Gb/s = 50 GB/s per node, 6.25 GB/s per GPU.
  CHECK(n.network_per_gpu().gigabytes_per_second() == Approx(6.25));
  CHECK(n.fabric->forces_simple_protocol);
  // aws-ofi-nccl v1.16.3 platform-aws.cpp: p4d reports a 75 us network latency to NCCL.
  REQUIRE(n.fabric->nccl_net_reported_latency);
  CHECK(n.fabric->nccl_net_reported_latency->value.microseconds() == Approx(75.0));
}

TEST_CASE("p5's EFA keeps LL and LL128 and reports aws-ofi-nccl's 75 us", "[unit][catalog]") {
  const Catalog c = Catalog::load();
  const NodeSpec n = resolve_node(c, "p5.48xlarge");
  // The plugin forces NCCL_PROTO=simple only where the endpoint refuses 128-byte in-order
  // delivery; p5's RDMA writes accept it (release notes v1.7.3, v1.11.0).
  CHECK_FALSE(n.fabric->forces_simple_protocol);
  REQUIRE(n.fabric->nccl_net_reported_latency);
  CHECK(n.fabric->nccl_net_reported_latency->value.microseconds() == Approx(75.0));
  // p5en: 35 us (platform table "p-series" entry).
  const NodeSpec e = resolve_node(c, "p5en.48xlarge");
  REQUIRE(e.fabric->nccl_net_reported_latency);
  CHECK(e.fabric->nccl_net_reported_latency->value.microseconds() == Approx(35.0));
}

TEST_CASE("a user catalog adds entries and overrides built-in ones by name", "[unit][catalog]") {
  testing::TempDir dir;
  dir.write("mine.json", R"({
    "schema_version": 1,
    "sources": {"me": {"kind": "measured_here", "title": "our own node", "date": "2026-11-01"}},
    "instances": [{
      "name": "p4d.24xlarge", "provider": "aws", "system": "hgx-a100", "gpu": "A100-SXM4-40GB",
      "vcpus": 96, "memory": {"value": "1152 GiB", "source": "me"}, "virtualized": true,
      "network": {"fabric": "efa-v1", "nics": 4, "nic_bandwidth": {"value": "200 Gb/s", "source": "me"},
                  "gpudirect_rdma": true, "topology": {"kind": "single_switch"}},
      "pcie_switches": [{"numa_node": 0, "gpus": [0,1,2,3,4,5,6,7], "nics": [0,1,2,3]}],
      "pcie_layout_source": "me"
    }],
    "prices": [{"instance": "p4d.24xlarge", "region": "eu-west-1",
                "spot_per_hour": {"value": "9.50 USD/h", "source": "me"}}]
  })");
  const Catalog c = Catalog::load({dir.path()});
  const NodeSpec n = resolve_node(c, "p4d.24xlarge");
  // 4 x 200 Gb/s = 100 GB/s per node.
  CHECK(n.network_per_node().gigabytes_per_second() == Approx(100));
  CHECK(c.prices("p4d.24xlarge").size() == 2);
  CHECK(c.source("me").kind == SourceKind::MEASURED_HERE);
}

TEST_CASE("unknown names suggest the nearest", "[unit][catalog]") {
  const Catalog c = Catalog::load();
  try {
    (void)resolve_node(c, "p5.48xlarg");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("did you mean 'p5.48xlarge'"));
  }
}
