#pragma once
// When no candidate is feasible: the nearest misses, by how much each fails the deadline or the
// budget and what would fix it. And the check, before any search, that the plan's pricing region
// prices at least one of its systems.
//
// For each candidate that was evaluated and priced but is late or over budget, and each of its
// priced options (T: time to train under the option, C: its cost, both at the plan's confidence
// as plan_costs.hpp computes them; D: the deadline, B: the budget):
//   late      l = max(0, T / D - 1)        over   o = max(0, C / B - 1)
//   shortfall s = max(l, o): the fraction by which the option misses its worse constraint
// A candidate's miss is its option of least shortfall; the misses are ranked by s (then by id),
// and only the nearest of each system and node count is kept.
// What would fix one:
//   a deadline of at least T; a budget of at least C;
//   more nodes: N' = ceil(N x (1 + l)) when late, assuming the step time falls as 1 / nodes
//   (an optimistic bound: communication does not scale down), with a remark when the plan tries
//   no system count that large.

#include <cstddef>
#include <string>
#include <vector>

#include "hardware/catalog.hpp"
#include "models/plan_result.hpp"
#include "models/plan_spec.hpp"

namespace clustersim::models {

// The nearest `limit` misses of a result (empty when some candidate is feasible).
std::vector<NearMiss> nearest_misses(const PlanResult& result, std::size_t limit);

// "the deadline (90 days) and the budget ($8e+06)": what a plan asks of its candidates.
std::string plan_constraints(const PlanSpec& plan);

// InputError naming the plan file and /pricing/region when the plan names a region in which the
// catalog prices none of the plan's systems; the message lists the regions that do.
void check_pricing_region(const PlanSpec& plan, const hardware::Catalog& catalog);

}  // namespace clustersim::models
