#include "models/launch_export.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hardware/errors.hpp"
#include "models/recompute.hpp"
#include "models/scenario.hpp"

namespace clustersim::models {

namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// Layers per pipeline stage as clustersim places them (parallel_layout.hpp: the first L mod pp
// stages one layer longer), without virtual stages.
struct StageSplit {
  std::int64_t q = 0, r = 0;  // L = q pp + r
};

// Iterations of training.tokens at global_batch_size x seq_len tokens a step.
std::optional<std::int64_t> train_iters(const TrainingSpec& t) {
  if (!t.tokens) return std::nullopt;
  const double per_step = static_cast<double>(t.global_batch_size) * static_cast<double>(t.seq_len);
  return static_cast<std::int64_t>(std::ceil(*t.tokens / per_step));
}

class Exporter {
 public:
  Exporter(const Scenario& s, const TransformerConfig& m) : s_(s), m_(m), p_(s.parallelism), t_(s.training) {}

  LaunchExport run(ExportTarget target) {
    switch (target) {
      case ExportTarget::MEGATRON: megatron(); break;
      case ExportTarget::NEMO: nemo(); break;
      case ExportTarget::TORCHTITAN: torchtitan(); break;
      case ExportTarget::DEEPSPEED: deepspeed(); break;
    }
    return std::move(out_);
  }

 private:
  const Scenario& s_;
  const TransformerConfig& m_;
  const ParallelismSpec& p_;
  const TrainingSpec& t_;
  LaunchExport out_;

  void warn(const std::string& what) { out_.warnings.push_back(what); }
  [[noreturn]] void refuse(const std::string& target, const std::string& why) const {
    throw InputError(s_.file, "--export " + target, "cannot export to " + target + ": " + why);
  }
  bool sp() const { return p_.sequence_parallel && p_.tensor > 1; }
  std::int64_t chunks() const { return static_cast<std::int64_t>(p_.pipeline) * p_.virtual_stages; }
  bool uneven() const { return m_.num_layers % chunks() != 0; }
  std::int64_t accumulation() const {
    return t_.global_batch_size / (t_.micro_batch_size * static_cast<std::int64_t>(p_.data));
  }
  std::string header(const std::string& what) const {
    return "# clustersim: scenario '" + s_.name + "' (" + m_.name + ", " + str(s_.cluster.nodes) + " x " +
           str(s_.cluster.gpus_per_node) + " " + s_.cluster.system + ") as " + what + "\n";
  }
  void common_warnings(const std::string& target) {
    if (t_.implementation == Implementation::HF_EAGER && target != "deepspeed" && target != "torchtitan") {
      warn("training.implementation \"hf_eager\": " + target +
           " runs its own fused kernels; the simulated step ran Hugging Face's eager modules");
    }
    if (!s_.nccl.env.empty()) {
      warn("nccl.env: the " + str(static_cast<std::int64_t>(s_.nccl.env.size())) +
           " NCCL variable(s) are written as export lines in the header, not as " + target + " settings");
    }
  }
  std::string env_lines() const {
    std::string o;
    for (const auto& [k, v] : s_.nccl.env) o += "export " + k + "=" + v + "\n";
    return o;
  }

