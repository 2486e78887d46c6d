#pragma once
// What a plan run produces: every candidate with its step estimate, time to train and costs, the
// rankings by time and by cost, the time/cost Pareto frontier, the event-simulation re-check of the
// best, and the sensitivity of the best to the links and parameters that move it most. Reports
// (reports/plan_report.hpp) and the result JSON are built from this alone.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/layout_search.hpp"
#include "models/plan_costs.hpp"
#include "models/plan_spec.hpp"
#include "models/step_estimate.hpp"

namespace clustersim::models {

enum class CandidateStatus {
  FEASIBLE,
  DOES_NOT_FIT,       // memory model (pruned before evaluation) or the step model says so
  EVALUATION_FAILED,  // the step model rejected the scenario
  MISSES_DEADLINE,    // under every priced option
  OVER_BUDGET,        // under every priced option
  NO_OPTION,          // no option is priced and meets both the deadline and the budget
};
std::string_view to_string(CandidateStatus s);

struct PlanCandidate {
  std::size_t id = 0;  // = LayoutCandidate::index
  CandidateStatus status = CandidateStatus::DOES_NOT_FIT;
  std::string reason;  // why it is not feasible
  bool evaluated = false;
  // The fast estimate, kept without its per-collective and per-parameter lists (thousands of
  // candidates); their counts stay below.
  StepEstimate fast;
  int parameters_used = 0;
  int parameters_calibrated = 0;
  std::optional<StepEstimate> event;  // re-checked with the event simulation
  std::string event_error;
  double tokens = 0;
  std::int64_t tokens_per_step = 0;
  std::int64_t steps = 0;
  double compute_s = 0, compute_low_s = 0, compute_high_s = 0;
  WallTime wall;  // expected: compute + checkpoint writes + failures (plan_costs.hpp)
  double wall_low_s = 0, wall_high_s = 0;
  double wall_q_s = 0;  // nominal wall time at the plan's confidence (= wall.nominal_s without one)
  double gpu_hours = 0, node_hours = 0;
  CheckpointCost checkpoint;
  Interruptions failures;          // the job's failure rate and restart time
  double dataset_bytes = 0;        // the training data set, stored beside the checkpoints
  double stored_bytes = 0;         // keep x checkpoint + data set
  bool storage_priced = false;     // the storage has a price (catalog or plan)
  double storage_usd_per_s = 0;    // storage dollars per second of wall time
  std::vector<OptionCost> costs;  // one per plan pricing option, in the plan's order
  int cheapest = -1;              // index into costs: cheapest feasible option (else cheapest priced)
  int rank_time = 0;              // 1-based among feasible candidates; 0 when not ranked
  int rank_cost = 0;
  bool on_frontier = false;

  const StepEstimate& estimate() const { return event ? *event : fast; }
  // The largest per-GPU peak: the step model's (every stage) once evaluated, else the pruning's.
  Bytes peak_memory(const LayoutCandidate& layout) const {
    return evaluated && estimate().memory.peak.count() > 0 ? estimate().memory.peak : layout.memory.peak;
  }
  const OptionCost* cheapest_cost() const {
    return cheapest >= 0 ? &costs[static_cast<std::size_t>(cheapest)] : nullptr;
  }
};

struct SensitivityRow {
  std::string key;    // "nic_bandwidth_x2", "nccl:NCCL_ALGO=Tree", "gemm_efficiency_+10%"
  std::string label;  // "EFA bandwidth x2 (100 -> 200 Gb/s per NIC)"
  bool applied = false;
  std::string skipped_reason;
  Fidelity fidelity = Fidelity::FAST;
  double step_time_s = 0;
  double wall_s = 0;  // nominal time to train
  double usd = 0;     // under the best candidate's cheapest option
  double delta_step_s = 0;
  double delta_days = 0;
  double delta_usd = 0;
  std::string bottleneck;
};

// A candidate that misses the deadline or the budget, by how much, under its option that misses
// least (plan_misses.hpp).
struct NearMiss {
  std::size_t id = 0;
  int option = -1;         // index into the candidate's costs; -1: no price (time alone judged)
  double wall_s = 0;       // time to train under that option, at the plan's confidence
  double usd = 0;          // its cost at the plan's confidence (0 without a price)
  double late = 0;         // wall / deadline - 1, when past the deadline
  double over = 0;         // usd / budget - 1, when over the budget
  double shortfall = 0;    // max(late, over)
  std::string miss;        // "9.5 days past the deadline (+11%)", "$1.2M over the budget (+15%)"
  std::string fix;         // what would make it feasible
};

struct PlanCounts {
  std::int64_t combinations = 0;  // every combination the choices expand to
  std::int64_t rejected = 0;      // invalid by divisibility or the layout checks
  std::int64_t layouts = 0;       // valid layouts (combinations - rejected)
  std::int64_t does_not_fit = 0;
  std::int64_t evaluated = 0;  // evaluated with the fast model
  std::int64_t evaluation_failed = 0;
  std::int64_t misses_deadline = 0;
  std::int64_t over_budget = 0;
  std::int64_t no_option = 0;
  std::int64_t feasible = 0;
  std::int64_t rechecked = 0;  // re-evaluated with the event simulation
};

struct PlanNote {
  enum class Level { INFO, WARNING };
  Level level = Level::INFO;
  std::string text;
};

struct PlanResult {
  PlanSpec plan;
  SearchSpace space;
  std::vector<PlanCandidate> candidates;  // parallel to space.candidates
  std::vector<std::size_t> by_time;       // feasible, best first
  std::vector<std::size_t> by_cost;
  std::vector<std::size_t> frontier;               // Pareto frontier, fastest first
  std::vector<std::size_t> rechecked;              // re-checked with EVENT, by id
  std::optional<std::size_t> best;                 // first by the plan's ranking
  std::vector<MemoryBreakdown> best_stage_memory;  // per pipeline stage of the best
  std::vector<std::vector<PriceQuote>> quotes;     // per system, per option
  std::vector<SensitivityRow> sensitivity;
  std::vector<NearMiss> near_misses;  // when no candidate is feasible: the nearest, best first
  PlanCounts counts;
  std::vector<PlanNote> notes;

  const std::vector<std::size_t>& primary() const { return plan.search.rank_by == RankBy::COST ? by_cost : by_time; }
  const LayoutCandidate& layout(std::size_t id) const { return space.candidates[id]; }
  const PlanSystem& system_of(std::size_t id) const {
    return space.systems[static_cast<std::size_t>(space.candidates[id].system)];
  }
};

}  // namespace clustersim::models
