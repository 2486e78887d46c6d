#pragma once
// Which layers full activation recompute replays, and what each keeps, with Megatron-Core's
// semantics (megatron/core/transformer/transformer_block.py `_checkpointed_forward`, whose loop
// lives in megatron/core/recompute.py since core_v0.19.0). A model chunk (the layers of one
// pipeline stage, or of one virtual stage under interleaving: `num_layers_per_pipeline_rank` of
// its TransformerBlock) of n layers runs, with R = recompute_num_layers:
//   uniform   layers in groups of R (the last group shorter when R does not divide n); each group
//             is one checkpoint: only its input (2 T_sp h bytes) is kept, and every layer is
//             replayed before its backward; the replay of a group holds the full activations of
//             its R layers at once. R = 1 is "full" recompute as it was before these keys.
//   block     only the first R layers of the chunk are checkpointed, one layer each (input kept,
//             forward replayed); layers R..n-1 keep every activation and are not replayed.
// Recompute FLOPs follow: a replayed layer runs its forward twice (4 passes of GEMM work against
// 3: forward, dgrad, wgrad), a kept one once.
// Megatron skips checkpointing under FP8/FP4 while the chunk's input needs no gradient (the first
// stage's first layers); that shift is not modelled.

#include <cstdint>

#include "models/scenario.hpp"

namespace clustersim::models {

struct LayerRecompute {
  bool replayed = false;          // the layer's forward runs again before its backward
  bool keeps_input = false;       // the layer's input is a checkpoint (uniform: first of its group)
  std::int64_t group_layers = 0;  // layers replayed together from that input (0 when not a group start)
};

// Layer `layer` of `num_layers` split into `chunks` contiguous chunks (pipeline x virtual stages,
// the first num_layers mod chunks one layer longer, as ParallelLayout places them).
LayerRecompute layer_recompute(const TrainingSpec& training, std::int64_t layer, std::int64_t num_layers,
                               std::int64_t chunks);

std::string_view to_string(RecomputeMethod m);

}  // namespace clustersim::models
