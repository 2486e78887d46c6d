#pragma once
// The event-simulated NCCL collective: the step program of sim/nccl/collective_program.hpp run as
// flows on a shared FlowNetwork inside a caller's Simulation, so that a collective contends with
// whatever else moves on the same links (the training-step executor's other collectives, pipeline
// sends, offload traffic).
//
// Each transfer of the program becomes one flow when its dependencies are met:
//   ready(i)  = max(now, arrival of its dependencies, release of its connection, credit(i))
//   a flow of bytes(i) x multiplicity x wire_factor / link_efficiency bytes from the transfer's
//     source GPU to its destination (explicit route through the NVSwitch for NVLS), capped at the
//     hop's per-channel rate x multiplicity (in the same wire units);
//   release of its connection for the next transfer = start + bytes(i) / rate(hop) (the
//     uncontended serialisation: a connection issues its steps back to back and the network
//     latency of each overlaps the next, as NCCL's proxies do; under contention the flows of one
//     connection share its links);
//   arrival(i) = the flow's completion + the hop's NCCL step latency (the network adds the route's
//     own latency before the bytes move).
// A representative transfer stands for `multiplicity` identical channels: one flow carries their
// bytes (an approximation under contention: the bundle gets one max-min share, not one per
// channel). Rings and trees that leave the node are run once per NIC lane, rotated so that every
// GPU takes every position, each lane carrying its share of the channels.
// Symmetry: by default only the representative ranks run (one node's, plus the next node's
// receiving side), so the cost follows the distinct roles, not the GPU count; other nodes' links
// carry none of the collective's traffic. With `all_nodes` each node runs its copy; for rings and
// PAT a copy's dependencies reach into the neighbouring copies as the ranks do.
//
// Without contention the result equals the analytic pass (evaluate_program) up to rounding; a test
// checks it. Link efficiencies: the topology's links are datasheet rates, the model's capacities
// are datasheet x nccl.*.efficiency, so flows carry payload / efficiency bytes.

#include <cstdint>
#include <functional>
#include <memory>

#include "sim/engine/simulation.hpp"
#include "sim/net/flow_network.hpp"
#include "sim/net/topology.hpp"
#include "sim/nccl/collective_predictor.hpp"

namespace clustersim::sim::nccl {

struct CollectiveSpec {
  CollectiveOp op = CollectiveOp::ALL_REDUCE;
  Bytes size;               // nccl-tests' meaning (all-gather: the total)
  int first_node = 0;       // the group's nodes: first_node .. first_node + predictor nodes - 1
  int first_gpu = 0;        // the group's local GPUs: first_gpu .. first_gpu + GPUs per node - 1
  int lanes = 0;            // NIC lanes to run (0: as many as the node's NIC devices, at most 8)
  // Run every node's ranks (each node its copy of the program, on its own links) instead of one
  // node's: needed when other traffic is not the same on every node. Costs nodes x the flows.
  bool all_nodes = false;
  std::uint64_t tag = 0;    // handed back in the result
};

struct CollectiveResult {
  std::uint64_t tag = 0;
  TimePoint started;
  TimePoint finished;
  Algorithm algorithm = Algorithm::RING;
  Protocol protocol = Protocol::SIMPLE;
  int channels = 1;
  std::size_t flows = 0;    // flows started
  Duration elapsed() const { return finished - started; }
};

using CollectiveCallback = std::function<void(const CollectiveResult&)>;

// Starts the collective now. `predictor` (NCCL's view of the group: system, nodes, GPUs per node,
// placement, variables, release, calibration) must outlive the run; the topology must be the
// network's and hold the group's nodes. `done` runs at the simulated time the last transfer
// arrives. NCCL's tuner picks the algorithm, protocol and channels, as in the fast path.
void start_collective(Simulation& sim, FlowNetwork& net, const Topology& topology, const CollectivePredictor& predictor,
                      const CollectiveSpec& spec, CollectiveCallback done);

// Convenience: a fresh simulation and network over `topology`, one collective, run to the end.
CollectiveResult simulate_collective(const Topology& topology, const CollectivePredictor& predictor,
                                     const CollectiveSpec& spec);

}  // namespace clustersim::sim::nccl