  // ---------------------------------------------------------------- Megatron-LM
  // Names and kinds: tests/data/interop/megatron_arguments.json (core_v0.19.0).
  void megatron() {
    const std::string target = "megatron";
    if (t_.fine_tuning == FineTuning::LORA) {
      refuse(target, "Megatron-LM's training scripts have no LoRA adapters (training.fine_tuning \"lora\"); NeMo 2 "
                     "runs LoRA on Megatron-Core (--export nemo)");
    }
    common_warnings(target);
    std::vector<std::pair<std::string, std::string>> a;  // name, value ("" for a flag)
    auto add = [&](const std::string& name, const std::string& value = "") { a.emplace_back(name, value); };
    add("--tensor-model-parallel-size", str(p_.tensor));
    add("--pipeline-model-parallel-size", str(p_.pipeline));
    if (p_.virtual_stages > 1) {
      if (!uneven()) {
        add("--num-layers-per-virtual-pipeline-stage", str(m_.num_layers / chunks()));
      } else {
        add("--num-virtual-stages-per-pipeline-rank", str(p_.virtual_stages));
        warn("parallelism.uneven_pipeline with virtual stages: Megatron splits " + str(m_.num_layers) +
             " layers over " + str(chunks()) +
             " chunks by --pipeline-model-parallel-layout, which is not exported; clustersim gives the first " +
             str(m_.num_layers % chunks()) + " chunks one layer more");
      }
    } else if (uneven()) {
      const std::int64_t q = m_.num_layers / p_.pipeline, r = m_.num_layers % p_.pipeline;
      // clustersim: r stages of q + 1 layers, then pp - r of q. Megatron's first/last-stage counts
      // give the same multiset when at most two stages are one short.
      if (r == p_.pipeline - 1) {
        add("--decoder-last-pipeline-num-layers", str(q));
      } else if (r == p_.pipeline - 2) {
        add("--decoder-first-pipeline-num-layers", str(q));
        add("--decoder-last-pipeline-num-layers", str(q));
      } else {
        warn("parallelism.uneven_pipeline: " + str(m_.num_layers) + " layers on " + str(p_.pipeline) +
             " stages (" + str(r) + " of " + str(q + 1) + ", " + str(p_.pipeline - r) + " of " + str(q) +
             ") is not expressible with --decoder-first/last-pipeline-num-layers; give "
             "--pipeline-model-parallel-layout by hand");
      }
    }
    if (p_.context > 1) add("--context-parallel-size", str(p_.context));
    if (p_.expert > 1) add("--expert-model-parallel-size", str(p_.expert));
    if (sp()) add("--sequence-parallel");
    if (p_.pipeline_schedule == PipelineSchedule::GPIPE && p_.pipeline > 1) {
      warn("parallelism.pipeline_schedule \"gpipe\": Megatron-LM runs 1F1B; its activation memory differs");
    }
    if (p_.rank_order == "tp-cp-ep-pp-dp") {
      add("--use-tp-pp-dp-mapping");
    } else if (p_.rank_order != "tp-cp-ep-dp-pp") {
      warn("parallelism.rank_order \"" + p_.rank_order +
           "\": Megatron-LM orders ranks tp-cp-ep-dp-pp or, with --use-tp-pp-dp-mapping, tp-cp-ep-pp-dp");
    }
    add("--micro-batch-size", str(t_.micro_batch_size));
    add("--global-batch-size", str(t_.global_batch_size));
    add("--seq-length", str(t_.seq_len));
    add("--max-position-embeddings", str(std::max(t_.seq_len, m_.max_position_embeddings)));
    if (auto iters = train_iters(t_)) add("--train-iters", str(*iters));
    megatron_model(add);
    switch (t_.activation_checkpointing) {
      case Checkpointing::NONE: break;
      case Checkpointing::SELECTIVE: add("--recompute-granularity", "selective"); break;
      case Checkpointing::FULL:
        add("--recompute-granularity", "full");
        add("--recompute-method", std::string(to_string(t_.recompute_method)));
        add("--recompute-num-layers", str(t_.recompute_num_layers));
        break;
    }
    switch (t_.precision) {
      case Precision::BF16: add("--bf16"); break;
      case Precision::FP16: add("--fp16"); break;
      case Precision::FP8:
        add("--bf16");
        add("--fp8-format", "hybrid");
        warn("training.precision \"fp8\": exported as --bf16 --fp8-format hybrid with Megatron's default scaling "
             "recipe; clustersim does not model the recipe");
        break;
      case Precision::FP32: break;
    }
    if (t_.grad_reduce_dtype == Precision::BF16) add("--grad-reduce-in-bf16");
    add("--optimizer", t_.optimizer == Optimizer::SGD ? "sgd" : "adam");
    if (t_.optimizer == Optimizer::ADAM) {
      warn("training.optimizer \"adam\": Megatron's --optimizer adam decouples weight decay (AdamW)");
    }
    if (t_.attention_kernel == AttentionKernel::UNFUSED) add("--attention-backend", "unfused");
    // Data-parallel sharding: Megatron's distributed optimizer shards the optimizer state (ZeRO-1).
    bool distopt = p_.megatron.distributed_optimizer;
    if (p_.framework != Framework::MEGATRON) {
      distopt = p_.zero_stage >= 1;
      if (p_.zero_stage >= 2) {
        warn("parallelism.zero_stage " + str(p_.zero_stage) + " (" + std::string(to_string(p_.framework)) +
             "): Megatron-LM's distributed optimizer shards the optimizer state only (ZeRO-1); exported as "
             "--use-distributed-optimizer, so gradients and weights are not sharded as simulated");
      }
    }
    if (distopt) add("--use-distributed-optimizer");
    if (p_.megatron.overlap_grad_reduce) add("--overlap-grad-reduce");
    if (p_.megatron.overlap_param_gather) {
      if (distopt && p_.megatron.overlap_grad_reduce) {
        add("--overlap-param-gather");
      } else {
        warn("parallelism.megatron.overlap_param_gather: Megatron needs --use-distributed-optimizer and "
             "--overlap-grad-reduce for it; left out");
      }
    }
    if (p_.megatron.tp_comm_overlap && p_.tensor > 1) add("--tp-comm-overlap");
    if (p_.offload_optimizer == OffloadTarget::CPU) {
      add("--optimizer-cpu-offload");
      warn("parallelism.offload: Megatron's --optimizer-cpu-offload runs the optimizer on the CPU with its own "
           "(HybridDeviceOptimizer) timing, which clustersim does not model");
    }
    if (p_.offload_params == OffloadTarget::CPU) {
      warn("parallelism.offload.params \"cpu\": Megatron-LM does not offload parameters; left out");
    }

    std::ostringstream o;
    o << header("Megatron-LM arguments (names of megatron/training/arguments.py, core_v0.19.0)");
    o << "# Launch on each of the " << s_.cluster.nodes << " node(s):\n";
    o << "#   torchrun --nnodes " << s_.cluster.nodes << " --nproc-per-node " << s_.cluster.gpus_per_node
      << " pretrain_gpt.py \"${MEGATRON_ARGS[@]}\" --tokenizer-type ... --data-path ...\n";
    o << "# The vocabulary (" << m_.vocab_size << " entries) comes from the tokenizer.\n";
    o << env_lines();
    o << "MEGATRON_ARGS=(\n";
    for (const auto& [name, value] : a) {
      o << "  " << name;
      if (!value.empty()) {
        const bool quote = value.find_first_of(" ()[]*'\"") != std::string::npos;
        o << " " << (quote ? "'" + value + "'" : value);
      }
      o << "\n";
    }
    o << ")\n";
    out_.text = o.str();
  }

