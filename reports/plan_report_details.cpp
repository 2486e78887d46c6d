// The detail sections of the capacity-plan report: pricing options, checkpoints, sensitivity,
// infeasible candidates, and the assumptions.

#include <algorithm>
#include <cmath>
#include <set>

#include "models/plan_flops.hpp"
#include "reports/plan_report_parts.hpp"
#include "reports/value_format.hpp"

namespace clustersim::reports::plan_parts {

Section costs_section(const PlanResult& r) {
  Section sec{.id = "costs", .title = "Pricing options"};
  if (!r.best) return sec;
  const PlanCandidate& b = r.candidates[*r.best];
  sec.paragraphs.push_back("The best candidate, " + label_of(r, *r.best) + ", under each pricing option.");
  Table t{.id = "options", .title = "Cost by pricing option"};
  t.columns = {Column::text("option", "Option"),
               Column::number("price_per_hour", "Price per instance", "USD/h", 4),
               Column::text("price_source", "Price source"),
               Column::duration("wall_s", "Wall time"),
               Column::number("instance_hours", "Instance-hours billed", "h"),
               Column::dollars("cost_usd", "Cost"),
               Column::text("meets", "Deadline / budget"),
               Column::text("notes", "Notes")};
  const auto& conf = r.plan.job.confidence;
  if (conf) {
    const std::string pct = fmt(100 * *conf) + "%";
    t.columns.insert(t.columns.begin() + 6, {Column::duration("wall_confidence_s", "Wall time at " + pct),
                                             Column::dollars("cost_confidence_usd", "Cost at " + pct)});
  }
  for (const auto& o : b.costs) {
    std::string src = o.quote.assumed ? "plan assumption" : o.quote.source;
    if (!o.quote.date.empty()) src += " (" + o.quote.date + ")";
    std::string meets = !o.available ? "n/a"
                                     : std::string(o.meets_deadline ? "on time" : "late") + ", " +
                                           (o.within_budget ? "within budget" : "over budget");
    std::string notes = o.available ? "" : o.reason;
    for (const auto& n : o.notes) notes += (notes.empty() ? "" : "; ") + n;
    std::vector<Cell> row = {std::string(models::pricing_label(o.option)),
                             o.quote.available ? Cell(o.quote.per_hour) : Cell::empty(),
                             o.quote.available ? Cell(src) : Cell::empty(),
                             o.available ? banded(o.wall_s, o.wall_low_s, o.wall_high_s) : Cell::empty(),
                             o.available ? Cell(o.instance_hours) : Cell::empty(),
                             o.available ? banded(o.usd, o.usd_low, o.usd_high) : Cell::empty()};
    if (conf) {
      row.push_back(o.available && std::isfinite(o.wall_q_s) ? Cell(o.wall_q_s) : Cell::empty());
      row.push_back(o.available && std::isfinite(o.usd_q) ? Cell(o.usd_q) : Cell::empty());
    }
    row.push_back(meets);
    row.push_back(notes);
    t.add_row(std::move(row));
  }
  sec.tables.push_back(std::move(t));
  return sec;
}

Section checkpoint_section(const PlanResult& r) {
  Section sec{.id = "checkpoints", .title = "Checkpoints and interruptions"};
  if (!r.best) return sec;
  const PlanCandidate& b = r.candidates[*r.best];
  const auto& ck = b.checkpoint;
  if (!ck.enabled) {
    sec.paragraphs.push_back("The plan has no checkpoint section: no checkpoint time is counted.");
    return sec;
  }
  sec.paragraphs.push_back(
      "Weights and optimizer state of the whole model, written by every node in parallel; training waits while "
      "they are written. Each interruption (a failure, or on spot a reclaimed instance) costs the restart, reading "
      "the checkpoint back and on average half a checkpoint cycle of lost work; time to train and every cost "
      "include the expected interruptions.");
  Table t{.id = "checkpoint", .title = "Checkpoints, failures and storage of the best candidate"};
  t.columns = {Column::text("figure", "Figure"), Column::text("value", "Value")};
  auto dur = [](double s) { return std::isfinite(s) ? format_value(s, ValueType::DURATION) : std::string("never"); };
  t.add_row({"size", format_value(ck.size_bytes, ValueType::BYTES)});
  t.add_row({"storage", ck.storage + (ck.aggregate_limited ? " (limited by its aggregate bandwidth)" : "")});
  t.add_row({"write bandwidth, whole cluster", format_significant(ck.write_bandwidth / 1e9, 3) + " GB/s"});
  t.add_row({"write time", dur(ck.write_s)});
  t.add_row({"read time at restart", dur(ck.read_s)});
  const auto& spec = *r.plan.checkpoint;
  t.add_row({"interval (training time)",
             dur(ck.interval_s) + (spec.interval == models::CheckpointSpec::Interval::AUTO
                                       ? " (Young/Daly: sqrt(2 x write time x mean time between interruptions))"
                                       : " (the plan's)")});
  t.add_row({"checkpoints", fmt(b.wall.checkpoints, 6)});
  t.add_row({"time spent writing", fmt(b.wall.checkpoint_s / 3600) + " h (" +
                                       fmt(100 * b.wall.checkpoint_s / std::max(1e-9, b.wall.nominal_s)) +
                                       "% of the run)"});
  if (b.failures.rate_per_s > 0) {
    t.add_row({"failures: mean time between, whole job", dur(1 / b.failures.rate_per_s)});
    t.add_row({"failures: expected interruptions", fmt(b.wall.interruptions)});
    t.add_row({"failures: time lost (restarts, reloads, work done again)",
               fmt(b.wall.lost_s / 3600) + " h (" + fmt(100 * b.wall.lost_s / std::max(1e-9, b.wall.nominal_s)) +
                   "% of the run)"});
  }
  t.add_row({"goodput (compute / wall time)", fmt(100 * b.compute_s / std::max(1e-9, b.wall.nominal_s)) + "%"});
  for (const auto& o : b.costs) {
    if (o.option == models::PricingOption::SPOT && o.available) {
      t.add_row({"spot: expected interruptions, failures included", fmt(o.expected_interruptions)});
      t.add_row({"spot: wall time", fmt(o.wall_s / 86400) + " days against " + fmt(b.wall.nominal_s / 86400) +
                                        " days on other options"});
    }
  }
  t.add_row({"stored: checkpoints kept + data set",
             fmt(spec.keep) + " x " + format_value(ck.size_bytes, ValueType::BYTES) + " + " +
                 format_value(b.dataset_bytes, ValueType::BYTES) + " = " +
                 format_value(b.stored_bytes, ValueType::BYTES)});
  t.add_row({"storage cost (in every option's cost)",
             b.storage_priced ? format_value(b.storage_usd_per_s * b.wall.nominal_s, ValueType::DOLLARS) +
                                    " over " + fmt(b.wall.nominal_s / 86400) + " days"
                              : "not priced: the catalog has no price for " + ck.storage +
                                    " (give checkpoint.price in the plan)"});
  sec.tables.push_back(std::move(t));
  return sec;
}

Section sensitivity_section(const PlanResult& r) {
  Section sec{.id = "sensitivity", .title = "Sensitivity"};
  if (!r.best || r.sensitivity.empty()) {
    sec.paragraphs.push_back("No sensitivity analysis (no feasible candidate, or disabled by the plan).");
    return sec;
  }
  sec.paragraphs.push_back(
      "The best candidate evaluated again with one change at a time; deltas against its "
      "time to train and its cost under its cheapest option.");
  const models::SensitivityRow* most = nullptr;
  for (const auto& row : r.sensitivity) {
    if (row.applied && (!most || std::fabs(row.delta_days) > std::fabs(most->delta_days))) most = &row;
  }
  if (most) {
    sec.paragraphs.push_back("Largest effect: " + most->label + " (" + (most->delta_days <= 0 ? "" : "+") +
                             fmt(most->delta_days) + " days, " + (most->delta_usd < 0 ? "-" : "+") +
                             format_value(std::fabs(most->delta_usd), ValueType::DOLLARS) + ").");
  }
  Table t{.id = "sensitivity-table", .title = "One change at a time"};
  t.columns = {Column::text("change", "Change"),
               Column::duration("step_time_s", "Step time"),
               Column::duration("delta_step_s", "Change in step time"),
               Column::number("delta_days", "Change in time to train", "days"),
               Column::dollars("delta_usd", "Change in cost"),
               Column::text("fidelity", "Model"),
               Column::text("note", "Note")};
  for (const auto& row : r.sensitivity) {
    if (!row.applied) {
      t.add_row({row.label, Cell::empty(), Cell::empty(), Cell::empty(), Cell::empty(), fidelity_name(row.fidelity),
                 "skipped: " + row.skipped_reason});
      continue;
    }
    t.add_row({row.label, row.step_time_s, row.delta_step_s, row.delta_days, row.delta_usd, fidelity_name(row.fidelity),
               row.bottleneck});
  }
  sec.tables.push_back(std::move(t));
  return sec;
}

Section infeasible_section(const PlanResult& r) {
  Section sec{.id = "infeasible", .title = "Infeasible candidates"};
  const auto& n = r.counts;
  Table counts{.id = "counts", .title = "Candidates by outcome"};
  counts.columns = {Column::text("outcome", "Outcome"), Column::integer("count", "Count")};
  counts.add_row({"combinations", static_cast<double>(n.combinations)});
  counts.add_row({"rejected combinations (divisibility, layout checks)", static_cast<double>(n.rejected)});
  counts.add_row({"valid layouts", static_cast<double>(n.layouts)});
  counts.add_row({"do not fit in memory", static_cast<double>(n.does_not_fit)});
  counts.add_row({"evaluated (fast model)", static_cast<double>(n.evaluated)});
  counts.add_row({"failed in the step model", static_cast<double>(n.evaluation_failed)});
  counts.add_row({"miss the deadline", static_cast<double>(n.misses_deadline)});
  counts.add_row({"over budget", static_cast<double>(n.over_budget)});
  counts.add_row({"no option meets deadline and budget", static_cast<double>(n.no_option)});
  counts.add_row({"feasible", static_cast<double>(n.feasible)});
  counts.add_row({"re-checked with the event simulation", static_cast<double>(n.rechecked)});
  sec.tables.push_back(std::move(counts));

  Table rej{.id = "rejected", .title = "Rejected combinations by reason"};
  rej.columns = {Column::text("reason", "Reason"), Column::integer("count", "Count"),
                 Column::text("example", "Example")};
  for (const auto& x : r.space.rejected) rej.add_row({x.reason, static_cast<double>(x.count), x.example});
  sec.tables.push_back(std::move(rej));

  Table inf{.id = "infeasible-candidates", .title = "Infeasible candidates"};
  std::size_t total = 0;
  inf.columns = {Column::text("candidate", "Candidate"), Column::text("outcome", "Outcome"),
                 Column::text("reason", "Reason")};
  for (const auto& c : r.candidates) {
    if (c.status == models::CandidateStatus::FEASIBLE) continue;
    if (++total > static_cast<std::size_t>(r.plan.search.report_rows)) continue;
    inf.add_row({label_of(r, c.id), std::string(models::to_string(c.status)), c.reason});
  }
  inf.caption = total > inf.rows.size() ? "the first " + std::to_string(inf.rows.size()) + " of " +
                                              std::to_string(total) + " (all are in the JSON result)"
                                        : "all " + std::to_string(total);
  sec.tables.push_back(std::move(inf));
  return sec;
}

Section near_misses_section(const PlanResult& r) {
  Section sec{.id = "near-misses", .title = "Nearest misses"};
  sec.paragraphs.push_back(
      "No candidate is feasible. These come closest: each under its pricing option that misses least, with by how "
      "much it misses and what would make it feasible. More nodes assumes the step time falls as 1 / nodes, an "
      "optimistic bound.");
  Table t{.id = "near-misses-table", .title = "Nearest misses", .caption = "closest first"};
  t.columns = {Column::text("candidate", "Candidate"),   Column::text("option", "Option"),
               Column::duration("time_to_train_s", "Time to train"), Column::dollars("cost_usd", "Cost"),
               Column::text("miss", "Misses by"),         Column::text("fix", "What would fix it")};
  for (const auto& m : r.near_misses) {
    const auto& c = r.candidates[m.id];
    const bool priced = m.option >= 0;
    t.add_row({label_of(r, m.id),
               priced ? std::string(models::pricing_label(c.costs[static_cast<std::size_t>(m.option)].option))
                      : std::string("n/a"),
               m.wall_s, priced ? Cell(m.usd) : Cell::empty(), m.miss, m.fix});
  }
  sec.tables.push_back(std::move(t));
  return sec;
}

std::vector<AssumptionGroup> assumptions(const PlanResult& r, const hardware::Catalog& catalog,
                                         const PlanReportOptions& options) {
  std::vector<AssumptionGroup> out;
  AssumptionGroup prices{.id = "prices", .title = "Prices"};
  for (std::size_t s = 0; s < r.space.systems.size(); ++s) {
    for (const auto& q : r.quotes[s]) {
      Assumption a;
      a.name = r.space.systems[s].name + " " + std::string(models::pricing_label(q.option));
      if (!q.available) {
        a.value = "not available: " + q.unavailable_reason;
      } else if (q.assumed) {
        a.value = fmt(q.per_hour, 4) + " USD/h per instance, " + q.assumption;
      } else {
        a.value = fmt(q.per_hour, 4) + " USD/h per instance";
      }
      a.source = q.source_title.empty() ? q.source : q.source_title;
      a.date = q.date;
      a.region = q.region;
      prices.items.push_back(std::move(a));
    }
  }
  out.push_back(std::move(prices));

  const auto& pricing = r.plan.pricing;
  AssumptionGroup terms{.id = "pricing-terms", .title = "Pricing terms"};
  terms.items.push_back(
      {"Capacity Blocks",
       "paid upfront for whole days, 1 to 182 days and at most 64 instances per block; " +
           std::string(pricing.capacity_block_allow_split
                           ? "larger jobs are split into several blocks (flagged)"
                           : "jobs needing several blocks are infeasible (the plan forbids splitting)"),
       "EC2 Capacity Blocks pricing page", "", ""});
  {
    std::string listed;
    for (auto o : pricing.options) listed += (listed.empty() ? "" : ", ") + std::string(models::pricing_label(o));
    terms.items.push_back({"options priced",
                           listed + (pricing.options_listed
                                         ? " (the plan's list; the headline is the cheapest of these that is feasible)"
                                         : " (the plan lists no options; list capacity_block, savings_plan_1yr, "
                                           "savings_plan_3yr to compare them)"),
                           pricing.options_listed ? "the plan" : "default", "", ""});
  }
  if (pricing.negotiated_discount) {
    terms.items.push_back({"negotiated discount",
                           fmt(100 * *pricing.negotiated_discount) + "% off the catalog's on-demand rate",
                           "the plan", "", ""});
  }
  const bool any_sp = std::any_of(pricing.options.begin(), pricing.options.end(), [](models::PricingOption o) {
    return o == models::PricingOption::SAVINGS_PLAN_1YR || o == models::PricingOption::SAVINGS_PLAN_3YR;
  });
  if (any_sp) {
    const std::string after = pricing.after_job.empty() ? "" : "; after the job: " + pricing.after_job;
    std::string how;
    switch (pricing.commitment) {
      case models::SavingsPlanCommitment::DEDICATED:
        how = "bought whole: the job pays every hour of the 1- or 3-year term for the nodes it commits" +
              std::string(pricing.commitment_stated ? "" : " (the plan states no share of it for other work)");
        break;
      case models::SavingsPlanCommitment::SHARED:
        how = "the job carries " + fmt(100 * pricing.commitment_share) +
              "% of the whole 1- or 3-year term for the nodes it commits; other work carries the rest";
        break;
      case models::SavingsPlanCommitment::UTILIZED:
        how = "the job pays the plan rate for the hours it runs; the plan states that other work uses the "
              "commitment for every other hour of the term";
        break;
    }
    terms.items.push_back({"Savings Plans commitment", std::string(models::to_string(pricing.commitment)) + ": " + how + after,
                           pricing.commitment_stated ? "the plan" : "default", "", ""});
  }
  if (pricing.spot) {
    terms.items.push_back({"spot interruptions",
                           fmt(pricing.spot->interruptions_per_node_day) + " per node per day (the plan's assumption)",
                           "the plan", "", ""});
    terms.items.push_back({"spot restart",
                           format_value(pricing.spot->restart_s, ValueType::DURATION) +
                               " per interruption, plus reading the checkpoint back",
                           "the plan", "", ""});
  }
  out.push_back(std::move(terms));

  AssumptionGroup job{.id = "job", .title = "Job"};
  job.items.push_back({"tokens to train", r.plan.job.describe(), "the plan", "", ""});
  if (r.plan.job.deadline_s)
    job.items.push_back({"deadline", fmt(*r.plan.job.deadline_s / 86400) + " days", "the plan", "", ""});
  if (r.plan.job.budget_usd) job.items.push_back({"budget", "$" + fmt(*r.plan.job.budget_usd, 6), "the plan", "", ""});
  if (r.plan.job.confidence) {
    const double q = *r.plan.job.confidence;
    job.items.push_back({"confidence",
                         fmt(100 * q) + "%: the deadline and the budget are judged at the " + fmt(100 * q) +
                             "% quantile of time to train and cost: the step time's quantile from the scores of "
                             "the committed validation steps of its regime and calibration (split conformal)",
                         "the plan", "", ""});
  } else if (r.plan.job.deadline_s || r.plan.job.budget_usd) {
    job.items.push_back({"confidence", "none given: the deadline and the budget are judged at the point estimate",
                         "default", "", ""});
  }
  job.items.push_back({"ranking",
                       std::string(models::to_string(r.plan.search.rank_by)) + "; the best " +
                           std::to_string(r.plan.search.top_k) +
                           " of each ranking re-checked with the event simulation",
                       "the plan", "", ""});
  out.push_back(std::move(job));

  if (r.plan.checkpoint) {
    AssumptionGroup ck{.id = "checkpoint", .title = "Checkpoint storage"};
    const auto& st = catalog.storage(r.plan.checkpoint->storage);
    auto src = [&](const std::string& id) -> std::pair<std::string, std::string> {
      if (!catalog.sources().count(id)) return {id, ""};
      return {catalog.source(id).title, catalog.source(id).date};
    };
    const auto w = src(st.write_bandwidth_per_node.source);
    ck.items.push_back(
        {st.name + " write per node", format_bandwidth(st.write_bandwidth_per_node.value), w.first, w.second, ""});
    const auto rd = src(st.read_bandwidth_per_node.source);
    ck.items.push_back(
        {st.name + " read per node", format_bandwidth(st.read_bandwidth_per_node.value), rd.first, rd.second, ""});
    if (st.aggregate_limit) {
      const auto a = src(st.aggregate_limit->source);
      ck.items.push_back(
          {st.name + " aggregate limit", format_bandwidth(st.aggregate_limit->value), a.first, a.second, ""});
    }
    const auto& spec = *r.plan.checkpoint;
    std::string interval = spec.interval == models::CheckpointSpec::Interval::AUTO
                               ? "auto (Young/Daly: sqrt(2 x write time / interruption rate))"
                           : spec.interval == models::CheckpointSpec::Interval::STEPS
                               ? "every " + std::to_string(spec.interval_steps) + " steps"
                               : "every " + fmt(spec.interval_s / 3600) + " h of training";
    ck.items.push_back({"interval", interval, "the plan", "", ""});
    ck.items.push_back({"size",
                        "weights + optimizer state of the whole model (bytes per element as in the memory model)",
                        "memory model", "", ""});
    if (spec.write_bandwidth_per_node)
      ck.items.push_back({"write per node", fmt(*spec.write_bandwidth_per_node / 1e9) + " GB/s", "the plan", "", ""});
    if (spec.read_bandwidth_per_node)
      ck.items.push_back({"read per node", fmt(*spec.read_bandwidth_per_node / 1e9) + " GB/s", "the plan", "", ""});
    if (spec.aggregate_bandwidth)
      ck.items.push_back({"aggregate limit", fmt(*spec.aggregate_bandwidth / 1e9) + " GB/s", "the plan", "", ""});
    if (spec.usd_per_gb_month) {
      ck.items.push_back({"storage price", fmt(*spec.usd_per_gb_month, 4) + " USD per GB-month", "the plan", "", ""});
    } else if (st.usd_per_gb_month) {
      const auto pr = src(st.usd_per_gb_month->source);
      ck.items.push_back({st.name + " price", fmt(st.usd_per_gb_month->value, 4) + " USD per GB-month, 730 h a month",
                          pr.first, pr.second, ""});
    } else {
      ck.items.push_back({"storage price", "none in the catalog for " + st.name + ": storage is not priced",
                          "catalog", "", ""});
    }
    ck.items.push_back({"checkpoints kept", fmt(spec.keep), spec.stated ? "the plan" : "default", "", ""});
    ck.items.push_back({"data set stored",
                        spec.dataset_bytes ? format_value(*spec.dataset_bytes, ValueType::BYTES)
                                           : "4 bytes per token of the data set (token ids as int32)",
                        spec.dataset_bytes ? "the plan" : "default", "", ""});
    if (!spec.stated) {
      ck.items.push_back({"checkpoint section", "none in the plan: " + st.name + ", interval by Young/Daly",
                          "default", "", ""});
    }
    out.push_back(std::move(ck));
  }

  AssumptionGroup gp{.id = "goodput", .title = "Failures and goodput"};
  if (!r.plan.goodput.enabled) {
    gp.items.push_back({"failures", "not counted (goodput.enabled is false)", "the plan", "", ""});
  } else {
    const auto& g = r.plan.goodput;
    const auto& fr = catalog.failure_rate(g.failure_rate);
    auto src = [&](const std::string& id) -> std::pair<std::string, std::string> {
      if (!catalog.sources().count(id)) return {id, ""};
      const auto& x = catalog.source(id);
      return {x.title, x.date};
    };
    if (g.interruptions_per_gpu_hour) {
      gp.items.push_back(
          {"failure rate", fmt(*g.interruptions_per_gpu_hour, 4) + " interruptions per GPU-hour", "the plan", "", ""});
    } else if (g.interruptions_per_node_day) {
      gp.items.push_back(
          {"failure rate", fmt(*g.interruptions_per_node_day, 4) + " interruptions per node-day", "the plan", "", ""});
    } else {
      const auto s = src(fr.interruptions_per_gpu_hour.source);
      gp.items.push_back({"failure rate",
                          fmt(fr.interruptions_per_gpu_hour.value, 4) + " interruptions per GPU-hour (" + fr.name +
                              (g.failure_rate_stated ? ", the plan's choice" : ", the default") + ")",
                          s.first, s.second, ""});
    }
    if (g.restart_s) {
      gp.items.push_back({"restart", format_value(*g.restart_s, ValueType::DURATION) +
                                         " per failure, plus reading the checkpoint back",
                          "the plan", "", ""});
    } else {
      const auto s = src(fr.restart_time.source);
      gp.items.push_back({"restart",
                          format_value(fr.restart_time.value.seconds(), ValueType::DURATION) +
                              " per failure, plus reading the checkpoint back",
                          s.first, s.second, ""});
    }
    gp.items.push_back({"lost work", "half a checkpoint cycle (interval + write) per interruption, on average",
                        "model", "", ""});
  }
  out.push_back(std::move(gp));

  AssumptionGroup cal{.id = "calibration", .title = "Calibration"};
  for (const auto& sys : r.space.systems) {
    if (!sys.profile) {
      cal.items.push_back(
          {sys.name, "defaults, uncalibrated (no calibration profile for this system)", "catalog", "", ""});
      continue;
    }
    const auto& p = sys.profile->provenance();
    cal.items.push_back({sys.name,
                         "profile " + sys.profile->name() + (p.machine.empty() ? "" : ", measured on " + p.machine),
                         sys.profile->file(), p.date, ""});
  }
  if (r.best) {
    const auto& b = r.candidates[*r.best];
    if (b.parameters_used > 0) {
      cal.items.push_back(
          {"parameters of the best candidate",
           std::to_string(b.parameters_calibrated) + " of " + std::to_string(b.parameters_used) + " calibrated",
           "step model", "", ""});
    }
  }
  out.push_back(std::move(cal));

  AssumptionGroup ver{.id = "versions", .title = "Model and versions"};
  ver.items.push_back(
      {"model", r.space.model.name + " (" + r.space.model.model_type + ")", r.space.model.source, "", ""});
  std::set<std::string> nccl;
  for (const auto& c : r.space.candidates) nccl.insert(c.scenario.nccl.version);
  std::string versions;
  for (const auto& v : nccl) versions += (versions.empty() ? "" : ", ") + v;
  ver.items.push_back({"NCCL", versions + " (tuning constants of that release)", "scenario nccl.version", "", ""});
  ver.items.push_back({"MFU", models::mfu_definition(), "Narayanan et al., SC'21; Chowdhery et al., PaLM, 2022",
                       "", ""});
  if (!options.generated_by.empty()) ver.items.push_back({"program", options.generated_by, "", "", ""});
  out.push_back(std::move(ver));

  // Provenance: when, by what, from which inputs (each file's SHA-256 and that of the whole set).
  AssumptionGroup prov{.id = "provenance", .title = "Provenance"};
  if (!options.created.empty()) prov.items.push_back({"generated", options.created, "", "", ""});
  if (!options.generated_by.empty()) prov.items.push_back({"program", options.generated_by, "", "", ""});
  std::vector<hardware::InputDigest> inputs = options.inputs;
  inputs.insert(inputs.end(), catalog.inputs().begin(), catalog.inputs().end());
  if (!inputs.empty()) {
    prov.items.push_back({"inputs (SHA-256 of the manifest below)", hardware::manifest_sha256(inputs),
                          "manifest: one \"<sha256>  <name>\" line per input, as sha256sum writes", "", ""});
    for (const auto& in : inputs) prov.items.push_back({in.name, in.sha256, "SHA-256 of the file", "", ""});
  }
  if (!prov.items.empty()) out.push_back(std::move(prov));
  return out;
}

}  // namespace clustersim::reports::plan_parts
