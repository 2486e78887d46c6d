#pragma once
// The event-simulated step (Fidelity::EVENT): a StepPlan turned into a task graph of one
// representative rank per pipeline stage (sim/exec/task_graph.hpp), run on the discrete-event
// simulator with a flow network over the cluster's topology (sim/net), so that collectives,
// pipeline sends and host copies that overlap in time share their links.
//
// Ranks and streams. Stage s is simulated by its representative rank (every coordinate but the
// stage 0); its data- and tensor-parallel peers do the same work at the same time and are not
// simulated, except where they share links with it (below). Streams of a rank: compute, the
// in-layer collectives (TP/EP/CP), the data-parallel all-gathers, the data-parallel reductions,
// pipeline sends, host-to-device copies, device-to-host copies and the CPU (Adam).
//
// Order. Each stage runs its passes in its schedule's order (pipeline_schedule.hpp); the items of a
// pass in order on the compute stream, collectives on theirs, waited for by the next compute item
// (or run beside one compute item). A forward pass waits for the previous stage's send of that
// micro-batch (chunk c on stage 0 for the last stage's chunk c - 1); a backward pass for the next
// stage's. Non-interleaved schedules wait for their own sends (Megatron's blocking p2p).
// ZeRO-3/FSDP: a unit's all-gather may start once the compute of the unit two places before it
// has finished (one unit of prefetch), after its host fetch under parameter offload; the unit's
// compute waits for it; its reduce-scatter follows its backward (the compute waits too when
// overlap_comm is off). Buckets follow the units that complete them. After the last backward:
// gradients done -> tied-embedding all-reduce -> the gradient-norm all-reduce (a barrier over the
// stages) -> optimizer (GPU kernels, or D2H, CPU Adam, H2D) -> parameter all-gather; with
// overlap_param_gather the all-gathers run at the start instead and the first forward of each unit
// waits for its bucket.
//
// Traffic of one collective on the network (the NCCL model's per-link traffic, step_comm.hpp):
// its bus bytes B = size x bus factor cross each member's links. For the representative's group:
//   inside a node (k members on it): a ring among them, each member sending B (k-1)/k (B on one
//     node) to the next, by the transport NCCL chose: NVLink through the switch (only the
//     representative's two flows: the switch does not block), PCIe through the PCIe switches, SHM
//     through host memory, or NET through the members' NICs (pods without shared IPC);
//   across nodes: each member on the representative's node sends B / k to its counterpart on the
//     next node of the group and receives as much from the previous, split over its nearest NICs;
//   peers of the representative that sit on the same PCIe switch run the same collective of their
//     own groups at the same time (their DP groups, their TP ranks' sends): their flows are added,
//     so GPUs sharing a NIC or a PCIe uplink share it.
// A collective of cost (t, t_bw) alone (step_comm.hpp) becomes a delay t - t_bw, then its flows,
// each capped at (its bytes) / t_bw so that alone it takes exactly t; bytes are scaled by the
// link's datasheet rate over NCCL's achieved rate, so that sharing a link splits what NCCL
// reaches, not the datasheet figure. Host copies: one flow per GPU of the stage on the node between
// the GPU and its socket's memory, capped at one GPU's pinned copy rate.
//
// Attribution (StepBreakdown) on the critical rank (the stage that finishes last): compute-stream
// tasks count as what they are (kernels, optimizer); an idle gap on the compute stream is charged to
// the task it waited for, and the part of the gap before that task became ready to the task that
// one waited for, and so on: collectives -> exposed communication, host copies -> offload, CPU
// Adam -> optimizer, work of another stage (a receive) -> pipeline bubble.

#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"
#include "models/compute_model.hpp"
#include "models/rank_grid.hpp"
#include "models/step_model.hpp"
#include "models/step_plan.hpp"

namespace clustersim::models {

struct EventInputs {
  const Scenario& scenario;
  const hardware::Catalog& catalog;
  const hardware::NodeSpec& node;
  const RankGrid& grid;
  const HostModel& host;
  hardware::ParameterSet& params;  // net.* hop latencies
};

StepOutcome simulate_step(const StepPlan& plan, const EventInputs& in, StepTimeline* timeline = nullptr);

}  // namespace clustersim::models
