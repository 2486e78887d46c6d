#include "models/memory_model.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "models/parameter_tensors.hpp"

namespace clustersim::models {

namespace {

constexpr double kNcclSimpleBuffer = 4194304;   // NCCL src/init.cc DEFAULT_BUFFSIZE (1 << 22)
constexpr double kNcclLlBuffer = 524288;        // DEFAULT_LL_BUFFSIZE: 8 lines x 512 threads x 8 steps x 16 B
constexpr double kNcclLl128Buffer = 4915200;    // DEFAULT_LL128_BUFFSIZE: 120 x 640 threads x 8 steps x 8 B

double knob(const ZeroKnob& k, double auto_value, double fallback) {
  if (k.is_auto) return auto_value;
  return k.value ? *k.value : fallback;
}

int activation_bytes(const TrainingSpec& t) { return t.precision == Precision::FP32 ? 4 : 2; }

std::int64_t lora_targets_in_layer(const TransformerConfig& m, std::int64_t layer, const TrainingSpec& t) {
  if (t.fine_tuning != FineTuning::LORA) return 0;
  std::int64_t n = 0;
  for (const auto& p : layer_parameter_tensors(m, layer, &t.lora)) n += p.lora ? 1 : 0;
  return n / 2;  // A and B per adapter
}

}  // namespace

StageParams stage_parameters(const TransformerConfig& model, const ParallelLayout& l, const TrainingSpec& training,
                             int stage, double persistence_threshold) {
  const ShardFactors s = l.shard_factors();
  const bool lora = training.fine_tuning == FineTuning::LORA;
  const LoraSpec* spec = lora ? &training.lora : nullptr;
  StageParams r;
  auto add = [&](const std::vector<ParamTensor>& tensors) {
    double sum = 0;
    for (const auto& t : tensors) {
      const double n = static_cast<double>(numel_on_rank(t, s));
      (t.shard == ShardKind::EXPERT ? r.expert : r.dense) += n;
      if (t.trainable) (t.shard == ShardKind::EXPERT ? r.expert_train : r.dense_train) += n;
      if (n / static_cast<double>(t.count) < persistence_threshold) r.persistent += n;
      sum += n;
    }
    return sum;
  };
  for (std::int64_t layer : l.layers_of_stage(stage)) {
    r.largest_layer = std::max(r.largest_layer, add(layer_parameter_tensors(model, layer, spec)));
  }
  r.largest_block = r.largest_layer;
  const double before_root = r.all();
  // The embedding and the head are gathered as units of their own (FSDP wraps them; ZeRO-3
  // fetches them as modules).
  if (l.stage_has_embedding(stage)) {
    r.largest_layer = std::max(r.largest_layer, add(embedding_parameter_tensors(model, lora)));
  }
  if (l.stage_has_head(stage)) {
    // Megatron keeps a copy of a tied embedding on the last stage when it is not also the first.
    r.largest_layer =
        std::max(r.largest_layer, add(head_parameter_tensors(model, model.tied_embeddings && l.pp() > 1, lora)));
  }
  r.root = r.all() - before_root;
  return r;
}

ResolvedZeroKnobs resolve_zero_knobs(const ZeroKnobs& k, std::int64_t hidden_size) {
  const double h = static_cast<double>(hidden_size);
  ResolvedZeroKnobs r;
  // "auto" as the Hugging Face trainer fills it; absent: DeepSpeed's defaults.
  r.reduce_bucket_size = knob(k.reduce_bucket_size, h * h, 5e8);
  r.allgather_bucket_size = knob(k.allgather_bucket_size, 5e8, 5e8);
  r.prefetch_bucket_size = knob(k.stage3_prefetch_bucket_size, std::floor(0.9 * h * h), 5e7);
  r.param_persistence_threshold = knob(k.stage3_param_persistence_threshold, 10 * h, 1e5);
  r.max_live_parameters = knob(k.stage3_max_live_parameters, 1e9, 1e9);
  r.max_reuse_distance = knob(k.stage3_max_reuse_distance, 1e9, 1e9);
  return r;
}

Bytes layer_activation_bytes(const TransformerConfig& m, const ParallelLayout& l, const TrainingSpec& t,
                             std::int64_t layer, Checkpointing ckpt) {
  const double a = activation_bytes(t);
  const double T = static_cast<double>(l.tokens());
  const double Tsp = static_cast<double>(l.sp_tokens());
  const double tp = l.tp();
  const double h = static_cast<double>(m.hidden_size);
  const double hidden = Tsp * h * a;
  if (ckpt == Checkpointing::FULL) return Bytes::from_double(hidden);
  const double mask = m.hidden_dropout > 0 ? Tsp * h : 0;
  const double lse = 4.0 * l.micro_batch() * (m.num_heads / tp) * (static_cast<double>(l.seq_len()) / l.cp());
  // Eager RMSNorm keeps its fp32 input copy, the normalized bf16 tensor (for the weight's
  // gradient) and its output (the projections' input): 4 + 2 + 2 bytes per element, against the
  // input and output of a fused norm.
  const bool eager = t.implementation == Implementation::HF_EAGER && m.norm == NormKind::RMS_NORM;
  const double norm_keep = eager ? Tsp * h * (4.0 + 2 * a) : 2 * hidden;
  double attn = norm_keep + mask;  // input_norm (input and output | eager: fp32 input, normalized, output)
  if (m.attention == AttentionKind::MLA) {
    const MlaSpec& x = m.mla;
    const double heads = m.num_heads / tp;
    if (x.q_lora_rank > 0) attn += 2 * T * x.q_lora_rank * a;           // q_a output, q_a_norm output
    attn += T * (x.kv_lora_rank + x.qk_rope_head_dim) * a + T * x.kv_lora_rank * a;  // kv_a, kv_a_norm outputs
    attn += 2 * T * heads * (x.qk_nope_head_dim + x.qk_rope_head_dim) * a;          // q, k
    attn += 2 * T * heads * x.v_head_dim * a;                                        // v, attention output
  } else {
    attn += T * (m.q_width() + 2 * m.kv_width()) / tp * a;  // q, k, v
    attn += T * m.q_width() / tp * a;                       // attention output (o_proj input)
  }
  if (ckpt == Checkpointing::NONE) {
    if (t.attention_kernel == AttentionKernel::UNFUSED) {
      // Unfused attention keeps the softmax output (2 bytes), the dropout mask (1) and the dropout
      // output (2) of every score: Korthikanti et al.'s 5 a s^2 b, per rank a / tp heads.
      attn += 5.0 * l.micro_batch() * (m.num_heads / tp) * (static_cast<double>(l.seq_len()) / l.cp()) *
              static_cast<double>(l.seq_len());
    } else {
      attn += lse;
    }
  }
  // gate, up, act output (eager: also the product, down_proj's input) | fc1 output, act output
  const double inter = m.mlp == MlpKind::GATED_SILU ? (eager ? 4 : 3) : 2;
  double mlp = norm_keep + mask;  // post_attn_norm as input_norm
  if (m.is_moe_layer(layer)) {
    const MoeSpec& e = m.moe;
    const double routed = T * e.experts_per_token;
    mlp += Tsp * e.num_experts * 4;                                          // router probabilities (fp32)
    mlp += 2 * routed * h * a;                                               // permuted inputs, expert outputs
    mlp += inter * routed * (static_cast<double>(e.expert_intermediate_size) / tp) * a;
    mlp += inter * T * (static_cast<double>(e.shared_intermediate_size) / tp) * a;
  } else {
    mlp += inter * T * (static_cast<double>(m.intermediate_size) / tp) * a;
  }
  const double lora = static_cast<double>(lora_targets_in_layer(m, layer, t)) * T * t.lora.rank * a;
  return Bytes::from_double(attn + mlp + lora);
}

MemoryBreakdown estimate_memory(const MemoryInputs& in, int stage, const hardware::GpuSpec& gpu,
                                hardware::ParameterSet& ps) {
  const TransformerConfig& m = in.model;
  const ParallelLayout& l = in.layout;
  const TrainingSpec& t = in.training;
  const ParallelismSpec& p = in.parallelism;
  const ResolvedZeroKnobs z = resolve_zero_knobs(p.zero, m.hidden_size);
  const bool deepspeed = p.framework == Framework::DEEPSPEED;
  const StageParams r =
      stage_parameters(m, l, t, stage, deepspeed && p.zero_stage == 3 ? z.param_persistence_threshold : 0);
  const double D = l.dense_shard_group();
  const double De = l.expert_shard_group();
  // Trainable elements sharded over the data-parallel group (dense and expert groups differ).
  const double n_sharded = r.dense_train / D + r.expert_train / De;
  const double w_sharded = r.dense / D + r.expert / De;
  const double N = r.trainable();
  const double W = r.all();
  const bool fp32 = t.precision == Precision::FP32;
  const double pb = fp32 ? 4 : 2;                                  // parameter bytes (bf16/fp16/fp8 keep bf16)
  const double moments = t.optimizer == Optimizer::SGD ? 4 : 8;     // fp32 momentum | Adam m and v
  const double master = fp32 ? 0 : 4;                               // fp32 master copy
  MemoryBreakdown out;
  std::map<std::string, double> d;
  double weights = 0, grads = 0, opt = 0, buffers = 0;
  switch (p.framework) {
    case Framework::MEGATRON: {
      weights = pb * W;
      grads = (t.grad_reduce_dtype == Precision::FP32 ? 4 : 2) * N;
      const double state = (moments + master) * (p.megatron.distributed_optimizer ? n_sharded : N);
      opt = state;
      break;
    }
    case Framework::DEEPSPEED: {
      const double state_per = moments + master;
      const bool off_opt = p.offload_optimizer == OffloadTarget::CPU;
      const bool off_par = p.offload_params == OffloadTarget::CPU;
      switch (p.zero_stage) {
        case 0:
          weights = pb * W;
          grads = pb * N + master * N;
          opt = state_per * N;
          break;
        case 1:
          weights = pb * W;
          grads = pb * N + (off_opt ? 0 : pb * n_sharded);
          opt = state_per * n_sharded;
          break;
        case 2:
          weights = pb * W;
          grads = off_opt ? 0 : pb * n_sharded;
          opt = state_per * n_sharded;
          break;
        default: {
          const double persistent = r.persistent * (1 - 1 / D);  // whole on every rank
          weights = off_par ? pb * r.persistent : pb * w_sharded + pb * persistent;
          grads = off_opt ? 0 : pb * n_sharded;
          opt = state_per * n_sharded;
          if (off_par) out.host_weights = Bytes::from_double(pb * w_sharded);
          // Gathered parameters: the layer being computed plus the prefetch bucket, at most the
          // live-parameter limit.
          const double gathered = std::min(z.max_live_parameters, r.largest_layer + z.prefetch_bucket_size);
          d["buffers.zero3_gathered_params"] = pb * std::min(gathered, W);
          d["buffers.zero3_reduce_bucket"] = pb * z.reduce_bucket_size;
          break;
        }
      }
      if (p.zero_stage == 1 || p.zero_stage == 2) {
        d["buffers.zero_reduce_bucket"] = pb * z.reduce_bucket_size * (p.zero.overlap_comm ? 2 : 1);
      }
      if (off_opt && p.zero_stage >= 1) {
        out.host_optimizer_state = Bytes::from_double(opt);
        out.host_gradients = Bytes::from_double(4 * n_sharded);
        opt = 0;
      }
      break;
    }
    case Framework::PYTORCH: {
      // AMP: trainable parameters in fp32, frozen (LoRA base) weights in bf16.
      const double frozen_bytes = 2 * r.frozen();
      const double frozen_sharded = 2 * (w_sharded - n_sharded);
      switch (p.zero_stage) {
        case 0:
          weights = 4 * N + frozen_bytes;
          grads = 4 * N;
          opt = moments * N;
          d["buffers.ddp_buckets"] = 4 * N;  // gradient_as_bucket_view=False keeps a bucket copy
          break;
        case 1:
          weights = 4 * N + frozen_bytes;
          grads = 4 * N;
          opt = moments * n_sharded;
          d["buffers.ddp_buckets"] = 4 * N;
          break;
        case 2:
          weights = 4 * n_sharded + frozen_sharded;
          grads = 4 * n_sharded;
          opt = moments * n_sharded;
          d["buffers.fsdp_unsharded_params"] = 2 * W;  // SHARD_GRAD_OP keeps bf16 params unsharded
          break;
        default: {
          weights = 4 * n_sharded + frozen_sharded;
          grads = 4 * n_sharded;
          opt = moments * n_sharded;
          const double units = 1 + std::max(0, p.fsdp.prefetch_blocks);
          const double gathered = p.fsdp.reshard_after_forward ? units * r.largest_block : W;
          d["buffers.fsdp_unsharded_params"] = 2 * std::min(gathered, W);
          if (p.fsdp.reshard_after_forward) d["buffers.fsdp_root_unsharded"] = 2 * r.root;
          // One layer's unsharded gradients in bf16 and their fp32 copy for the reduce-scatter.
          d["buffers.fsdp_unsharded_grads"] = (2 + 4) * r.largest_block * (N > 0 ? N / W : 0);
          break;
        }
      }
      if (p.offload_params == OffloadTarget::CPU && p.zero_stage >= 2) {
        // CPUOffloadPolicy: the sharded fp32 parameters, their gradients and the optimizer state
        // live in pinned host memory; the GPU holds what is gathered.
        out.host_weights = Bytes::from_double(weights);
        out.host_gradients = Bytes::from_double(grads);
        out.host_optimizer_state = Bytes::from_double(opt);
        weights = grads = opt = 0;
      }
      break;
    }
  }
  if (t.precision == Precision::FP8) {
    // Transformer Engine caches an fp8 copy of each GEMM weight (1 byte) for the step.
    d["weights.fp8_cache"] = r.all() - r.persistent;
    weights += r.all() - r.persistent;
  }

  // Activations.
  double per_layer_sum = 0, none_max = 0;
  const auto layers = l.layers_of_stage(stage);
  for (std::int64_t layer : layers) {
    if (t.activation_checkpointing != Checkpointing::FULL) {
      per_layer_sum += layer_activation_bytes(m, l, t, layer, t.activation_checkpointing).as_double();
      continue;
    }
    // Full recompute (recompute.hpp): a checkpoint keeps its input, a layer inside a uniform group
    // keeps nothing, a layer block recompute leaves alone keeps everything; replaying a group
    // holds its layers' full sets at once.
    const LayerRecompute r = l.layer_recompute(layer);
    const double none = layer_activation_bytes(m, l, t, layer, Checkpointing::NONE).as_double();
    if (!r.replayed) {
      per_layer_sum += none;
    } else if (r.keeps_input) {
      per_layer_sum += layer_activation_bytes(m, l, t, layer, Checkpointing::FULL).as_double();
      none_max = std::max(none_max, none * static_cast<double>(r.group_layers));
    }
  }
  const double per_layer_avg = layers.empty() ? 0 : per_layer_sum / static_cast<double>(layers.size());
  const double a = activation_bytes(t);
  const double T = static_cast<double>(l.tokens());
  const double Tsp = static_cast<double>(l.sp_tokens());
  const double h = static_cast<double>(m.hidden_size);
  d["activations.layers"] = per_layer_avg * l.in_flight_layer_activations(stage);
  double transient = none_max;
  if (l.stage_has_embedding(stage) && m.embedding_dropout > 0) {
    d["activations.embedding"] = Tsp * h * static_cast<double>(l.in_flight_micro_batches(stage));
  }
  if (l.stage_has_head(stage)) {
    const double vocab = std::ceil(static_cast<double>(m.vocab_size) / l.tp());
    const bool megatron = p.framework == Framework::MEGATRON;
    const bool eager = t.implementation == Implementation::HF_EAGER;
    if (eager) {
      // Hugging Face eager: the final norm as a layer's (fp32 input, normalized, output), the bf16
      // logits (returned to the caller, alive through the backward) and log_softmax's fp32 output
      // (its backward's input); the fp32 up-cast of the logits is freed once log_softmax has run.
      // The loss backward then holds nll's fp32 gradient and log_softmax's fp32 gradient at once.
      const double norm = m.norm == NormKind::RMS_NORM ? Tsp * h * (4.0 + 2 * a) : 2 * Tsp * h * a;
      d["activations.head"] = (norm + (a + 4) * T * vocab) * static_cast<double>(l.in_flight_micro_batches(stage));
      transient = std::max(transient, 8 * T * vocab);
    } else {
      const double logits = megatron ? 4 * T * vocab : (2 + 4 + 4) * T * vocab;
      d["activations.head"] = (2 * Tsp * h * a + logits) * static_cast<double>(l.in_flight_micro_batches(stage));
      // Megatron's cross-entropy backward writes the logit gradient into its saved buffer; Hugging
      // Face allocates an fp32 gradient and a bf16 one.
      if (!megatron) transient = std::max(transient, (4 + a) * T * vocab);
    }
  }
  d["activations.transient"] = transient;

  // NCCL: one communicator per parallel group of size > 1 that this rank is in.
  int comms = 0;
  comms += (l.dp() * l.cp() > 1) ? 1 : 0;
  comms += l.tp() > 1 ? 1 : 0;
  comms += l.pp() > 1 ? 1 : 0;
  comms += l.cp() > 1 ? 1 : 0;
  comms += l.ep() > 1 ? 2 : 0;  // expert-parallel and expert-data-parallel groups
  double simple = kNcclSimpleBuffer;
  double channels_cap = 1e9;
  if (in.nccl_env != nullptr) {
    auto get = [&](const char* key) -> std::optional<double> {
      auto it = in.nccl_env->find(key);
      if (it == in.nccl_env->end()) return std::nullopt;
      try {
        return std::stod(it->second);
      } catch (...) {
        return std::nullopt;
      }
    };
    if (auto b = get("NCCL_BUFFSIZE")) simple = *b;
    if (auto c = get("NCCL_MAX_NCHANNELS")) channels_cap = *c;
  }
  const double channels = std::min(channels_cap, ps.ratio("memory.nccl.channels", 16,
                                                          "default: 16 channels per communicator", 0.5));
  const double connections =
      ps.ratio("memory.nccl.connections_per_channel", 2, "default: a ring's two neighbours per channel", 0.5);
  const double per_connection =
      ps.bytes("memory.nccl.buffer_per_connection", Bytes::from_double(simple + kNcclLlBuffer + kNcclLl128Buffer),
               "default: NCCL's Simple + LL + LL128 buffers (src/init.cc)", 0.3)
          .as_double();
  d["buffers.nccl"] = comms * channels * connections * per_connection;

  double activations = 0;
  for (const auto& [k, v] : d) {
    if (k.rfind("activations.", 0) == 0) activations += v;
    if (k.rfind("buffers.", 0) == 0) buffers += v;
  }
  if (p.framework == Framework::PYTORCH && p.zero_stage == 3 && l.num_micro_batches() == 1) {
    // Gradients grow as the backward frees activations: the peak is at one end or the other.
    d["gradients.after_backward"] = grads;
    d["activations.before_backward"] = activations;
    if (grads >= activations) {
      activations = 0;
    } else {
      // The start of the backward: no layer has produced its unsharded gradients yet.
      grads = 0;
      buffers -= d["buffers.fsdp_unsharded_grads"];
      d["buffers.fsdp_unsharded_grads"] = 0;
    }
  }
  const double allocator_held = weights + grads + opt + activations + (buffers - d["buffers.nccl"]);
  const double frag = ps.ratio("memory.allocator_fragmentation", 0.05,
                               "default: the caching allocator holds ~5% above what is allocated", 1.0);
  d["buffers.allocator_fragmentation"] = frag * allocator_held;
  d["buffers.cuda_context"] =
      ps.bytes("memory.cuda_context", Bytes::mib(600), "default: CUDA context and library workspaces", 0.5).as_double();
  buffers += d["buffers.allocator_fragmentation"] + d["buffers.cuda_context"];

  out.weights = Bytes::from_double(weights);
  out.gradients = Bytes::from_double(grads);
  out.optimizer_state = Bytes::from_double(opt);
  out.activations = Bytes::from_double(activations);
  out.buffers = Bytes::from_double(buffers);
  out.peak = out.weights + out.gradients + out.optimizer_state + out.activations + out.buffers;
  out.usable = gpu.hbm_usable.value;
  out.fits = out.peak <= out.usable;
  out.shortfall = out.fits ? Bytes() : out.peak - out.usable;
  d["weights"] = weights;
  d["gradients"] = grads;
  d["optimizer_state"] = opt;
  for (const auto& [k, v] : d) out.details[k] = Bytes::from_double(v);
  return out;
}

}  // namespace clustersim::models
