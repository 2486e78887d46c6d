#pragma once
// GPU memory of one rank at the peak of a training step, and whether it fits.
//
// Model states (N trainable and W resident parameter elements of this rank after tensor, expert
// and pipeline splits; D = dp x cp shards dense parameters, D_e = dp x cp / ep expert ones):
//   Megatron (Megatron-LM docs, distributed optimizer: 6 + 12/d bytes per parameter with bf16
//     params and fp32 gradients)     weights 2W, gradients 4N (fp32 main_grad; 2N with bf16
//     grad_reduce_dtype), optimizer 12N (fp32 master + 2 Adam moments), /D with the distributed
//     optimizer; fp32 training: 4W, 4N, 8N.
//   DeepSpeed ZeRO, bf16 (ZeRO paper's 2 + 2 + 12 bytes, partitioned by stage)
//     stage 0: weights 2W, gradients 2N + 4N (fp32 accumulation), optimizer 12N
//     stage 1: 2W, 2N + 2N/D (the reduced partition), 12N/D
//     stage 2: 2W, 2N/D, 12N/D;  stage 3: 2W/D + persistent, 2N/D, 12N/D
//     offload_optimizer cpu: optimizer and fp32 gradients on the host (12N/D + 4N/D), the GPU keeps
//     no gradient partition for stages 2 and 3; offload_param cpu (stage 3): weights on the host,
//     the GPU keeps only persistent parameters and the gather buffers.
//     Parameters smaller than stage3_param_persistence_threshold elements stay whole on every rank.
//   PyTorch with AMP (fp32 parameters, bf16 autocast): DDP 4W, 4N, 8N (Adam moments; no separate
//     master copy); zero_stage 1 (ZeroRedundancyOptimizer) shards the moments; 2 (FSDP
//     SHARD_GRAD_OP) shards gradients and moments and keeps bf16 unsharded params (2W); 3 (FSDP2
//     with bf16 compute, fp32 reduce) shards all: 4W/D, 4N/D, 8N/D.
//   LoRA: frozen base weights stay bf16 (2 bytes) with no gradient or optimizer state; only the
//     adapters (N) carry them.
//   SGD keeps one fp32 momentum (4N) instead of Adam's two moments (8N).
// Activations per layer per micro-batch (Korthikanti et al. 2022, "Reducing Activation
// Recomputation in Large Transformer Models", Sec. 4: 34 s b h + 5 a s^2 b bytes for GPT with
// 16-bit activations and 1-byte dropout masks), generalised: flash attention keeps no s^2 scores
// but a fp32 log-sum-exp (4 b H s); Q, K, V are sized by heads and kv heads (GQA, MLA); the MLP
// keeps its inputs and intermediates (gated: 3 T f/tp; two-matrix: 2 T f/tp); MoE keeps router
// probabilities, the T k routed token copies and their expert intermediates. Tensors of width h
// are split by tp only under sequence parallelism (Korthikanti Sec. 4.2.2); T = b s / cp.
//   none       everything above
//   (training.attention "unfused": plus the softmax output, dropout mask and dropout output of every
//   score, 5 b (a/tp) (s/cp) s bytes: Korthikanti's 5 a s^2 b term, which flash attention removes)
//   selective  minus what the attention core keeps internally (log-sum-exp): with flash
//              attention the s^2 terms it was invented for are already gone
//   full       the layer input only (2 T_sp h), plus one layer's full set while it is recomputed;
//              with recompute_method (recompute.hpp) "uniform" R: the input of each group of R
//              layers, plus R layers' full sets while a group is replayed; "block" R: the first R
//              layers of each chunk keep their input, the others everything ("none")
// The stage holds ParallelLayout::in_flight_layer_activations() layer-micro-batches of this.
// First stage: embedding dropout masks; last stage: final-norm and LM-head inputs and the logits
// (Megatron vocab-parallel cross-entropy: 4 T V/tp bytes fp32, Korthikanti Sec. 4.3; Hugging Face:
// bf16 logits, their fp32 copy and the fp32 log-softmax, 10 T V bytes).
// Buffers: ZeRO-3 gathered parameters (the largest layer on this rank + stage3_prefetch_bucket_size,
// at most stage3_max_live_parameters) and the reduce bucket (reduce_bucket_size, double-buffered
// with overlap_comm in stages 1-2); FSDP2 unsharded parameters of (1 + prefetch) decoder layers (all
// of them without reshard_after_forward), the root module's parameters (embedding, final norm,
// LM head: fully_shard never reshards the root after its forward) and one layer's unsharded
// gradients; FSDP2 with one micro-batch per step frees the gradients (zero_grad set_to_none), so
// its peak holds either every activation (the start of the backward) or every gradient shard (its
// end): max(activations, gradients) enters the peak; PyTorch DDP's gradient
// buckets (a copy of every gradient: gradient_as_bucket_view defaults to False); NCCL buffers
// (communicators x channels x connections x per-connection buffers); the CUDA context; allocator
// fragmentation as a share of everything the caching allocator holds.
// DeepSpeed "auto" knobs resolve as the Hugging Face trainer does
// (transformers integrations/deepspeed.py, trainer_config_finalize): reduce_bucket_size = h^2,
// stage3_prefetch_bucket_size = 0.9 h^2, stage3_param_persistence_threshold = 10 h; absent knobs
// take DeepSpeed's defaults (runtime/zero/config.py): 5e8, 5e7, 1e5, max_live_parameters and
// max_reuse_distance 1e9 (the Hugging Face trainer does not fill those two; "auto" takes 1e9 too).
//
// Memory parameters (name: default):
//   memory.cuda_context              CUDA context, cuBLAS/cuDNN workspaces: 600 MiB (typical
//                                    PyTorch process on Hopper with lazy module loading)
//   memory.allocator_fragmentation   caching-allocator overhead as a share of allocated bytes: 0.05
//   memory.nccl.channels             channels per communicator: 16
//   memory.nccl.connections_per_channel  peers with buffers per channel: 2 (ring neighbours)
//   memory.nccl.buffer_per_connection     NCCL src/init.cc defaults: Simple 4 MiB + LL 512 KiB +
//                                    LL128 4,915,200 B = 9,633,792 B (NCCL_BUFFSIZE replaces the
//                                    Simple part)

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"
#include "models/parallel_layout.hpp"
#include "models/scenario.hpp"
#include "models/transformer_config.hpp"

