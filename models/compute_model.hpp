#pragma once
// Time of each GPU kernel, kernel by kernel (not one MFU knob), from calibration parameters with
// defaults derived from the catalog's GPU figures; and the host side of offloading (PCIe copies,
// DeepSpeed's CPU Adam).
//
// Kernel time (roofline with a fixed cost):
//   t = max(F / (P_dtype x eff), B / (BW_hbm x e_mem)) + n_kernels x t0
//   GEMM       eff = r_sus x e_max(dtype) x wave(m, n, b) / (1 + k_half / k + mn_half / min(m, n))
//              (compute_parameters.hpp: wave quantization for grouped GEMMs only)
//   attention  eff = r_sus x e_max(fwd|bwd) / (1 + s_half(fwd|bwd) / s_kv)  (against the bf16 peak)
// r_sus: a training step keeps the GPU busy, so its clock settles where the power limit holds it;
// the curves describe kernels timed in short repeats (the calibration sweeps, public benchmarks).
//   memory     F ignored: t = B / (BW_hbm x e_mem) + n_kernels x t0
//   strided    (PyTorch's non-vectorized element-wise path, kernel_op.hpp)
//              t = max(B / (BW_hbm x e_mem), N / (P_fp32 x r_strided)) + n_kernels x t0
// with F and B from kernel_op.hpp, P the catalog peak (bf16 and fp16: peak_bf16; fp8: peak_fp8;
// fp32: peak_fp32), BW_hbm the catalog HBM bandwidth, SMs (for the wave count) the catalog SM count.
//
// Parameters (name: meaning; default when no profile has it, and why):
//   compute.gemm.<dtype>.max_efficiency  ratio of the dtype's peak reached by large GEMMs
//        bf16/fp16 0.75 (cuBLAS reaches ~700-780 of H100's 989 TFLOP/s and ~250-270 of A100's 312),
//        fp8 0.65 (H100 fp8 GEMMs ~1250-1400 of 1979), fp32 0.80
//   compute.gemm.<dtype>.half_k          reduction depth at which efficiency halves: 180 (cuBLASLt
//        bf16 on H200, 358 transformer shapes: 178; shallow GEMMs spend it in prologue, epilogue
//        and split-K reductions)
//   compute.gemm.<dtype>.half_mn         narrower output side at which efficiency halves: 40 (the
//        same fit: 36; tensor-core tiles left partly empty)
//   compute.gemm.tile_m, compute.gemm.tile_n  output tile for the wave quantization of grouped
//        GEMMs: 128 x 128
//   compute.attention.fwd.max_efficiency  0.55, compute.attention.bwd.max_efficiency 0.45 of the
//        bf16 peak (FlashAttention-2 reports 50-73% of A100 peak forward and less backward;
//        on H100 FA2 ~35-40%, FA3/cuDNN 55-75%: middle values)
//   compute.attention.fwd.half_seq, compute.attention.bwd.half_seq  key length at which
//        attention efficiency halves: 256 tokens
//   compute.memory.efficiency  ratio of the catalog HBM bandwidth reached by memory-bound kernels:
//        0.80 (public copy kernels reach 0.87-0.95 of H100/H200 HBM bandwidth; fused element-wise
//        kernels somewhat less)
//   compute.kernel_overhead  fixed GPU time per kernel (launch gap, ramp, tail): 2 us (an H200 runs
//        empty full-grid kernels queued back to back at 1.95 us each: the harness's launch-gap test)
//   compute.sustained_ratio  r_sus, throughput of GEMMs and attention in a training step over what
//        the curves give: 0.96 (an H200 at its 700 W limit ran 8192^3 bf16 products between HBM
//        passes at 693 TFLOP/s, its SM clock held at ~1545 MHz by the power cap, where the default
//        curve gives 722; in 1 s bursts after idle it runs them at 803, at 1980 MHz)
//   compute.memory.strided_elements_per_flop  elements per second of PyTorch's generic
//        (non-vectorized) element-wise kernel over the catalog fp32 peak: 1/200 (it computes every
//        operand's offset per element; ~330-400 G elements/s measured on an H200, 66.9 TFLOP/s fp32)
//   host.h2d.pinned.bandwidth, host.d2h.pinned.bandwidth  one GPU copying alone: 0.80 of the
//        catalog PCIe bandwidth per direction (measured A100 26.3 of 31.5, H100 51 of 63 GB/s)
//   host.h2d.pageable.bandwidth, host.d2h.pageable.bandwidth  0.40 of pinned (staged copies)
//   host.h2d.pinned.aggregate_bandwidth, host.d2h.pinned.aggregate_bandwidth  every GPU of the node
//        at once, total: the least of (GPUs x one GPU), (per PCIe switch: min(its GPUs x one GPU,
//        its uplink)), (sockets x memory bandwidth x host.memory.efficiency)
//   host.memory.efficiency  ratio of the catalog host memory bandwidth a streaming kernel reaches: 0.60
//   host.cpu_adam.params_per_second_per_core  DeepSpeed CPU Adam (AVX-512 build) on one thread:
//        1e9 (1.04e9 measured with DeepSpeed 0.19.6 on a Sapphire Rapids guest,
//        calibrate/results/lent-1xh100-2026-12-07-offload/cpu-optim.json; Adam reads fp32 param,
//        grad, m, v and writes param, m, v: ~30 B a parameter)
//   host.cpu_adam.node_params_per_second  the node's memory-bound limit: sockets x memory
//        bandwidth x host.memory.efficiency / 30 B
//   host.torch_adamw.params_per_second_per_core  torch.optim.AdamW as it runs on CPU tensors by
//        default (the per-tensor loop: foreach and fused are opt-in on the CPU), one thread: 2e8
//        (2.05e8 measured with torch 2.11 beside the 1.04e9 above)
//   host.torch_adamw.node_fraction  its node-wide limit over CPU Adam's: 0.30 (its separate
//        element-wise passes move ~3.4x the bytes: 1.02e9 against 3.43e9 on all 16 cores there)
//   host.deepspeed.zero3_module_hook.forward, .backward  the CPU time of DeepSpeed ZeRO-3's hooks
//        around one module's forward and backward (fetch_sub_module, release_sub_module, their
//        trace bookkeeping, and in the backward the gradient hooks' bucket work;
//        partitioned_param_coordinator.py, stage3.py): 470 us and 700 us (DeepSpeed 0.19.6 on a
//        Sapphire Rapids guest, Llama-3.2-1B on one GPU: ZeRO-3's passes held by its 214 modules'
//        hooks, calibrate/results/lent-1xh100-2026-12-07-offload)
// CPU work runs on the rank's threads (host_threads): a rank gets
//   cores = min(threads, the pod's CPU limit / its processes, physical cores / ranks of the node)
// CPU Adam runs at min(cores x per-core rate, node limit / ranks); torch's AdamW loop likewise with
// its own per-core rate and node fraction, and a PyTorch CPU pass moves 75 B per AdamW-loop parameter.
// Every default is recorded in the ParameterSet as uncalibrated with a widened uncertainty.

