#include "models/plan_misses.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "hardware/errors.hpp"

namespace clustersim::models {

namespace {

std::string fmt(double v, int digits = 3) { return format_significant(v, digits); }
std::string days(double s) { return fmt(s / 86400) + " days"; }
// v rounded up to 3 significant digits: a bound that is "at least" stays one when printed.
double up3(double v) {
  if (!(v > 0) || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, std::floor(std::log10(v)) - 2);
  return std::ceil(v / scale - 1e-9) * scale;
}
// $1.28B, $40M, $312k: amounts in a sentence.
std::string money(double usd) {
  if (usd >= 1e9) return "$" + fmt(usd / 1e9) + "B";
  if (usd >= 1e6) return "$" + fmt(usd / 1e6) + "M";
  if (usd >= 1e3) return "$" + fmt(usd / 1e3) + "k";
  return "$" + fmt(usd);
}

std::vector<std::string> plan_systems(const PlanSpec& plan) {
  std::vector<std::string> out;
  if (const PlanChoice* c = plan.choice("/cluster/system")) {
    for (const auto& v : c->values) {
      if (v.is_string()) out.push_back(v.get<std::string>());
    }
  } else if (plan.scenario_template.contains("cluster") && plan.scenario_template["cluster"].is_object() &&
             plan.scenario_template["cluster"].contains("system") &&
             plan.scenario_template["cluster"]["system"].is_string()) {
    out.push_back(plan.scenario_template["cluster"]["system"].get<std::string>());
  }
  return out;
}

std::int64_t plan_max_nodes(const PlanSpec& plan) {
  std::int64_t most = 0;
  if (const PlanChoice* c = plan.choice("/cluster/nodes")) {
    for (const auto& v : c->values) {
      if (v.is_number_integer()) most = std::max(most, v.get<std::int64_t>());
    }
  }
  return most;
}

}  // namespace

std::string plan_constraints(const PlanSpec& plan) {
  const auto& j = plan.job;
  std::string out;
  if (j.deadline_s) out += "the deadline (" + days(*j.deadline_s) + ")";
  if (j.budget_usd) out += std::string(out.empty() ? "" : " and ") + "the budget (" + money(*j.budget_usd) + ")";
  return out;
}

std::vector<NearMiss> nearest_misses(const PlanResult& r, std::size_t limit) {
  std::vector<NearMiss> out;
  if (r.counts.feasible > 0) return out;
  const auto& job = r.plan.job;
  const std::int64_t max_nodes = plan_max_nodes(r.plan);
  for (const auto& c : r.candidates) {
    if (c.status != CandidateStatus::MISSES_DEADLINE && c.status != CandidateStatus::OVER_BUDGET &&
        c.status != CandidateStatus::NO_OPTION) {
      continue;
    }
    NearMiss best;
    bool found = false;
    auto consider = [&](int option, double wall, double usd, bool priced) {
      NearMiss m;
      m.id = c.id;
      m.option = option;
      m.wall_s = wall;
      m.usd = priced ? usd : 0;
      if (job.deadline_s) m.late = std::max(0.0, wall / *job.deadline_s - 1);
      if (job.budget_usd && priced) m.over = std::max(0.0, usd / *job.budget_usd - 1);
      m.shortfall = std::max(m.late, m.over);
      if (!found || m.shortfall < best.shortfall) {
        best = m;
        found = true;
      }
    };
    for (std::size_t i = 0; i < c.costs.size(); ++i) {
      const OptionCost& o = c.costs[i];
      if (o.available) consider(static_cast<int>(i), o.wall_q_s, o.usd_q, true);
    }
    // Without any price (and so no budget verdict), only the nominal time is judged.
    if (!found && !job.budget_usd) consider(-1, c.wall_q_s, 0, false);
    if (!found || !(best.shortfall > 0) || !std::isfinite(best.shortfall)) continue;

    const int nodes = r.layout(c.id).scenario.cluster.nodes;
    std::vector<std::string> misses;
    if (best.late > 0) {
      misses.push_back(days(best.wall_s - *job.deadline_s) + " past the deadline (+" + fmt(100 * best.late) + "%)");
    }
    if (best.over > 0) {
      misses.push_back(money(best.usd - *job.budget_usd) + " over the budget (+" + fmt(100 * best.over) + "%)");
    }
    for (std::size_t i = 0; i < misses.size(); ++i) best.miss += (i == 0 ? "" : " and ") + misses[i];
    if (best.option >= 0) best.miss += " on " + std::string(pricing_label(c.costs[static_cast<std::size_t>(best.option)].option));
    // Time: a later deadline, or more nodes (node-hours, and so the cost, stay about the same).
    // Money: a bigger budget. A miss of both needs one of each.
    if (best.late > 0) {
      const auto more = static_cast<std::int64_t>(std::ceil(nodes * (1 + best.late) - 1e-9));
      best.fix = "a deadline of at least " + fmt(up3(best.wall_s / 86400)) + " days, or about " +
                 std::to_string(more) + " nodes instead of " + std::to_string(nodes) +
                 " if the step time fell as 1 / nodes";
      if (max_nodes > 0 && more > max_nodes) best.fix += " (the plan tries at most " + std::to_string(max_nodes) + ")";
    }
    if (best.over > 0) {
      best.fix += std::string(best.fix.empty() ? "" : "; and ") + "a budget of at least " + money(up3(best.usd));
    }
    out.push_back(best);
  }
  std::sort(out.begin(), out.end(), [](const NearMiss& a, const NearMiss& b) {
    return a.shortfall != b.shortfall ? a.shortfall < b.shortfall : a.id < b.id;
  });
  // The nearest of each system and node count: the misses show different ways out, not one
  // layout's neighbours.
  std::set<std::pair<std::string, int>> seen;
  std::vector<NearMiss> distinct;
  for (const auto& m : out) {
    const auto& cl = r.layout(m.id).scenario.cluster;
    if (seen.insert({cl.system, cl.nodes}).second) distinct.push_back(m);
  }
  out = std::move(distinct);
  if (out.size() > limit) out.resize(limit);
  return out;
}

void check_pricing_region(const PlanSpec& plan, const hardware::Catalog& catalog) {
  if (plan.pricing.region.empty()) return;
  const std::vector<std::string> systems = plan_systems(plan);
  std::set<std::string> regions;
  for (const auto& s : systems) {
    for (const auto& e : catalog.prices(s)) {
      if (e.region == plan.pricing.region) return;
      regions.insert(e.region);
    }
  }
  std::string names;
  for (const auto& s : systems) names += (names.empty() ? "" : ", ") + s;
  std::string have;
  for (const auto& g : regions) have += (have.empty() ? "" : ", ") + ("\"" + g + "\"");
  throw InputError(plan.file, "/pricing/region",
                   "expected a region where the catalog prices " + (names.empty() ? "the plan's systems" : names) +
                       (have.empty() ? ": it prices none of them in any region (add a price to the catalog, or "
                                       "remove \"region\")"
                                     : ": " + have) +
                       "; got \"" + plan.pricing.region + "\"");
}

}  // namespace clustersim::models
