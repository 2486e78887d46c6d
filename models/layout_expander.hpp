#pragma once
// The expansion of a plan's choices into combinations (layout_search.hpp gives the order and the
// rules): one level per choice field, outermost first; "auto" levels produce only the values that
// fit the levels above them; each (partial) combination that cannot run is rejected with a reason.
// Internal to the planner: layout_search.cpp drives it.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/layout_search.hpp"
#include "models/plan_spec.hpp"
#include "models/transformer_config.hpp"

namespace clustersim::models::layout_expansion {

using Json = nlohmann::json;

// Levels of the expansion, outermost first (layout_search.hpp "Order").
enum Level : int {
  SYSTEM,
  GPN,
  NODES,
  SEQ,
  GBS,
  PRECISION,
  FINE_TUNING,
  FRAMEWORK,
  TP,
  CP,
  PP,
  DP,
  EP,
  ZERO,
  MBS,
  VP,
  SCHEDULE,
  SP,
  RECOMPUTE,
  OFFLOAD,
  P2P,
  FIXED_LEVELS
};

inline constexpr const char* kPointers[FIXED_LEVELS] = {
    "/cluster/system",
    "/cluster/gpus_per_node",
    "/cluster/nodes",
    "/training/seq_len",
    "/training/global_batch_size",
    "/training/precision",
    "/training/fine_tuning",
    "/parallelism/framework",
    "/parallelism/tensor",
    "/parallelism/context",
    "/parallelism/pipeline",
    "/parallelism/data",
    "/parallelism/expert",
    "/parallelism/zero_stage",
    "/training/micro_batch_size",
    "/parallelism/virtual_stages",
    "/parallelism/pipeline_schedule",
    "/parallelism/sequence_parallel",
    "/training/activation_checkpointing",
    "/parallelism/offload",
    "/cluster/p2p",
};

// One assignment of every level (null: not set, the scenario's default applies).
using State = std::vector<Json>;
// "system=p5.48xlarge nodes=16 tensor=8" for the levels assigned so far.
std::string describe(const State& s, const std::vector<std::string>& pointers, const std::vector<PlanSystem>& systems,
                     std::size_t upto);

// Neutral values for a structure check of the plan's scenario sections: one GPU, no splits.
Json neutral_value(int level, const PlanChoice* c, const std::vector<PlanSystem>& systems);

struct Expander {
  const PlanSpec& plan;
  const TransformerConfig& model;
  const std::vector<PlanSystem>& systems;
  std::vector<std::string> pointers;  // one per level
  std::vector<const PlanChoice*> choices;
  std::int64_t limit;

  // Each full combination, and each rejected (partial) one, in enumeration order.
  std::function<void(const State&)> leaf;
  std::function<void(const std::string& reason, const std::string& example)> reject;

  std::int64_t count = 0;

  // Visits every combination below `level`.
  void expand(std::size_t level, State& s);

 private:
  void bump();
  void rejected(const State& s, std::size_t level, const std::string& reason);
  const PlanChoice* choice(int level) const { return choices[static_cast<std::size_t>(level)]; }
  // Values of a level given the levels before it (empty when nothing fits).
  std::vector<Json> values(int level, const State& s) const;
  // The first reason a (partial) combination cannot run, or "".
  std::string check(int level, const State& s) const;
};

}  // namespace clustersim::models::layout_expansion