#include <cstdint>
#include <vector>

#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"
#include "models/kernel_op.hpp"
#include "models/scenario.hpp"

namespace clustersim::models {

class ComputeModel {
 public:
  // Reads every parameter once from `params` (which records them). The GPU must outlive the model.
  ComputeModel(const hardware::GpuSpec& gpu, hardware::ParameterSet& params);

  Duration time(const KernelOp& op) const;
  // Fills op.time of every op.
  void annotate(std::vector<KernelOp>& ops) const;
  // A memory-bound pass over `bytes` in `kernels` launches.
  Duration memory_time(Bytes bytes, int kernels = 1) const;

  FlopRate peak(Precision dtype) const;
  double gemm_efficiency(const GemmShape& g, Precision dtype) const;
  double attention_efficiency(const AttentionShape& a, bool backward) const;
  Bandwidth memory_bandwidth() const { return memory_bandwidth_; }
  Duration kernel_overhead() const { return overhead_; }
  const hardware::GpuSpec& gpu() const { return gpu_; }

 private:
  struct GemmCurve {
    double max_efficiency = 0;
    double half_k = 0;
    double half_mn = 0;
  };
  const GemmCurve& curve(Precision p) const;

  const hardware::GpuSpec& gpu_;
  GemmCurve bf16_, fp16_, fp8_, fp32_;
  double tile_m_ = 0, tile_n_ = 0;
  double attn_max_[2] = {0, 0};
  double attn_half_[2] = {0, 0};
  Bandwidth memory_bandwidth_;
  Duration overhead_;
  double sustained_ = 1;     // r_sus
  double strided_rate_ = 0;  // elements per second
};

// The CPU threads of one rank's host work (DeepSpeed CPU Adam's OpenMP loop, PyTorch's intra-op
// pool) and the physical cores they get while every rank of the node works at once.
struct HostThreads {
  int ranks_on_node = 1;   // processes of the job on one node
  int ranks_per_pod = 1;   // processes one pod's launcher starts
  int threads = 1;         // OMP_NUM_THREADS in effect for each
  double cores = 1;        // physical cores one rank's threads get
  std::string why;         // where `threads` comes from, in words
};

// Threads from the placement: OMP_NUM_THREADS as set in the pod, else the launcher's rule
// (scenario.hpp Launcher), else OpenMP's default of every CPU the pod sees (its CPU limit, or the
// host's logical CPUs); cores = min(threads, limit / ranks_per_pod, physical cores / ranks_on_node).
HostThreads host_threads(const ClusterSpec& cluster, const hardware::NodeSpec& node);

// The host side of offloading for one node.
class HostModel {
 public:
  HostModel(const hardware::NodeSpec& node, hardware::ParameterSet& params);

