#pragma once
// The model layer of a training step: what one rank computes, stores and sends, for the step
// builder (layouts as task graphs on the event simulator) to schedule.
//
// API for the step builder
// ------------------------
//   // 1. Shape and layout (InputError on an impossible split, naming the scenario key):
//   TransformerConfig model = resolve_model(scenario.model);             // transformer_config.hpp
//   TrainingModel tm(model, scenario.parallelism, scenario.training, scenario.file);
//   const ParallelLayout& L = tm.layout();                               // parallel_layout.hpp
//
//   // 2. Kernels and their durations (compute_model.hpp, names "compute.*"):
//   hardware::ParameterSet params(&profile);
//   check_gpu_supports(scenario.training, *node.gpu, scenario.file);
//   ComputeModel compute(*node.gpu, params);
//   for (int stage = 0; stage < L.pp(); ++stage)
//     for (int v = 0; v < L.vp(); ++v) {
//       RankPosition pos{.pipeline_stage = stage, .virtual_stage = v};
//       auto pre = tm.embedding_ops(pos);                 // engaged on stage 0, chunk 0
//       for (std::int64_t layer : tm.layers(pos)) {
//         LayerOps ops = tm.layer_ops(layer);             // one micro-batch, forward and backward
//         compute.annotate(ops.forward);                  // KernelOp::time
//         compute.annotate(ops.backward);                 // recomputation included, in order
//         LayerCommSizes c = tm.layer_comm(layer);        // TP/EP/CP/FSDP/DP sizes around them
//       }
//       auto post = tm.head_ops(pos);                     // engaged on the last stage, last chunk
//     }
//   StageCommSizes sc = tm.stage_comm();                  // PP sends, embedding/head TP, tied grads
//   Bytes bucket = tm.gradient_bucket();                  // DP bucket of the framework
//
//   // 3. Optimizer step (GPU fused Adam, or DeepSpeed CPU Adam + PCIe copies when offloaded):
//   HostModel host(node, params);
//   OptimizerStep opt = tm.optimizer_step(stage, compute, &host, ranks_per_node);
//
//   // 4. Memory of a stage (memory_model.hpp, names "memory.*"):
//   MemoryBreakdown mem = tm.memory(stage, *node.gpu, params, &scenario.nccl.env);
//
//   // 5. FLOPs for achieved TFLOP/s and MFU (step_flops.hpp):
//   double F = tm.step_flops();                           // the SC'21 Eq. 3 convention
//
// Where the ops come from: layer_ops.hpp (what each layer runs), kernel_op.hpp (how FLOPs and bytes
// are counted), parameter_tensors.hpp (every parameter tensor and its split), comm_sizes.hpp (the
// bytes each collective moves). Ranks that hold the same layers do the same work (balanced expert
// routing), so one rank per (stage, virtual stage) is enough; RankPosition::expert_rank is kept for
// imbalance models.
// ZeRO-3 / FSDP per-layer traffic: all-gather layer_comm(l).dense_params (each rank holding 1/D)
// before the forward and again before the backward (unless kept unsharded), reduce-scatter
// layer_comm(l).dense_grads after the backward; with DeepSpeed parameter offload the rank's shard
// (dense_params / D) first crosses PCIe host-to-device.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"
#include "models/comm_sizes.hpp"
#include "models/compute_model.hpp"
#include "models/layer_ops.hpp"
#include "models/memory_model.hpp"
#include "models/parallel_layout.hpp"
#include "models/parameter_tensors.hpp"
#include "models/scenario.hpp"
#include "models/step_flops.hpp"
#include "models/transformer_config.hpp"