namespace clustersim::models {

struct MemoryBreakdown {
  Bytes weights;          // parameters resident on the GPU
  Bytes gradients;        // gradient storage
  Bytes optimizer_state;  // master weights and moments held on the GPU
  Bytes activations;      // saved for backward (all in-flight micro-batches) + the transient working set
  Bytes buffers;          // gather/prefetch/bucket buffers, NCCL, CUDA context, allocator fragmentation
  Bytes peak;             // the sum of the five
  Bytes usable;           // the GPU's usable memory (catalog hbm_usable)
  bool fits = false;
  Bytes shortfall;        // peak - usable when it does not fit, else 0
  // Host memory of this rank (offloaded state, pinned).
  Bytes host_optimizer_state;
  Bytes host_gradients;
  Bytes host_weights;
  // Named lines behind the totals ("activations.layers", "buffers.nccl", ...), for reports.
  std::map<std::string, Bytes> details;
};

// Parameter elements one rank of a pipeline stage holds (after tensor, expert and pipeline splits;
// before data-parallel sharding).
struct StageParams {
  double dense = 0, expert = 0;              // every element
  double dense_train = 0, expert_train = 0;  // trainable ones
  double persistent = 0;                     // in tensors below `persistence_threshold` elements
  double largest_layer = 0;                  // the largest layer, embedding or head (FSDP unit, ZeRO-3 gather)
  double largest_block = 0;                  // the largest decoder layer
  double root = 0;                           // embedding and head (FSDP2's root module)
  double all() const { return dense + expert; }
  double trainable() const { return dense_train + expert_train; }
  double frozen() const { return all() - trainable(); }
};
StageParams stage_parameters(const TransformerConfig& model, const ParallelLayout& layout, const TrainingSpec& training,
                             int stage, double persistence_threshold = 0);

// DeepSpeed knobs with "auto" and defaults resolved (elements).
struct ResolvedZeroKnobs {
  double reduce_bucket_size = 5e8;
  double allgather_bucket_size = 5e8;
  double prefetch_bucket_size = 5e7;
  double param_persistence_threshold = 1e5;
  double max_live_parameters = 1e9;
  double max_reuse_distance = 1e9;
};
ResolvedZeroKnobs resolve_zero_knobs(const ZeroKnobs& knobs, std::int64_t hidden_size);

// Activation bytes one layer keeps for one micro-batch on one rank (no in-flight multiplication).
Bytes layer_activation_bytes(const TransformerConfig& model, const ParallelLayout& layout, const TrainingSpec& training,
                             std::int64_t layer, Checkpointing checkpointing);

struct MemoryInputs {
  const TransformerConfig& model;
  const ParallelLayout& layout;
  const TrainingSpec& training;
  const ParallelismSpec& parallelism;
  const std::map<std::string, std::string>* nccl_env = nullptr;  // NCCL_BUFFSIZE, NCCL_MAX_NCHANNELS
};

// The peak of pipeline stage `stage` (ranks of one stage differ only by balanced-routing symmetry).
MemoryBreakdown estimate_memory(const MemoryInputs& in, int stage, const hardware::GpuSpec& gpu,
                                hardware::ParameterSet& params);

}  // namespace clustersim::models