  // Bandwidth one GPU gets when `concurrent` GPUs of the node copy in the same direction at once.
  Bandwidth copy_bandwidth(bool host_to_device, bool pinned, int concurrent = 1) const;
  int cores() const { return cores_; }  // the node's physical cores
  // DeepSpeed CPU Adam for one rank on `cores` physical cores (HostThreads::cores) while `ranks`
  // ranks of the node run theirs at once; cpu_adam_rate(ranks): on an even share of the cores.
  Duration cpu_adam_time(std::int64_t params, double cores, int ranks) const;
  double cpu_adam_rate(double cores, int ranks) const;  // parameters per second for one rank
  double cpu_adam_rate(int ranks) const;
  // torch.optim.AdamW's default CPU loop, as FSDP2's CPUOffloadPolicy runs it.
  Duration torch_adamw_time(std::int64_t params, double cores, int ranks) const;
  // A pass of PyTorch's CPU element-wise kernels (a cast, an in-place scale) over `bytes`: the
  // rate of torch's AdamW loop times the ~75 B it moves a parameter (its decay, two moment
  // updates, square root, division and update each read and write fp32 tensors).
  Duration torch_pass_time(Bytes bytes, double cores, int ranks) const;
  double torch_adamw_rate(double cores, int ranks) const;  // parameters per second for one rank
  // DeepSpeed ZeRO-3's hooks around one module's forward or backward
  // (host.deepspeed.zero3_module_hook.forward, .backward).
  Duration zero3_module_hook(bool backward) const { return zero3_hook_[backward ? 1 : 0]; }
  // The CPU time to issue one kernel of an eager step (host.dispatch.forward_per_kernel,
  // .backward_per_kernel): forward and recomputed forward from Python, backward from autograd.
  Duration dispatch_per_kernel(bool backward) const { return dispatch_[backward ? 1 : 0]; }
  // DTensor's added CPU time per tensor-parallel linear (host.dispatch.dtensor.*).
  Duration dtensor_per_linear(bool backward) const { return dtensor_[backward ? 1 : 0]; }

 private:
  Bandwidth pinned_[2], pageable_[2], aggregate_[2];  // index: 0 = d2h, 1 = h2d
  double adam_per_core_ = 0;
  double adam_node_ = 0;
  double torch_adamw_per_core_ = 0;
  double torch_adamw_node_fraction_ = 1;
  int cores_ = 1;
  Duration zero3_hook_[2];
  Duration dispatch_[2];
  Duration dtensor_[2];
};

// Fails (InputError at /training/precision of `file`) when the GPU cannot run the precision
// (fp8 without fp8 tensor cores).
void check_gpu_supports(const TrainingSpec& training, const hardware::GpuSpec& gpu, const std::string& file);

}  // namespace clustersim::models
