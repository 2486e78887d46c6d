#include "models/plan_runner.hpp"

#include "models/step_band.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "hardware/errors.hpp"
#include "models/plan_flops.hpp"
#include "models/plan_misses.hpp"
#include "models/plan_parallel.hpp"
#include "models/plan_sensitivity.hpp"
#include "models/training_model.hpp"

namespace clustersim::models {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::size_t kNearMisses = 5;  // shown when no candidate is feasible

std::string fmt(double v, int digits = 3) { return format_significant(v, digits); }
std::string days(double s) { return fmt(s / 86400) + " days"; }
std::string dollars(double usd) { return "$" + fmt(usd, 4); }
std::string gib(const Bytes& b) { return fmt(b.as_double() / (1024.0 * 1024 * 1024)) + " GiB"; }

double cheapest_usd(const PlanCandidate& c) {
  const OptionCost* o = c.cheapest_cost();
  return o && o->available ? o->usd : kInf;
}

}  // namespace

std::string_view to_string(CandidateStatus s) {
  switch (s) {
    case CandidateStatus::FEASIBLE: return "feasible";
    case CandidateStatus::DOES_NOT_FIT: return "does_not_fit";
    case CandidateStatus::EVALUATION_FAILED: return "evaluation_failed";
    case CandidateStatus::MISSES_DEADLINE: return "misses_deadline";
    case CandidateStatus::OVER_BUDGET: return "over_budget";
    case CandidateStatus::NO_OPTION: return "no_option";
  }
  return "feasible";
}

CandidatePricer::CandidatePricer(const PlanSpec& plan, const SearchSpace& space, const hardware::Catalog& catalog)
    : plan_(plan), space_(space) {
  if (plan.checkpoint) {
    try {
      storage_ = &catalog.storage(plan.checkpoint->storage);
    } catch (const InputError& e) {
      throw InputError(plan.file, plan.checkpoint->storage_pointer, e.message());
    }
  }
  if (plan.goodput.enabled) {
    try {
      failure_rate_ = &catalog.failure_rate(plan.goodput.failure_rate);
    } catch (const InputError& e) {
      throw InputError(plan.file, plan.goodput.failure_rate_pointer, e.message());
    }
  }
  for (const auto& sys : space.systems) quotes_.push_back(quote_prices(catalog, sys.name, plan.pricing));
}

