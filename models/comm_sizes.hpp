#pragma once
// What each layer moves between ranks, sized for one rank and one micro-batch; the step builder
// turns these into NCCL collectives on the right groups.
//
//   parameters  a layer's elements on one rank after tensor/expert/pipeline splits, in the dtype
//               they are gathered in (bf16; fp32 training fp32): what FSDP/ZeRO-3 all-gathers per
//               layer (each data-parallel rank holds 1/D of it) and the distributed optimizer
//               all-gathers after the step. Dense and expert parts have different groups
//               (dp x cp and dp x cp / ep).
//   gradients   trainable elements in training.grad_reduce_dtype: DP all-reduce or reduce-scatter
//   tensor parallel (Megatron): per layer forward 2 all-reduces of the b s/cp x h activation
//               (after attention and after the MLP); with sequence parallelism 2 all-gathers and
//               2 reduce-scatters of the same full size; backward the same count.
//   expert parallel: per MoE layer a dispatch and a combine all-to-all forward and the same two
//               backward, each carrying T_sp k h elements from a rank (the k copies of its tokens);
//               (ep-1)/ep of it leaves the rank under uniform routing.
//   context parallel (ring attention): cp-1 steps per attention forward, each passing one KV
//               block b (s/cp) kv_heads/tp (d_qk + d_v); backward passes KV and its gradient.
//   pipeline    one micro-batch's activation b s/cp x h (/tp with sequence parallelism) per send.
// Gradient buckets: PyTorch DDP bucket_cap_mb 25 MiB; Megatron-Core DDP buckets of
// max(4e7, 1e6 x dp) elements; DeepSpeed reduce_bucket_size elements; FSDP one layer.

#include <cstdint>

#include "hardware/units.hpp"
#include "models/parallel_layout.hpp"
#include "models/scenario.hpp"
#include "models/transformer_config.hpp"

namespace clustersim::models {

struct LayerCommSizes {
  Bytes dense_params;
  Bytes expert_params;
  Bytes dense_grads;
  Bytes expert_grads;
  Bytes tp_activation;  // one TP collective's full tensor
  int tp_collectives_forward = 0;
  int tp_collectives_backward = 0;
  Bytes ep_alltoall;  // one all-to-all's bytes from one rank
  int ep_alltoalls_forward = 0;
  int ep_alltoalls_backward = 0;
  Bytes cp_kv_block;  // one ring step's KV block
  int cp_ring_steps = 0;  // per attention forward; the backward moves KV and dKV over as many steps
};

struct StageCommSizes {
  Bytes pp_activation;           // one micro-batch sent to the next stage (and its gradient back)
  Bytes embedding_tp_activation;  // first stage: vocab-parallel embedding all-reduce / reduce-scatter
  Bytes head_tp_activation;       // last stage: LM-head input all-gather (sequence parallel)
  Bytes tied_embedding_grads;     // first and last stage: the tied embedding's gradient all-reduce
};

LayerCommSizes layer_comm_sizes(const TransformerConfig& model, const ParallelLayout& layout,
                                const TrainingSpec& training, std::int64_t layer);
StageCommSizes stage_comm_sizes(const TransformerConfig& model, const ParallelLayout& layout,
                                const TrainingSpec& training);
// The data-parallel gradient bucket of the framework (bytes in grad_reduce_dtype).
Bytes gradient_bucket_bytes(const ParallelismSpec& parallelism, const TrainingSpec& training, std::int64_t hidden_size);

}  // namespace clustersim::models
