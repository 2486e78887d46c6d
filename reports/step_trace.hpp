#pragma once
// The Perfetto trace of an event-simulated step (models::StepTimeline), written by
// `clustersim simulate --trace`.
//
// Tracks
//   stage s            process (rank s): one thread per stream that ran work; a slice per task.
//   "network"          process after the stages: one counter per traced link, "util <link>", its
//                      load over its bandwidth in [0, 1], sampled where the flow rates changed.
//   memory             counter "memory" (series "bytes") on each stage's process: GPU memory over
//                      the step (models/step_timeline.hpp gives the derivation and how its peak
//                      relates to the memory model's).
// Slice args, where the model knows them:
//   micro_batch, chunk (virtual pipeline chunk), unit ("layer 12", "embedding", "head"), layer,
//   pass (forward, backward);
//   collectives and copies: collective (op), bytes (one call), calls, algorithm, protocol,
//   channels, transport, group (tensor, data, pipeline, ...; host for copies), group_ranks
//   ("0,8,16"), flows and wire_bytes (what the flow network carried for the task).
// Arrows: a pipeline send to the first kernel of the receiving pass ("send"), a backward kernel to
// the gradient collective it starts ("collective").

#include "models/scenario.hpp"
#include "models/step_model.hpp"
#include "reports/perfetto_trace.hpp"

namespace clustersim::reports {

PerfettoTrace step_trace(const models::Scenario& scenario, const models::StepTimeline& timeline);

}  // namespace clustersim::reports
