// The two speeds of the NCCL model agree where nothing contends: the event simulation of a
// collective on an otherwise idle network against the analytic pass of the same step program.

#include <catch2/catch.hpp>

#include <cmath>

#include "hardware/catalog.hpp"
#include "sim/nccl/collective_sim.hpp"
#include "sim/net/cluster_topology.hpp"

using namespace clustersim;
using namespace clustersim::sim;
using namespace clustersim::sim::nccl;

namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

struct Case {
  std::string system;
  int nodes;
  int gpus;
  CollectiveOp op;
  Bytes size;
  std::map<std::string, std::string> env;
  const hardware::CalibrationProfile* profile = nullptr;
};

// Event-simulated time over analytic time.
double ratio(const Case& c) {
  PredictorConfig cfg;
  cfg.node = hardware::resolve_node(catalog(), c.system);
  cfg.shape = {c.nodes, c.gpus};
  cfg.env = c.env;
  cfg.profile = c.profile;
  const CollectivePredictor pred(cfg);
  const CollectivePrediction fast = pred.predict(c.op, c.size);
  ClusterConfig cc;
  cc.node = cfg.node;
  cc.nodes = c.nodes;
  cc.gpus_per_node = c.gpus;
  const Topology topo = build_topology(catalog(), cc);
  CollectiveSpec spec;
  spec.op = c.op;
  spec.size = c.size;
  const CollectiveResult slow = simulate_collective(topo, pred, spec);
  INFO(c.system << " " << c.nodes << "x" << c.gpus << " " << to_string(c.op) << " " << c.size.count() << " B: event "
                << slow.elapsed().microseconds() << " us, analytic " << fast.gpu_time.microseconds() << " us ("
                << to_string(fast.algorithm) << "/" << to_string(fast.protocol) << ")");
  CHECK(slow.algorithm == fast.algorithm);
  return slow.elapsed().seconds() / fast.gpu_time.seconds();
}

}  // namespace