namespace clustersim::models {

// The optimizer step of one rank. GPU fused Adam is memory-bound: per element it reads the fp32
// master, both moments and the gradient and writes master, moments and the 16-bit parameter
// (4 x 3 + g + 12 + 2 bytes, g the gradient bytes; without a master copy 4 x 3 + g + 12), plus the
// gradient-norm pass (g). Offloaded (DeepSpeed offload_optimizer cpu): gradients go device-to-host
// (g bytes per element), CPU Adam runs on the rank's cores, updated 16-bit parameters come back.
// Megatron adds the passes over its gradient buffer of B elements (every trainable element of the
// stage on this rank) that Megatron-Core makes every step: zeroing (g B), before each bucket's
// collective the 1/dp scaling (2 g B, dp > 1) and the NaN-check norm (g B; fp16 instead unscales
// the n updated main gradients, 8 n), one kernel each per bucket (TrainingModel::
// megatron_grad_buffer_time).
struct OptimizerStep {
  std::int64_t params = 0;  // elements this rank updates
  Duration gpu_time;        // fused optimizer kernels on the GPU (zero when offloaded)
  Duration cpu_time;        // CPU Adam (offloaded), and the CPU-side cast of the updated parameters
  Duration cpu_adam_time;   // CPU Adam alone
  Bytes d2h_bytes;          // gradients to the host (offloaded)
  Bytes h2d_bytes;          // updated parameters back to the GPU (offloaded)
  Duration d2h_time;        // at the PCIe bandwidth each GPU gets when every rank of the node copies
  Duration h2d_time;
};

// Whether an offloaded optimizer's updated 16-bit parameters reach the GPU from pinned memory:
// ZeRO-1/2 cast into a pinned buffer (with pin_memory), ZeRO-3's blocking copy_ casts into a
// pageable temporary.
inline bool pinned_parameter_copy(const ParallelismSpec& p) { return p.zero_stage < 3 && p.zero.pin_memory; }

class TrainingModel {
 public:
  // Validates the layout against the model (InputError naming `file` and the scenario key).
  TrainingModel(TransformerConfig model, ParallelismSpec parallelism, TrainingSpec training, std::string file = "");

  const TransformerConfig& model() const { return model_; }
  const ParallelLayout& layout() const { return layout_; }
  const TrainingSpec& training() const { return training_; }
  const ParallelismSpec& parallelism() const { return parallelism_; }
  ParameterCounts parameter_counts() const { return count_parameters(model_); }

  std::vector<std::int64_t> layers(const RankPosition& pos) const {
    return layout_.layers_of(pos.pipeline_stage, pos.virtual_stage);
  }
  LayerOps layer_ops(std::int64_t layer) const { return LayerOpBuilder(model_, layout_, training_).layer(layer); }
  std::optional<LayerOps> embedding_ops(const RankPosition& pos) const;
  std::optional<LayerOps> head_ops(const RankPosition& pos) const;

  LayerCommSizes layer_comm(std::int64_t layer) const { return layer_comm_sizes(model_, layout_, training_, layer); }
  StageCommSizes stage_comm() const { return stage_comm_sizes(model_, layout_, training_); }
  Bytes gradient_bucket() const { return gradient_bucket_bytes(parallelism_, training_, model_.hidden_size); }
  StageParams stage_params(int stage) const { return stage_parameters(model_, layout_, training_, stage); }

  // `host` may be null when nothing is offloaded. `threads` (host_threads), when given, sets the
  // cores the CPU work runs on; without it a rank gets the node's cores / ranks_per_node.
  OptimizerStep optimizer_step(int stage, const ComputeModel& compute, const HostModel* host,
                               int ranks_per_node, const HostThreads* threads = nullptr) const;
  MemoryBreakdown memory(int stage, const hardware::GpuSpec& gpu, hardware::ParameterSet& params,
                         const std::map<std::string, std::string>* nccl_env = nullptr) const;
  // FLOPs of the whole step over all ranks, and one rank's share (total / world size).
  double step_flops(StepFlopsOptions options = {}) const {
    options.chunks = static_cast<std::int64_t>(layout_.pp()) * layout_.vp();
    return models::step_flops(model_, training_, options);
  }
  double step_flops_per_rank(const StepFlopsOptions& options = {}) const;
  // Megatron's passes over the gradient buffer in one step (the OptimizerStep comment); `updated`:
  // the elements this rank's optimizer updates.
  Duration megatron_grad_buffer_time(int stage, const ComputeModel& compute, double updated) const;

 private:
  TransformerConfig model_;
  ParallelismSpec parallelism_;
  TrainingSpec training_;
  std::string file_;
  ParallelLayout layout_;
};

}  // namespace clustersim::models
