#pragma once
// The closed form of a training step (Fidelity::FAST) from a StepPlan: the same items, costs and
// schedule as the event simulation, without contention between concurrent transfers and with the
// pipeline reduced to a formula. Microseconds per evaluation, for the planner's sweeps.
//
// Per stage s and micro-batch (f, b: forward and backward of all of its chunks):
//   a pass = sum over its items: compute items add their time, or max(compute, collective) when a
//            collective runs beside them; collectives on the path add their time
//   ZeRO-3/FSDP units overlapped on side streams (prefetch of one unit): forward
//            G_1 + sum_k max(C_k, G_{k+1}) with G = host fetch + all-gather of a unit; backward
//            G_n + sum_k max(C_k, G_{k-1} + R_{k+1}, H_{k-1} + D_{k+1}) (the all-gather of the next
//            unit and the reduce-scatter of the previous share the links; H, D host copies share
//            PCIe), then the last reduce-scatter; not overlapped: every collective adds.
//   T_s = f + b
// Pipeline (m micro-batches, p stages, v chunks, s* the slowest stage):
//   T_pipe = m T_s* + sum_{s != s*} T_s / v + 2 (p - 1) t_send   (+ 2 m t_send when sends block)
//   (equal stages: (m + (p - 1)/v) T, Narayanan et al. SC'21 Sec. 2.2; 1F1B and GPipe alike)
// Data parallelism: buckets issued as the last micro-batch's backward produces them run back to
// back on one stream: finish_k = max(finish_{k-1}, ready_k) + c_k; the step waits
// max(0, finish_last - end of backward), less the time stage s finishes before stage 0
// (sum of the backward chunks of the stages before it); after-backward buckets add in full.
// Then the tied-embedding and gradient-norm all-reduces, the optimizer (GPU kernels, or D2H +
// CPU Adam + H2D when offloaded) and, without overlap_param_gather, the parameter all-gather.
// With overlap_param_gather the step's first forward waits max_k(finish_k - start of the unit
// that needs bucket k) on stage 0.

#include "models/step_plan.hpp"

namespace clustersim::models {

StepOutcome evaluate_fast(const StepPlan& plan);

}  // namespace clustersim::models
