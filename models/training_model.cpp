#include "models/training_model.hpp"

#include <algorithm>
#include <cmath>

namespace clustersim::models {

namespace {

// Megatron's gradient buffer on one rank: the stage's trainable elements in the reduce dtype.
struct GradBuffer {
  double elements = 0;      // every trainable element of the stage on this rank
  double grad_bytes = 4;    // bytes per gradient element
  double dp = 1;            // data-parallel ranks the buffer is reduced over
  double bucket_bytes = 1;  // the framework's gradient bucket
  double updated = 0;       // elements this rank's optimizer updates
  bool fp16 = false;
};

// Megatron's passes over its gradient buffer (TrainingModel::megatron_grad_buffer_time). The
// caller counts the stage's parameters once: counting them walks every layer's tensors, the most
// expensive part of a closed-form step.
Duration grad_buffer_time(const GradBuffer& b, const ComputeModel& compute) {
  // Megatron-Core's gradient buffer holds every trainable element of the rank's stage (the whole
  // buffer, also under the distributed optimizer). core_r0.8.0 megatron/training/training.py
  // train_step zeroes it first (zero_grad_buffer); megatron/core/distributed/
  // param_and_grad_buffer.py start_grad_sync, before each bucket's data-parallel collective, takes
  // the bucket's norm to check for NaN (check_for_nan_in_grad, on unless fp16 runs a dynamic loss
  // scale) and scales it by 1 / dp (gradient_scaling_factor, unless average_in_collective).
  // fp16's optimizer unscales the main gradients it updates (read, write) and checks them for inf.
  const double g = b.grad_bytes;
  const double buffer = b.elements;
  if (buffer <= 0) return Duration();
  const int buckets = static_cast<int>(std::ceil(buffer * g / b.bucket_bytes));
  double bytes = g * buffer;  // zero_grad_buffer
  int kernels = 1;
  if (b.dp > 1) {
    bytes += 2 * g * buffer;  // grad_data *= 1 / dp
    kernels += buckets;
  }
  if (b.fp16) {
    bytes += 8 * b.updated;  // unscale and inf check of the main gradients
    kernels += 1;
  } else {
    bytes += g * buffer;  // the NaN check's norm
    kernels += buckets;
  }
  return compute.memory_time(Bytes::from_double(bytes), kernels);
}

GradBuffer grad_buffer_of(const TrainingSpec& t, const ParallelLayout& l, Bytes bucket, const StageParams& p,
                          double updated) {
  return {.elements = p.trainable(),
          .grad_bytes = static_cast<double>(bytes_per_element(t.grad_reduce_dtype)),
          .dp = static_cast<double>(l.dense_shard_group()),
          .bucket_bytes = std::max(1.0, bucket.as_double()),
          .updated = updated,
          .fp16 = t.precision == Precision::FP16};
}

}  // namespace

TrainingModel::TrainingModel(TransformerConfig model, ParallelismSpec parallelism, TrainingSpec training,
                             std::string file)
    : model_(std::move(model)),
      parallelism_(std::move(parallelism)),
      training_(std::move(training)),
      file_(std::move(file)),
      layout_(model_, parallelism_, training_, file_) {}

std::optional<LayerOps> TrainingModel::embedding_ops(const RankPosition& pos) const {
  if (!layout_.has_embedding(pos.pipeline_stage, pos.virtual_stage)) return std::nullopt;
  return LayerOpBuilder(model_, layout_, training_).embedding();
}

std::optional<LayerOps> TrainingModel::head_ops(const RankPosition& pos) const {
  if (!layout_.has_head(pos.pipeline_stage, pos.virtual_stage)) return std::nullopt;
  return LayerOpBuilder(model_, layout_, training_).head();
}

OptimizerStep TrainingModel::optimizer_step(int stage, const ComputeModel& compute, const HostModel* host,
                                            int ranks_per_node, const HostThreads* threads) const {
  const StageParams p = stage_params(stage);
  const ParallelismSpec& par = parallelism_;
  // Does the framework shard the optimizer state over data-parallel ranks?
  bool sharded = false;
  switch (par.framework) {
    case Framework::MEGATRON: sharded = par.megatron.distributed_optimizer || par.zero_stage >= 1; break;
    case Framework::DEEPSPEED:
    case Framework::PYTORCH: sharded = par.zero_stage >= 1; break;
  }
  const double n = sharded ? p.dense_train / layout_.dense_shard_group() + p.expert_train / layout_.expert_shard_group()
                           : p.trainable();
  OptimizerStep s;
  s.params = static_cast<std::int64_t>(n);
  const double g = bytes_per_element(training_.grad_reduce_dtype);
  // The physical cores of a rank's CPU work: its threads' (host_threads), else an even share of the node's.
  const double cores = threads != nullptr ? threads->cores
                       : host != nullptr  ? std::max(1.0, static_cast<double>(host->cores()) / std::max(1, ranks_per_node))
                                          : 1.0;
  if (par.framework == Framework::PYTORCH && par.offload_optimizer == OffloadTarget::CPU) {
    // FSDP2 CPUOffloadPolicy: torch.optim.AdamW steps the fp32 shards where they live, on the
    // rank's intra-op threads; gradients arrived during the backward and the parameters are
    // copied in before each all-gather, so nothing crosses PCIe here. fused=True runs one
    // vectorised kernel per tensor, as fast as DeepSpeed's CPU Adam on one thread (1.02e9 against
    // 1.04e9 parameters a second measured on one host); the default loop and foreach (2.05e8 and
    // 2.17e8) take torch's AdamW rate.
    if (host != nullptr) {
      s.cpu_adam_time = par.fsdp.cpu_optimizer == FsdpKnobs::CpuAdamw::FUSED
                            ? host->cpu_adam_time(s.params, cores, ranks_per_node)
                            : host->torch_adamw_time(s.params, cores, ranks_per_node);
      s.cpu_time = s.cpu_adam_time;
    }
    return s;
  }
  const bool offloaded = par.framework == Framework::DEEPSPEED && par.offload_optimizer == OffloadTarget::CPU;
  if (offloaded) {
    // ZeRO-1/2 copy each reduced gradient into the fp32 partition in pinned host memory
    // (async_inplace_copy_grad_to_fp32_buffer_from_gpu): 4 B an element.
    s.d2h_bytes = Bytes::from_double(n * 4);
    s.h2d_bytes = Bytes::from_double(n * (training_.precision == Precision::FP32 ? 4 : 2));
    if (host != nullptr) {
      // DeepSpeed CPU Adam's OpenMP loop over the partition (csrc/adam/cpu_adam_impl.cpp) on the
      // rank's threads. Around it, PyTorch CPU kernels on the same threads: the fp32 gradients are
      // scaled in place (unscale_and_clip_grads runs its mul_ whether or not clipping is set: read
      // and write 8 B an element), and the updated fp32 partition is cast to 16 bits (read 4 B,
      // write 2 B): at stage 1/2 into a pinned buffer copied to the GPU without blocking; at stage
      // 3 into the pinned partition under offload_param, else, as a blocking copy_ across devices
      // and dtypes does, into a pageable temporary copied to the GPU from there.
      s.cpu_adam_time = host->cpu_adam_time(s.params, cores, ranks_per_node);
      s.cpu_time = s.cpu_adam_time + host->torch_pass_time(Bytes::from_double(14.0 * n), cores, ranks_per_node);
      s.d2h_time = transfer_time(s.d2h_bytes, host->copy_bandwidth(false, par.zero.pin_memory, ranks_per_node));
      s.h2d_time = transfer_time(s.h2d_bytes, host->copy_bandwidth(true, pinned_parameter_copy(par), ranks_per_node));
    }
    return s;
  }
  // PyTorch AMP keeps fp32 parameters (no master copy); fp32 training likewise.
  const bool master = training_.precision != Precision::FP32 && par.framework != Framework::PYTORCH;
  double per_element = 0;
  if (training_.optimizer == Optimizer::SGD) {
    per_element = 4 * 2 + g + 4 * 2;  // read param, momentum, grad; write param, momentum
  } else {
    per_element = 4 * 3 + g + 4 * 3;  // read param (master), m, v, grad; write them back
  }
  if (master) per_element += 2;  // the 16-bit copy of the updated parameter
  per_element += g;              // gradient-norm pass for clipping
  int kernels = 2;
  if (par.framework == Framework::DEEPSPEED && par.zero_stage >= 1 && training_.precision != Precision::FP32) {
    // DeepSpeed's ZeRO step (stage_1_and_2.py, stage3.py step): the norm of the gradients, at
    // stage 1/2 their cast into the fp32 partition (read g, write 4), the in-place unscale and
    // clip that always runs (read and write 4), the optimizer (read fp32 param, m, v and the fp32
    // gradient, write param, m, v: 28) and the cast back to 16 bits (read 4, write 2); at stage 3
    // the gradients already sit in an fp32 partition (a norm of 4).
    per_element = par.zero_stage == 3 ? 4 + 8 + 28 + 6 : g + (g + 4) + 8 + 28 + 6;
    kernels = 5;
  }
  s.gpu_time = compute.memory_time(Bytes::from_double(n * per_element), kernels);
  if (par.framework == Framework::MEGATRON) {
    s.gpu_time += grad_buffer_time(grad_buffer_of(training_, layout_, gradient_bucket(), p, n), compute);
  }
  return s;
}

Duration TrainingModel::megatron_grad_buffer_time(int stage, const ComputeModel& compute, double updated) const {
  return grad_buffer_time(grad_buffer_of(training_, layout_, gradient_bucket(), stage_params(stage), updated),
                          compute);
}

MemoryBreakdown TrainingModel::memory(int stage, const hardware::GpuSpec& gpu, hardware::ParameterSet& params,
                                      const std::map<std::string, std::string>* nccl_env) const {
  return estimate_memory({.model = model_, .layout = layout_, .training = training_, .parallelism = parallelism_,
                          .nccl_env = nccl_env},
                         stage, gpu, params);
}

double TrainingModel::step_flops_per_rank(const StepFlopsOptions& options) const {
  const double world =
      static_cast<double>(layout_.dp()) * layout_.tp() * layout_.pp() * layout_.cp();
  return step_flops(options) / world;
}

}  // namespace clustersim::models
