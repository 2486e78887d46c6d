#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "sim/net/cluster_topology.hpp"
#include "sim/net/flow_network.hpp"

using namespace clustersim;
using namespace clustersim::sim;
using hardware::NetworkTopologyKind;

namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

Topology build(std::string_view name, int nodes = 1, NetworkOverrides overrides = {}) {
  ClusterConfig cfg;
  cfg.node = hardware::resolve_node(catalog(), name);
  cfg.nodes = nodes;
  cfg.network = std::move(overrides);
  return build_topology(catalog(), cfg);
}

// Read off the built graph, not the layout tables.
double nvlink_out_gbps(const Topology& t, VertexId gpu) {
  double sum = 0;
  for (LinkId l : t.out_links(gpu)) {
    if (t.link(l).kind == LinkKind::NVLINK) sum += t.link(l).bandwidth.gigabytes_per_second();
  }
  return sum;
}

VertexId pcie_parent(const Topology& t, VertexId v) {
  for (LinkId l : t.out_links(v)) {
    if (t.link(l).kind == LinkKind::PCIE) return t.link(l).to;
  }
  return NO_VERTEX;
}

int count_attached(const Topology& t, VertexId parent, VertexKind kind) {
  int n = 0;
  for (LinkId l : t.out_links(parent)) {
    if (t.link(l).kind == LinkKind::PCIE && t.vertex(t.link(l).to).kind == kind) ++n;
  }
  return n;
}

struct Board {
  double nvlink_per_gpu_gbps;  // per direction
  int nics_per_node;
  int gpus_per_nic;  // GPUs on the PCIe switch of each NIC
  int nics_per_gpu;  // NICs on the PCIe switch of each GPU
};

}  // namespace

TEST_CASE("every catalog system and instance builds the board it describes", "[unit][net][topology]") {
  // The real boards (per direction):
  //   A100: NVLink3 12 links x 25 GB/s = 300 GB/s; H100/H200: NVLink4 18 x 25 = 450 GB/s;
  //   B200: NVLink5 18 x 50 = 900 GB/s.
  //   Bare HGX systems have no NICs.
  //   p4d/p4de: 4 EFA, each on a PCIe switch with 2 GPUs (AWS: "each pair of GPUs shares a PCIe
  //   switch with one EFA device"): 2 GPUs per NIC, 1 NIC per GPU.
  //   p5/p5e: 32 EFA over 8 GPUs: 4 per GPU, each GPU on its own switch group.
  //   p5en: 16 EFA: 2 per GPU. p6-b200: 8 EFA on 4 switches of 2 GPUs: 2 GPUs per NIC, 2 NICs per GPU.
  //   DGX A100: 8 HDR NICs, two per switch with two GPUs. DGX H100 and ND H100 v5: one NIC per GPU.
  const std::map<std::string, Board> boards{
      {"hgx-a100", {300, 0, 0, 0}},         {"hgx-h100", {450, 0, 0, 0}},
      {"hgx-h200", {450, 0, 0, 0}},         {"hgx-b200", {900, 0, 0, 0}},
      {"p4d.24xlarge", {300, 4, 2, 1}},     {"p4de.24xlarge", {300, 4, 2, 1}},
      {"p5.48xlarge", {450, 32, 1, 4}},     {"p5e.48xlarge", {450, 32, 1, 4}},
      {"p5en.48xlarge", {450, 16, 1, 2}},   {"p6-b200.48xlarge", {900, 8, 2, 2}},
      {"dgx-a100", {300, 8, 2, 2}},         {"dgx-h100", {450, 8, 1, 1}},
      {"nd96isr-h100-v5", {450, 8, 1, 1}},
  };
  for (const std::string& name : catalog().machine_names()) {
    INFO(name);
    REQUIRE(boards.count(name) == 1);  // a new catalog entry needs its row here
    const Board& want = boards.at(name);
    const Topology t = build(name);
    const ClusterLayout& c = t.cluster();
    CHECK(c.node.gpus == 8);
    CHECK(c.node.nics == want.nics_per_node);
    int nic_vertices = 0;
    for (const Vertex& v : t.vertices()) nic_vertices += v.kind == VertexKind::NIC ? 1 : 0;
    CHECK(nic_vertices == want.nics_per_node);
    for (int g = 0; g < 8; ++g) {
      CHECK(nvlink_out_gbps(t, t.gpu(0, g)) == Approx(want.nvlink_per_gpu_gbps));
      if (want.nics_per_node > 0) {
        CHECK(count_attached(t, pcie_parent(t, t.gpu(0, g)), VertexKind::NIC) == want.nics_per_gpu);
      }
    }
    for (int i = 0; i < want.nics_per_node; ++i) {
      CHECK(count_attached(t, pcie_parent(t, t.nic(0, i)), VertexKind::GPU) == want.gpus_per_nic);
    }
    // The NVSwitch planes behind the aggregated switch are kept: H100 4 chips (5/4/4/5 links).
    if (c.node.has_nvswitch) CHECK(c.node.nvswitch_chips >= 2);
  }
  const Topology p5 = build("p5.48xlarge");
  CHECK(p5.cluster().node.nvswitch_chips == 4);
  CHECK(p5.cluster().node.nvlink_links_per_chip == std::vector<int>{5, 4, 4, 5});
}

