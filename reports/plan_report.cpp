#include "reports/plan_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "models/layout_search.hpp"
#include "reports/plan_report_parts.hpp"
#include "reports/value_format.hpp"

namespace clustersim::reports {

namespace plan_parts {

namespace {

// Candidates drawn per system on the cost/time chart: the system's own frontier, then an even
// sample of the rest by cost (every candidate when a system has no more than this).
constexpr std::size_t kMaxPointsPerSystem = 500;
constexpr std::size_t kMaxScalingSeries = 6;
constexpr std::size_t kMaxBreakdownBars = 8;

}  // namespace

std::string short_system(const std::string& system) {
  const auto dot = system.find('.');
  return dot == std::string::npos ? system : system.substr(0, dot);
}

std::string compact_layout(const models::Scenario& s, bool with_data) {
  const auto& p = s.parallelism;
  std::string out = "TP" + std::to_string(p.tensor) + " PP" + std::to_string(p.pipeline);
  if (p.virtual_stages > 1) out += "v" + std::to_string(p.virtual_stages);
  if (p.context > 1) out += " CP" + std::to_string(p.context);
  if (p.expert > 1) out += " EP" + std::to_string(p.expert);
  if (with_data) out += " DP" + std::to_string(p.data);
  if (p.framework != models::Framework::MEGATRON && p.zero_stage > 0) out += " Z" + std::to_string(p.zero_stage);
  if (p.framework == models::Framework::DEEPSPEED) out += " ds";
  out += " mb" + std::to_string(s.training.micro_batch_size);
  if (s.training.activation_checkpointing == models::Checkpointing::SELECTIVE) out += " sel";
  if (s.training.activation_checkpointing == models::Checkpointing::FULL) out += " full";
  if (s.training.fine_tuning == models::FineTuning::LORA) out += " LoRA";
  for (const auto& [k, v] : s.nccl.env) out += " " + v;
  return out;
}

std::string short_label(const PlanResult& r, std::size_t id) {
  const auto& s = r.layout(id).scenario;
  return short_system(s.cluster.system) + " x" + std::to_string(s.cluster.nodes) + " " + compact_layout(s, true);
}

std::vector<Figure> summary(const PlanResult& r) {
  std::vector<Figure> out;
  if (r.best) {
    const PlanCandidate& b = r.candidates[*r.best];
    const auto& s = r.layout(*r.best).scenario;
    const auto& e = b.estimate();
    out.push_back(Figure{.key = "time_to_train",
                         .label = "Time to train",
                         .type = ValueType::DURATION,
                         .value = banded(b.wall.nominal_s, b.wall_low_s, b.wall_high_s),
                         .detail = label_of(r, *r.best)});
    const auto& conf = r.plan.job.confidence;
    const std::string pct = conf ? fmt(100 * *conf) + "%" : "";
    if (conf) {
      out.push_back(Figure{.key = "time_to_train_confidence",
                           .label = "Time to train at " + pct,
                           .type = ValueType::DURATION,
                           .value = std::isfinite(b.wall_q_s) ? Cell(b.wall_q_s) : Cell::empty(),
                           .detail = "the " + pct + " quantile of the band (read as +-1 standard deviation); the "
                                     "deadline is judged here"});
    }
    if (const auto* o = b.cheapest_cost(); o && o->available) {
      out.push_back(Figure{.key = "cost",
                           .label = "Cost",
                           .type = ValueType::DOLLARS,
                           .value = banded(o->usd, o->usd_low, o->usd_high),
                           .detail = std::string(models::pricing_label(o->option)) +
                                     (o->quote.region.empty() ? "" : ", " + o->quote.region) +
                                     (o->basis.empty() ? "" : "; " + o->basis)});
      if (conf) {
        out.push_back(Figure{.key = "cost_confidence",
                             .label = "Cost at " + pct,
                             .type = ValueType::DOLLARS,
                             .value = std::isfinite(o->usd_q) ? Cell(o->usd_q) : Cell::empty(),
                             .detail = "the " + pct + " quantile; the budget is judged here"});
      }
    }
    if (b.wall.nominal_s > 0 && std::isfinite(b.wall.nominal_s)) {
      out.push_back(Figure{.key = "goodput",
                           .label = "Goodput",
                           .type = ValueType::PERCENT,
                           .value = b.compute_s / b.wall.nominal_s,
                           .detail = fmt(b.wall.interruptions) + " expected interruptions, " +
                                     fmt(b.wall.checkpoints, 6) + " checkpoints"});
    }
    if (b.storage_priced) {
      out.push_back(Figure{.key = "storage_cost",
                           .label = "Storage",
                           .type = ValueType::DOLLARS,
                           .value = b.storage_usd_per_s * b.wall.nominal_s,
                           .detail = "checkpoints and the data set on " + b.checkpoint.storage +
                                     ", included in the cost"});
    }
    out.push_back(Figure{.key = "gpus", .label = "GPUs", .type = ValueType::INTEGER, .value = s.world_size()});
    out.push_back(Figure{
        .key = "step_time",
        .label = "Step time",
        .type = ValueType::DURATION,
        .value = banded(e.step_time_s, e.low_s > 0 ? e.low_s : e.step_time_s, e.high_s > 0 ? e.high_s : e.step_time_s),
        .detail = fidelity_name(e.fidelity) + " model"});
    out.push_back(Figure{.key = "mfu",
                         .label = "MFU",
                         .type = ValueType::PERCENT,
                         .value = e.mfu,
                         .detail = "model FLOPs of the GEMMs the method runs, no recomputation"});
    out.push_back(Figure{.key = "peak_memory",
                         .label = "Peak memory per GPU",
                         .type = ValueType::BYTES,
                         .value = b.peak_memory(r.layout(*r.best)).as_double()});
    out.push_back(
        Figure{.key = "layout", .label = "Layout", .type = ValueType::TEXT, .value = models::layout_label(s)});
  }
  out.push_back(Figure{.key = "evaluated",
                       .label = "Layouts evaluated",
                       .type = ValueType::INTEGER,
                       .value = static_cast<double>(r.counts.evaluated),
                       .detail = std::to_string(r.counts.feasible) + " feasible, " +
                                 std::to_string(r.counts.combinations) + " combinations"});
  return out;
}

Table candidates_table(const PlanResult& r, const std::vector<std::size_t>& ids, const std::string& id,
                       const std::string& title, bool everything) {
  Table t;
  t.id = id;
  t.title = title;
  t.caption = "best first by " + std::string(models::to_string(r.plan.search.rank_by)) +
              "; bands are the step time's 68% band carried through";
  t.columns = {Column::integer("rank", "Rank"),
               Column::text("system", "System"),
               Column::integer("nodes", "Nodes"),
               Column::text("layout", "Layout"),
               Column::duration("step_time_s", "Step time"),
               Column::duration("time_to_train_s", "Time to train")};
  const auto& conf = r.plan.job.confidence;
  if (conf) {
    t.columns.push_back(
        Column::duration("time_to_train_confidence_s", "Time to train at " + fmt(100 * *conf) + "%"));
  }
  t.columns.push_back(Column::number("gpu_hours", "GPU-hours", "GPU-h"));
  for (auto opt : r.plan.pricing.options) {
    t.columns.push_back(Column::dollars("cost_" + std::string(models::to_string(opt)) + "_usd",
                                        "Cost, " + std::string(models::pricing_label(opt))));
  }
  t.columns.push_back(Column::text("cheapest", "Cheapest"));
  t.columns.push_back(Column::bytes("peak_memory_bytes", "Peak memory"));
  t.columns.push_back(Column::percent("mfu", "MFU"));
  t.columns.push_back(Column::text("fidelity", "Model"));
  if (everything) {
    t.columns.push_back(Column::integer("id", "Id"));
    t.columns.push_back(Column::integer("gpus", "GPUs"));
    t.columns.push_back(Column::text("feasible", "Feasible"));
    t.columns.push_back(Column::text("status", "Status"));
    t.columns.push_back(Column::text("reason", "Reason"));
    t.columns.push_back(Column::text("on_frontier", "On the frontier"));
    t.columns.push_back(Column::duration("compute_s", "Compute time"));
    t.columns.push_back(Column::percent("goodput", "Goodput"));
    t.columns.push_back(Column::number("expected_interruptions", "Expected interruptions", ""));
    t.columns.push_back(Column::dollars("storage_usd", "Storage"));
    t.columns.push_back(Column::text("label", "Candidate"));
  }
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const PlanCandidate& c = r.candidates[ids[k]];
    const auto& s = r.layout(ids[k]).scenario;
    const auto& e = c.estimate();
    const int rank = r.plan.search.rank_by == models::RankBy::COST ? c.rank_cost : c.rank_time;
    auto num = [](double v) { return std::isfinite(v) && v > 0 ? Cell(v) : Cell::empty(); };
    std::vector<Cell> row = {
        rank > 0 ? Cell(rank) : Cell::empty(),
        s.cluster.system,
        s.cluster.nodes,
        models::layout_label(s),
        e.step_time_s > 0 ? banded(e.step_time_s, e.low_s > 0 ? e.low_s : e.step_time_s,
                                   e.high_s > 0 ? e.high_s : e.step_time_s)
                          : Cell::empty(),
        c.wall.nominal_s > 0 ? banded(c.wall.nominal_s, c.wall_low_s, c.wall_high_s) : Cell::empty()};
    if (conf) row.push_back(num(c.wall_q_s));
    row.push_back(num(c.gpu_hours));
    for (const auto& o : c.costs) row.push_back(o.available ? banded(o.usd, o.usd_low, o.usd_high) : Cell::empty());
    const auto* ch = c.cheapest_cost();
    row.push_back(ch && ch->available ? std::string(models::pricing_label(ch->option)) : std::string("n/a"));
    row.push_back(c.peak_memory(r.layout(ids[k])).as_double());
    row.push_back(num(e.mfu));
    row.push_back(fidelity_name(e.fidelity));
    if (everything) {
      const bool ok = c.status == models::CandidateStatus::FEASIBLE;
      const double wall = c.wall.nominal_s;
      row.push_back(static_cast<double>(c.id));
      row.push_back(s.world_size());
      row.push_back(ok ? "yes" : "no");
      row.push_back(std::string(models::to_string(c.status)));
      row.push_back(c.reason);
      row.push_back(c.on_frontier ? "yes" : "no");
      row.push_back(c.compute_s > 0 ? Cell(c.compute_s) : Cell::empty());
      row.push_back(wall > 0 && std::isfinite(wall) ? Cell(c.compute_s / wall) : Cell::empty());
      row.push_back(c.wall.interruptions);
      row.push_back(c.storage_priced && std::isfinite(wall) ? Cell(c.storage_usd_per_s * wall) : Cell::empty());
      row.push_back(label_of(r, ids[k]));
    }
    t.add_row(std::move(row));
  }
  return t;
}

namespace {

// Feasible candidates of system `si`, in the plan's ranking.
std::vector<std::size_t> feasible_of(const PlanResult& r, int si) {
  std::vector<std::size_t> out;
  for (std::size_t id : r.primary()) {
    if (r.layout(id).system == si) out.push_back(id);
  }
  return out;
}

// Of ids ordered by cost, the Pareto frontier (no other is both faster and cheaper), by cost.
std::vector<std::size_t> own_frontier(const PlanResult& r, const std::vector<std::size_t>& by_cost) {
  std::vector<std::size_t> out;
  double best_time = INFINITY;
  for (std::size_t id : by_cost) {
    const double t = r.candidates[id].wall.nominal_s;
    if (t < best_time) {
      out.push_back(id);
      best_time = t;
    }
  }
  return out;
}

std::string system_name(const PlanResult& r, int si) { return r.space.systems[static_cast<std::size_t>(si)].name; }

}  // namespace

Table best_per_system_table(const PlanResult& r) {
  Table t{.id = "best-per-system",
          .title = "Best per system",
          .caption = "the best candidate of each system by " + std::string(models::to_string(r.plan.search.rank_by)) +
                     "; where none is feasible, its fastest evaluated candidate and why it fails"};
  const auto& conf = r.plan.job.confidence;
  t.columns = {Column::text("system", "System"), Column::text("feasible", "Feasible"),
               Column::integer("feasible_count", "Feasible candidates"), Column::text("candidate", "Best candidate"),
               Column::integer("gpus", "GPUs"), Column::duration("time_to_train_s", "Time to train")};
  if (conf) {
    t.columns.push_back(
        Column::duration("time_to_train_confidence_s", "Time to train at " + fmt(100 * *conf) + "%"));
  }
  t.columns.push_back(Column::dollars("cost_usd", "Cost"));
  t.columns.push_back(Column::text("option", "Option"));
  t.columns.push_back(Column::percent("mfu", "MFU"));
  t.columns.push_back(Column::text("reason", "Why not feasible"));
  for (std::size_t si = 0; si < r.space.systems.size(); ++si) {
    const int sys = static_cast<int>(si);
    const auto feasible = feasible_of(r, sys);
    std::optional<std::size_t> pick;
    if (!feasible.empty()) {
      pick = feasible.front();
    } else {
      for (const auto& c : r.candidates) {
        if (r.layout(c.id).system != sys || !c.evaluated || !(c.wall.nominal_s > 0)) continue;
        if (!pick || c.wall.nominal_s < r.candidates[*pick].wall.nominal_s) pick = c.id;
      }
    }
    std::vector<Cell> row = {system_name(r, sys), feasible.empty() ? "no" : "yes", feasible.size()};
    if (!pick) {
      row.push_back("none evaluated");
      row.push_back(Cell::empty());
      row.push_back(Cell::empty());
      if (conf) row.push_back(Cell::empty());
      for (int k = 0; k < 3; ++k) row.push_back(Cell::empty());
      row.push_back("no layout of this system fits in memory or evaluates");
      t.add_row(std::move(row));
      continue;
    }
    const PlanCandidate& c = r.candidates[*pick];
    const auto* o = c.cheapest_cost();
    row.push_back(label_of(r, *pick));
    row.push_back(r.layout(*pick).scenario.world_size());
    row.push_back(banded(c.wall.nominal_s, c.wall_low_s, c.wall_high_s));
    if (conf) row.push_back(std::isfinite(c.wall_q_s) ? Cell(c.wall_q_s) : Cell::empty());
    row.push_back(o && o->available ? banded(o->usd, o->usd_low, o->usd_high) : Cell::empty());
    row.push_back(o && o->available ? std::string(models::pricing_label(o->option)) : std::string("n/a"));
    row.push_back(c.estimate().mfu);
    row.push_back(feasible.empty() ? (c.reason.empty() ? std::string(models::to_string(c.status)) : c.reason)
                                   : std::string());
    t.add_row(std::move(row));
  }
  return t;
}

Table all_candidates_table(const PlanResult& r) {
  std::vector<std::size_t> ids = r.primary();
  for (const auto& c : r.candidates) {
    if (c.status != models::CandidateStatus::FEASIBLE && c.evaluated) ids.push_back(c.id);
  }
  Table t = candidates_table(r, ids, "all-candidates", "Every evaluated candidate", true);
  t.caption = "feasible candidates best first, then every other evaluated candidate with its status and reason";
  return t;
}

Section frontier_section(const PlanResult& r) {
  Section sec{.id = "frontier", .title = "Cost and time"};
  sec.paragraphs.push_back(
      "Each point is a feasible candidate at its cheapest pricing option, one colour per system; the frontier "
      "holds those that no other candidate beats on both time to train and cost, with error bars from the step "
      "model's band. Hover over a point for its candidate.");
  Chart c;
  c.id = "cost-time-frontier";
  c.title = "Cost against time to train";
  c.kind = Chart::Kind::XY;
  c.x = Axis{.label = "Time to train", .type = ValueType::DURATION};
  c.y = Axis{.label = "Cost (cheapest option)", .type = ValueType::DOLLARS};
  std::size_t drawn = 0;
  std::size_t priced = 0;
  for (std::size_t si = 0; si < r.space.systems.size(); ++si) {
    std::vector<std::size_t> by_cost;
    for (std::size_t id : r.by_cost) {
      const auto* o = r.candidates[id].cheapest_cost();
      if (r.layout(id).system == static_cast<int>(si) && o && o->available) by_cost.push_back(id);
    }
    if (by_cost.empty()) continue;
    priced += by_cost.size();
    // The system's own frontier always; the rest evenly by cost up to the cap.
    std::vector<std::size_t> pick = own_frontier(r, by_cost);
    std::vector<bool> taken(r.candidates.size(), false);
    for (std::size_t id : pick) taken[id] = true;
    const std::size_t room = kMaxPointsPerSystem > pick.size() ? kMaxPointsPerSystem - pick.size() : 0;
    const std::size_t rest = by_cost.size() - pick.size();
    const double stride = rest > room && room > 0 ? static_cast<double>(rest) / static_cast<double>(room) : 1.0;
    double next = 0;
    std::size_t k = 0;
    for (std::size_t id : by_cost) {
      if (taken[id]) continue;
      if (room > 0 && static_cast<double>(k++) + 1e-9 >= next && pick.size() < kMaxPointsPerSystem) {
        pick.push_back(id);
        next += stride;
      }
    }
    Series s{.name = system_name(r, static_cast<int>(si)) + " (" + std::to_string(by_cost.size()) + " feasible)",
             .style = Series::Style::SCATTER};
    for (std::size_t id : pick) {
      const auto& cand = r.candidates[id];
      const auto* o = cand.cheapest_cost();
      ChartPoint p{cand.wall.nominal_s, o->usd};
      p.tooltip = label_of(r, id) + ", " + std::string(models::pricing_label(o->option));
      s.points.push_back(std::move(p));
    }
    // Draw in time order so the output does not depend on how the cost ties fell.
    std::sort(s.points.begin(), s.points.end(),
              [](const ChartPoint& a, const ChartPoint& b) { return a.x != b.x ? a.x < b.x : a.y < b.y; });
    drawn += s.points.size();
    c.series.push_back(std::move(s));
  }
  c.caption = drawn < priced ? std::to_string(drawn) + " of " + std::to_string(priced) +
                                   " priced candidates: every system's own frontier and an even sample of the rest "
                                   "by cost (at most " + std::to_string(kMaxPointsPerSystem) + " per system)."
                             : "Every priced candidate, " + std::to_string(priced) + " in all.";
  c.caption += " The Pareto frontier is drawn in black with its bands";
  if (r.plan.job.deadline_s || r.plan.job.budget_usd) c.caption += "; dashed red lines mark the deadline and budget";
  c.caption += ".";
  Series front{.name = "Pareto frontier", .style = Series::Style::LINE_POINTS, .highlight = true};
  Table t{.id = "pareto", .title = "Pareto frontier", .caption = "fastest first"};
  t.columns = {Column::text("candidate", "Candidate"), Column::text("system", "System"),
               Column::duration("time_to_train_s", "Time to train"), Column::dollars("cost_usd", "Cost"),
               Column::text("option", "Option")};
  for (std::size_t id : r.frontier) {
    const PlanCandidate& cand = r.candidates[id];
    const auto* o = cand.cheapest_cost();
    ChartPoint p{cand.wall.nominal_s, o->usd, std::nullopt, short_label(r, id)};
    if (std::isfinite(cand.wall_low_s) && std::isfinite(cand.wall_high_s) &&
        (cand.wall_low_s != cand.wall.nominal_s || cand.wall_high_s != cand.wall.nominal_s)) {
      p.x_band = Band{cand.wall_low_s, cand.wall_high_s};
    }
    if (std::isfinite(o->usd_low) && std::isfinite(o->usd_high) && (o->usd_low != o->usd || o->usd_high != o->usd)) {
      p.y_band = Band{o->usd_low, o->usd_high};
    }
    p.tooltip = label_of(r, id) + ", " + std::string(models::pricing_label(o->option));
    front.points.push_back(std::move(p));
    t.add_row({label_of(r, id), r.system_of(id).name, banded(cand.wall.nominal_s, cand.wall_low_s, cand.wall_high_s),
               banded(o->usd, o->usd_low, o->usd_high), std::string(models::pricing_label(o->option))});
  }
  if (r.plan.job.deadline_s) c.reference_lines.push_back(ReferenceLine{"deadline", *r.plan.job.deadline_s, true});
  if (r.plan.job.budget_usd) c.reference_lines.push_back(ReferenceLine{"budget", *r.plan.job.budget_usd, false});
  if (drawn > 0) {
    c.series.push_back(std::move(front));
    sec.charts.push_back(std::move(c));
  }
  sec.tables.push_back(std::move(t));
  return sec;
}

Section scaling_section(const PlanResult& r) {
  Section sec{.id = "scaling", .title = "Scaling"};
  sec.paragraphs.push_back("Step time of the best candidates' layouts at each GPU count the plan tried.");
  Chart c;
  c.id = "step-time-vs-gpus";
  c.title = "Step time against GPU count";
  c.caption = "One line per layout (data parallelism grows with the GPUs); error bars show the uncertainty band.";
  c.x = Axis{.label = "GPUs", .type = ValueType::INTEGER, .scale = AxisScale::LOG2};
  c.y = Axis{.label = "Step time", .type = ValueType::DURATION, .scale = AxisScale::LOG10};
  std::vector<std::string> shapes;
  for (std::size_t id : r.primary()) {
    const std::string& shape = r.layout(id).shape;
    if (std::find(shapes.begin(), shapes.end(), shape) == shapes.end()) shapes.push_back(shape);
    if (shapes.size() >= kMaxScalingSeries) break;
  }
  for (const auto& shape : shapes) {
    std::map<int, ChartPoint> by_gpus;  // the first candidate (by id) at each GPU count
    std::string name;
    for (const auto& cand : r.candidates) {
      if (cand.status != models::CandidateStatus::FEASIBLE || r.layout(cand.id).shape != shape) continue;
      const auto& e = cand.estimate();
      const int gpus = r.layout(cand.id).scenario.world_size();
      if (!(e.step_time_s > 0) || by_gpus.count(gpus)) continue;
      ChartPoint p{static_cast<double>(gpus), e.step_time_s};
      if (e.low_s > 0 && e.high_s > 0 && (e.low_s != e.step_time_s || e.high_s != e.step_time_s)) {
        p.y_band = Band{e.low_s, e.high_s};
      }
      by_gpus[gpus] = p;
      if (name.empty()) {
        const auto& sc = r.layout(cand.id).scenario;
        name = short_system(sc.cluster.system) + " " + compact_layout(sc, false);
      }
    }
    Series s{.name = name};
    for (auto& [g, p] : by_gpus) s.points.push_back(p);
    if (!s.points.empty()) c.series.push_back(std::move(s));
  }
  if (!c.series.empty()) sec.charts.push_back(std::move(c));
  return sec;
}

Section breakdown_section(const PlanResult& r) {
  Section sec{.id = "breakdown", .title = "Where the time goes"};
  Chart c;
  c.id = "step-breakdown";
  c.title = "Step-time breakdown";
  c.caption = "The best candidates; the total's band is the step model's uncertainty.";
  c.kind = Chart::Kind::STACKED_BARS;
  c.orientation = Chart::Orientation::HORIZONTAL;
  c.x = Axis{.label = "Candidate", .type = ValueType::TEXT};
  c.y = Axis{.label = "Time per step", .type = ValueType::DURATION};
  c.segments = {"compute", "exposed communication", "pipeline bubble", "optimizer", "offload and host"};
  Table t{.id = "bottlenecks", .title = "Bottlenecks"};
  t.columns = {Column::text("candidate", "Candidate"), Column::text("bottleneck", "What limits the step")};
  for (std::size_t id : top(r.primary(), std::min<std::size_t>(kMaxBreakdownBars, r.plan.search.report_rows))) {
    const auto& e = r.candidates[id].estimate();
    const auto& b = e.breakdown;
    Bar bar{short_label(r, id),
            {std::max(0.0, b.compute_s), std::max(0.0, b.exposed_comm_s), std::max(0.0, b.pipeline_bubble_s),
             std::max(0.0, b.optimizer_s), std::max(0.0, b.offload_s + b.host_s)}};
    if (e.low_s > 0 && e.high_s > 0) bar.total_band = Band{e.low_s, e.high_s};
    c.bars.push_back(std::move(bar));
    t.add_row({label_of(r, id), e.bottleneck.empty() ? std::string("n/a") : e.bottleneck});
  }
  if (!c.bars.empty()) sec.charts.push_back(std::move(c));
  sec.tables.push_back(std::move(t));
  return sec;
}

Section memory_section(const PlanResult& r) {
  Section sec{.id = "memory", .title = "Memory"};
  if (!r.best) return sec;
  sec.paragraphs.push_back("Peak memory per GPU of the best candidate, " + label_of(r, *r.best) +
                           ", by pipeline stage (memory model).");
  Chart c;
  c.id = "memory-per-rank";
  c.title = "Memory per rank";
  c.caption = "Peak per GPU by pipeline stage; the dashed line is the GPU's usable memory.";
  c.kind = Chart::Kind::STACKED_BARS;
  c.orientation = Chart::Orientation::VERTICAL;
  c.x = Axis{.label = "Pipeline stage", .type = ValueType::TEXT};
  c.y = Axis{.label = "Memory", .type = ValueType::BYTES};
  c.segments = {"weights", "gradients", "optimizer state", "activations", "buffers"};
  for (std::size_t s = 0; s < r.best_stage_memory.size(); ++s) {
    const auto& m = r.best_stage_memory[s];
    c.bars.push_back(Bar{"stage " + std::to_string(s),
                         {m.weights.as_double(), m.gradients.as_double(), m.optimizer_state.as_double(),
                          m.activations.as_double(), m.buffers.as_double()}});
  }
  if (!r.best_stage_memory.empty()) {
    c.reference_lines.push_back(ReferenceLine{"usable", r.best_stage_memory.front().usable.as_double()});
    sec.charts.push_back(std::move(c));
  }
  return sec;
}

}  // namespace plan_parts

