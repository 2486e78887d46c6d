// The plan result JSON (format in plan_report.hpp) and the reader of saved results.

#include <cmath>
#include <filesystem>

#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"
#include "models/layout_search.hpp"
#include "reports/json_report.hpp"
#include "reports/plan_report.hpp"

namespace clustersim::reports {

namespace {

using Json = nlohmann::ordered_json;
using models::PlanCandidate;
using models::PlanResult;

Json num(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Json parallelism_json(const models::Scenario& s) {
  const auto& p = s.parallelism;
  Json j;
  j["framework"] = std::string(models::to_string(p.framework));
  j["data"] = p.data;
  j["tensor"] = p.tensor;
  j["pipeline"] = p.pipeline;
  j["context"] = p.context;
  j["expert"] = p.expert;
  j["zero_stage"] = p.zero_stage;
  j["sequence_parallel"] = p.sequence_parallel;
  j["pipeline_schedule"] = std::string(models::to_string(p.pipeline_schedule));
  j["virtual_stages"] = p.virtual_stages;
  j["offload"] = {{"optimizer", p.offload_optimizer == models::OffloadTarget::CPU ? "cpu" : "none"},
                  {"params", p.offload_params == models::OffloadTarget::CPU ? "cpu" : "none"}};
  return j;
}

Json training_json(const models::Scenario& s) {
  const auto& t = s.training;
  Json j;
  j["seq_len"] = t.seq_len;
  j["global_batch_size"] = t.global_batch_size;
  j["micro_batch_size"] = t.micro_batch_size;
  j["activation_checkpointing"] = std::string(models::to_string(t.activation_checkpointing));
  j["precision"] = std::string(models::to_string(t.precision));
  if (t.fine_tuning == models::FineTuning::LORA) {
    j["fine_tuning"] = {{"method", "lora"}, {"rank", t.lora.rank}, {"alpha", t.lora.alpha}};
  } else {
    j["fine_tuning"] = {{"method", "full"}};
  }
  return j;
}

Json memory_json(const models::MemoryBreakdown& m) {
  return Json{{"peak_bytes", m.peak.count()},
              {"weights_bytes", m.weights.count()},
              {"gradients_bytes", m.gradients.count()},
              {"optimizer_state_bytes", m.optimizer_state.count()},
              {"activations_bytes", m.activations.count()},
              {"buffers_bytes", m.buffers.count()},
              {"usable_bytes", m.usable.count()}};
}

// One option's figures for one candidate; the price itself (rate, region, source, date) is in the
// result's "prices", once per system.
Json option_json(const models::OptionCost& o) {
  Json j;
  j["available"] = o.available;
  if (!o.available) {
    j["reason"] = o.reason;
    return j;
  }
  j["usd"] = num(o.usd);
  j["low"] = num(o.usd_low);
  j["high"] = num(o.usd_high);
  j["wall_s"] = num(o.wall_s);
  j["instance_hours"] = num(o.instance_hours);
  j["wall_confidence_s"] = num(o.wall_q_s);
  j["usd_confidence"] = num(o.usd_q);
  j["basis"] = o.basis;
  if (o.option == models::PricingOption::SAVINGS_PLAN_1YR || o.option == models::PricingOption::SAVINGS_PLAN_3YR) {
    j["commitment_usd"] = num(o.commitment_usd);
  }
  if (o.option == models::PricingOption::CAPACITY_BLOCK) {
    j["billed_days"] = num(o.billed_days);
    j["blocks"] = o.blocks;
  }
  j["expected_interruptions"] = num(o.expected_interruptions);
  j["storage_usd"] = num(o.storage_usd);
  j["meets_deadline"] = o.meets_deadline;
  j["within_budget"] = o.within_budget;
  return j;
}

Json quote_json(const std::string& system, const models::PriceQuote& q) {
  Json j;
  j["system"] = system;
  j["option"] = std::string(models::to_string(q.option));
  j["available"] = q.available;
  if (!q.available) {
    j["reason"] = q.unavailable_reason;
    return j;
  }
  j["per_hour"] = num(q.per_hour);
  j["region"] = q.region;
  j["source"] = q.source;
  j["date"] = q.date;
  j["assumed"] = q.assumed;
  if (q.assumed) j["assumption"] = q.assumption;
  return j;
}

// The figures of a candidate; `full` adds what only evaluated candidates have.
Json candidate_json(const PlanResult& r, const PlanCandidate& c) {
  const auto& l = r.layout(c.id);
  const auto& s = l.scenario;
  Json j;
  j["id"] = c.id;
  if (c.status == models::CandidateStatus::FEASIBLE) {
    j["rank"] = r.plan.search.rank_by == models::RankBy::COST ? c.rank_cost : c.rank_time;
    j["rank_time"] = c.rank_time;
    j["rank_cost"] = c.rank_cost;
    j["on_frontier"] = c.on_frontier;
  } else {
    j["status"] = std::string(models::to_string(c.status));
    j["reason"] = c.reason;
  }
  j["label"] = models::candidate_label(s);
  j["system"] = s.cluster.system;
  j["nodes"] = s.cluster.nodes;
  j["gpus_per_node"] = s.cluster.gpus_per_node;
  j["gpus"] = s.world_size();
  j["parallelism"] = parallelism_json(s);
  j["training"] = training_json(s);
  j["nccl_env"] = Json::object();
  for (const auto& [k, v] : s.nccl.env) j["nccl_env"][k] = v;
  j["peak_memory_bytes"] = c.peak_memory(l).count();
  j["fits_in_memory"] = l.fits && (!c.evaluated || c.estimate().memory.fits);
  const bool feasible = c.status == models::CandidateStatus::FEASIBLE;
  if (feasible) {
    j["memory"] = memory_json(l.memory);
    j["memory"]["peak_stage"] = l.peak_stage;
  }
  const bool priced = c.evaluated && c.status != models::CandidateStatus::EVALUATION_FAILED &&
                      c.status != models::CandidateStatus::DOES_NOT_FIT;
  if (!priced) return j;
  const auto& e = c.estimate();
  j["fidelity"] = e.fidelity == models::Fidelity::EVENT ? "event" : "fast";
  j["step_time_s"] = num(e.step_time_s);
  j["uncertainty"] = {{"low_s", num(e.low_s)}, {"high_s", num(e.high_s)}};
  j["fast_step_time_s"] = num(c.fast.step_time_s);
  if (!c.event_error.empty()) j["event_error"] = c.event_error;
  j["time_to_train_s"] = num(c.wall.nominal_s);
  j["time_to_train_band"] = {{"low_s", num(c.wall_low_s)}, {"high_s", num(c.wall_high_s)}};
  if (r.plan.job.confidence) j["time_to_train_confidence_s"] = num(c.wall_q_s);
  const auto* ch = c.cheapest_cost();
  j["cheapest_option"] = ch && ch->available ? Json(std::string(models::to_string(ch->option))) : Json(nullptr);
  if (!feasible) {
    j["cheapest_usd"] = ch && ch->available ? num(ch->usd) : Json(nullptr);
    return j;
  }
  j["tokens"] = num(c.tokens);
  j["tokens_per_step"] = c.tokens_per_step;
  j["steps"] = c.steps;
  j["tokens_per_s"] = num(e.tokens_per_s);
  j["mfu"] = num(e.mfu);
  j["compute_s"] = num(c.compute_s);
  if (c.checkpoint.enabled) {
    j["checkpoint"] = {{"storage", c.checkpoint.storage},
                       {"size_bytes", num(c.checkpoint.size_bytes)},
                       {"write_bandwidth_Bps", num(c.checkpoint.write_bandwidth)},
                       {"write_s", num(c.checkpoint.write_s)},
                       {"read_s", num(c.checkpoint.read_s)},
                       {"interval_s", num(c.checkpoint.interval_s)},
                       {"count", num(c.wall.checkpoints)},
                       {"total_s", num(c.wall.checkpoint_s)}};
  }
  j["goodput"] = {{"failures_per_s", num(c.failures.rate_per_s)},
                  {"restart_s", num(c.failures.restart_s)},
                  {"failure_free_s", num(c.wall.failure_free_s)},
                  {"expected_interruptions", num(c.wall.interruptions)},
                  {"lost_s", num(c.wall.lost_s)},
                  {"goodput", c.wall.nominal_s > 0 ? num(c.compute_s / c.wall.nominal_s) : Json(nullptr)}};
  j["storage"] = {{"stored_bytes", num(c.stored_bytes)},
                  {"dataset_bytes", num(c.dataset_bytes)},
                  {"priced", c.storage_priced},
                  {"usd", c.storage_priced ? num(c.storage_usd_per_s * c.wall.nominal_s) : Json(nullptr)}};
  j["gpu_hours"] = num(c.gpu_hours);
  j["node_hours"] = num(c.node_hours);
  Json costs = Json::object();
  for (const auto& o : c.costs) costs[std::string(models::to_string(o.option))] = option_json(o);
  j["cost_usd"] = costs;
  const auto& b = e.breakdown;
  j["breakdown"] = {{"compute_s", num(b.compute_s)},
                    {"exposed_comm_s", num(b.exposed_comm_s)},
                    {"pipeline_bubble_s", num(b.pipeline_bubble_s)},
                    {"optimizer_s", num(b.optimizer_s)},
                    {"offload_s", num(b.offload_s)},
                    {"host_s", num(b.host_s)}};
  j["bottleneck"] = e.bottleneck;
  j["warnings"] = e.warnings;
  return j;
}

Json plan_json(const PlanResult& r) {
  const auto& p = r.plan;
  Json j;
  j["name"] = p.name;
  j["file"] = std::filesystem::path(p.file).filename().string();
  j["model"] = r.space.model.name;
  Json job;
  job["tokens"] = p.job.describe();
  job["deadline_s"] = p.job.deadline_s ? num(*p.job.deadline_s) : Json(nullptr);
  job["budget_usd"] = p.job.budget_usd ? num(*p.job.budget_usd) : Json(nullptr);
  job["confidence"] = p.job.confidence ? num(*p.job.confidence) : Json(nullptr);
  j["job"] = job;
  j["rank_by"] = std::string(models::to_string(p.search.rank_by));
  j["top_k"] = p.search.top_k;
  Json pricing;
  pricing["region"] = p.pricing.region.empty() ? Json(nullptr) : Json(p.pricing.region);
  Json opts = Json::array();
  for (auto o : p.pricing.options) opts.push_back(std::string(models::to_string(o)));
  pricing["options"] = opts;
  pricing["options_listed"] = p.pricing.options_listed;
  pricing["negotiated_discount"] = p.pricing.negotiated_discount ? Json(*p.pricing.negotiated_discount) : Json(nullptr);
  pricing["savings_plan_commitment"] = std::string(models::to_string(p.pricing.commitment));
  pricing["savings_plan_commitment_stated"] = p.pricing.commitment_stated;
  pricing["savings_plan_share"] = p.pricing.commitment == models::SavingsPlanCommitment::SHARED
                                      ? Json(p.pricing.commitment_share)
                                      : Json(nullptr);
  if (!p.pricing.after_job.empty()) pricing["savings_plan_after_job"] = p.pricing.after_job;
  pricing["capacity_block_allow_split"] = p.pricing.capacity_block_allow_split;
  if (p.pricing.spot) {
    const auto& s = *p.pricing.spot;
    pricing["spot"] = {{"interruptions_per_node_day", s.interruptions_per_node_day},
                       {"restart_s", s.restart_s},
                       {"discount", s.discount ? Json(*s.discount) : Json(nullptr)},
                       {"price_per_hour", s.price_per_hour ? Json(*s.price_per_hour) : Json(nullptr)}};
  }
  j["pricing"] = pricing;
  return j;
}

}  // namespace

nlohmann::ordered_json plan_result_to_json(const PlanResult& r, const Report& report) {
  Json j;
  j["schema_version"] = kPlanResultSchemaVersion;
  j["kind"] = std::string(kPlanResultKind);
  j["plan"] = plan_json(r);
  j["evaluated"] = r.counts.evaluated;
  j["feasible"] = r.counts.feasible;
  const auto& n = r.counts;
  j["counts"] = {{"combinations", n.combinations},
                 {"rejected", n.rejected},
                 {"layouts", n.layouts},
                 {"does_not_fit", n.does_not_fit},
                 {"evaluated", n.evaluated},
                 {"evaluation_failed", n.evaluation_failed},
                 {"misses_deadline", n.misses_deadline},
                 {"over_budget", n.over_budget},
                 {"no_option", n.no_option},
                 {"feasible", n.feasible},
                 {"rechecked", n.rechecked}};
  j["best"] = r.best ? Json(*r.best) : Json(nullptr);
  Json prices = Json::array();
  for (std::size_t s = 0; s < r.space.systems.size(); ++s) {
    for (const auto& q : r.quotes[s]) prices.push_back(quote_json(r.space.systems[s].name, q));
  }
  j["prices"] = std::move(prices);
  Json cands = Json::array();
  for (std::size_t id : r.primary()) cands.push_back(candidate_json(r, r.candidates[id]));
  j["candidates"] = std::move(cands);
  j["pareto"] = r.frontier;
  Json inf = Json::array();
  for (const auto& c : r.candidates) {
    if (c.status != models::CandidateStatus::FEASIBLE) inf.push_back(candidate_json(r, c));
  }
  j["infeasible"] = std::move(inf);
  Json near = Json::array();
  for (const auto& m : r.near_misses) {
    const auto& c = r.candidates[m.id];
    near.push_back({{"id", m.id},
                    {"option", m.option >= 0 ? Json(std::string(models::to_string(
                                                   c.costs[static_cast<std::size_t>(m.option)].option)))
                                             : Json(nullptr)},
                    {"time_to_train_s", num(m.wall_s)},
                    {"cost_usd", m.option >= 0 ? num(m.usd) : Json(nullptr)},
                    {"late_fraction", num(m.late)},
                    {"over_budget_fraction", num(m.over)},
                    {"miss", m.miss},
                    {"fix", m.fix}});
  }
  j["near_misses"] = std::move(near);
  Json rej = Json::array();
  for (const auto& x : r.space.rejected)
    rej.push_back({{"reason", x.reason}, {"count", x.count}, {"example", x.example}});
  j["rejected_combinations"] = std::move(rej);
  Json sens = Json::array();
  for (const auto& row : r.sensitivity) {
    Json s;
    s["key"] = row.key;
    s["label"] = row.label;
    s["applied"] = row.applied;
    if (!row.applied) {
      s["skipped"] = row.skipped_reason;
    } else {
      s["fidelity"] = row.fidelity == models::Fidelity::EVENT ? "event" : "fast";
      s["step_time_s"] = num(row.step_time_s);
      s["time_to_train_s"] = num(row.wall_s);
      s["cost_usd"] = num(row.usd);
      s["delta_step_s"] = num(row.delta_step_s);
      s["delta_days"] = num(row.delta_days);
      s["delta_usd"] = num(row.delta_usd);
    }
    sens.push_back(std::move(s));
  }
  j["sensitivity"] = std::move(sens);
  j["report"] = report_to_json(report);
  return j;
}

std::string render_plan_result(const PlanResult& r, const Report& report) {
  // Two-space indentation, except that each candidate is one line: a result holds thousands.
  const Json j = plan_result_to_json(r, report);
  std::string out = "{\n";
  bool first = true;
  for (const auto& [key, value] : j.items()) {
    out += first ? "  " : ",\n  ";
    first = false;
    out += Json(key).dump() + ": ";
    if ((key == "candidates" || key == "infeasible") && !value.empty()) {
      out += "[\n";
      for (std::size_t i = 0; i < value.size(); ++i) out += (i ? ",\n    " : "    ") + value[i].dump();
      out += "\n  ]";
    } else {
      std::string text = value.dump(2);
      // Indent the nested lines one level (strings hold no raw newlines: JSON escapes them).
      for (std::size_t pos = text.find('\n'); pos != std::string::npos; pos = text.find('\n', pos + 3)) {
        text.replace(pos, 1, "\n  ");
      }
      out += text;
    }
  }
  return out + "\n}\n";
}

Report load_saved_report(const std::string& path) { return read_saved_report(load_json_file(path)); }

Report read_saved_report(const JsonDocument& doc) {
  const auto& root = doc.json();
  if (root.is_object() && root.contains("kind") && root["kind"] == std::string(kPlanResultKind)) {
    ObjectReader o = doc.root().as_object();
    o.at("schema_version").as_int({.min = 1, .max = kPlanResultSchemaVersion});
    o.at("kind");
    // The rest of a plan result is data for other programs; only its report is rendered.
    o.allow({"plan", "evaluated", "feasible", "counts", "best", "prices", "candidates", "pareto", "infeasible",
             "near_misses", "rejected_combinations", "sensitivity"});
    Report r = read_report(o.at("report"));
    o.finish();
    return r;
  }
  if (root.is_object() && root.contains("kind") && root["kind"] == std::string(kReportKind)) {
    return read_report(doc.root());
  }
  throw InputError(doc.file(), "/kind",
                   "expected a plan result (\"" + std::string(kPlanResultKind) + "\") or a report (\"" +
                       std::string(kReportKind) + "\")");
}

}  // namespace clustersim::reports