void CandidatePricer::price(PlanCandidate& c, const LayoutCandidate& layout, const StepEstimate& est) const {
  const Scenario& s = layout.scenario;
  const int nodes = s.cluster.nodes;
  c.tokens = plan_.job.tokens_for(s.training.seq_len);
  c.tokens_per_step = s.training.global_batch_size * s.training.seq_len;
  c.steps = static_cast<std::int64_t>(std::ceil(c.tokens / static_cast<double>(c.tokens_per_step) - 1e-9));
  const double step = est.step_time_s;
  const double low = est.low_s > 0 ? std::min(est.low_s, step) : step;
  const double high = est.high_s > 0 ? std::max(est.high_s, step) : step;
  const double steps = static_cast<double>(c.steps);
  c.compute_s = steps * step;
  c.compute_low_s = steps * low;
  c.compute_high_s = steps * high;
  // Failures: the plan's rate, else the catalog's, for every GPU of the job.
  Interruptions failures;
  if (failure_rate_) {
    const auto& g = plan_.goodput;
    const double per_gpu_hour =
        g.interruptions_per_gpu_hour   ? *g.interruptions_per_gpu_hour
        : g.interruptions_per_node_day ? *g.interruptions_per_node_day / (24.0 * s.cluster.gpus_per_node)
                                       : failure_rate_->interruptions_per_gpu_hour.value;
    failures.rate_per_s = job_failure_rate(per_gpu_hour, s.world_size());
    failures.restart_s = g.restart_s ? *g.restart_s : failure_rate_->restart_time.value.seconds();
  }
  const bool wants_spot = std::find(plan_.pricing.options.begin(), plan_.pricing.options.end(), PricingOption::SPOT) !=
                          plan_.pricing.options.end();
  c.checkpoint = CheckpointCost{};
  c.storage_usd_per_s = 0;
  if (storage_) {
    const auto& spec = *plan_.checkpoint;
    c.checkpoint = checkpoint_cost(checkpoint_bytes(space_.model, s.training, s.parallelism), *storage_, nodes, &spec);
    const double lambda = failures.rate_per_s + (wants_spot ? job_interruption_rate(plan_.pricing, nodes) : 0.0);
    c.checkpoint.interval_s = resolve_interval(spec, step, c.checkpoint.write_s, lambda);
    // Storage: the checkpoints kept and the data set (4 bytes per token: token ids as int32).
    const auto& job = plan_.job;
    const double dataset_tokens = job.dataset_tokens                  ? *job.dataset_tokens
                                  : job.dataset_samples               ? *job.dataset_samples * s.training.seq_len
                                                                      : c.tokens;
    c.dataset_bytes = spec.dataset_bytes ? *spec.dataset_bytes : 4 * dataset_tokens;
    c.stored_bytes = spec.keep * c.checkpoint.size_bytes + c.dataset_bytes;
    const std::optional<double> price = spec.usd_per_gb_month ? spec.usd_per_gb_month
                                        : storage_->usd_per_gb_month
                                            ? std::optional<double>(storage_->usd_per_gb_month->value)
                                            : std::nullopt;
    c.storage_priced = price.has_value();
    // A file system provisioned ahead (FSx for Lustre) bills its whole capacity.
    const double billed_bytes = storage_->provisioned_capacity
                                    ? std::max(c.stored_bytes, storage_->provisioned_capacity->value.as_double())
                                    : c.stored_bytes;
    if (price) c.storage_usd_per_s = *price * billed_bytes / 1e9 / (730.0 * 3600);
  }
  const std::vector<Interruptions> causes{failures};
  c.wall = expected_wall(c.compute_s, c.checkpoint, causes);
  c.wall_low_s = expected_wall(c.compute_low_s, c.checkpoint, causes).nominal_s;
  c.wall_high_s = expected_wall(c.compute_high_s, c.checkpoint, causes).nominal_s;
  const auto& confidence = plan_.job.confidence;
  // At a confidence: the step's own quantile where the step model gave its band (step_band.hpp),
  // else a normal band through [low, high] as one standard deviation.
  const double compute_q = !confidence             ? c.compute_s
                           : !est.band.regime.empty() ? steps * step_time_quantile(est, *confidence)
                                                      : compute_at_confidence(c.compute_s, c.compute_low_s,
                                                                              c.compute_high_s, *confidence);
  c.wall_q_s = expected_wall(compute_q, c.checkpoint, causes).nominal_s;
  c.failures = failures;
  c.node_hours = nodes * c.wall.nominal_s / 3600;
  c.gpu_hours = c.node_hours * s.cluster.gpus_per_node;

  CostInputs in;
  in.compute_s = c.compute_s;
  in.compute_low_s = c.compute_low_s;
  in.compute_high_s = c.compute_high_s;
  in.compute_q_s = compute_q;
  in.nodes = nodes;
  in.checkpoint = c.checkpoint;
  in.failures = failures;
  in.storage_usd_per_s = c.storage_usd_per_s;
  in.pricing = &plan_.pricing;
  in.deadline_s = plan_.job.deadline_s;
  in.budget_usd = plan_.job.budget_usd;
  c.costs.clear();
  for (const auto& q : quotes_[static_cast<std::size_t>(layout.system)]) c.costs.push_back(cost_option(q, in));

  // The cheapest feasible option, else the cheapest priced one.
  c.cheapest = -1;
  for (int pass = 0; pass < 2 && c.cheapest < 0; ++pass) {
    for (std::size_t i = 0; i < c.costs.size(); ++i) {
      const OptionCost& o = c.costs[i];
      if (!o.available || (pass == 0 && !o.feasible())) continue;
      if (c.cheapest < 0 || o.usd < c.costs[static_cast<std::size_t>(c.cheapest)].usd) c.cheapest = static_cast<int>(i);
    }
  }

  // Verdict.
  c.reason.clear();
  if (!est.memory.fits) {
    c.status = CandidateStatus::DOES_NOT_FIT;
    c.reason = "the step model finds a peak of " + gib(est.memory.peak) + " per GPU, above the usable " +
               gib(est.memory.usable);
    return;
  }
  if (!c.wall.finishes) {
    c.status = CandidateStatus::MISSES_DEADLINE;
    c.reason = "never finishes: " + fmt(failures.rate_per_s * 86400) +
               " failures per day for the job, each losing the restart, the reload and half a checkpoint cycle, "
               "outpace progress";
    return;
  }
  auto at_confidence = [&]() {
    return plan_.job.confidence ? " at " + fmt(100 * *plan_.job.confidence) + "% confidence" : std::string();
  };
  bool any_available = false, any_feasible = false, any_on_time = false, any_in_budget = false;
  for (const auto& o : c.costs) {
    if (!o.available) continue;
    any_available = true;
    any_feasible = any_feasible || o.feasible();
    any_on_time = any_on_time || o.meets_deadline;
    any_in_budget = any_in_budget || o.within_budget;
  }
  if (any_feasible) {
    c.status = CandidateStatus::FEASIBLE;
    return;
  }
  const auto& job = plan_.job;
  if (!any_available) {
    if (job.budget_usd) {
      c.status = CandidateStatus::NO_OPTION;
      c.reason = "no priced option for " + s.cluster.system + ", and the plan has a budget";
      return;
    }
    if (job.deadline_s && c.wall_q_s > *job.deadline_s) {
      c.status = CandidateStatus::MISSES_DEADLINE;
      c.reason = "takes " + days(c.wall_q_s) + at_confidence() + ", past the deadline of " + days(*job.deadline_s);
      return;
    }
    c.status = CandidateStatus::FEASIBLE;
    return;
  }
  if (!any_on_time) {
    c.status = CandidateStatus::MISSES_DEADLINE;
    double fastest = kInf;
    for (const auto& o : c.costs) {
      if (o.available) fastest = std::min(fastest, o.wall_q_s);
    }
    c.reason = "takes " + days(fastest) + " at best" + at_confidence() + ", past the deadline of " +
               days(*job.deadline_s);
  } else if (!any_in_budget) {
    c.status = CandidateStatus::OVER_BUDGET;
    double least = kInf;
    for (const auto& o : c.costs) {
      if (o.available) least = std::min(least, o.usd_q);
    }
    c.reason = "costs " + dollars(least) + " at best" + at_confidence() + ", above the budget of " +
               dollars(*job.budget_usd);
  } else {
    c.status = CandidateStatus::NO_OPTION;
    c.reason = "no option meets both the deadline (" + days(*job.deadline_s) + ") and the budget (" +
               dollars(*job.budget_usd) + ")";
  }
}

