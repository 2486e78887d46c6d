#pragma once
// What the trace of an EVENT step shows beside the tasks (step_model.hpp StepTimeline): the
// stage's collectives and units by index, and each stage's GPU memory over the step.
//
// Memory track. The memory model (memory_model.hpp) gives one peak per stage, the sum of resident
// state (weights, gradients, optimizer state, buffers, the transient working set of one layer) and
// the activations saved for the backward of its in-flight layer-micro-batches. It has no timeline
// of allocations, so the track derives one from the executed tasks:
//   saved(t) = sum over (micro-batch, chunk, unit) whose forward has started and whose backward
//              has not ended at t of a = saved_per_layer (a layer), saved_embedding or saved_head
//              (StagePlan: the model's in-flight totals over its in-flight counts);
//   memory(t) = P - A + saved(t),
// where P is the model's peak and A the saved activations it counts (a x its in-flight count,
// summed over layers, embedding and head). A unit's activations are allocated when its first
// forward kernel of the micro-batch starts and freed when its last backward kernel ends (frees
// before allocations at one instant). Everything else is held flat at its peak value over the
// step: the optimizer's and the gradients' growth, the gather and bucket buffers, the allocator's
// fragmentation (charged on what is held at the peak). Hence
//   max_t memory(t) = P - A + max_t saved(t) = P exactly when the schedule keeps as many units in
//   flight as ParallelLayout::in_flight_* count (GPipe, 1F1B and interleaved 1F1B do);
// when the peak holds no activations (FSDP with one micro-batch whose gradients outweigh them) the
// track is flat at P.

#include <vector>

#include "models/step_model.hpp"
#include "models/step_plan.hpp"

namespace clustersim::models {

// The stages' collectives and units as the trace names them.
void describe_plan(const StepPlan& plan, StepTimeline& timeline);

// Stage `stage`'s memory over the step from the executed timeline (graph, timings and context
// filled): samples at 0 and at every change.
std::vector<CounterSample> memory_track(const StepPlan& plan, int stage, const StepTimeline& timeline);

}  // namespace clustersim::models