TEST_CASE("event simulation agrees with the analytic pass where nothing contends", "[unit][nccl][sim]") {
  // Same step program, same uncontended rates: only rounding to the picosecond differs. A flow
  // alone on its links runs at min(link share, cap), which is the analytic rate by construction.
  SECTION("ring all-reduce, one H100 node, 1 GiB") {
    CHECK(std::fabs(ratio({"hgx-h100", 1, 8, CollectiveOp::ALL_REDUCE, Bytes::gib(1), {{"NCCL_ALGO", "Ring"}}}) - 1) < 0.01);
  }
  SECTION("NVLS all-reduce, one H200 node, 256 MiB") {
    CHECK(std::fabs(ratio({"hgx-h200", 1, 8, CollectiveOp::ALL_REDUCE, Bytes::mib(256), {}}) - 1) < 0.01);
  }
  SECTION("ring all-gather, four H200 GPUs, 64 MiB") {
    CHECK(std::fabs(ratio({"hgx-h200", 1, 4, CollectiveOp::ALL_GATHER, Bytes::mib(64), {}}) - 1) < 0.01);
  }
  SECTION("ring all-reduce, two H200 GPUs, 256 MiB, built-in profile: the NVLink ramp, at each flow's start") {
    const auto profile = hardware::CalibrationProfile::builtin("hgx-h200-4gpu-2026-11");
    REQUIRE(profile.find("nccl.nvlink.ramp_deficit") != nullptr);
    CHECK(std::fabs(ratio({"hgx-h200", 1, 2, CollectiveOp::ALL_REDUCE, Bytes::mib(256), {{"NCCL_ALGO", "Ring"}}, &profile}) -
                    1) < 0.01);
  }
  SECTION("ring all-reduce over 4 InfiniBand nodes, 1 GiB") {
    CHECK(std::fabs(ratio({"dgx-h100", 4, 8, CollectiveOp::ALL_REDUCE, Bytes::gib(1), {{"NCCL_ALGO", "Ring"}}}) - 1) <
          0.01);
  }
  SECTION("tree all-reduce over sockets, two and four H200 GPUs each its own node, built-in profile") {
    // Every node of both trees in the program (one path per tree for its channels), each message
    // charging its sender's proxy and then its receiver's (tree_programs.cpp socket_tree), in the
    // order the transfers can start (the event simulation: the order they do start), on the same
    // timelines in both.
    const auto profile = hardware::CalibrationProfile::builtin("hgx-h200-4gpu-2026-11");
    const std::map<std::string, std::string> env{
        {"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "Simple"}, {"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}};
    for (int gpus : {2, 4}) {
      for (Bytes size : {Bytes::kib(64), Bytes::mib(1), Bytes::mib(16)}) {
        INFO(gpus << " GPUs, " << size.count() << " B");
        CHECK(std::fabs(ratio({"hgx-h200", 1, gpus, CollectiveOp::ALL_REDUCE, size, env, &profile}) - 1) < 0.01);
      }
    }
    // Three channels: two on tree 0, one on tree 1 (each tree's channels one weighted path).
    auto three = env;
    three["NCCL_MIN_NCHANNELS"] = "3";
    three["NCCL_MAX_NCHANNELS"] = "3";
    CHECK(std::fabs(ratio({"hgx-h200", 1, 4, CollectiveOp::ALL_REDUCE, Bytes::mib(16), three, &profile}) - 1) < 0.01);
  }
  SECTION("every op through SHM, four H200 GPUs, 64 MiB, built-in profile") {
    // SHM's copies into and out of host memory are no link of the topology: the event simulation
    // keeps the hop's rate and charges its GPU link and host memory over time as the analytic
    // pass does (a tree's chain), its flows crossing both GPUs' PCIe and the socket's memory.
    const auto profile = hardware::CalibrationProfile::builtin("hgx-h200-4gpu-2026-11");
    for (CollectiveOp op : {CollectiveOp::ALL_REDUCE, CollectiveOp::ALL_GATHER, CollectiveOp::BROADCAST,
                            CollectiveOp::SENDRECV, CollectiveOp::ALLTOALL}) {
      for (const char* algo : {"Ring", "Tree"}) {
        INFO(to_string(op) << " " << algo);
        const std::map<std::string, std::string> env{{"NCCL_P2P_DISABLE", "1"}, {"NCCL_ALGO", algo}};
        CHECK(std::fabs(ratio({"hgx-h200", 1, 4, op, Bytes::mib(64), env, &profile}) - 1) < 0.01);
      }
    }
  }
  SECTION("tree all-reduce over 2 p4de nodes, 512 MiB") {
    CHECK(std::fabs(ratio({"p4de.24xlarge", 2, 8, CollectiveOp::ALL_REDUCE, Bytes::mib(512), {{"NCCL_ALGO", "Tree"}}}) - 1) <
          0.01);
  }
}

TEST_CASE("every node's copy: same time alone, slower beside other traffic", "[unit][nccl][sim]") {
  PredictorConfig cfg;
  cfg.node = hardware::resolve_node(catalog(), "dgx-h100");
  cfg.shape = {4, 8};
  cfg.env = {{"NCCL_ALGO", "Ring"}};
  const CollectivePredictor pred(cfg);
  ClusterConfig cc;
  cc.node = cfg.node;
  cc.nodes = 4;
  cc.gpus_per_node = 8;
  const Topology topo = build_topology(catalog(), cc);
  CollectiveSpec spec;
  spec.size = Bytes::gib(1);
  const CollectiveResult one = simulate_collective(topo, pred, spec);
  spec.all_nodes = true;
  const CollectiveResult all = simulate_collective(topo, pred, spec);
  // Every node alike and nothing else on the links: each copy runs as the representative does.
  CHECK(all.elapsed().seconds() == Approx(one.elapsed().seconds()).epsilon(0.01));
  CHECK(all.flows == 4 * one.flows);

  // A long transfer out of node 2 through GPU 0's NIC halves that NIC for the ring's channels
  // that leave node 2 there: the whole ring waits for them.
  Simulation sim;
  auto& net = sim.emplace_model<FlowNetwork>(sim, topo);
  net.transfer(topo.gpu(2, 0), topo.gpu(3, 0), Bytes::gib(64));
  CollectiveResult contended;
  bool done = false;
  start_collective(sim, net, topo, pred, spec, [&](const CollectiveResult& r) {
    contended = r;
    done = true;
  });
  while (!done && sim.step()) {
  }
  INFO("alone " << one.elapsed().microseconds() << " us, beside the transfer " << contended.elapsed().microseconds() << " us");
  REQUIRE(done);
  CHECK(contended.elapsed().seconds() > 1.05 * one.elapsed().seconds());
}
