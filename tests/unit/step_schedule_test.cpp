#include <catch2/catch.hpp>

#include <string>

#include "models/pipeline_schedule.hpp"
#include "models/rank_grid.hpp"
#include "models/transformer_config.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

// "F0 B0 F1 ..." with chunks as "F0.1".
std::string text(const std::vector<PipelinePass>& passes, bool chunks = false) {
  std::string s;
  for (const auto& p : passes) {
    if (!s.empty()) s += ' ';
    s += (p.forward ? 'F' : 'B') + std::to_string(p.micro_batch);
    if (chunks) s += "." + std::to_string(p.chunk);
  }
  return s;
}

}  // namespace

TEST_CASE("1F1B: warm-up forwards, steady pairs, cool-down backwards", "[unit][step][schedule]") {
  // 4 stages, 6 micro-batches: stage i warms up with 4 - i - 1 forwards (Megatron schedules.py).
  CHECK(text(pipeline_order(PipelineSchedule::ONE_F_ONE_B, 0, 4, 6, 1)) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  CHECK(text(pipeline_order(PipelineSchedule::ONE_F_ONE_B, 3, 4, 6, 1)) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
  CHECK(text(pipeline_order(PipelineSchedule::GPIPE, 1, 4, 3, 1)) == "F0 F1 F2 B0 B1 B2");
  // Without a pipeline, micro-batches run one after another (gradient accumulation).
  CHECK(text(pipeline_order(PipelineSchedule::ONE_F_ONE_B, 0, 1, 3, 1)) == "F0 B0 F1 B1 F2 B2");
}

TEST_CASE("interleaved 1F1B follows Megatron's chunk order", "[unit][step][schedule]") {
  // p = 2 stages, v = 2 chunks, m = 4 micro-batches: passes k = 0..7 run micro-batch
  // (k div 4) 2 + k mod 2 on chunk (k mod 4) div 2. Stage 0 warms up with (2-0-1) 2 + (2-1) 2 = 4
  // forwards: F0.0 F1.0 F0.1 F1.1, then F/B pairs; backwards visit chunk 1 first.
  CHECK(text(pipeline_order(PipelineSchedule::INTERLEAVED_1F1B, 0, 2, 4, 2), true) ==
        "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
  // The last stage warms up with (v - 1) p = 2 forwards.
  CHECK(text(pipeline_order(PipelineSchedule::INTERLEAVED_1F1B, 1, 2, 4, 2), true) ==
        "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
  // Every (micro-batch, chunk) runs once forward and once backward.
  const auto all = pipeline_order(PipelineSchedule::INTERLEAVED_1F1B, 3, 4, 8, 3);
  CHECK(all.size() == 2 * 8 * 3);
}

TEST_CASE("rank grid: Megatron's tp-cp-ep-dp-pp order places TP inside a node", "[unit][step][schedule]") {
  const TransformerConfig m = builtin_model_preset("llama3-70b");
  ParallelismSpec p;
  p.data = 4;
  p.tensor = 8;
  p.pipeline = 2;
  TrainingSpec t;
  t.global_batch_size = 8;
  const ParallelLayout L(m, p, t);
  const RankGrid g(L, "tp-cp-ep-dp-pp", 8);
  CHECK(g.world() == 64);
  // Stage 1's representative: rank = pp x (tp dp) = 1 x 32.
  CHECK(g.stage_rank(1) == 32);
  // Its TP group is GPUs 0..7 of node 4; its DP group one GPU on each of nodes 4..7.
  CHECK(g.members(32, GroupKind::TENSOR) == std::vector<int>{32, 33, 34, 35, 36, 37, 38, 39});
  CHECK(g.members(32, GroupKind::DATA) == std::vector<int>{32, 40, 48, 56});
  CHECK(g.members(32, GroupKind::PIPELINE) == std::vector<int>{0, 32});
  // With DP innermost, the data-parallel group fills a node instead.
  const RankGrid d(L, "dp-tp-cp-ep-pp", 8);
  CHECK(d.members(0, GroupKind::DATA) == std::vector<int>{0, 1, 2, 3});
  CHECK(d.members(0, GroupKind::TENSOR) == std::vector<int>{0, 4, 8, 12, 16, 20, 24, 28});
}