void rank_candidates(PlanResult& r) {
  r.by_time.clear();
  r.by_cost.clear();
  r.frontier.clear();
  for (auto& c : r.candidates) {
    c.rank_time = c.rank_cost = 0;
    c.on_frontier = false;
    if (c.status == CandidateStatus::FEASIBLE) r.by_time.push_back(c.id);
  }
  r.by_cost = r.by_time;
  const auto& cs = r.candidates;
  std::sort(r.by_time.begin(), r.by_time.end(), [&](std::size_t a, std::size_t b) {
    const double ta = cs[a].wall.nominal_s, tb = cs[b].wall.nominal_s;
    if (ta != tb) return ta < tb;
    const double ca = cheapest_usd(cs[a]), cb = cheapest_usd(cs[b]);
    if (ca != cb) return ca < cb;
    return a < b;
  });
  std::sort(r.by_cost.begin(), r.by_cost.end(), [&](std::size_t a, std::size_t b) {
    const double ca = cheapest_usd(cs[a]), cb = cheapest_usd(cs[b]);
    if (ca != cb) return ca < cb;
    const double ta = cs[a].wall.nominal_s, tb = cs[b].wall.nominal_s;
    if (ta != tb) return ta < tb;
    return a < b;
  });
  for (std::size_t i = 0; i < r.by_time.size(); ++i) r.candidates[r.by_time[i]].rank_time = static_cast<int>(i + 1);
  for (std::size_t i = 0; i < r.by_cost.size(); ++i) r.candidates[r.by_cost[i]].rank_cost = static_cast<int>(i + 1);
  double best_cost = kInf;
  for (std::size_t id : r.by_time) {
    const double c = cheapest_usd(cs[id]);
    if (std::isfinite(c) && c < best_cost) {
      best_cost = c;
      r.frontier.push_back(id);
      r.candidates[id].on_frontier = true;
    }
  }
  r.best.reset();
  if (!r.primary().empty()) r.best = r.primary().front();
}

