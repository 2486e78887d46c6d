#include "models/scenario.hpp"

#include <algorithm>
#include <cmath>

#include "hardware/errors.hpp"
#include "sim/nccl/nccl_release.hpp"
#include "sim/nccl/nccl_version.hpp"

namespace clustersim::models {

namespace {

Precision precision_from(const std::string& s) {
  if (s == "bf16") return Precision::BF16;
  if (s == "fp16") return Precision::FP16;
  if (s == "fp8") return Precision::FP8;
  return Precision::FP32;
}

OffloadTarget offload_from(ValueReader v) {
  return v.as_choice({"none", "cpu"}) == "cpu" ? OffloadTarget::CPU : OffloadTarget::NONE;
}

std::filesystem::path resolve(const std::filesystem::path& base, const std::string& p) {
  std::filesystem::path path(p);
  return path.is_absolute() ? path : base / path;
}

ModelRef read_model(ValueReader v) {
  ModelRef m;
  m.file = v.file();
  m.pointer = v.pointer();
  ObjectReader o = v.as_object();
  const bool has_preset = o.has("preset");
  const bool has_hf = o.has("hf_config");
  if (has_preset && has_hf) o.fail("give either \"preset\" or \"hf_config\", not both");
  if (has_preset || has_hf) {
    if (has_preset) {
      m.kind = ModelRef::Kind::PRESET;
      m.preset = o.at("preset").as_string();
    } else {
      m.kind = ModelRef::Kind::HF_CONFIG;
      m.hf_config = o.at("hf_config").as_string();
    }
    o.finish();
    return m;
  }
  if (o.keys().empty()) {
    o.fail("expected {\"preset\": NAME}, {\"hf_config\": PATH} or the model's fields inline (hidden_size, ...)");
  }
  m.kind = ModelRef::Kind::INLINE;
  m.inline_fields = v.raw();
  return m;
}

TrainingSpec read_training(ValueReader v) {
  return v.read_object([](ObjectReader& o) {
    TrainingSpec t;
    t.seq_len = o.at("seq_len").as_int({.min = 1, .max = 1 << 24});
    t.micro_batch_size = o.at("micro_batch_size").as_int({.min = 1, .max = 1 << 20});
    t.global_batch_size = o.at("global_batch_size").as_int({.min = 1, .max = 1LL << 32});
    if (auto p = o.maybe("precision")) t.precision = precision_from(p->as_choice({"bf16", "fp16", "fp8", "fp32"}));
    if (auto p = o.maybe("grad_reduce_dtype")) {
      t.grad_reduce_dtype = precision_from(p->as_choice({"bf16", "fp16", "fp32"}));
    }
    if (auto p = o.maybe("optimizer")) {
      const std::string s = p->as_choice({"adamw", "adam", "sgd"});
      t.optimizer = s == "sgd" ? Optimizer::SGD : s == "adam" ? Optimizer::ADAM : Optimizer::ADAMW;
    }
    if (auto p = o.maybe("activation_checkpointing")) {
      const std::string s = p->as_choice({"none", "selective", "full"});
      t.activation_checkpointing = s == "full"        ? Checkpointing::FULL
                                   : s == "selective" ? Checkpointing::SELECTIVE
                                                      : Checkpointing::NONE;
    }
    {
      // Megatron-Core (transformer_config.py __post_init__): recompute_method and
      // recompute_num_layers go with granularity "full" and need each other.
      auto method = o.maybe("recompute_method");
      auto layers = o.maybe("recompute_num_layers");
      if (method) {
        t.recompute_method = method->as_choice({"uniform", "block"}) == "block" ? RecomputeMethod::BLOCK
                                                                               : RecomputeMethod::UNIFORM;
      }
      if (layers) t.recompute_num_layers = layers->as_int({.min = 1, .max = 1 << 20});
      if (method || layers) {
        ValueReader& where = method ? *method : *layers;
        if (t.activation_checkpointing != Checkpointing::FULL) {
          where.fail_message("applies to activation_checkpointing \"full\" only (Megatron-Core's "
                             "recompute_method and recompute_num_layers), but activation_checkpointing is \"" +
                             std::string(to_string(t.activation_checkpointing)) + "\"");
        }
        if (!method) layers->fail_message("needs recompute_method (\"uniform\" or \"block\") beside it, as in Megatron-Core");
        if (!layers) method->fail_message("needs recompute_num_layers beside it, as in Megatron-Core");
        t.recompute_given = true;
      }
    }
    if (auto p = o.maybe("attention")) {
      t.attention_kernel = p->as_choice({"flash", "unfused"}) == "unfused" ? AttentionKernel::UNFUSED : AttentionKernel::FLASH;
    }
    if (auto p = o.maybe("implementation")) {
      const std::string impl = p->as_choice({"fused", "hf_eager", "eager", "compiled"});
      t.implementation = impl == "hf_eager"   ? Implementation::HF_EAGER
                         : impl == "eager"    ? Implementation::EAGER
                         : impl == "compiled" ? Implementation::COMPILED
                                              : Implementation::FUSED;
      t.implementation_given = true;
    }
    if (auto p = o.maybe("tokens")) t.tokens = p->as_number({.min = 0, .max = 1e18, .min_exclusive = true});
    if (auto ft = o.maybe("fine_tuning")) {
      ft->read_object([&](ObjectReader& f) {
        const std::string method = f.at("method").as_choice({"full", "lora"});
        t.fine_tuning = method == "lora" ? FineTuning::LORA : FineTuning::FULL;
        if (t.fine_tuning == FineTuning::LORA) {
          t.lora.rank = static_cast<int>(f.get_or("rank", 16, {.min = 1, .max = 65536}));
          t.lora.alpha = f.get_or("alpha", 2.0 * t.lora.rank, {.min = 0, .max = 1e9, .min_exclusive = true});
          if (auto tm = f.maybe("target_modules")) {
            t.lora.target_modules.clear();
            for (auto& e : tm->as_array(1)) {
              t.lora.target_modules.push_back(
                  e.as_choice({"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}));
            }
          }
        }
      });
    }
    return t;
  });
}

ZeroKnob read_knob(ObjectReader& o, std::string_view key) {
  ZeroKnob k;
  auto v = o.maybe(key);
  if (!v) return k;
  if (v->raw().is_string()) {
    if (v->as_choice({"auto"}) == "auto") k.is_auto = true;
    return k;
  }
  k.value = v->as_number({.min = 0, .max = 1e15});
  return k;
}

void read_zero_knobs(ObjectReader& o, ZeroKnobs& z) {
  z.reduce_bucket_size = read_knob(o, "reduce_bucket_size");
  z.allgather_bucket_size = read_knob(o, "allgather_bucket_size");
  z.stage3_prefetch_bucket_size = read_knob(o, "stage3_prefetch_bucket_size");
  z.stage3_param_persistence_threshold = read_knob(o, "stage3_param_persistence_threshold");
  z.stage3_max_live_parameters = read_knob(o, "stage3_max_live_parameters");
  z.stage3_max_reuse_distance = read_knob(o, "stage3_max_reuse_distance");
  z.sub_group_size = read_knob(o, "sub_group_size");
  z.overlap_comm = o.get_or("overlap_comm", z.overlap_comm);
  z.contiguous_gradients = o.get_or("contiguous_gradients", z.contiguous_gradients);
  z.reduce_scatter = o.get_or("reduce_scatter", z.reduce_scatter);
}

ParallelismSpec read_parallelism(ValueReader v, const std::filesystem::path& base, const TrainingSpec& training,
                                 int world_size, std::vector<std::string>& warnings) {
  ObjectReader o = v.as_object();
  ParallelismSpec p;
  if (auto ds = o.maybe("deepspeed_config")) {
    const auto path = resolve(base, ds->as_string());
    o.finish();  // a DeepSpeed config stands alone: no other parallelism keys beside it
    p.framework = Framework::DEEPSPEED;
    p.data = world_size;
    apply_deepspeed_config(path, training, world_size, p, &warnings);
    return p;
  }
  const std::string fw = o.get_or("framework", "pytorch");
  if (auto f = o.maybe("framework")) f->as_choice({"pytorch", "megatron", "deepspeed"});
  p.framework = fw == "megatron" ? Framework::MEGATRON : fw == "deepspeed" ? Framework::DEEPSPEED : Framework::PYTORCH;
  constexpr IntRange dims{.min = 1, .max = 1 << 20};
  p.data = static_cast<int>(o.get_or("data", 1, dims));
  p.tensor = static_cast<int>(o.get_or("tensor", 1, dims));
  p.pipeline = static_cast<int>(o.get_or("pipeline", 1, dims));
  p.context = static_cast<int>(o.get_or("context", 1, dims));
  p.expert = static_cast<int>(o.get_or("expert", 1, dims));
  p.zero_stage = static_cast<int>(o.get_or("zero_stage", 0, {.min = 0, .max = 3}));
  p.sequence_parallel = o.get_or("sequence_parallel", false);
  if (auto s = o.maybe("pipeline_schedule")) {
    const std::string x = s->as_choice({"gpipe", "1f1b", "interleaved_1f1b"});
    p.pipeline_schedule = x == "gpipe" ? PipelineSchedule::GPIPE
                          : x == "1f1b" ? PipelineSchedule::ONE_F_ONE_B
                                        : PipelineSchedule::INTERLEAVED_1F1B;
  }
  p.virtual_stages = static_cast<int>(o.get_or("virtual_stages", 1, {.min = 1, .max = 1024}));
  p.uneven_pipeline = o.get_or("uneven_pipeline", false);
  if (auto off = o.maybe("offload")) {
    off->read_object([&](ObjectReader& x) {
      if (auto a = x.maybe("optimizer")) p.offload_optimizer = offload_from(*a);
      if (auto a = x.maybe("params")) p.offload_params = offload_from(*a);
    });
  }
  if (auto r = o.maybe("rank_order")) {
    p.rank_order = r->as_string();
    // Each of the five dimensions exactly once, separated by '-'.
    std::vector<std::string> parts;
    std::string cur;
    for (char c : p.rank_order + "-") {
      if (c == '-') {
        parts.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    std::vector<std::string> want{"tp", "cp", "ep", "dp", "pp"};
    auto sorted = parts;
    std::sort(sorted.begin(), sorted.end());
    std::sort(want.begin(), want.end());
    if (sorted != want) r->fail("a permutation of tp, cp, ep, dp, pp joined by '-' (for example \"tp-cp-ep-dp-pp\")");
  }
  if (auto z = o.maybe("deepspeed")) z->read_object([&](ObjectReader& x) { read_zero_knobs(x, p.zero); });
  if (auto f = o.maybe("fsdp")) {
    f->read_object([&](ObjectReader& x) {
      p.fsdp.reshard_after_forward = x.get_or("reshard_after_forward", p.fsdp.reshard_after_forward);
      p.fsdp.prefetch_blocks = static_cast<int>(x.get_or("prefetch_blocks", p.fsdp.prefetch_blocks, {.min = 0, .max = 64}));
      if (auto c = x.maybe("cpu_optimizer")) {
        const std::string s = c->as_choice({"default", "foreach", "fused"});
        p.fsdp.cpu_optimizer = s == "fused"     ? FsdpKnobs::CpuAdamw::FUSED
                               : s == "foreach" ? FsdpKnobs::CpuAdamw::FOREACH
                                                : FsdpKnobs::CpuAdamw::DEFAULT;
      }
    });
  }
  if (auto m = o.maybe("megatron")) {
    m->read_object([&](ObjectReader& x) {
      p.megatron.distributed_optimizer = x.get_or("distributed_optimizer", p.megatron.distributed_optimizer);
      p.megatron.overlap_grad_reduce = x.get_or("overlap_grad_reduce", p.megatron.overlap_grad_reduce);
      p.megatron.overlap_param_gather = x.get_or("overlap_param_gather", p.megatron.overlap_param_gather);
      p.megatron.tp_comm_overlap = x.get_or("tp_comm_overlap", p.megatron.tp_comm_overlap);
    });
  }
  o.finish();
  // Checks that need only this section and the cluster size.
  // Multiplied while the product is at most the world size (each factor is at most 2^20), so it
  // cannot overflow whatever the file says.
  std::int64_t product = 1;
  bool too_many = false;
  for (const int d : {p.data, p.tensor, p.pipeline, p.context}) {
    if (product > world_size) too_many = true;
    else product *= d;
  }
  too_many = too_many || product > world_size;
  if (too_many || product != world_size) {
    throw InputError(v.file(), v.pointer(),
                     "data x tensor x pipeline x context = " + std::to_string(p.data) + " x " +
                         std::to_string(p.tensor) + " x " + std::to_string(p.pipeline) + " x " +
                         std::to_string(p.context) + " = " +
                         (too_many ? "more than " + std::to_string(world_size) : std::to_string(product)) +
                         ", but the cluster has " + std::to_string(world_size) +
                         " GPUs (nodes x gpus_per_node); expert parallelism is carved out of data x context");
  }
  if (p.expert > 1 && (static_cast<std::int64_t>(p.data) * p.context) % p.expert != 0) {
    throw InputError(v.file(), v.pointer() + "/expert",
                     "expected expert parallelism to divide data x context = " +
                         std::to_string(static_cast<std::int64_t>(p.data) * p.context));
  }
  if (p.pipeline_schedule == PipelineSchedule::INTERLEAVED_1F1B && p.pipeline == 1) {
    throw InputError(v.file(), v.pointer() + "/pipeline_schedule", "interleaved_1f1b needs pipeline > 1");
  }
  if (p.virtual_stages > 1 && p.pipeline_schedule != PipelineSchedule::INTERLEAVED_1F1B) {
    throw InputError(v.file(), v.pointer() + "/virtual_stages",
                     "virtual_stages > 1 needs pipeline_schedule \"interleaved_1f1b\"");
  }
  const bool any_offload = p.offload_optimizer == OffloadTarget::CPU || p.offload_params == OffloadTarget::CPU;
  if (any_offload && p.framework == Framework::MEGATRON) {
    throw InputError(v.file(), v.pointer() + "/offload",
                     "Megatron's optimizer CPU offload is not modelled; CPU offload follows DeepSpeed (framework "
                     "\"deepspeed\") or FSDP2's CPUOffloadPolicy (framework \"pytorch\", zero_stage 2 or 3)");
  }
  if (any_offload && p.framework == Framework::PYTORCH) {
    // FSDP2's CPUOffloadPolicy moves the sharded parameters, their gradients and the optimizer
    // state to the host together (torch.distributed.fsdp CPUOffloadPolicy).
    if (p.zero_stage < 2) {
      throw InputError(v.file(), v.pointer() + "/offload",
                       "CPU offload under PyTorch is FSDP2's CPUOffloadPolicy: it needs zero_stage 2 or 3");
    }
    if (p.offload_optimizer != OffloadTarget::CPU || p.offload_params != OffloadTarget::CPU) {
      throw InputError(v.file(), v.pointer() + "/offload",
                       "FSDP2's CPUOffloadPolicy offloads parameters, gradients and optimizer state together: set "
                       "both \"optimizer\" and \"params\" to \"cpu\"");
    }
  }
  if (p.offload_params == OffloadTarget::CPU && p.zero_stage != 3 && p.framework == Framework::DEEPSPEED) {
    throw InputError(v.file(), v.pointer() + "/offload/params", "parameter offload needs zero_stage 3");
  }
  if (p.offload_optimizer == OffloadTarget::CPU && p.zero_stage == 0) {
    throw InputError(v.file(), v.pointer() + "/offload/optimizer", "optimizer offload needs zero_stage 1, 2 or 3");
  }
  if (p.zero_stage > 0 && p.framework == Framework::MEGATRON && p.zero_stage > 1) {
    throw InputError(v.file(), v.pointer() + "/zero_stage",
                     "Megatron shards optimizer state with its distributed optimizer (zero_stage 0 or 1)");
  }
  return p;
}

ClusterSpec read_cluster(ValueReader v) {
  return v.read_object([](ObjectReader& o) {
    ClusterSpec c;
    c.system = o.at("system").as_string();
    c.nodes = static_cast<int>(o.at("nodes").as_int({.min = 1, .max = 1'000'000}));
    c.gpus_per_node = static_cast<int>(o.at("gpus_per_node").as_int({.min = 1, .max = 1024}));
    c.gpus_per_pod = c.gpus_per_node;
    if (auto pl = o.maybe("placement")) {
      pl->read_object([&](ObjectReader& x) {
        c.gpus_per_pod = static_cast<int>(x.get_or("gpus_per_pod", c.gpus_per_node, {.min = 1, .max = 1024}));
        c.host_ipc = x.get_or("host_ipc", c.host_ipc);
        if (auto l = x.maybe("launcher")) {
          const std::string s = l->as_choice({"torchrun", "deepspeed", "mpirun"});
          c.launcher = s == "deepspeed" ? Launcher::DEEPSPEED : s == "mpirun" ? Launcher::MPIRUN : Launcher::TORCHRUN;
        }
        if (auto t = x.maybe("omp_num_threads")) c.omp_num_threads = static_cast<int>(t->as_int({.min = 1, .max = 4096}));
        if (auto cpus = x.maybe("cpus_per_pod")) c.cpus_per_pod = cpus->as_number({.min = 0.001, .max = 1e6});
        if (c.gpus_per_node % c.gpus_per_pod != 0) {
          x.at("gpus_per_pod").fail("a divisor of gpus_per_node (" + std::to_string(c.gpus_per_node) + ")");
        }
      });
    }
    if (auto p = o.maybe("p2p")) {
      const std::string s = p->as_choice({"write", "read", "disabled"});
      c.p2p = s == "read" ? P2pMode::READ : s == "disabled" ? P2pMode::DISABLED : P2pMode::WRITE;
    }
    if (auto n = o.maybe("network")) {
      n->read_object([&](ObjectReader& x) {
        if (auto a = x.maybe("fabric")) c.network.fabric = a->as_string();
        if (auto a = x.maybe("nics")) c.network.nics = static_cast<int>(a->as_int({.min = 1, .max = 1024}));
        if (auto a = x.maybe("nic_bandwidth")) c.network.nic_bandwidth = a->as_bandwidth();
        if (auto a = x.maybe("topology")) c.network.topology = a->as_choice({"single_switch", "leaf_spine", "rail_optimized"});
        if (auto a = x.maybe("nodes_per_leaf")) c.network.nodes_per_leaf = static_cast<int>(a->as_int({.min = 1, .max = 100000}));
        if (auto a = x.maybe("oversubscription")) c.network.oversubscription = a->as_number({.min = 1, .max = 1000});
        if (auto a = x.maybe("gpudirect_rdma")) c.network.gpudirect_rdma = a->as_bool();
      });
    }
    if (auto fm = o.maybe("fabric_manager")) c.fabric_manager = fm->as_bool();
    return c;
  });
}

NcclSpec read_nccl(ValueReader v) {
  return v.read_object([](ObjectReader& o) {
    NcclSpec n;
    if (auto e = o.maybe("env")) {
      ObjectReader env = e->as_object();
      for (const auto& k : env.keys()) {
        if (k.rfind("NCCL_", 0) != 0 && k.rfind("FI_", 0) != 0 && k.rfind("OFI_NCCL_", 0) != 0) {
          env.at(k).fail_message("expected an NCCL_*, FI_* or OFI_NCCL_* variable name");
        }
        auto val = env.at(k);
        if (val.raw().is_number_integer() || val.raw().is_number_unsigned()) {
          n.env[k] = std::to_string(val.as_int());
        } else {
          n.env[k] = val.as_string();
        }
      }
    }
    if (auto ver = o.maybe("version")) {
      // As --nccl-version: another patch of a tabled minor release takes its nearest patch, warned.
      try {
        const sim::nccl::ReleaseTable r = sim::nccl::resolve_release(ver->as_string());
        n.version = r.table.name;
        n.version_note = r.note;
      } catch (const InputError& e) {
        ver->fail_message(e.message());
      }
    }
    return n;
  });
}

}  // namespace

bool is_builtin_profile_name(std::string_view calibration) {
  const bool json = calibration.size() >= 5 && calibration.substr(calibration.size() - 5) == ".json";
  return !calibration.empty() && calibration.find('/') == std::string_view::npos && !json;
}

Scenario read_scenario(const JsonDocument& doc, const std::filesystem::path& base_dir) {
  Scenario s;
  s.file = doc.file();
  ObjectReader top = doc.root().as_object();
  top.at("schema_version").as_int({.min = 1, .max = 1});
  s.name = top.get_or("name", std::filesystem::path(doc.file()).stem().string());
  s.model = read_model(top.at("model"));
  if (s.model.kind == ModelRef::Kind::HF_CONFIG) s.model.hf_config = resolve(base_dir, s.model.hf_config.string());
  s.training = read_training(top.at("training"));
  s.cluster = read_cluster(top.at("cluster"));
  s.parallelism = read_parallelism(top.at("parallelism"), base_dir, s.training, s.world_size(), s.warnings);
  // Absent, the framework's own: Megatron-Core runs Transformer Engine's fused kernels; plain
  // PyTorch and DeepSpeed (whose engine wraps the user's modules, from a Hugging Face config or
  // not) run the modules eagerly.
  if (!s.training.implementation_given) {
    s.training.implementation =
        s.parallelism.framework == Framework::MEGATRON ? Implementation::FUSED : Implementation::EAGER;
  }
  if (auto n = top.maybe("nccl")) s.nccl = read_nccl(*n);
  if (!s.nccl.version_note.empty()) s.warnings.push_back(doc.file() + ": /nccl/version: " + s.nccl.version_note);
  if (auto c = top.maybe("calibration")) {
    s.calibration = c->as_string();
    // A bare name (no '/', no ".json") is a built-in profile; anything else a file beside the scenario.
    if (s.calibration != "default" && s.calibration != "none" && !is_builtin_profile_name(s.calibration)) {
      s.calibration = resolve(base_dir, s.calibration).string();
    }
  }
  top.finish();

  const auto& p = s.parallelism;
  const std::int64_t dp = p.data;
  const std::int64_t per_step = s.training.micro_batch_size * dp;
  if (s.training.global_batch_size % per_step != 0) {
    throw InputError(s.file, "/training/global_batch_size",
                     "expected a multiple of micro_batch_size x data parallel = " +
                         std::to_string(s.training.micro_batch_size) + " x " + std::to_string(dp) + " = " +
                         std::to_string(per_step) + ", got " + std::to_string(s.training.global_batch_size));
  }
  if (s.cluster.gpus_per_node > 1 && s.cluster.gpus_per_pod < s.cluster.gpus_per_node && !s.cluster.host_ipc &&
      s.cluster.p2p != P2pMode::DISABLED) {
    // Not an error: pods without shared IPC reach each other through the NIC (the transport layer
    // decides); nothing to check here.
  }
  return s;
}

Scenario load_scenario(const std::string& path) {
  const JsonDocument doc = load_json_file(path);
  return read_scenario(doc, std::filesystem::path(path).parent_path());
}

void apply_deepspeed_config(const std::filesystem::path& path, const TrainingSpec& training, int world_size,
                            ParallelismSpec& p, std::vector<std::string>* warnings) {
  const JsonDocument doc = load_json_file(path.string());
  p.deepspeed_config = path;
  apply_deepspeed_config(doc, training, world_size, p, warnings);
}

namespace {

// DeepSpeed settings that change what a step does but that this model does not follow, with the
// value at which they are inert (DeepSpeed's default); a config that sets another value gets a
// warning naming the key. Sources: deepspeed/runtime/zero/config.py, activation_checkpointing/config.py,
// runtime/config.py.
struct Unfollowed {
  const char* pointer;
  nlohmann::json inert;
  const char* what;
};

void warn_unfollowed(const JsonDocument& doc, std::vector<std::string>& warnings) {
  const std::vector<Unfollowed> keys = {
      {"/zero_optimization/zero_hpz_partition_size", 1, "ZeRO++ hierarchical partitioning (hpZ)"},
      {"/zero_optimization/zero_quantized_weights", false, "ZeRO++ quantized weight all-gather (qwZ)"},
      {"/zero_optimization/zero_quantized_gradients", false, "ZeRO++ quantized gradient reduce (qgZ)"},
      {"/zero_optimization/mics_shard_size", -1, "MiCS sharding"},
      {"/zero_optimization/use_all_reduce_for_fetch_params", false, "all-reduce parameter fetch"},
      {"/zero_optimization/stage3_module_granularity_threshold", 0, "ZeRO-3 leaf-module fetch granularity"},
      {"/activation_checkpointing/partition_activations", false, "partitioned activation checkpoints"},
      {"/activation_checkpointing/cpu_checkpointing", false, "activation checkpoints on the CPU"},
      {"/activation_checkpointing/contiguous_memory_optimization", false, "contiguous checkpoint buffers"},
      {"/communication_data_type", nullptr, "the gradient communication dtype (training.grad_reduce_dtype sets it)"},
      {"/sparse_gradients", false, "sparse embedding gradients"},
      {"/compile/enabled", false, "torch.compile of the engine's module"},
      {"/torch_autocast/enabled", false, "torch.autocast in place of DeepSpeed's bf16/fp16 engine"},
      {"/data_efficiency/enabled", false, "curriculum learning and data routing"},
      {"/compression_training", nullptr, "compression training"},
      {"/hybrid_engine/enabled", false, "the hybrid (RLHF) engine"},
  };
  const nlohmann::json& root = doc.root().raw();
  for (const Unfollowed& k : keys) {
    const nlohmann::json::json_pointer ptr(k.pointer);
    if (!root.contains(ptr)) continue;
    const nlohmann::json& v = root.at(ptr);
    if (v.is_null() || v == k.inert || (v.is_string() && v.get<std::string>() == "auto")) continue;
    if (k.inert.is_null() && v.is_object() && v.empty()) continue;
    warnings.push_back(doc.file() + ": " + k.pointer + " = " + v.dump() + ": " + k.what +
                       " is not modelled; the prediction is as if it were unset");
  }
}

}  // namespace

void apply_deepspeed_config(const JsonDocument& doc, const TrainingSpec& training, int world_size,
                            ParallelismSpec& p, std::vector<std::string>* warnings) {
  if (warnings != nullptr) warn_unfollowed(doc, *warnings);
  p.framework = Framework::DEEPSPEED;
  doc.root().read_object([&](ObjectReader& o) {
    // Keys DeepSpeed accepts that do not change the step's time or memory in this model.
    o.allow({"steps_per_print", "wall_clock_breakdown", "gradient_clipping", "optimizer", "scheduler",
             "tensorboard", "wandb", "csv_monitor", "comet", "flops_profiler", "comms_logger", "dump_state",
             "memory_breakdown", "prescale_gradients", "gradient_predivide_factor", "zero_allow_untested_optimizer",
             "zero_force_ds_cpu_optimizer", "amp", "checkpoint", "data_efficiency", "elasticity", "autotuning",
             "compression_training", "aio", "timers", "seed", "communication_data_type", "data_types",
             "seq_parallel_communication_data_type", "activation_checkpointing", "sparse_gradients",
             "load_universal_checkpoint", "use_node_local_storage", "nebula", "weight_quantization",
             "hybrid_engine", "pipeline", "graph_harvesting", "torch_autocast", "compile"});
    auto batch_field = [&](std::string_view key, std::int64_t expected) {
      auto v = o.maybe(key);
      if (!v || v->raw().is_string()) {
        if (v) v->as_choice({"auto"});
        return;
      }
      const std::int64_t got = v->as_int({.min = 1, .max = 1LL << 32});
      if (got != expected) {
        v->fail_message("is " + std::to_string(got) + " but the scenario's training section gives " +
                        std::to_string(expected));
      }
    };
    const std::int64_t micro = training.micro_batch_size;
    const std::int64_t accum = training.global_batch_size / std::max<std::int64_t>(1, micro * world_size);
    batch_field("train_batch_size", training.global_batch_size);
    batch_field("train_micro_batch_size_per_gpu", micro);
    batch_field("gradient_accumulation_steps", accum);
    for (const char* key : {"fp16", "bf16"}) {
      if (auto m = o.maybe(key)) {
        m->read_object([&](ObjectReader& x) {
          x.allow({"loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis", "consecutive_hysteresis",
                   "min_loss_scale", "auto_cast", "fp16_master_weights_and_grads", "immediate_grad_update",
                   "check_grad_overflow"});
          if (auto e = x.maybe("enabled")) {
            if (e->raw().is_string()) {
              e->as_choice({"auto"});
            } else if (e->as_bool() && training.precision != (std::string_view(key) == "bf16" ? Precision::BF16
                                                                                              : Precision::FP16)) {
              e->fail_message(std::string("enables ") + key + " but the scenario's training.precision is " +
                              std::string(to_string(training.precision)));
            }
          }
        });
      }
    }
    o.at("zero_optimization").read_object([&](ObjectReader& z) {
      p.zero_stage = static_cast<int>(z.at("stage").as_int({.min = 0, .max = 3}));
      z.allow({"stage3_gather_16bit_weights_on_model_save", "stage3_gather_fp16_weights_on_model_save",
               "allgather_partitions", "round_robin_gradients", "ignore_unused_parameters", "elastic_checkpoint",
               "load_from_fp32_weights", "memory_efficient_linear", "zero_hpz_partition_size",
               "zero_quantized_weights", "zero_quantized_gradients", "mics_shard_size",
               "mics_hierarchical_params_gather", "stage3_module_granularity_threshold", "use_all_reduce_for_fetch_params",
               "log_trace_cache_warnings", "cpu_offload", "cpu_offload_params", "cpu_offload_use_pin_memory"});
      read_zero_knobs(z, p.zero);
      auto offload = [&](std::string_view key, OffloadTarget& target) {
        if (auto off = z.maybe(key)) {
          off->read_object([&](ObjectReader& x) {
            x.allow({"nvme_path", "buffer_count", "buffer_size", "max_in_cpu", "fast_init", "ratio", "pipeline_read",
                     "pipeline_write"});
            const std::string dev = x.at("device").as_choice({"cpu", "none", "nvme"});
            if (dev == "nvme") {
              // ZeRO-Infinity swaps the offloaded state through the node's local NVMe (aio): its time
              // follows from the drives' read and write bandwidth, which no catalog entry holds.
              x.at("device").fail_message(
                  "NVMe offload (ZeRO-Infinity) needs the node's local NVMe read and write bandwidth, which the "
                  "hardware catalog does not hold for any system; use \"cpu\" or \"none\"");
            }
            target = dev == "cpu" ? OffloadTarget::CPU : OffloadTarget::NONE;
            p.zero.pin_memory = x.get_or("pin_memory", p.zero.pin_memory);
          });
        }
      };
      offload("offload_optimizer", p.offload_optimizer);
      offload("offload_param", p.offload_params);
    });
  });
  if (p.offload_params == OffloadTarget::CPU && p.zero_stage != 3) {
    throw InputError(doc.file(), "/zero_optimization/offload_param", "parameter offload needs stage 3");
  }
}

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::BF16: return "bf16";
    case Precision::FP16: return "fp16";
    case Precision::FP8: return "fp8";
    case Precision::FP32: return "fp32";
  }
  return "bf16";
}

std::string_view to_string(Framework f) {
  switch (f) {
    case Framework::PYTORCH: return "pytorch";
    case Framework::MEGATRON: return "megatron";
    case Framework::DEEPSPEED: return "deepspeed";
  }
  return "pytorch";
}

std::string_view to_string(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::GPIPE: return "gpipe";
    case PipelineSchedule::ONE_F_ONE_B: return "1f1b";
    case PipelineSchedule::INTERLEAVED_1F1B: return "interleaved_1f1b";
  }
  return "1f1b";
}

std::string_view to_string(Checkpointing c) {
  switch (c) {
    case Checkpointing::NONE: return "none";
    case Checkpointing::SELECTIVE: return "selective";
    case Checkpointing::FULL: return "full";
  }
  return "none";
}

std::string_view to_string(Implementation i) {
  switch (i) {
    case Implementation::FUSED: return "fused";
    case Implementation::HF_EAGER: return "hf_eager";
    case Implementation::EAGER: return "eager";
    case Implementation::COMPILED: return "compiled";
  }
  return "fused";
}

std::string_view to_string(Launcher l) {
  switch (l) {
    case Launcher::TORCHRUN: return "torchrun";
    case Launcher::DEEPSPEED: return "deepspeed";
    case Launcher::MPIRUN: return "mpirun";
  }
  return "torchrun";
}

std::string_view to_string(P2pMode m) {
  switch (m) {
    case P2pMode::WRITE: return "write";
    case P2pMode::READ: return "read";
    case P2pMode::DISABLED: return "disabled";
  }
  return "write";
}

int bytes_per_element(Precision p) {
  switch (p) {
    case Precision::FP8: return 1;
    case Precision::BF16:
    case Precision::FP16: return 2;
    case Precision::FP32: return 4;
  }
  return 2;
}

}  // namespace clustersim::models
