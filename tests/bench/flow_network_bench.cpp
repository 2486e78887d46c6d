// Speed of the flow network: flow completions per second with N flows kept in flight on a
// 128-node p5.48xlarge cluster (1,024 H100, 4,096 EFA devices), one core.
//
// Traffic (a closed loop: every completion starts one new flow, so N flows are always in flight,
// counting those still in their start latency):
//   - source: a GPU drawn uniformly from the 1,024;
//   - 70 % intra-node (a ring over 8 GPUs per node makes 7 of its 8 hops on NVLink): destination
//     another GPU of the same node, uniformly; rate cap = the GPU's NVLink bandwidth / 16 x U(0.5,
//     1) (one of 16 NCCL channels sharing the NVLink ports, at 50 to 100 % of its share:
//     14 to 28 GB/s on H100);
//   - 30 % inter-node, rail-aligned: the same GPU index on another node drawn uniformly, through
//     one of the GPU's 4 EFA devices drawn uniformly (the path hint, as an NCCL channel picks its
//     NIC); rate cap = the NIC's bandwidth x U(0.5, 0.97) (one NET channel reaching 50 to 97 % of
//     its 12.5 GB/s device);
//   - size: log-uniform from 32 KiB to 8 MiB (NCCL slices and chunks), so completions spread in
//     time instead of coinciding;
//   - start latency from the route (15 us EFA plus 2 x 1 us through the spine between leaves;
//     NVLink hops 0 by default), during which the flow counts as in flight.
// Caps come from the catalog's figures for the node, not from constants. Flows are started by
// source and destination, so every start pays for routing. Nothing is tuned to the solver: the
// loads follow from the caps and N. Slow flows stay longer, so in steady state inter-node flows
// are about two thirds of those in flight (Little's law), not 30 %. Measured in steady state:
//   N = 1,000:   932 of 8,192 EFA ports busy (1.1 flows each), 67 full; no NVLink port full.
//   N = 10,000:  6,146 EFA ports busy (2.1 flows each), 2,263 full; NVLink ports 3.2 flows each,
//                none full; each leaf uplink carries about 700 flows.
//   N = 100,000: 5,964 of 8,189 busy EFA ports full (9.6 flows each); 1,743 of 2,048 NVLink
//                ports full (57 flows each).
// With exact max-min sharing a completion on a full link changes the rates of every flow whose
// bottleneck moves: about 3 flows per completion at 10,000, about 400 at 100,000.
// Where the time goes (BM_FlowNetworkMix: the same loop with one kind of flow only, 10,000 in
// flight): intra-node flows alone, whose NVLink ports never fill, complete at 4.2 to 5.6 M a
// second, nearly each rated on its own (0.004 fills a completion); inter-node flows alone at 0.15
// to 0.23 M (the host decides which), each completion costing 2.05 fills, 19 flows rated and 14.8
// rate changes. In the mix the 30% of completions that are inter-node take most of the time: on
// one host at 0.89 M a second, 1.12 us a completion = 0.7 x about 0.2 us + 0.3 x about 3.3 us
// (the max-min cascade over the saturated EFA ports), 88%; on a faster one (2026-11-30) at 1.06 M,
// 0.94 us = 0.7 x 0.18 us + 0.3 x about 2.7 us, 86%.
//
// Reported: items per second = flow completions per second of the benchmark thread's CPU time
// (state.SetItemsProcessed; Google Benchmark divides by CPU time unless told otherwise), counted
// in steady state only (after the warm-up below); counters: the simulated time covered, the work
// of the max-min solver per completion (flows rated, rate changes, flows rated alone, progressive
// fills, solves with work to do), and the memory per simulated GPU: bytes held by the topology
// (vertices, links, adjacency, layout, route tables; the Boost graph estimated from its sizes) and
// by the flow state (network and solver tables at N flows, by container capacity), divided by
// 1,024.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "hardware/catalog.hpp"
#include "sim/engine/simulation.hpp"
#include "sim/net/cluster_topology.hpp"
#include "sim/net/flow_network.hpp"

namespace {

using namespace clustersim;
using namespace clustersim::sim;

constexpr int NODES = 128;

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }

 private:
  std::uint64_t s_;
};

class ClosedLoop : public FlowHandler {
 public:
  ClosedLoop(FlowNetwork& net, const hardware::NodeSpec& node, double intra_fraction)
      : net_(net),
        intra_fraction_(intra_fraction),
        topo_(net.topology()),
        nvlink_channel_(node.nvlink_per_gpu() / 16),
        nic_(node.instance->network.nic_bandwidth.value),
        gpus_(node.gpus()),
        nics_per_gpu_(node.nics() / node.gpus()) {}