using namespace plan_parts;

Report build_plan_report(const models::PlanResult& r, const hardware::Catalog& catalog,
                         const PlanReportOptions& options) {
  Report rep;
  rep.type = "capacity-plan";
  rep.title = "Capacity plan: " + r.plan.name;
  std::string systems;
  for (const auto& s : r.space.systems) systems += (systems.empty() ? "" : ", ") + s.name;
  rep.subtitle = r.space.model.name + ", " + r.plan.job.describe() + ", on " + systems + "; " +
                 std::to_string(r.counts.evaluated) + " layouts evaluated";
  rep.generated_by = options.generated_by;
  rep.summary = summary(r);
  for (const auto& n : r.notes) {
    rep.notes.push_back(
        Note{n.level == models::PlanNote::Level::WARNING ? Note::Level::WARNING : Note::Level::INFO, n.text});
  }
  rep.created = options.created;
  {
    std::vector<hardware::InputDigest> inputs = options.inputs;
    inputs.insert(inputs.end(), catalog.inputs().begin(), catalog.inputs().end());
    if (!inputs.empty()) rep.inputs_sha256 = hardware::manifest_sha256(inputs);
  }
  Section per_system{.id = "systems", .title = "Best per system"};
  per_system.tables.push_back(best_per_system_table(r));
  rep.sections.push_back(std::move(per_system));
  if (!r.near_misses.empty()) rep.sections.push_back(near_misses_section(r));
  Section cands{.id = "candidates", .title = "Best candidates"};
  cands.paragraphs.push_back("Candidates that fit, meet the deadline and the budget, ranked by " +
                             std::string(r.plan.search.rank_by == models::RankBy::COST
                                             ? "cost under their cheapest pricing option"
                                             : "time to train") +
                             ". Time to train includes checkpoint writes and the expected failures; costs are per pricing option and "
                             "include storage.");
  cands.tables.push_back(candidates_table(r, top(r.primary(), static_cast<std::size_t>(r.plan.search.report_rows)),
                                          "candidates", "Candidates"));
  rep.sections.push_back(std::move(cands));
  rep.sections.push_back(frontier_section(r));
  rep.sections.push_back(scaling_section(r));
  rep.sections.push_back(breakdown_section(r));
  rep.sections.push_back(memory_section(r));
  rep.sections.push_back(costs_section(r));
  rep.sections.push_back(checkpoint_section(r));
  rep.sections.push_back(sensitivity_section(r));
  rep.sections.push_back(infeasible_section(r));
  rep.assumptions = assumptions(r, catalog, options);
  rep.csv_table = all_candidates_table(r);
  check_report(rep);
  return rep;
}

}  // namespace clustersim::reports