  template <class Add>
  void megatron_model(Add& add) {
    add("--num-layers", str(m_.num_layers));
    add("--hidden-size", str(m_.hidden_size));
    add("--ffn-hidden-size", str(m_.intermediate_size));
    add("--num-attention-heads", str(m_.num_heads));
    if (m_.attention == AttentionKind::MLA) {
      add("--multi-latent-attention");
      if (m_.mla.q_lora_rank > 0) add("--q-lora-rank", str(m_.mla.q_lora_rank));
      add("--kv-lora-rank", str(m_.mla.kv_lora_rank));
      add("--qk-head-dim", str(m_.mla.qk_nope_head_dim));
      add("--qk-pos-emb-head-dim", str(m_.mla.qk_rope_head_dim));
      add("--v-head-dim", str(m_.mla.v_head_dim));
    } else {
      if (m_.num_kv_heads != m_.num_heads) {
        add("--group-query-attention");
        add("--num-query-groups", str(m_.num_kv_heads));
      }
      if (m_.head_dim * m_.num_heads != m_.hidden_size) add("--kv-channels", str(m_.head_dim));
    }
    switch (m_.mlp) {
      case MlpKind::GATED_SILU: add("--swiglu"); break;
      case MlpKind::GELU: break;  // Megatron's default activation
      case MlpKind::RELU:
        warn("model MLP ReLU (" + m_.model_type + "): Megatron-LM's arguments offer GeLU, SwiGLU and squared ReLU; "
             "left at GeLU");
        break;
    }
    if (m_.norm == NormKind::RMS_NORM) add("--normalization", "RMSNorm");
    if (m_.position == PositionKind::ROTARY) {
      add("--position-embedding-type", "rope");
      if (m_.rotary_fraction != 1.0) add("--rotary-percent", num(m_.rotary_fraction));
    } else {
      add("--position-embedding-type", "learned_absolute");
    }
    if (!m_.tied_embeddings) add("--untie-embeddings-and-output-weights");
    if (!m_.qkv_bias && !m_.attn_out_bias && !m_.mlp_bias) {
      add("--disable-bias-linear");
    } else if (m_.qkv_bias && !m_.attn_out_bias && !m_.mlp_bias) {
      add("--disable-bias-linear");
      add("--add-qkv-bias");
    } else if (!(m_.qkv_bias && m_.attn_out_bias && m_.mlp_bias)) {
      warn("model biases (q/k/v " + std::string(m_.qkv_bias ? "yes" : "no") + ", output " +
           (m_.attn_out_bias ? "yes" : "no") + ", MLP " + (m_.mlp_bias ? "yes" : "no") +
           "): Megatron-LM biases every linear or, with --disable-bias-linear, none (q/k/v back with "
           "--add-qkv-bias); left with every bias");
    }
    add("--attention-dropout", num(m_.attention_dropout));
    add("--hidden-dropout", num(m_.hidden_dropout));
    if (m_.embedding_dropout != m_.hidden_dropout) {
      warn("model embedding dropout " + num(m_.embedding_dropout) + ": Megatron applies --hidden-dropout (" +
           num(m_.hidden_dropout) + ") after the embedding");
    }
    if (m_.moe.enabled()) {
      const MoeSpec& e = m_.moe;
      add("--num-experts", str(e.num_experts));
      add("--moe-router-topk", str(e.experts_per_token));
      add("--moe-ffn-hidden-size", str(e.expert_intermediate_size));
      if (e.shared_intermediate_size > 0) add("--moe-shared-expert-intermediate-size", str(e.shared_intermediate_size));
      if (e.shared_expert_gate) add("--moe-shared-expert-gate");
      if (e.router_bias) add("--moe-router-enable-expert-bias");
      add("--moe-grouped-gemm");
      if (!e.dense_layers.empty()) {
        warn("model mlp_only_layers: Megatron's --moe-layer-freq pattern is not exported for a list of dense layers");
      } else if (e.first_dense_layers > 0 || e.layer_frequency > 1) {
        // --moe-layer-freq takes a Python list expression of 0 (dense) and 1 (MoE) per layer.
        std::string pattern = "[";
        for (std::int64_t i = 0; i < m_.num_layers; ++i) pattern += (i ? "," : "") + str(m_.is_moe_layer(i) ? 1 : 0);
        add("--moe-layer-freq", pattern + "]");
      }
    }
  }