  void start_one() {
    const int node = rng_.below(NODES);
    const int gpu = rng_.below(gpus_);
    // log-uniform 32 KiB .. 8 MiB
    const auto bytes = Bytes::of(static_cast<std::int64_t>(32768.0 * std::exp2(8.0 * rng_.uniform())));
    FlowOptions o;
    if (rng_.uniform() < intra_fraction_) {
      const int other = (gpu + 1 + rng_.below(gpus_ - 1)) % gpus_;
      o.rate_cap = nvlink_channel_ * (0.5 + 0.5 * rng_.uniform());
      net_.transfer(topo_.gpu(node, gpu), topo_.gpu(node, other), bytes, *this, o);
    } else {
      const int other = (node + 1 + rng_.below(NODES - 1)) % NODES;
      o.rate_cap = nic_ * (0.5 + 0.47 * rng_.uniform());
      o.path_hint = static_cast<std::uint32_t>(rng_.below(nics_per_gpu_));
      net_.transfer(topo_.gpu(node, gpu), topo_.gpu(other, gpu), bytes, *this, o);
    }
  }

  void on_flow_complete(const FlowCompletion& /*done*/) override {
    ++completions_;
    start_one();
  }

  std::uint64_t completions() const { return completions_; }

 private:
  FlowNetwork& net_;
  double intra_fraction_;
  const Topology& topo_;
  Bandwidth nvlink_channel_;
  Bandwidth nic_;
  int gpus_;
  int nics_per_gpu_;
  Rng rng_{20261121};
  std::uint64_t completions_ = 0;
};

void run_flow_network(benchmark::State& state, std::size_t in_flight, double intra_fraction) {
  const hardware::Catalog catalog = hardware::Catalog::load();
  ClusterConfig config;
  config.node = hardware::resolve_node(catalog, "p5.48xlarge");
  config.nodes = NODES;

  const Topology topology = build_topology(catalog, config);
  Simulation sim;
  FlowNetwork net(sim, topology);
  ClosedLoop loop(net, config.node, intra_fraction);
  for (std::size_t i = 0; i < in_flight; ++i) loop.start_one();
  // Runs until `n` more completions (in slices of 100 ns of simulated time, so that the network
  // goes from one completion time to the next without a round trip through the event queue).
  auto run_for = [&](std::uint64_t n) {
    const std::uint64_t target = loop.completions() + n;
    while (loop.completions() < target) sim.run_until(sim.now() + Duration::ns(100));
  };
  // Warm up until the in-flight mix is the loop's steady state (long and slow flows accumulate:
  // by Little's law the mix in flight is weighted by duration): about six replacements of every
  // initial flow, at most 200,000 completions.
  run_for(std::min<std::uint64_t>(6 * in_flight, 200'000));

  constexpr std::uint64_t BATCH = 2000;
  const std::uint64_t first = loop.completions();
  const TimePoint t0 = sim.now();
  const SolverCounters c0 = net.solver_counters();
  for (auto _ : state) run_for(BATCH);
  const auto done = static_cast<double>(loop.completions() - first);
  state.SetItemsProcessed(static_cast<std::int64_t>(done));
  const SolverCounters& c1 = net.solver_counters();
  const double gpus = NODES * config.node.gpus();
  state.counters["sim_us"] = benchmark::Counter((sim.now() - t0).microseconds());
  state.counters["filled/compl"] = static_cast<double>(c1.flows_solved - c0.flows_solved) / done;
  state.counters["rerated/compl"] = static_cast<double>(c1.rate_changes - c0.rate_changes) / done;
  state.counters["alone/compl"] = static_cast<double>(c1.alone - c0.alone) / done;
  state.counters["fills/compl"] = static_cast<double>(c1.fills - c0.fills) / done;
  state.counters["solves/compl"] = static_cast<double>(c1.solves - c0.solves) / done;
  state.counters["topo_B/GPU"] = static_cast<double>(topology.memory_bytes()) / gpus;
  state.counters["flows_B/GPU"] = static_cast<double>(net.memory_bytes()) / gpus;
  if (net.flows_in_flight() != in_flight) state.SkipWithError("the loop lost flows");
}

void BM_FlowNetwork(benchmark::State& state) { run_flow_network(state, static_cast<std::size_t>(state.range(0)), 0.7); }
BENCHMARK(BM_FlowNetwork)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

// The same loop with only intra-node flows (/100) or only inter-node ones (/0): where the time of
// the mix goes (see the header).
void BM_FlowNetworkMix(benchmark::State& state) {
  run_flow_network(state, static_cast<std::size_t>(state.range(0)), static_cast<double>(state.range(1)) / 100);
}
BENCHMARK(BM_FlowNetworkMix)->Args({10000, 100})->Args({10000, 0})->Unit(benchmark::kMillisecond);

}  // namespace