namespace {

void count(PlanResult& r) {
  PlanCounts& n = r.counts;
  const std::int64_t combinations = n.combinations, rejected = n.rejected, rechecked = n.rechecked;
  n = PlanCounts{};
  n.combinations = combinations;
  n.rejected = rejected;
  n.rechecked = rechecked;
  n.layouts = static_cast<std::int64_t>(r.candidates.size());
  for (const auto& c : r.candidates) {
    if (c.evaluated) ++n.evaluated;
    switch (c.status) {
      case CandidateStatus::FEASIBLE: ++n.feasible; break;
      case CandidateStatus::DOES_NOT_FIT: ++n.does_not_fit; break;
      case CandidateStatus::EVALUATION_FAILED: ++n.evaluation_failed; break;
      case CandidateStatus::MISSES_DEADLINE: ++n.misses_deadline; break;
      case CandidateStatus::OVER_BUDGET: ++n.over_budget; break;
      case CandidateStatus::NO_OPTION: ++n.no_option; break;
    }
  }
}

// Ids in the best K of either ranking that have not been re-checked yet.
std::vector<std::size_t> to_recheck(const PlanResult& r, const std::set<std::size_t>& done) {
  std::set<std::size_t> want;
  const auto k = static_cast<std::size_t>(r.plan.search.top_k);
  for (const auto* order : {&r.by_time, &r.by_cost}) {
    for (std::size_t i = 0; i < std::min(k, order->size()); ++i) {
      if (!done.count((*order)[i])) want.insert((*order)[i]);
    }
  }
  return {want.begin(), want.end()};
}

void add_notes(PlanResult& r) {
  auto note = [&](PlanNote::Level l, std::string t) { r.notes.push_back(PlanNote{l, std::move(t)}); };
  const auto& c = r.counts;
  if (c.feasible == 0) {
    const std::string asks = plan_constraints(r.plan);
    std::string text;
    if (c.evaluated == 0) {
      text = "No candidate fits in GPU memory (see the infeasible candidates)";
    } else {
      text = "No candidate meets " + (asks.empty() ? std::string("the plan") : asks);
    }
    if (!r.near_misses.empty()) {
      const NearMiss& m = r.near_misses.front();
      text += ". Nearest: " + candidate_label(r.layout(m.id).scenario) + ", " + m.miss + "; it would need " + m.fix;
    }
    note(PlanNote::Level::WARNING, text + ".");
  }
  for (const auto& sys : r.space.systems) {
    if (!sys.profile) {
      note(PlanNote::Level::WARNING, "No calibration profile for " + sys.name +
                                         ": predictions use defaults derived from the catalog (uncalibrated), so "
                                         "the uncertainty bands are wide.");
    }
  }
  const std::int64_t infeasible =
      c.does_not_fit + c.evaluation_failed + c.misses_deadline + c.over_budget + c.no_option;
  if (infeasible > 0) {
    note(PlanNote::Level::INFO,
         std::to_string(infeasible) + " of " + std::to_string(c.layouts) + " valid layouts are infeasible (" +
             std::to_string(c.does_not_fit) + " do not fit, " + std::to_string(c.misses_deadline) +
             " miss the deadline, " + std::to_string(c.over_budget) + " are over budget, " +
             std::to_string(c.no_option) + " have no option meeting both, " + std::to_string(c.evaluation_failed) +
             " failed in the step model); " + std::to_string(c.rejected) + " combinations were invalid.");
  }
  std::size_t differ = 0, compared = 0;
  std::optional<std::size_t> worst;
  double worst_change = 0;
  for (std::size_t id : r.rechecked) {
    const auto& cand = r.candidates[id];
    if (!cand.event || !(cand.fast.step_time_s > 0)) continue;
    ++compared;
    const double change = (cand.event->step_time_s - cand.fast.step_time_s) / cand.fast.step_time_s;
    if (std::fabs(change) > 0.10 + 1e-9) ++differ;
    if (!worst || std::fabs(change) > std::fabs(worst_change)) {
      worst = id;
      worst_change = change;
    }
  }
  if (worst) {
    note(differ > 0 ? PlanNote::Level::WARNING : PlanNote::Level::INFO,
         "The event simulation re-checked " + std::to_string(compared) + " candidates; " + std::to_string(differ) +
             " differ from the fast estimate by more than 10% (contention the closed form does not see). Largest: " +
             fmt(100 * worst_change, 2) + "% for " + candidate_label(r.layout(*worst).scenario) + ".");
  }
  if (r.best) {
    const auto& b = r.candidates[*r.best];
    for (const auto& o : b.costs) {
      for (const auto& n : o.notes) {
        if (n.rfind("split:", 0) == 0)
          note(PlanNote::Level::WARNING, "Capacity Blocks for the best candidate: " + n + ".");
      }
      if (o.quote.assumed && o.option == PricingOption::SPOT) {
        note(PlanNote::Level::WARNING,
             "Spot price is the plan's assumption, not a price list: " + o.quote.assumption + ".");
      }
    }
    for (const auto& w : b.estimate().warnings) note(PlanNote::Level::WARNING, w);
  }
  note(PlanNote::Level::INFO, "Prices change; check them against the provider's price list before a budget review.");
}

}  // namespace