TEST_CASE("intra-node routes: NVSwitch between GPUs, PCIe to NICs, host memory over the root complex",
          "[unit][net][topology]") {
  const Topology t = build("p4d.24xlarge", 2);
  Router router(t);
  // GPU 0 -> GPU 1 share a PCIe switch, but NVLink (2 hops, 300 GB/s) beats PCIe (2 hops, 31.5).
  const Route g01 = router.route(t.gpu(0, 0), t.gpu(0, 1));
  REQUIRE(g01.size() == 2);
  CHECK(t.link(g01[0]).kind == LinkKind::NVLINK);
  CHECK(t.link(g01[0]).to == t.nvswitch(0));
  // GPU 0 -> its NIC 0: GPU -> switch -> NIC.
  const Route g0n = router.route(t.gpu(0, 0), t.nic(0, 0));
  CHECK(g0n.size() == 2);
  // GPU 0 (socket 0) -> memory of socket 1: GPU -> switch -> socket 0 -> socket 1 -> memory.
  const Route g0m1 = router.route(t.gpu(0, 0), t.host_memory(0, 1));
  REQUIRE(g0m1.size() == 4);
  CHECK(t.link(g0m1[2]).kind == LinkKind::INTER_SOCKET);
  CHECK(t.link(g0m1[3]).kind == LinkKind::MEMORY);
  // p4d's switch uplink (31.5 GB/s) is the narrowest hop to host memory.
  CHECK(router.bottleneck(g0m1).gigabytes_per_second() == Approx(31.5));
}

