#pragma once
// The work of one training step, resolved from a scenario into what each pipeline stage runs:
// kernels grouped into compute items, the collectives between them, the data-parallel,
// ZeRO/FSDP and offload traffic, the optimizer step and the memory peak. Both fidelities read it:
// the closed form (step_fast.cpp) and the task graph on the event simulation (step_builder.hpp).
//
// A layer pass (forward, or backward with its recomputation) is a list of items in execution
// order. A compute item is a run of consecutive kernels (kernel_op.hpp times); a collective item
// runs either on the critical path between two compute items, or beside one compute item (Megatron
// --tp-comm-overlap runs the TP collective beside the GEMM next to it; ring attention passes KV
// blocks beside the attention kernel). Where the collectives sit (Megatron-Core TransformerLayer
// with column/row-parallel linears):
//   tensor parallel, forward (and the forward replayed by full recomputation)
//     all-reduce before attn_residual and before mlp_residual (the row-parallel outputs);
//     with sequence parallelism all-gather after input_norm and after post_attn_norm, and
//     reduce-scatter where the all-reduces were
//   tensor parallel, backward: all-reduce (reduce-scatter with SP) before post_attn_norm and
//     before input_norm (the column-parallel input gradients); with SP all-gather after
//     mlp_residual and after attn_residual (the gradient of the output reduce-scatter)
//   expert parallel: all-to-all before the first and after the last expert kernel of a MoE
//     layer, forward and backward (dispatch and combine)
//   context parallel: cp - 1 send/receive steps of a KV block beside each attention kernel (KV
//     and its gradient beside the backward: twice the bytes)
// The embedding (first stage) adds the vocabulary-parallel all-reduce (reduce-scatter with SP) of
// its output; the head (last stage) an all-gather of its input with SP, and in backward the
// all-reduce (reduce-scatter) of the head's input gradient.
//
// Data-parallel work of each framework (which collective, when, on which group):
//   pytorch DDP (zero 0, 1)       all-reduce of 25 MiB buckets, issued as gradients become ready in
//                                 the last micro-batch's backward (no_sync before); zero 1 then
//                                 all-gathers the updated parameters after the optimizer
//   pytorch zero 2 (FSDP SHARD_GRAD_OP), zero 3 (FSDP2)  per layer: all-gather before its forward
//                                 (prefetch of the next layer while one computes), again before its
//                                 backward when reshard_after_forward (zero 3), reduce-scatter of its
//                                 gradients after its backward, in every micro-batch; with
//                                 CPUOffloadPolicy the fp32 shard is copied in before each all-gather
//                                 and the reduced shard out after each reduce-scatter, AdamW on the CPU
//   megatron                      reduce-scatter (distributed optimizer; all-reduce without it) of
//                                 DDP buckets of max(4e7, 1e6 dp) elements in the last micro-batch,
//                                 overlapped when overlap_grad_reduce, else after the backward; the
//                                 distributed optimizer then all-gathers the parameters: at the
//                                 start of the next step's forward, per bucket, with
//                                 overlap_param_gather (the step's first forward waits for each
//                                 bucket), else right after the optimizer
//   deepspeed zero 0, 1           all-reduce (zero 1: reduce-scatter) of reduce_bucket_size buckets
//                                 after the last backward; zero 1 then all-gathers the parameters
//   deepspeed zero 2              reduce-scatter of reduce_bucket_size buckets in every micro-batch,
//                                 overlapped with the backward when overlap_comm; all-gather of the
//                                 updated parameters (allgather_bucket_size) after the optimizer
//   deepspeed zero 3              per layer: all-gather in collectives of at most
//                                 stage3_prefetch_bucket_size elements before its forward and its
//                                 backward of what the coordinator's reuse rule released
//                                 (stage3_max_reuse_distance; under full recomputation a module
//                                 released after its recomputed forward is gathered again; small
//                                 parameters persist), reduce-scatter in reduce_bucket_size collectives after
//                                 its backward (overlapped when overlap_comm); with offload_param
//                                 the rank's shard is first copied host-to-device; with
//                                 offload_optimizer the reduced partition goes to the host's fp32
//                                 buffer and back after each reduce-scatter, CPU Adam runs after the
//                                 last micro-batch and the updated 16-bit parameters come back
//                                 (unless they live on the host); each module's hooks run on the
//                                 rank's CPU thread before its unit (UnitPlan::host_forward,
//                                 host_backward; docs/models/host-and-offload.md)
// Dense parameters use the data group (dp x cp), expert parameters the expert-data group.
//
// SM sharing: a collective holds one thread block per NCCL channel for as long as it runs, so a
// kernel overlapped with it runs on (1 - channels / SMs) of the GPU (CommSpec::sm_share; host copies
// use copy engines and hold none). A kernel of duration c overlapped for the whole of a collective
// of duration T then ends at max(T, c + f T) with f the share.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hardware/units.hpp"
#include "models/memory_model.hpp"
#include "models/rank_grid.hpp"
#include "models/step_comm.hpp"
#include "models/step_estimate.hpp"
#include "models/training_model.hpp"