  // ---------------------------------------------------------------- NeMo 2
  // MegatronStrategy (nemo/lightning/pytorch/strategies/megatron_strategy.py), its ddp config
  // (Megatron-Core DistributedDataParallelConfig), MockDataModule / PreTrainingDataModule
  // (micro_batch_size, global_batch_size, seq_length), GPTConfig (Megatron-Core TransformerConfig
  // fields), OptimizerConfig (use_distributed_optimizer, bf16, fp16) at NeMo v2.4.0.
  void nemo() {
    const std::string target = "nemo";
    common_warnings(target);
    std::vector<std::pair<std::string, std::string>> a;
    auto set = [&](const std::string& key, const std::string& value) { a.emplace_back(key, value); };
    auto boolean = [](bool b) { return std::string(b ? "True" : "False"); };
    set("trainer.num_nodes", str(s_.cluster.nodes));
    set("trainer.devices", str(s_.cluster.gpus_per_node));
    if (auto iters = train_iters(t_)) set("trainer.max_steps", str(*iters));
    set("trainer.strategy.tensor_model_parallel_size", str(p_.tensor));
    set("trainer.strategy.pipeline_model_parallel_size", str(p_.pipeline));
    set("trainer.strategy.virtual_pipeline_model_parallel_size",
        p_.virtual_stages > 1 ? str(p_.virtual_stages) : std::string("None"));
    if (uneven() && p_.virtual_stages == 1) {
      const std::int64_t q = m_.num_layers / p_.pipeline, r = m_.num_layers % p_.pipeline;
      if (r == p_.pipeline - 1) {
        set("trainer.strategy.num_layers_in_last_pipeline_stage", str(q));
      } else if (r == p_.pipeline - 2) {
        set("trainer.strategy.num_layers_in_first_pipeline_stage", str(q));
        set("trainer.strategy.num_layers_in_last_pipeline_stage", str(q));
      } else {
        warn("parallelism.uneven_pipeline: not expressible with num_layers_in_first/last_pipeline_stage");
      }
    } else if (uneven()) {
      warn("parallelism.uneven_pipeline with virtual stages: not exported");
    }
    set("trainer.strategy.context_parallel_size", str(p_.context));
    set("trainer.strategy.expert_model_parallel_size", str(p_.expert));
    set("trainer.strategy.sequence_parallel", boolean(sp()));
    const bool distopt = p_.framework == Framework::MEGATRON ? p_.megatron.distributed_optimizer : p_.zero_stage >= 1;
    if (p_.framework != Framework::MEGATRON && p_.zero_stage >= 2) {
      warn("parallelism.zero_stage " + str(p_.zero_stage) +
           ": NeMo's Megatron strategy shards the optimizer state (distributed optimizer); Megatron FSDP "
           "(trainer.strategy.fsdp) is not exported");
    }
    set("trainer.strategy.ddp.overlap_grad_reduce", boolean(p_.megatron.overlap_grad_reduce));
    set("trainer.strategy.ddp.overlap_param_gather", boolean(p_.megatron.overlap_param_gather && distopt));
    set("trainer.strategy.ddp.grad_reduce_in_fp32", boolean(t_.grad_reduce_dtype == Precision::FP32));
    set("trainer.strategy.ddp.use_distributed_optimizer", boolean(distopt));
    set("optim.config.use_distributed_optimizer", boolean(distopt));
    if (p_.megatron.tp_comm_overlap && p_.tensor > 1) {
      warn("parallelism.megatron.tp_comm_overlap: NeMo sets it through MegatronCommOverlapCallback "
           "(tp_comm_overlap=True), a callback, not an override");
    }
    set("data.micro_batch_size", str(t_.micro_batch_size));
    set("data.global_batch_size", str(t_.global_batch_size));
    set("data.seq_length", str(t_.seq_len));
    set("model.config.seq_length", str(t_.seq_len));
    set("model.config.num_layers", str(m_.num_layers));
    set("model.config.hidden_size", str(m_.hidden_size));
    set("model.config.ffn_hidden_size", str(m_.intermediate_size));
    set("model.config.num_attention_heads", str(m_.num_heads));
    if (m_.attention == AttentionKind::GQA) set("model.config.num_query_groups", str(m_.num_kv_heads));
    if (m_.moe.enabled()) {
      set("model.config.num_moe_experts", str(m_.moe.num_experts));
      set("model.config.moe_router_topk", str(m_.moe.experts_per_token));
      set("model.config.moe_ffn_hidden_size", str(m_.moe.expert_intermediate_size));
    }
    switch (t_.activation_checkpointing) {
      case Checkpointing::NONE: set("model.config.recompute_granularity", "None"); break;
      case Checkpointing::SELECTIVE: set("model.config.recompute_granularity", "selective"); break;
      case Checkpointing::FULL:
        set("model.config.recompute_granularity", "full");
        set("model.config.recompute_method", std::string(to_string(t_.recompute_method)));
        set("model.config.recompute_num_layers", str(t_.recompute_num_layers));
        break;
    }
    if (t_.precision == Precision::BF16) {
      set("optim.config.bf16", "True");
    } else if (t_.precision == Precision::FP16) {
      set("optim.config.fp16", "True");
    } else {
      warn("training.precision \"" + std::string(to_string(t_.precision)) +
           "\": NeMo sets it with trainer.plugins (bf16_mixed(), fp16_mixed(), a Float8 recipe), a function "
           "call, not an override");
    }
    if (t_.fine_tuning == FineTuning::LORA) {
      warn("training.fine_tuning \"lora\": use NeMo's finetune recipe with peft=\"lora\" (dim " +
           str(t_.lora.rank) + ", alpha " + num(t_.lora.alpha) + "); the overrides above apply to it");
    }
    if (p_.offload_optimizer == OffloadTarget::CPU || p_.offload_params == OffloadTarget::CPU) {
      warn("parallelism.offload: NeMo 2's Megatron strategy offloads nothing to the CPU; left out");
    }

    std::ostringstream o;
    o << header("NeMo 2 recipe overrides (nemo-run CLI syntax, NeMo v2.4.0 names)");
    o << "# Model shape, layout and batch below override the recipe's; launch with\n";
    o << "#   nemo llm pretrain --factory <recipe> \"${NEMO_OVERRIDES[@]}\"\n";
    o << env_lines();
    o << "NEMO_OVERRIDES=(\n";
    for (const auto& [k, v] : a) o << "  " << k << "=" << v << "\n";
    o << ")\n";
    out_.text = o.str();
  }

