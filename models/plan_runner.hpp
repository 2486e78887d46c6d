#pragma once
// The planner: expands a plan into candidates (layout_search.hpp), evaluates every one that fits
// with the FAST step model on every core, prices each (plan_costs.hpp), ranks by time to train and
// by cost, finds the time/cost Pareto frontier, re-checks the best K of each ranking with the EVENT
// simulation (repeating while the re-check changes who the best K are, at most three rounds), and
// measures the sensitivity of the best candidate (plan_sensitivity.hpp).
//
// Rankings (feasible candidates only; ties broken by the other key, then by candidate id):
//   time  nominal time to train (compute + checkpoint writes)
//   cost  dollars under the candidate's cheapest feasible pricing option
// A candidate is feasible when it fits in memory, the step model evaluates it, and some priced
// option meets the deadline and the budget (without any price and without a budget: when its
// nominal time meets the deadline). The others keep their reason and are counted.
// Pareto frontier: feasible candidates with a price that no other candidate beats on both time and
// cost (sorted by time, kept while the cost strictly falls).
// MFU: every estimate's model FLOPs are counted as plan_flops.hpp defines them (the GEMMs the
// method runs, no recomputation), its MFU rescaled to match.
//
// Determinism: candidates are evaluated in parallel but stored by id, and everything after the
// evaluation runs in id order, so results are identical whatever the thread count. The evaluator
// is called on independent copies of each scenario and must be safe to call from several threads.

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string_view>
#include <vector>

#include "hardware/catalog.hpp"
#include "models/plan_result.hpp"
#include "models/step_estimate.hpp"

namespace clustersim::models {

struct PlanProgress {
  std::string_view phase;  // "prepare", "fast", "event", "sensitivity"
  std::size_t done = 0;
  std::size_t total = 0;  // 0 when unknown (prepare)
};

struct PlanRunOptions {
  int threads = 1;
  std::function<void(const PlanProgress&)> progress;  // called on the calling thread
  // Where the sensitivity analysis writes its derived calibration profiles (GEMM efficiency
  // +-change); empty: that perturbation is skipped with a note.
  std::filesystem::path scratch_dir;
};

// Prices candidates of one plan: tokens, steps, time to train, checkpoints, one cost per option,
// and the feasibility verdict.
class CandidatePricer {
 public:
  CandidatePricer(const PlanSpec& plan, const SearchSpace& space, const hardware::Catalog& catalog);
  // Fills every priced field of `c` from `estimate`, and its status and reason.
  void price(PlanCandidate& c, const LayoutCandidate& layout, const StepEstimate& estimate) const;
  const std::vector<std::vector<PriceQuote>>& quotes() const { return quotes_; }
  const hardware::StorageSpec* storage() const { return storage_; }
  const hardware::FailureRateSpec* failure_rate() const { return failure_rate_; }

 private:
  const PlanSpec& plan_;
  const SearchSpace& space_;
  const hardware::StorageSpec* storage_ = nullptr;
  const hardware::FailureRateSpec* failure_rate_ = nullptr;  // null with goodput disabled
  std::vector<std::vector<PriceQuote>> quotes_;  // per system
};

// Orders feasible candidates by time and by cost, numbers their ranks, and marks the frontier.
void rank_candidates(PlanResult& result);

PlanResult run_plan(const PlanSpec& plan, const hardware::Catalog& catalog, const StepEvaluator& evaluate,
                    const PlanRunOptions& options = {});

}  // namespace clustersim::models