TEST_CASE("rail-aligned routes between nodes", "[unit][net][topology]") {
  NetworkOverrides rail;
  rail.topology = NetworkTopologyKind::RAIL_OPTIMIZED;
  rail.nodes_per_leaf = 2;
  const Topology t = build("p5.48xlarge", 4, rail);
  const ClusterLayout& c = t.cluster();
  // 2 groups of 2 nodes x 32 rails = 64 leaves, one aggregate spine.
  CHECK(c.network.leaves == 64);
  CHECK(c.network.spines == 1);
  Router router(t);
  SECTION("GPU k to GPU k in the same group stays on its rail's leaf") {
    for (std::uint32_t hint = 0; hint < 4; ++hint) {
      const Route r = router.route(t.gpu(0, 3), t.gpu(1, 3), hint);
      // GPU -> switch -> NIC -> leaf -> NIC -> switch -> GPU: 6 links.
      REQUIRE(r.size() == 6);
      const VertexId nic_src = t.link(r[1]).to;
      const VertexId nic_dst = t.link(r[4]).from;
      // GPU 3 owns NICs 12..15; hint h picks NIC 12 + h on both sides: the same rail.
      CHECK(t.vertex(nic_src).index == 12 + static_cast<int>(hint));
      CHECK(t.vertex(nic_dst).index == t.vertex(nic_src).index);
      CHECK(t.vertex(t.link(r[2]).to).kind == VertexKind::LEAF_SWITCH);
    }
  }
  SECTION("across groups the route climbs to the spine") {
    const Route r = router.route(t.gpu(0, 3), t.gpu(2, 3), 1);
    REQUIRE(r.size() == 8);
    CHECK(t.link(r[3]).kind == LinkKind::FABRIC);
    CHECK(t.vertex(t.link(r[3]).to).kind == VertexKind::SPINE_SWITCH);
    // Latency: efa-v2 nic_latency 15 us (7.5 us each NIC port) + 2 x 1 us switch hops = 17 us.
    CHECK(router.latency(r) == Duration::us(17));
  }
  SECTION("the latency a route is found with is the sum over its links") {
    // Inside a node it comes from the node's table of route latencies, not from the links: the
    // two must agree for every pair of vertices of the nodes (GPUs, NICs, host memory), within a
    // node and across nodes, for every hint.
    for (VertexId a = 0; a < t.vertex_count(); ++a) {
      if (!c.is_node_vertex(a) || c.node_of(a) > 1) continue;
      for (VertexId b = 0; b < t.vertex_count(); ++b) {
        if (!c.is_node_vertex(b) || a == b) continue;
        const VertexKind ka = t.vertex(a).kind, kb = t.vertex(b).kind;
        const auto endpoint = [](VertexKind k) {
          return k == VertexKind::GPU || k == VertexKind::NIC || k == VertexKind::HOST_MEMORY;
        };
        if (!endpoint(ka) || !endpoint(kb)) continue;
        for (std::uint32_t hint = 0; hint < 2; ++hint) {
          std::int64_t ps = 0;
          const Route r = router.route(a, b, hint, ps);
          REQUIRE(ps == router.latency(r).picoseconds());
        }
      }
    }
  }
}

TEST_CASE("ECMP spreads over spines deterministically", "[unit][net][topology]") {
  NetworkOverrides o;
  o.nodes_per_leaf = 1;
  o.spines = 4;
  const Topology t = build("dgx-h100", 2, o);
  Router ecmp(t, RoutePolicy::ECMP);
  Router again(t, RoutePolicy::ECMP);
  std::set<VertexId> spines;
  for (std::uint32_t hint = 0; hint < 64; ++hint) {
    const Route r = ecmp.route(t.gpu(0, 0), t.gpu(1, 0), hint);
    CHECK(r == again.route(t.gpu(0, 0), t.gpu(1, 0), hint));
    for (LinkId l : r.links()) {
      if (t.vertex(t.link(l).to).kind == VertexKind::SPINE_SWITCH) spines.insert(t.link(l).to);
    }
  }
  // 64 hashed choices over 4 spines leave none unused (a miss has probability 4 x (3/4)^64 ~ 1e-8).
  CHECK(spines.size() == 4);
}

TEST_CASE("without GPUDirect RDMA the bytes are staged in host memory", "[unit][net][topology]") {
  NetworkOverrides o;
  o.gpudirect_rdma = false;
  const Topology t = build("p4d.24xlarge", 2, o);
  Router router(t);
  const Route r = router.route(t.gpu(0, 0), t.gpu(1, 0));
  int memory_hops = 0;
  for (LinkId l : r.links()) memory_hops += t.link(l).kind == LinkKind::MEMORY ? 1 : 0;
  // Into and out of memory on each side: 4 memory links.
  CHECK(memory_hops == 4);
}

