#pragma once
// The pieces of the capacity-plan report (plan_report.hpp describes the whole): label helpers
// shared by the sections, and the section builders. Internal to plan_report*.cpp.

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "hardware/catalog.hpp"
#include "models/layout_search.hpp"
#include "models/plan_result.hpp"
#include "reports/plan_report.hpp"
#include "reports/report_model.hpp"

namespace clustersim::reports::plan_parts {

using models::PlanCandidate;
using models::PlanResult;

inline std::string fmt(double v, int digits = 3) { return format_significant(v, digits); }

// A number with its band; the band is dropped when an end is not finite.
inline Cell banded(double v, double lo, double hi) {
  if (!std::isfinite(v)) return Cell::empty();
  if (std::isfinite(lo) && std::isfinite(hi) && (lo != v || hi != v)) return Cell(v, Band{lo, hi});
  return Cell(v);
}

inline std::string label_of(const PlanResult& r, std::size_t id) {
  return models::candidate_label(r.layout(id).scenario);
}
inline std::string fidelity_name(models::Fidelity f) { return f == models::Fidelity::EVENT ? "event" : "fast"; }
inline std::vector<std::size_t> top(const std::vector<std::size_t>& order, std::size_t n) {
  return {order.begin(), order.begin() + static_cast<std::ptrdiff_t>(std::min(n, order.size()))};
}

// Compact labels for charts, where space is short: "p5 x64 TP4 PP2v8 CP2 DP32 mb1 sel".
std::string short_system(const std::string& system);
std::string compact_layout(const models::Scenario& s, bool with_data);
std::string short_label(const PlanResult& r, std::size_t id);

std::vector<Figure> summary(const PlanResult& r);
// `everything`: also id, GPUs, feasibility, status, reason, frontier, goodput and storage, and the
// full label (the CSV's one table).
Table candidates_table(const PlanResult& r, const std::vector<std::size_t>& ids, const std::string& id,
                       const std::string& title, bool everything = false);
// Every evaluated candidate, feasible ones first in the plan's ranking (Report::csv_table).
Table all_candidates_table(const PlanResult& r);
// The best candidate of each system, or its fastest evaluated one and why it fails.
Table best_per_system_table(const PlanResult& r);
Section frontier_section(const PlanResult& r);
Section scaling_section(const PlanResult& r);
Section breakdown_section(const PlanResult& r);
Section memory_section(const PlanResult& r);
Section costs_section(const PlanResult& r);
Section checkpoint_section(const PlanResult& r);
Section sensitivity_section(const PlanResult& r);
Section infeasible_section(const PlanResult& r);
Section near_misses_section(const PlanResult& r);
std::vector<AssumptionGroup> assumptions(const PlanResult& r, const hardware::Catalog& catalog,
                                         const PlanReportOptions& options);

}  // namespace clustersim::reports::plan_parts
