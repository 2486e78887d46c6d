#pragma once
// The order in which one pipeline stage runs its forward and backward passes over the
// micro-batches of a step, as Megatron-LM's schedules run them
// (megatron/core/pipeline_parallel/schedules.py):
//
//   no pipeline (p = 1)   F(0) B(0) F(1) B(1) ... (gradient accumulation, one micro-batch at a time)
//   GPipe                 F(0) ... F(m-1) B(0) ... B(m-1)
//   1F1B                  (forward_backward_pipelining_without_interleaving) stage i of p runs
//                         w = min(p - i - 1, m) warm-up forwards, then m - w pairs F(w + k) B(k),
//                         then the w remaining backwards.
//   interleaved 1F1B      (forward_backward_pipelining_with_interleaving) with v model chunks per
//                         stage, the m v chunk passes are numbered k = 0 .. m v - 1; pass k runs
//                         micro-batch (k div (p v)) p + (k mod p) on chunk (k mod p v) div p for a
//                         forward, and chunk v - 1 - that for a backward (micro-batches go through
//                         the chunks in groups of p). Warm-up: w = min((p - i - 1) 2 + (v - 1) p,
//                         m v) forwards (all of them when m = p, as Megatron does), then
//                         F(k + w) B(k) pairs, then the remaining backwards.
// Dependencies between stages (the step builder adds them): F(mb, c) on stage i needs F(mb, c) of
// stage i - 1 (or, on stage 0, F(mb, c - 1) of the last stage); B(mb, c) on stage i needs B(mb, c)
// of stage i + 1 (or, on the last stage, B(mb, c + 1) of stage 0; the last chunk of the last stage
// starts its backward from its own forward).
//
// Pipeline time, closed form (for equal stages of forward f and backward b per micro-batch and
// stage, m micro-batches, p stages, v chunks): (m + (p - 1) / v) (f + b), the bubble being
// (p - 1) / v (f + b) (Narayanan et al. SC'21, Sec. 2.2). GPipe and 1F1B have the same bubble.

#include <cstdint>
#include <string_view>
#include <vector>

#include "models/scenario.hpp"

namespace clustersim::models {

struct PipelinePass {
  bool forward = true;
  std::int64_t micro_batch = 0;
  int chunk = 0;  // virtual stage on this pipeline stage
};

// The passes of stage `stage` (0-based) of `stages`, for `micro_batches` micro-batches and
// `chunks` model chunks per stage, in execution order.
std::vector<PipelinePass> pipeline_order(PipelineSchedule schedule, int stage, int stages, std::int64_t micro_batches,
                                         int chunks);

}  // namespace clustersim::models