TEST_CASE("p4d: two GPUs behind one NIC each get half of it", "[unit][net][topology]") {
  const Topology t = build("p4d.24xlarge", 2);
  Simulation sim;
  FlowNetwork net(sim, t);
  // GPUs 0 and 1 share PCIe switch 0 and its one EFA device (100 Gb/s = 12.5 GB/s).
  const FlowId a = net.transfer(t.gpu(0, 0), t.gpu(1, 0), Bytes::mib(64));
  const FlowId b = net.transfer(t.gpu(0, 1), t.gpu(1, 1), Bytes::mib(64));
  const FlowId c = net.transfer(t.gpu(0, 2), t.gpu(1, 2), Bytes::mib(64));
  // Rates are set once the 20 us EFA latency (efa-v1 nic_latency; one leaf, no spine) has passed.
  sim.run_until(TimePoint::zero() + Duration::us(20));
  CHECK(net.rate(a).gigabytes_per_second() == Approx(6.25));
  CHECK(net.rate(b).gigabytes_per_second() == Approx(6.25));
  // GPU 2 is behind NIC 1, alone: the full 12.5 GB/s.
  CHECK(net.rate(c).gigabytes_per_second() == Approx(12.5));
  sim.run();
  CHECK_NOTHROW(sim.check_all_handled());
}

TEST_CASE("an oversubscribed leaf/spine limits traffic between leaves", "[unit][net][topology]") {
  // 4 DGX H100 (8 x 400 Gb/s = 8 x 50 GB/s), 2 nodes per leaf, oversubscription 2:
  // a leaf's NICs offer 2 x 8 x 50 = 800 GB/s, its uplink carries 800 / 2 = 400 GB/s.
  NetworkOverrides o;
  o.topology = NetworkTopologyKind::LEAF_SPINE;
  o.nodes_per_leaf = 2;
  o.oversubscription = 2;
  const Topology t = build("dgx-h100", 4, o);
  CHECK(t.cluster().network.leaf_spine_bandwidth / 1e9 == Approx(400));
  Simulation sim;
  FlowNetwork net(sim, t);
  std::vector<FlowId> ids;
  // Every GPU of nodes 0 and 1 sends to the same GPU of nodes 2 and 3: 16 flows across the bisection.
  for (int n = 0; n < 2; ++n) {
    for (int g = 0; g < 8; ++g) ids.push_back(net.transfer(t.gpu(n, g), t.gpu(n + 2, g), Bytes::gib(1)));
  }
  // ib-ndr: 2 us NIC latency + 2 x 130 ns through the spine.
  sim.run_until(TimePoint::zero() + Duration::us(3));
  double total = 0;
  for (const FlowId& id : ids) total += net.rate(id).gigabytes_per_second();
  // Without the spine limit the 16 NICs could carry 16 x 50 = 800 GB/s; the uplink allows 400.
  CHECK(total == Approx(400));
  for (const FlowId& id : ids) CHECK(net.rate(id).gigabytes_per_second() == Approx(25));
  // Within a leaf there is no such limit: node 0 -> node 1 runs at the NIC's 50 GB/s.
  Simulation sim2;
  FlowNetwork net2(sim2, t);
  const FlowId local = net2.transfer(t.gpu(0, 0), t.gpu(1, 0), Bytes::gib(1));
  sim2.run_until(TimePoint::zero() + Duration::us(3));
  CHECK(net2.rate(local).gigabytes_per_second() == Approx(50));
  sim.run();
  sim2.run();
}

