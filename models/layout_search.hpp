#pragma once
// Candidate enumeration for the planner: a plan's choices (plan_spec.hpp) expanded into plain
// scenarios, each one exactly what `clustersim simulate` would read, pruned cheaply by
// divisibility and memory before any step is evaluated.
//
// Order. Fields are expanded outermost first in this order, so candidate indices (and every output
// that lists them) are the same on every run:
//   system, gpus_per_node, nodes, seq_len, global_batch_size, precision, fine_tuning, framework,
//   tensor, context, pipeline, data, expert, zero_stage, micro_batch_size, virtual_stages,
//   pipeline_schedule, sequence_parallel, activation_checkpointing, offload, p2p, NCCL variables
//   (by name).
// "auto" fields produce only values that fit what is already chosen (plan_spec.hpp gives each
// rule); values a user lists that do not fit are rejected with the reason and counted.
//
// Pruning, cheapest first:
//   1. Divisibility: GPUs = tensor x pipeline x context x data; global batch a multiple of
//      micro-batch x data; DeepSpeed's pipeline engine accepts ZeRO stage 0 or 1 only
//      (deepspeed/runtime/pipe/engine.py asserts zero_optimization_stage() < 2); Megatron's
//      interleaved schedule needs micro-batches % pipeline == 0 (megatron/training.py) and
//      layers % (pipeline x virtual_stages) == 0.
//   2. The scenario reader (scenario.hpp) and the layout checks against the model
//      (ParallelLayout: heads, kv heads and MLP width divisible by tensor, experts by expert, ...).
//   3. Memory (memory_model.hpp): the peak of the first and of the last pipeline stage. The first
//      stage holds the most micro-batches in flight (1F1B: p - i on stage i) and the embedding; the
//      last holds the LM head and logits; a middle stage has neither extra and fewer in flight, so
//      its peak is below the first stage's and the two ends give the largest peak.
// Candidates that do not fit are kept (fits = false) so they are counted and listed with the
// reason; they are not evaluated.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"
#include "models/memory_model.hpp"
#include "models/plan_spec.hpp"
#include "models/scenario.hpp"
#include "models/transformer_config.hpp"

namespace clustersim::models {

// A system or instance named by the plan, with the calibration profile its candidates use.
struct PlanSystem {
  std::string name;
  hardware::NodeSpec node;
  std::optional<hardware::CalibrationProfile> profile;  // none: defaults, uncalibrated
  std::string calibration;                              // the scenario's "calibration" value
};

struct LayoutCandidate {
  std::size_t index = 0;  // enumeration order: the candidate's stable id
  int system = 0;         // index into SearchSpace::systems
  Scenario scenario;
  std::string layout;      // "megatron TP8 PP4 DP16 ZeRO-1 SP, mb 1, selective"
  std::string shape;       // the layout without data parallelism (one line of the scaling chart)
  MemoryBreakdown memory;  // the stage with the largest peak
  int peak_stage = 0;
  bool fits = false;
};

// Combinations rejected for one reason, with the first one as an example.
struct RejectedCombinations {
  std::string reason;
  std::int64_t count = 0;
  std::string example;  // "p5.48xlarge x 16, TP8 PP32" ...
};

struct SearchSpace {
  TransformerConfig model;
  std::vector<PlanSystem> systems;
  std::vector<LayoutCandidate> candidates;  // valid layouts, fitting or not, in enumeration order
  std::vector<RejectedCombinations> rejected;
  std::int64_t combinations = 0;  // valid + rejected
  std::int64_t rejected_count = 0;
  std::int64_t does_not_fit = 0;
};

struct SearchProgress {
  std::int64_t done = 0;  // combinations prepared so far
};

struct LayoutSearchOptions {
  int threads = 1;
  // Called from the calling thread between batches.
  std::function<void(const SearchProgress&)> progress;
};

// Expands and prunes; InputError (naming the plan file and key) when the plan itself is wrong, or
// when no combination is valid (with the most frequent reason).
SearchSpace enumerate_layouts(const PlanSpec& plan, const hardware::Catalog& catalog,
                              const LayoutSearchOptions& options = {});

// Short labels of a scenario's layout (shared with reports).
std::string layout_label(const Scenario& s, bool with_data = true);
std::string candidate_label(const Scenario& s);  // "p5.48xlarge x 16, TP8 PP4 DP4 ..."

// The profile a scenario's "calibration" names for a node: the catalog's default for the node
// (none when it names none) or the profile file.
std::optional<hardware::CalibrationProfile> resolve_calibration(const std::string& calibration,
                                                                const hardware::NodeSpec& node);

}  // namespace clustersim::models
