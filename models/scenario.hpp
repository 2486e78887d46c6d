#pragma once
// The scenario file (DESIGN.md "Scenario file"): a model, a training recipe, a parallel layout, a
// cluster and NCCL settings. Loaded strictly: an unknown key, a missing required key, a wrong
// type or an out-of-range value is an InputError naming the file, the JSON pointer and what was
// expected. Cross-field checks that need the model (heads divisible by TP, ...) live with the
// layout code; this file checks what the scenario alone can tell.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hardware/json_reader.hpp"
#include "hardware/units.hpp"

namespace clustersim::models {

// Where the transformer's shape comes from. For INLINE the fields are kept as JSON with their
// location and read strictly by the transformer-config reader.
struct ModelRef {
  enum class Kind { PRESET, HF_CONFIG, INLINE };
  Kind kind = Kind::PRESET;
  std::string preset;                 // PRESET
  std::filesystem::path hf_config;    // HF_CONFIG, resolved against the scenario's directory
  nlohmann::json inline_fields;       // INLINE
  std::string file;                   // the scenario file, for errors
  std::string pointer;                // "/model"
};

enum class Precision { BF16, FP16, FP8, FP32 };
enum class Optimizer { ADAMW, ADAM, SGD };
enum class Checkpointing { NONE, SELECTIVE, FULL };
// Which layers "full" recompute checkpoints (Megatron-Core's recompute_method; models/recompute.hpp).
enum class RecomputeMethod { UNIFORM, BLOCK };
enum class FineTuning { FULL, LORA };
// The attention kernel: a fused flash-attention kernel (FlashAttention-2/3, cuDNN fused attention),
// or the unfused sequence of Megatron-LM before 2022: batched QK^T GEMM, fused scale-mask-softmax,
// dropout, batched PV GEMM, with the b x heads x s x s scores in HBM.
enum class AttentionKernel { FLASH, UNFUSED };
// Whose kernels run the layers outside the GEMMs and attention (layer_ops.hpp lists each kernel by
// kernel):
//   fused     Megatron-Core with Transformer Engine (one kernel per norm, rotary, activation,
//             fused cross-entropy; fused qkv and gate+up GEMMs)
//   hf_eager  Hugging Face transformers modules in PyTorch eager mode (RMSNorm in fp32 in eight
//             kernels, rotary on transposed views, SiLU and the product apart, fp32 logits)
//   eager     plain PyTorch modules as written (F.rms_norm's one fused kernel, rotary on
//             transposed views, SiLU and the product apart, F.cross_entropy over fp32 logits)
//   compiled  torch.compile of those modules (Inductor fuses each residual add into the next
//             norm, rotary into one kernel per tensor, SwiGLU into one; online log-softmax)
enum class Implementation { FUSED, HF_EAGER, EAGER, COMPILED };

struct LoraSpec {
  int rank = 16;
  double alpha = 32;
  std::vector<std::string> target_modules{"q_proj", "k_proj", "v_proj", "o_proj"};
};

struct TrainingSpec {
  std::int64_t seq_len = 4096;
  std::int64_t micro_batch_size = 1;
  std::int64_t global_batch_size = 1;
  Precision precision = Precision::BF16;
  Precision grad_reduce_dtype = Precision::FP32;
  Optimizer optimizer = Optimizer::ADAMW;
  Checkpointing activation_checkpointing = Checkpointing::NONE;
  // training.recompute_method and training.recompute_num_layers (with "full" only, both or
  // neither, as Megatron-Core requires); absent, uniform groups of one layer: every layer
  // checkpointed on its own.
  RecomputeMethod recompute_method = RecomputeMethod::UNIFORM;
  std::int64_t recompute_num_layers = 1;
  bool recompute_given = false;
  std::optional<double> tokens;  // tokens to train, for time-to-train figures
  FineTuning fine_tuning = FineTuning::FULL;
  LoraSpec lora;
  AttentionKernel attention_kernel = AttentionKernel::FLASH;  // training.attention: "flash" | "unfused"
  // training.implementation: "fused" | "hf_eager" | "eager" | "compiled"; absent, the framework's
  // own (read_scenario): fused under megatron, eager under pytorch and deepspeed.
  Implementation implementation = Implementation::FUSED;
  bool implementation_given = false;
};

enum class Framework { PYTORCH, MEGATRON, DEEPSPEED };
enum class PipelineSchedule { GPIPE, ONE_F_ONE_B, INTERLEAVED_1F1B };
enum class OffloadTarget { NONE, CPU };

// A DeepSpeed numeric knob: a number, "auto" (resolved from the model as the Hugging Face trainer
// does: reduce_bucket_size = h^2, stage3_prefetch_bucket_size = 0.9 h^2,
// stage3_param_persistence_threshold = 10 h), or absent (DeepSpeed's default).
struct ZeroKnob {
  bool is_auto = false;
  std::optional<double> value;
};

// DeepSpeed ZeRO knobs (DeepSpeed semantics and defaults).
struct ZeroKnobs {
  ZeroKnob reduce_bucket_size;                  // elements
  ZeroKnob allgather_bucket_size;               // elements (stage 1/2)
  ZeroKnob stage3_prefetch_bucket_size;         // elements
  ZeroKnob stage3_param_persistence_threshold;  // elements
  ZeroKnob stage3_max_live_parameters;
  ZeroKnob stage3_max_reuse_distance;
  ZeroKnob sub_group_size;
  bool overlap_comm = true;
  bool contiguous_gradients = true;
  bool reduce_scatter = true;
  bool pin_memory = true;
};

// PyTorch FSDP2 knobs.
struct FsdpKnobs {
  bool reshard_after_forward = true;
  int prefetch_blocks = 1;
  // torch.optim.AdamW's implementation for the CPU step under CPUOffloadPolicy: "default" (the
  // per-tensor loop torch picks for CPU tensors), "foreach" or "fused" (fused=True).
  enum class CpuAdamw { DEFAULT, FOREACH, FUSED } cpu_optimizer = CpuAdamw::DEFAULT;
};

// Megatron-Core knobs.
struct MegatronKnobs {
  bool distributed_optimizer = true;
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  bool tp_comm_overlap = false;
};

struct ParallelismSpec {
  Framework framework = Framework::PYTORCH;
  int data = 1;
  int tensor = 1;
  int pipeline = 1;
  int context = 1;
  int expert = 1;
  int zero_stage = 0;
  bool sequence_parallel = false;
  PipelineSchedule pipeline_schedule = PipelineSchedule::ONE_F_ONE_B;
  int virtual_stages = 1;
  // Allow layer counts that pipeline x virtual_stages does not divide (Megatron-Core's uneven
  // split, --decoder-first/last-pipeline-num-layers; Llama 3 405B's 126 layers on 16 stages): the
  // first L mod (pp vp) chunks get one layer more.
  bool uneven_pipeline = false;
  OffloadTarget offload_optimizer = OffloadTarget::NONE;
  OffloadTarget offload_params = OffloadTarget::NONE;
  // Rank order from innermost to outermost dimension, Megatron's default "tp-cp-ep-dp-pp".
  std::string rank_order = "tp-cp-ep-dp-pp";
  ZeroKnobs zero;
  FsdpKnobs fsdp;
  MegatronKnobs megatron;
  std::optional<std::filesystem::path> deepspeed_config;  // the DeepSpeed JSON it was read from
};

enum class P2pMode { WRITE, READ, DISABLED };

struct NetworkOverride {
  std::optional<std::string> fabric;
  std::optional<int> nics;
  std::optional<Bandwidth> nic_bandwidth;
  std::optional<std::string> topology;  // single_switch | leaf_spine | rail_optimized
  std::optional<int> nodes_per_leaf;
  std::optional<double> oversubscription;
  std::optional<bool> gpudirect_rdma;
};

// How a pod starts its processes (cluster.placement.launcher). It decides the CPU threads each
// rank's OpenMP and PyTorch intra-op pools get when OMP_NUM_THREADS is not set:
//   torchrun   torch.distributed.run sets OMP_NUM_THREADS=1 for every process when it starts more
//              than one per pod (nproc_per_node > 1), else leaves OpenMP's default (every CPU the
//              pod sees); PyTorchJob, torch elastic and the Hugging Face Trainer under torchrun
//   deepspeed  the deepspeed launcher leaves OMP_NUM_THREADS unset (without --bind_cores_to_rank):
//              every process sees every CPU of the pod
//   mpirun     as deepspeed (Open MPI binds nothing by default for more than 2 processes)
enum class Launcher { TORCHRUN, DEEPSPEED, MPIRUN };

struct ClusterSpec {
  std::string system;  // catalog system or instance name
  int nodes = 1;
  int gpus_per_node = 8;
  int gpus_per_pod = 8;   // placement: GPUs (processes) per Kubernetes pod
  bool host_ipc = true;   // pods share the host IPC namespace
  Launcher launcher = Launcher::TORCHRUN;
  std::optional<int> omp_num_threads;  // OMP_NUM_THREADS set in the pod
  std::optional<double> cpus_per_pod;  // the pod's CPU limit (cores); none: every CPU of the host
  P2pMode p2p = P2pMode::WRITE;
  NetworkOverride network;
  std::optional<bool> fabric_manager;  // NVSwitch fabric manager running (default: yes)
};

struct NcclSpec {
  std::map<std::string, std::string> env;
  std::string version = "2.28";  // the table's name (a patch release without one: its nearest patch's)
  std::string version_note;      // sim/nccl/nccl_release.hpp: said when another patch's table stands in
};

struct Scenario {
  std::string file;
  std::string name;
  ModelRef model;
  TrainingSpec training;
  ParallelismSpec parallelism;
  ClusterSpec cluster;
  NcclSpec nccl;
  // "default", "none" (catalog fallbacks only), a built-in profile's name (is_builtin_profile_name)
  // or a profile path (resolved).
  std::string calibration = "default";
  // Keys the loader read and accepted but the model does not follow (a DeepSpeed config's ZeRO++
  // settings, ...), one line each naming the file and key.
  std::vector<std::string> warnings;
  int world_size() const { return cluster.nodes * cluster.gpus_per_node; }
};

// Whether a scenario's "calibration" names a built-in profile rather than a file: no '/' and no
// ".json" ending ("lent-1xh100-2026-12-host"; "./mine.json" or "mine.json" are files).
bool is_builtin_profile_name(std::string_view calibration);

// Loads a scenario strictly. Paths inside it (hf_config, deepspeed_config, calibration) are resolved
// against the scenario's directory.
Scenario load_scenario(const std::string& path);
// The same from an already parsed document (fuzzers and tests); `base_dir` resolves paths.
Scenario read_scenario(const JsonDocument& doc, const std::filesystem::path& base_dir);

// Reads a DeepSpeed JSON config as users have it ("auto" values allowed) into `parallelism`,
// resolving "auto" batch sizes from `training` and checking them against it.
// Keys it accepts but does not follow are appended to `warnings` (when given).
void apply_deepspeed_config(const std::filesystem::path& path, const TrainingSpec& training, int world_size,
                            ParallelismSpec& parallelism, std::vector<std::string>* warnings = nullptr);
// The same from an already parsed document (fuzzers and tests).
void apply_deepspeed_config(const JsonDocument& doc, const TrainingSpec& training, int world_size,
                            ParallelismSpec& parallelism, std::vector<std::string>* warnings = nullptr);

std::string_view to_string(Precision p);
std::string_view to_string(Framework f);
std::string_view to_string(PipelineSchedule s);
std::string_view to_string(Checkpointing c);
std::string_view to_string(Implementation i);
std::string_view to_string(P2pMode m);
std::string_view to_string(Launcher l);
// Bytes per element of a precision (fp8 = 1, bf16/fp16 = 2, fp32 = 4).
int bytes_per_element(Precision p);

}  // namespace clustersim::models