TEST_CASE("network overrides are applied and checked", "[unit][net][topology]") {
  SECTION("fewer NICs are spread over the switches") {
    NetworkOverrides o;
    o.nics = 8;
    o.nic_bandwidth = Bandwidth::gigabits_per_second(400);
    const Topology t = build("p5.48xlarge", 2, o);
    CHECK(t.cluster().node.nics == 8);
    for (int g = 0; g < 8; ++g) CHECK(count_attached(t, pcie_parent(t, t.gpu(0, g)), VertexKind::NIC) == 1);
    CHECK(t.link(t.cluster().nic_uplink(0, 0)).bandwidth.gigabits_per_second() == Approx(400));
  }
  SECTION("a bare system gets a network from overrides") {
    NetworkOverrides o;
    o.fabric = "ib-ndr";
    o.nics = 4;
    o.nic_bandwidth = Bandwidth::gigabits_per_second(400);
    const Topology t = build("hgx-h200", 2, o);
    CHECK(t.cluster().network.present);
    CHECK(t.cluster().network.gpudirect_rdma);
    // 4 NICs on 8 switches: switches 0, 2, 4, 6, two per socket.
    CHECK(t.cluster().node.nic_socket == std::vector<int>{0, 0, 1, 1});
  }
  SECTION("bad values are input errors at their key") {
    auto where = [](int nodes, NetworkOverrides o, const char* system = "p5.48xlarge") {
      try {
        build(system, nodes, std::move(o));
      } catch (const InputError& e) {
        return e.where();
      }
      return std::string("no error");
    };
    NetworkOverrides o1;
    o1.oversubscription = 0.5;
    CHECK(where(2, o1) == "cluster.network.oversubscription");
    NetworkOverrides o2;
    o2.fabric = "efa-v9";
    CHECK(where(2, o2) == "cluster.network.fabric");
    NetworkOverrides o3;
    o3.fabric = "ethernet-100g";
    o3.gpudirect_rdma = true;
    CHECK(where(2, o3) == "cluster.network.gpudirect_rdma");
    CHECK(where(2, {}, "hgx-h100") == "cluster.nodes");
    NetworkOverrides o4;
    o4.nodes_per_leaf = 0;
    CHECK(where(2, o4) == "cluster.network.nodes_per_leaf");
  }
}

TEST_CASE("a 128-node p5 cluster builds with arithmetic ids", "[unit][net][topology]") {
  const Topology t = build("p5.48xlarge", 128);
  const ClusterLayout& c = t.cluster();
  // Default: leaf/spine, 16 nodes per leaf -> 8 leaves and one aggregate spine.
  CHECK(c.network.leaves == 8);
  CHECK(c.network.spines == 1);
  // Leaf uplink: 16 nodes x 32 NICs x 12.5 GB/s / 1 = 6400 GB/s.
  CHECK(c.network.leaf_spine_bandwidth / 1e9 == Approx(6400));
  CHECK(t.vertex(t.gpu(127, 7)).node == 127);
  CHECK(t.vertex(t.gpu(127, 7)).index == 7);
  CHECK(t.link(c.nic_uplink(5, 9)).from == t.nic(5, 9));
  CHECK(t.link(c.nic_downlink(5, 9)).to == t.nic(5, 9));
  CHECK(t.describe_vertex(t.gpu(3, 5)) == "node 3 gpu 5");
}

TEST_CASE("a non-blocking leaf's uplinks can never be overloaded; an oversubscribed leaf's can", "[unit][net][topology]") {
  auto count_fabric = [](const Topology& t) {
    const auto never = t.never_overloaded_links();
    int marked = 0;
    int fabric = 0;
    for (LinkId l = 0; l < t.link_count(); ++l) {
      if (t.link(l).kind != LinkKind::FABRIC) {
        CHECK(never[l] == 0);  // only switch-to-switch links can be shown never overloaded
        continue;
      }
      ++fabric;
      marked += never[l];
    }
    return std::pair<int, int>{marked, fabric};
  };
  NetworkOverrides o;
  o.topology = NetworkTopologyKind::LEAF_SPINE;
  o.nodes_per_leaf = 2;
  // 4 nodes, 2 leaves, 1 spine: each leaf's uplink carries at most what its 2 x 8 NICs bring
  // (800 GB/s) and has 800 GB/s: all 4 fabric links (2 up, 2 down) are never overloaded.
  const auto nb = count_fabric(build("dgx-h100", 4, o));
  CHECK(nb.first == 4);
  CHECK(nb.second == 4);
  // Oversubscribed 2:1: 400 GB/s against 800 GB/s of NICs: they can be.
  o.oversubscription = 2;
  const auto over = count_fabric(build("dgx-h100", 4, o));
  CHECK(over.first == 0);
  CHECK(over.second == 4);
  // Two spines: a leaf's uplink to one spine may also carry what came down from the other (a
  // longer path), so no bound is proven.
  o.oversubscription = 1;
  o.spines = 2;
  const auto two = count_fabric(build("dgx-h100", 4, o));
  CHECK(two.first == 0);
  CHECK(two.second == 8);
}