  // ---------------------------------------------------------------- torchtitan
  // torchtitan/config/job_config.py at v0.2.2: [parallelism], [training], [activation_checkpoint].
  void torchtitan() {
    const std::string target = "torchtitan";
    if (t_.fine_tuning == FineTuning::LORA) refuse(target, "torchtitan has no LoRA adapters (training.fine_tuning \"lora\")");
    if (p_.framework == Framework::DEEPSPEED && p_.offload_params != p_.offload_optimizer) {
      refuse(target, "torchtitan offloads parameters, gradients and optimizer state together "
                     "(training.enable_cpu_offload); ZeRO's optimizer-only offload has no equivalent");
    }
    common_warnings(target);
    std::ostringstream o;
    o << header("a torchtitan job config (torchtitan/config/job_config.py, v0.2.2)");
    o << "# Launch: torchrun --nnodes " << s_.cluster.nodes << " --nproc-per-node " << s_.cluster.gpus_per_node
      << " -m torchtitan.train --job.config_file THIS.toml\n";
    o << "# [model] name and flavor pick the architecture; this one is " << m_.name << " (" << m_.num_layers
      << " layers, hidden " << m_.hidden_size << ", " << m_.num_heads << " heads, " << m_.num_kv_heads
      << " kv heads, vocabulary " << m_.vocab_size << ").\n";
    for (const auto& [k, v] : s_.nccl.env) o << "# export " << k << "=" << v << "\n";
    o << "\n[parallelism]\n";
    // FSDP over dp (ZeRO-2/3) or plain replication (DDP); torchtitan shards over dp_shard x cp.
    const bool shard = p_.zero_stage >= 1;
    o << "data_parallel_replicate_degree = " << (shard ? 1 : p_.data) << "\n";
    o << "data_parallel_shard_degree = " << (shard ? p_.data : 1) << "\n";
    if (shard) {
      const bool reshard = p_.zero_stage == 3 && p_.fsdp.reshard_after_forward;
      o << "fsdp_reshard_after_forward = \"" << (reshard ? "default" : "never") << "\"\n";
      if (p_.zero_stage == 1) {
        warn("parallelism.zero_stage 1: torchtitan shards with FSDP2; exported as ZeRO-2-like FSDP "
             "(fsdp_reshard_after_forward \"never\"), which also shards gradients");
      }
    }
    o << "tensor_parallel_degree = " << p_.tensor << "\n";
    if (p_.megatron.tp_comm_overlap && p_.tensor > 1) o << "enable_async_tensor_parallel = true\n";
    o << "pipeline_parallel_degree = " << p_.pipeline << "\n";
    if (p_.pipeline > 1) {
      const char* sched = p_.pipeline_schedule == PipelineSchedule::GPIPE              ? "GPipe"
                          : p_.pipeline_schedule == PipelineSchedule::INTERLEAVED_1F1B ? "Interleaved1F1B"
                                                                                       : "1F1B";
      o << "pipeline_parallel_schedule = \"" << sched << "\"\n";
      o << "pipeline_parallel_microbatch_size = " << t_.micro_batch_size << "\n";
      if (!uneven()) o << "pipeline_parallel_layers_per_stage = " << m_.num_layers / chunks() << "\n";
      else warn("parallelism.uneven_pipeline: torchtitan's pipeline_parallel_layers_per_stage is one number; left out");
    }
    o << "context_parallel_degree = " << p_.context << "\n";
    o << "expert_parallel_degree = " << p_.expert << "\n";
    if (sp()) {
      // torchtitan's tensor parallelism always shards norms and dropout along the sequence.
    } else if (p_.tensor > 1) {
      warn("parallelism.sequence_parallel false: torchtitan's tensor parallelism always runs sequence parallel");
    }
    if (p_.rank_order != "tp-cp-ep-dp-pp") warn("parallelism.rank_order: torchtitan builds its own device mesh; left out");
    o << "\n[training]\n";
    // torchtitan's local_batch_size is one rank's batch per optimizer step; gradient accumulation
    // follows from global_batch_size (global / (local x dp)).
    o << "local_batch_size = " << t_.micro_batch_size << "\n";
    o << "global_batch_size = " << t_.global_batch_size << "\n";
    o << "seq_len = " << t_.seq_len << "\n";
    if (auto iters = train_iters(t_)) o << "steps = " << *iters << "\n";
    if (t_.precision == Precision::BF16 || t_.precision == Precision::FP8) {
      o << "mixed_precision_param = \"bfloat16\"\n";
    } else {
      o << "mixed_precision_param = \"float32\"\n";
    }
    if (t_.precision == Precision::FP8) warn("training.precision \"fp8\": torchtitan sets it with [quantize.linear.float8]; left out");
    if (t_.precision == Precision::FP16) warn("training.precision \"fp16\": torchtitan has no fp16 training; exported as bfloat16");
    if (t_.grad_reduce_dtype != Precision::FP32) {
      warn("training.grad_reduce_dtype: torchtitan reduces in float32 (mixed_precision_reduce); left at float32");
    }
    o << "mixed_precision_reduce = \"float32\"\n";
    if (p_.offload_params == OffloadTarget::CPU) o << "enable_cpu_offload = true\n";
    o << "\n[activation_checkpoint]\n";
    switch (t_.activation_checkpointing) {
      case Checkpointing::NONE: o << "mode = \"none\"\n"; break;
      case Checkpointing::SELECTIVE:
        o << "mode = \"selective\"\nselective_ac_option = \"op\"\n";
        warn("training.activation_checkpointing \"selective\": torchtitan's op-level selective checkpointing "
             "saves matmul outputs and recomputes the rest, not only the attention core");
        break;
      case Checkpointing::FULL:
        o << "mode = \"full\"\n";
        if (t_.recompute_given && !(t_.recompute_method == RecomputeMethod::UNIFORM && t_.recompute_num_layers == 1)) {
          warn("training.recompute_method \"" + std::string(to_string(t_.recompute_method)) + "\" " +
               str(t_.recompute_num_layers) + ": torchtitan checkpoints every layer (mode \"full\") or every "
               "N-th layer (selective_ac_option N), not Megatron's groups or blocks; exported as full");
        }
        break;
    }
    o << "\n[optimizer]\nname = \"" << (t_.optimizer == Optimizer::SGD ? "SGD" : "AdamW") << "\"\n";
    if (t_.optimizer == Optimizer::SGD) warn("training.optimizer \"sgd\": check that torchtitan's optimizer registry has it");
    out_.text = o.str();
  }

