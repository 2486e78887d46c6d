#pragma once
// A parallel layout checked against a model: the sizes of every parallel dimension, which layers
// each pipeline stage (and virtual stage) holds, and how many micro-batches each stage keeps in
// flight.
//
// Dimensions (Megatron-Core semantics; rank order tp-cp-ep-dp-pp by default):
//   tp  tensor parallel: heads and MLP columns split (column/row-parallel linears), vocabulary split
//   sp  sequence parallel (with tp): norms, dropout and residuals split along the sequence over tp
//   cp  context parallel: the sequence split over cp ranks (ring attention, load-balanced chunks)
//   ep  expert parallel: routed experts split over ep ranks, carved out of dp x cp
//   pp  pipeline parallel, vp virtual stages (interleaved 1F1B) per rank
//   dp  data parallel: replicas; ZeRO/FSDP/the distributed optimizer shard over dp x cp for dense
//       parameters and over dp x cp / ep for expert parameters
//
// Layer placement: the L layers form pp x vp contiguous chunks, as even as possible (the first
// L mod (pp vp) chunks one layer longer); chunk j of stage p is global chunk j pp + p
// (Megatron's interleaved assignment). The embedding is on stage 0 chunk 0, the final norm, LM
// head and loss on stage pp-1 chunk vp-1.
//
// Micro-batches in flight on stage i of p, with m micro-batches per step (Megatron-LM
// core/pipeline_parallel/schedules.py: warm-up micro-batches before the first backward):
//   1F1B               min(p - i, m) micro-batches of the stage's layers
//   interleaved 1F1B   min(2 (p - i - 1) + (vp - 1) p + 1, m vp) chunk passes of L/(p vp) layers;
//                      on stage 0 this is L (1 + (p-1)/(p vp)) layer-micro-batches (Korthikanti et
//                      al. 2022, Sec. 4.2.3)
//   GPipe              m micro-batches
//   no pipeline        1 micro-batch (gradient accumulation runs them one after another)

#include <cstdint>
#include <string>
#include <vector>

#include "models/parameter_tensors.hpp"
#include "models/recompute.hpp"
#include "models/scenario.hpp"
#include "models/transformer_config.hpp"

namespace clustersim::models {

// Where a rank sits in the layout (what distinguishes ranks that do different work).
struct RankPosition {
  int pipeline_stage = 0;
  int virtual_stage = 0;  // model chunk on that stage (interleaved schedules)
  int expert_rank = 0;    // index within the expert-parallel group (balanced routing: all equal)
};

class ParallelLayout {
 public:
  // Checks the layout against the model; an impossible split is an InputError naming `file`, the
  // scenario key and what was expected.
  ParallelLayout(const TransformerConfig& model, const ParallelismSpec& parallelism, const TrainingSpec& training,
                 std::string file = "");

  int dp() const { return dp_; }
  int tp() const { return tp_; }
  int pp() const { return pp_; }
  int cp() const { return cp_; }
  int ep() const { return ep_; }
  int vp() const { return vp_; }
  bool sequence_parallel() const { return sp_; }
  Framework framework() const { return framework_; }
  PipelineSchedule schedule() const { return schedule_; }
  // The divisor of hidden-size activations along the sequence on one rank: tp with SP, else 1.
  int sp_divisor() const { return sp_ ? tp_ : 1; }
  // Ranks over which dense and expert parameters (and their optimizer state) are sharded by
  // ZeRO, FSDP or the distributed optimizer.
  int dense_shard_group() const { return dp_ * cp_; }
  int expert_shard_group() const { return dp_ * cp_ / ep_; }
  ShardFactors shard_factors() const { return {.tensor = tp_, .expert = ep_}; }

  std::int64_t micro_batch() const { return micro_batch_; }
  std::int64_t seq_len() const { return seq_len_; }
  std::int64_t global_batch() const { return global_batch_; }
  std::int64_t num_micro_batches() const { return num_micro_batches_; }
  // Tokens of one micro-batch on one rank through the GEMMs (b s / cp) and through the
  // sequence-parallel regions (b s / (cp sp)).
  std::int64_t tokens() const { return micro_batch_ * seq_len_ / cp_; }
  std::int64_t sp_tokens() const { return tokens() / sp_divisor(); }

  // Layers of a model chunk, in order.
  std::vector<std::int64_t> layers_of(int stage, int virtual_stage) const;
  // All layers a stage holds (every chunk).
  std::vector<std::int64_t> layers_of_stage(int stage) const;
  bool has_embedding(int stage, int virtual_stage) const { return stage == 0 && virtual_stage == 0; }
  bool has_head(int stage, int virtual_stage) const { return stage == pp_ - 1 && virtual_stage == vp_ - 1; }
  bool stage_has_embedding(int stage) const { return stage == 0; }
  bool stage_has_head(int stage) const { return stage == pp_ - 1; }
  // Whether full recompute replays `layer` and what it keeps (recompute.hpp), per model chunk.
  LayerRecompute layer_recompute(std::int64_t layer) const {
    return models::layer_recompute(training_, layer, num_layers_, static_cast<std::int64_t>(pp_) * vp_);
  }
  // (layer, micro-batch) pairs whose activations a stage holds at its peak (see the header
  // comment): multiply by the activation bytes of one layer for one micro-batch.
  double in_flight_layer_activations(int stage) const;
  // Micro-batches whose first-stage / last-stage extra activations (embedding, logits) are held.
  std::int64_t in_flight_micro_batches(int stage) const;

 private:
  int dp_ = 1, tp_ = 1, pp_ = 1, cp_ = 1, ep_ = 1, vp_ = 1;
  bool sp_ = false;
  Framework framework_ = Framework::PYTORCH;
  PipelineSchedule schedule_ = PipelineSchedule::ONE_F_ONE_B;
  std::int64_t micro_batch_ = 1, seq_len_ = 1, global_batch_ = 1, num_micro_batches_ = 1;
  std::int64_t num_layers_ = 0;
  TrainingSpec training_;
};

}  // namespace clustersim::models
