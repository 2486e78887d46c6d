#pragma once
// What one evaluation of a training step returns: the seam between the step model (which fills it)
// and its users (`clustersim simulate`, the planner, reports).
//
// Two fidelities of one model (DESIGN.md "Fidelity"): FAST is the closed form from the same
// parameters, used to sweep thousands of candidate layouts; EVENT runs the task graph on the
// discrete-event simulator with flow-level contention, and is used for `simulate` and to re-check
// the planner's best candidates. Times are seconds (double): a step is far longer than the
// picosecond resolution matters for, and the planner multiplies them into days.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hardware/calibration_profile.hpp"
#include "hardware/units.hpp"
#include "models/scenario.hpp"

namespace clustersim::models {

enum class Fidelity { FAST, EVENT };

// Where the step's time goes on the critical rank; the parts sum to step_time_s.
struct StepBreakdown {
  double compute_s = 0;         // forward, backward and recomputation kernels on the critical path
  double exposed_comm_s = 0;    // communication not hidden behind compute
  double pipeline_bubble_s = 0; // pipeline fill and drain
  double optimizer_s = 0;       // the optimizer step (on the GPU, or CPU Adam when offloaded)
  double offload_s = 0;         // exposed host<->device transfers of offloaded state
  double host_s = 0;            // the GPU waiting for its rank's CPU thread (framework hooks)
};

// The largest per-GPU peak and its split (the rank with the highest peak).
struct MemorySummary {
  Bytes peak;
  Bytes weights;
  Bytes gradients;
  Bytes optimizer_state;
  Bytes activations;
  Bytes buffers;
  Bytes usable;     // what the GPU offers
  bool fits = true;
  Bytes shortfall;  // peak - usable when it does not fit, else 0
  Bytes host_bytes; // per node, for offloaded state
  // What the framework's caching allocator hands out at the peak (torch.cuda.max_memory_allocated):
  // the peak less the CUDA context, NCCL's buffers and the allocator's fragmentation.
  Bytes allocated;
};

// One communication pattern of the step, summed over the step (for "which collective is the
// bottleneck").
struct CommSummary {
  std::string name;       // "TP all-reduce", "ZeRO-3 all-gather", "PP send", ...
  std::string group;      // "tensor", "data", "pipeline", "context", "expert"
  std::string algorithm;  // NCCL's choice, e.g. "ring/simple"
  std::string transport;  // "P2P/CUMEM/read", "NET/ofi/GDRDMA", ...
  std::int64_t calls = 0;
  Bytes bytes;            // payload per rank over the step
  double time_s = 0;      // busy time over the step
  double exposed_s = 0;   // part of it on the critical path
};

// The host side of one rank (compute_model.hpp HostThreads), where the step does CPU work.
struct HostSummary {
  bool cpu_work = false;      // CPU Adam, framework hooks or kernel issue in the step
  int threads_per_rank = 1;   // OMP_NUM_THREADS in effect
  double cores_per_rank = 1;  // physical cores its threads get
  int ranks_per_node = 1;
  std::string threads_from;   // why that many threads
  double cpu_adam_s = 0;      // CPU Adam alone, on the critical stage
  double cpu_optimizer_s = 0; // all the optimizer step's CPU work
  double hooks_s = 0;         // framework hooks' CPU time over the step (all micro-batches)
  double dispatch_s = 0;      // CPU time issuing the passes' kernels over the step
  double kernels_s = 0;       // the GPU time of those kernels
  std::int64_t kernels = 0;   // kernels launched over the step
};

// The step time's band (step_band.hpp): [low_s, high_s] of StepEstimate holds the measured step
// with probability `coverage`; the 90% band beside it.
struct StepBand {
  double coverage = 0.68;
  double low90_s = 0, high90_s = 0;
  std::string regime;      // "compute", "communication", "host"
  bool calibrated = false; // the regime's parameters came from a calibration profile
  double scale = 0;        // the parameters' own relative uncertainty (prior_sigma), for reference
  std::string cell;        // the validation scores behind the widths ("compute, calibrated"; "" none)
  int scores = 0;          // how many
};

struct StepEstimate {
  Fidelity fidelity = Fidelity::FAST;
  double step_time_s = 0;
  double low_s = 0;   // the band of probability band.coverage (68%)
  double high_s = 0;
  StepBand band;
  std::int64_t tokens_per_step = 0;
  double tokens_per_s = 0;
  double model_flops_per_step = 0;  // 6N-style model FLOPs (no recomputation) summed over ranks
  double mfu = 0;                   // model FLOPs / (step time x GPUs x peak bf16)
  StepBreakdown breakdown;
  MemorySummary memory;
  std::vector<CommSummary> comms;
  HostSummary host;
  std::string bottleneck;  // one sentence: what limits the step
  std::vector<std::string> warnings;
  std::vector<hardware::UsedParameter> parameters;  // provenance of every parameter used
};

// How the planner asks for an estimate (tests inject their own).
using StepEvaluator = std::function<StepEstimate(const Scenario&, Fidelity)>;

}  // namespace clustersim::models