  // ---------------------------------------------------------------- DeepSpeed
  // deepspeed/runtime/constants.py (train_batch_size, train_micro_batch_size_per_gpu,
  // gradient_accumulation_steps, bf16, fp16), deepspeed/runtime/zero/config.py and
  // offload_config.py (zero_optimization.*).
  void deepspeed() {
    const std::string target = "deepspeed";
    if (p_.framework == Framework::MEGATRON) {
      warn("parallelism.framework \"megatron\": the distributed optimizer is exported as ZeRO stage 1");
    }
    if (p_.tensor > 1 || p_.pipeline > 1 || p_.context > 1 || p_.expert > 1) {
      warn("tensor, pipeline, context and expert parallelism (" + str(p_.tensor) + ", " + str(p_.pipeline) + ", " +
           str(p_.context) + ", " + str(p_.expert) +
           ") are set in the model code (Megatron-DeepSpeed, PipelineModule), not in the DeepSpeed config");
    }
    if (t_.activation_checkpointing != Checkpointing::NONE) {
      warn("training.activation_checkpointing \"" + std::string(to_string(t_.activation_checkpointing)) +
           "\": recompute is chosen in the model code (gradient_checkpointing_enable, "
           "deepspeed.checkpointing); the config's activation_checkpointing section only tunes it");
    }
    nlohmann::ordered_json j;
    j["train_batch_size"] = t_.global_batch_size;
    j["train_micro_batch_size_per_gpu"] = t_.micro_batch_size;
    j["gradient_accumulation_steps"] = accumulation();
    j["bf16"] = {{"enabled", t_.precision == Precision::BF16}};
    j["fp16"] = {{"enabled", t_.precision == Precision::FP16}};
    if (t_.precision == Precision::FP8) warn("training.precision \"fp8\": DeepSpeed's config has no fp8 setting; left out");
    nlohmann::ordered_json z;
    const int stage = p_.framework == Framework::MEGATRON ? (p_.megatron.distributed_optimizer ? 1 : 0) : p_.zero_stage;
    z["stage"] = stage;
    z["overlap_comm"] = p_.zero.overlap_comm;
    z["contiguous_gradients"] = p_.zero.contiguous_gradients;
    z["reduce_scatter"] = p_.zero.reduce_scatter;
    auto knob = [&](const char* key, const ZeroKnob& k) {
      if (k.is_auto) z[key] = "auto";
      else if (k.value) z[key] = *k.value;
    };
    knob("reduce_bucket_size", p_.zero.reduce_bucket_size);
    knob("allgather_bucket_size", p_.zero.allgather_bucket_size);
    if (stage == 3) {
      knob("stage3_prefetch_bucket_size", p_.zero.stage3_prefetch_bucket_size);
      knob("stage3_param_persistence_threshold", p_.zero.stage3_param_persistence_threshold);
      knob("stage3_max_live_parameters", p_.zero.stage3_max_live_parameters);
      knob("stage3_max_reuse_distance", p_.zero.stage3_max_reuse_distance);
    }
    knob("sub_group_size", p_.zero.sub_group_size);
    if (p_.offload_optimizer == OffloadTarget::CPU) {
      z["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", p_.zero.pin_memory}};
    }
    if (p_.offload_params == OffloadTarget::CPU) {
      if (stage != 3) refuse(target, "DeepSpeed offloads parameters under ZeRO stage 3 only");
      z["offload_param"] = {{"device", "cpu"}, {"pin_memory", p_.zero.pin_memory}};
    }
    j["zero_optimization"] = z;
    if (t_.grad_reduce_dtype == Precision::BF16) j["communication_data_type"] = "bf16";
    if (t_.fine_tuning == FineTuning::LORA) {
      warn("training.fine_tuning \"lora\": adapters come from the training script (PEFT), not the config");
    }
    if (!s_.nccl.env.empty()) warn("nccl.env: set the NCCL variables in the launcher's environment; not in the config");
    out_.text = j.dump(2) + "\n";
  }
};

}  // namespace