PlanResult run_plan(const PlanSpec& plan, const hardware::Catalog& catalog, const StepEvaluator& evaluate,
                    const PlanRunOptions& options) {
  PlanResult r;
  r.plan = plan;
  auto progress = [&](std::string_view phase, std::size_t done, std::size_t total) {
    if (options.progress) options.progress(PlanProgress{phase, done, total});
  };

  // A region without prices is a mistake in the plan: say so before any search.
  check_pricing_region(r.plan, catalog);

  LayoutSearchOptions so;
  so.threads = options.threads;
  so.progress = [&](const SearchProgress& p) { progress("prepare", static_cast<std::size_t>(p.done), 0); };
  r.space = enumerate_layouts(r.plan, catalog, so);
  r.counts.combinations = r.space.combinations;
  r.counts.rejected = r.space.rejected_count;
  const CandidatePricer pricer(r.plan, r.space, catalog);
  r.quotes = pricer.quotes();

  // FAST on every candidate that fits.
  r.candidates.resize(r.space.candidates.size());
  std::vector<std::size_t> fitting;
  for (std::size_t i = 0; i < r.space.candidates.size(); ++i) {
    auto& c = r.candidates[i];
    const auto& l = r.space.candidates[i];
    c.id = i;
    if (l.fits) {
      fitting.push_back(i);
    } else {
      c.status = CandidateStatus::DOES_NOT_FIT;
      c.reason = "peak " + gib(l.memory.peak) + " per GPU on pipeline stage " + std::to_string(l.peak_stage) +
                 " is above the usable " + gib(l.memory.usable);
    }
  }
  ParallelOptions po;
  po.threads = options.threads;
  po.progress = [&](std::size_t done) { progress("fast", done, fitting.size()); };
  parallel_for_index(fitting.size(), po, [&](std::size_t k) {
    const std::size_t id = fitting[k];
    PlanCandidate& c = r.candidates[id];
    const LayoutCandidate& l = r.space.candidates[id];
    try {
      const Scenario s = l.scenario;  // an independent copy for the evaluator
      c.fast = evaluate(s, Fidelity::FAST);
      count_method_flops(c.fast, r.space.model, s.training);
      c.evaluated = true;
      c.parameters_used = static_cast<int>(c.fast.parameters.size());
      for (const auto& u : c.fast.parameters) c.parameters_calibrated += u.calibrated ? 1 : 0;
      c.fast.parameters = {};
      c.fast.comms = {};
    } catch (const std::exception& e) {
      c.evaluated = true;
      c.status = CandidateStatus::EVALUATION_FAILED;
      c.reason = std::string("the step model rejected it: ") + e.what();
      return;
    }
    pricer.price(c, l, c.fast);
  });
  rank_candidates(r);

  // EVENT re-check of the best K of each ranking, repeated while the best K change.
  std::set<std::size_t> done;
  for (int round = 0; round < 3 && r.plan.search.top_k > 0; ++round) {
    const std::vector<std::size_t> ids = to_recheck(r, done);
    if (ids.empty()) break;
    ParallelOptions eo;
    eo.threads = options.threads;
    eo.progress = [&](std::size_t d) { progress("event", done.size() + d, done.size() + ids.size()); };
    parallel_for_index(ids.size(), eo, [&](std::size_t k) {
      PlanCandidate& c = r.candidates[ids[k]];
      const LayoutCandidate& l = r.space.candidates[ids[k]];
      try {
        const Scenario s = l.scenario;
        c.event = evaluate(s, Fidelity::EVENT);
        count_method_flops(*c.event, r.space.model, s.training);
      } catch (const std::exception& e) {
        c.event_error = e.what();
        return;
      }
      pricer.price(c, l, *c.event);
    });
    done.insert(ids.begin(), ids.end());
    rank_candidates(r);
  }
  r.rechecked.assign(done.begin(), done.end());
  r.counts.rechecked = static_cast<std::int64_t>(r.rechecked.size());
  count(r);

  if (r.best) {
    const std::size_t id = *r.best;
    const LayoutCandidate& l = r.space.candidates[id];
    const PlanSystem& sys = r.system_of(id);
    TrainingModel tm(r.space.model, l.scenario.parallelism, l.scenario.training, r.plan.file);
    hardware::ParameterSet params(sys.profile ? &*sys.profile : nullptr);
    for (int stage = 0; stage < tm.layout().pp(); ++stage) {
      r.best_stage_memory.push_back(tm.memory(stage, *sys.node.gpu, params, &l.scenario.nccl.env));
    }
    if (r.plan.sensitivity.enabled) {
      SensitivityContext ctx{r, pricer, catalog, evaluate, options.scratch_dir, options.threads};
      progress("sensitivity", 0, 0);
      r.sensitivity = run_sensitivity(ctx);
    }
  }
  r.near_misses = nearest_misses(r, kNearMisses);
  add_notes(r);
  return r;
}

}  // namespace clustersim::models