namespace clustersim::models {

// What a task's time is attributed to.
enum class WorkClass : std::uint16_t {
  COMPUTE,
  TP_COMM,
  CP_COMM,
  EP_COMM,
  PP_COMM,
  DP_COMM,
  OFFLOAD,
  OPTIMIZER,
  CPU_OPTIMIZER,
  HOST,  // the rank's CPU thread (framework hooks) holding the GPU back
  MARKER,
};
std::string_view to_string(WorkClass c);

// One collective pattern of a stage (its cost is the same every time it runs).
struct CommSpec {
  std::string name;     // "TP all-reduce", "ZeRO-3 all-gather", ...
  WorkClass cls = WorkClass::TP_COMM;
  int group = -1;       // index into StagePlan::groups; -1 for host copies
  sim::nccl::CollectiveOp op = sim::nccl::CollectiveOp::ALL_REDUCE;
  Bytes size;           // one collective's size (nccl-tests convention); host copies: bytes copied
  int repeat = 1;       // back-to-back collectives of `size` this item stands for
  bool host_to_device = true;  // host copies only
  bool pinned = true;          // host copies only: from or to pinned host memory
  CollectiveCost cost;  // one collective alone
  double sm_share = 0;  // share of the GPU's SMs it holds while it runs (channels / SM count)
  Duration time() const { return cost.time * repeat; }
  Duration bandwidth_time() const { return cost.bandwidth_time * repeat; }
  int account = -1;     // index into StepPlan::accounts
};

struct PassItem {
  bool is_comm = false;
  Duration time;      // compute items
  int comm = -1;      // comm items: index into StagePlan::comms
  int beside = -1;    // comm items run beside this compute item (index in the same list); -1: on the path
  std::string name;   // "fwd attn", "TP all-reduce", ...
};

// The forward and backward of one unit (a layer, the embedding or the head) for one micro-batch.
struct UnitPass {
  std::vector<PassItem> forward;
  std::vector<PassItem> backward;
  Duration forward_compute, backward_compute;  // kernels only
  // The CPU thread's time to issue the pass's kernels (HostModel::dispatch_per_kernel): the GPU
  // cannot finish a pass before the CPU has launched its last kernel.
  Duration forward_dispatch, backward_dispatch;
  std::int64_t forward_kernels = 0, backward_kernels = 0;  // recomputed forward counted with the backward
};

// A unit of parameters: what ZeRO-3/FSDP gathers and reduces, and what DDP buckets collect.
struct UnitPlan {
  std::string name;    // "layer 12", "embedding", "head"
  std::int64_t layer = -1;
  int pass = -1;       // index into StagePlan::passes
  Bytes dense_params, expert_params;  // gathered size (16-bit, after TP/EP splits)
  Bytes dense_grads, expert_grads;    // in the reduce dtype
  int modules = 0;     // nn.Modules of the unit as Hugging Face builds it (hooks fire per module)
  // The rank's CPU time around the unit's forward and its backward beyond launching its kernels
  // (DeepSpeed ZeRO-3's module hooks); zero when none.
  Duration host_forward, host_backward;
  // ZeRO-3/FSDP per-unit comms (indices into StagePlan::comms; -1 when absent): the fetch before
  // the forward (all-gathers, and the host copy before them with parameters on the host), the
  // fetch for the backward (ZeRO-3 gathers there what its reuse rule released: the recomputed
  // forward's modules and those released again before their backward), the gradient reduction.
  int gather = -1, gather_expert = -1, h2d = -1;
  int gather_bwd = -1, gather_expert_bwd = -1, h2d_bwd = -1;
  int reduce = -1, reduce_expert = -1, d2h = -1;
};

struct ChunkPlan {
  std::vector<int> units;  // indices into StagePlan::units, forward order
};

// A data-parallel bucket collective of the gradients (or parameters) of a chunk.
struct BucketPlan {
  int chunk = 0;
  int after_unit = -1;  // position in the chunk's unit list whose backward completes it (-1: after everything)
  int comm = -1;
};

struct OptimizerPlan {
  Duration gpu_time;
  Duration cpu_time;       // the CPU's part (CPU Adam and the cast after it)
  Duration cpu_adam_time;  // CPU Adam alone
  int d2h = -1;  // ZeRO-1/2 offload: the gradient shard to the host before CPU Adam
  int h2d = -1;  // comm index of the updated parameters' copy back (offloaded optimizer)
};

enum class GradSync { NONE, LAST_MICRO_BATCH_OVERLAPPED, AFTER_BACKWARD, EVERY_MICRO_BATCH };

struct StagePlan {
  int stage = 0;
  int rank = 0;  // the representative global rank
  std::vector<GroupComm> groups;
  std::vector<CommSpec> comms;
  std::vector<UnitPass> passes;  // distinct pass shapes (dense layer, MoE layer, embedding, head)
  std::vector<UnitPlan> units;
  std::vector<ChunkPlan> chunks;
  // ZeRO-3 / FSDP per-unit traffic
  bool per_unit_gather = false;     // all-gather before each unit's forward
  bool gather_for_backward = false; // and again before its backward
  bool per_unit_reduce = false;     // reduce-scatter after each unit's backward
  bool unit_comm_overlapped = true; // on side streams (else on the critical path)
  // Bucketed gradient collectives and their timing
  std::vector<BucketPlan> grad_buckets;
  GradSync grad_sync = GradSync::NONE;
  // Parameter all-gather after the optimizer (distributed optimizer, ZeRO-1/2)
  std::vector<BucketPlan> param_buckets;
  bool param_gather_next_forward = false;  // overlap_param_gather: at the start of the step
  int tied_embedding_comm = -1;
  int pp_send_next = -1, pp_send_prev = -1;  // comms for sends to the next and previous stage
  int grad_norm_comm = -1;
  OptimizerPlan optimizer;
  MemoryBreakdown memory;
  // Activations saved for the backward that memory.peak counts, per layer-micro-batch and for the
  // embedding and the head per micro-batch: the memory model's in-flight totals over its in-flight
  // counts (ParallelLayout::in_flight_*); zero when the peak holds none (FSDP with one
  // micro-batch and the gradients larger). Read by the trace's memory track only.
  Bytes saved_per_layer, saved_embedding, saved_head;
};

// Accounting of one communication pattern over the step (CommSummary).
struct CommAccount {
  std::string name;
  std::string group;
  std::string algorithm;
  std::string transport;
};

struct StepPlan {
  std::vector<StagePlan> stages;
  int pp = 1, vp = 1;
  std::int64_t micro_batches = 1;
  PipelineSchedule schedule = PipelineSchedule::ONE_F_ONE_B;
  bool blocking_p2p = true;  // non-interleaved schedules wait for their sends
  std::vector<CommAccount> accounts;
  HostThreads host_threads;  // the CPU threads and cores of one rank
};

// Everything the plan builder reads.
struct PlanInputs {
  const Scenario& scenario;
  const TransformerConfig& model;
  const TrainingModel& training;
  const hardware::NodeSpec& node;
  const hardware::CalibrationProfile* profile = nullptr;
  const RankGrid& grid;
  const ComputeModel& compute;
  const HostModel& host;
  hardware::ParameterSet& params;
};

StepPlan build_step_plan(const PlanInputs& in, PredictorCache& cache);

// What either fidelity returns for a plan (step_fast.hpp, step_builder.hpp).
struct StepOutcome {
  double step_s = 0;
  StepBreakdown breakdown;        // on the critical stage; the parts sum to step_s
  std::vector<CommSummary> comms; // per account, on the critical stage
  int critical_stage = 0;
  std::string link_note;          // EVENT: the busiest link ("" for FAST)
};

}  // namespace clustersim::models