ExportTarget export_target_from(std::string_view name, const std::string& key) {
  if (name == "megatron") return ExportTarget::MEGATRON;
  if (name == "nemo") return ExportTarget::NEMO;
  if (name == "torchtitan") return ExportTarget::TORCHTITAN;
  if (name == "deepspeed") return ExportTarget::DEEPSPEED;
  throw InputError("", key, "expected megatron, nemo, torchtitan or deepspeed, got '" + std::string(name) + "'");
}

std::string_view to_string(ExportTarget t) {
  switch (t) {
    case ExportTarget::MEGATRON: return "megatron";
    case ExportTarget::NEMO: return "nemo";
    case ExportTarget::TORCHTITAN: return "torchtitan";
    case ExportTarget::DEEPSPEED: return "deepspeed";
  }
  return "megatron";
}

std::string_view export_extension(ExportTarget t) {
  switch (t) {
    case ExportTarget::MEGATRON:
    case ExportTarget::NEMO: return ".sh";
    case ExportTarget::TORCHTITAN: return ".toml";
    case ExportTarget::DEEPSPEED: return ".json";
  }
  return ".txt";
}

LaunchExport export_launch(const Scenario& scenario, const TransformerConfig& model, ExportTarget target) {
  return Exporter(scenario, model).run(target);
}

}  // namespace clustersim::models
