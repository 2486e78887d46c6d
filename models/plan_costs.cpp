#include "models/plan_costs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/parameter_tensors.hpp"

namespace clustersim::models {

namespace {

constexpr double kHour = 3600;
constexpr double kDay = 86400;
constexpr double kYearHours = 8760;

// ceil that ignores floating-point dust just above an integer.
double ceil_clean(double v) { return std::ceil(v - 1e-9); }

// Capacity Blocks: the days booked for `days` whole days of work (see the header comment), and
// how many blocks in a row.
struct BlockBooking {
  double days = 0;
  int in_row = 1;
};
BlockBooking book_blocks(double days, const hardware::CapacityBlockRules& r) {
  BlockBooking b;
  b.in_row = std::max(1, static_cast<int>(ceil_clean(days / r.max_days)));
  const double last = days - static_cast<double>(r.max_days) * (b.in_row - 1);
  const double booked_last =
      last <= r.daily_up_to_days ? last : std::ceil(last / r.weekly_step_days - 1e-9) * r.weekly_step_days;
  b.days = static_cast<double>(r.max_days) * (b.in_row - 1) + std::min<double>(booked_last, r.max_days);
  return b;
}

std::string fmt(double v, int digits = 3) { return format_significant(v, digits); }
// $1.28B, $40M, $312k: amounts in a sentence.
std::string money(double usd) {
  if (usd >= 1e9) return "$" + fmt(usd / 1e9) + "B";
  if (usd >= 1e6) return "$" + fmt(usd / 1e6) + "M";
  if (usd >= 1e3) return "$" + fmt(usd / 1e3) + "k";
  return "$" + fmt(usd);
}

const hardware::HourlyPrice* price_of(const hardware::PriceEntry& e, PricingOption o) {
  const std::optional<hardware::HourlyPrice>* p = nullptr;
  switch (o) {
    case PricingOption::ON_DEMAND: p = &e.on_demand; break;
    case PricingOption::CAPACITY_BLOCK: p = &e.capacity_block; break;
    case PricingOption::SAVINGS_PLAN_1YR: p = &e.savings_plan_1yr; break;
    case PricingOption::SAVINGS_PLAN_3YR: p = &e.savings_plan_3yr; break;
    case PricingOption::SPOT: p = &e.spot; break;
  }
  return p && *p ? &**p : nullptr;
}

}  // namespace

std::vector<PriceQuote> quote_prices(const hardware::Catalog& catalog, const std::string& instance,
                                     const PricingSpec& pricing) {
  const auto entries = catalog.prices(instance);
  const hardware::PriceEntry* entry = nullptr;
  for (const auto& e : entries) {
    if (pricing.region.empty() || e.region == pricing.region) {
      entry = &e;
      break;
    }
  }
  std::vector<PriceQuote> out;
  for (PricingOption o : pricing.options) {
    PriceQuote q;
    q.option = o;
    q.block_rules = catalog.capacity_block_rules();
    if (!entry) {
      q.unavailable_reason = "no price for " + instance + " in the catalog" +
                             (pricing.region.empty() ? std::string() : " in " + pricing.region);
      out.push_back(q);
      continue;
    }
    q.region = entry->region;
    auto from_catalog = [&](const hardware::HourlyPrice& hp) {
      q.available = true;
      q.per_hour = hp.per_hour;
      q.source = hp.source;
      if (catalog.sources().count(hp.source)) {
        q.source_title = catalog.source(hp.source).title;
        q.date = catalog.source(hp.source).date;
      }
    };
    if (const auto* hp = price_of(*entry, o)) {
      if (hp->currency != "USD") {
        q.unavailable_reason = "price of " + instance + " is in " + hp->currency + ", not USD";
      } else {
        from_catalog(*hp);
        if (o == PricingOption::ON_DEMAND && pricing.negotiated_discount && *pricing.negotiated_discount > 0) {
          const double d = *pricing.negotiated_discount;
          q.per_hour = hp->per_hour * (1 - d);
          q.assumed = true;
          q.assumption = fmt(d * 100) + "% negotiated discount off the catalog's " + fmt(hp->per_hour, 4) +
                         " USD/h (the plan's assumption)";
        }
      }
    } else if (o == PricingOption::SPOT && pricing.spot && pricing.spot->price_per_hour) {
      q.available = true;
      q.per_hour = *pricing.spot->price_per_hour;
      q.source = "plan";
      q.assumed = true;
      q.assumption = fmt(q.per_hour, 4) + " USD/h (the plan's assumption; the catalog has no spot price)";
    } else if (o == PricingOption::SPOT && pricing.spot && pricing.spot->discount) {
      if (const auto* od = price_of(*entry, PricingOption::ON_DEMAND)) {
        from_catalog(*od);
        q.per_hour = od->per_hour * (1 - *pricing.spot->discount);
        q.assumed = true;
        q.assumption = fmt(*pricing.spot->discount * 100) + "% off on-demand " + fmt(od->per_hour, 4) +
                       " USD/h (the plan's assumption; the catalog has no spot price)";
      } else {
        q.unavailable_reason = "spot as a discount needs an on-demand price for " + instance;
      }
    } else {
      q.unavailable_reason = "no " + std::string(pricing_label(o)) + " price for " + instance + " in " + entry->region;
    }
    out.push_back(q);
  }
  return out;
}

double checkpoint_bytes(const TransformerConfig& model, const TrainingSpec& training,
                        const ParallelismSpec& parallelism) {
  const double all = static_cast<double>(count_parameters(model).total);
  double trainable = all;
  const bool lora = training.fine_tuning == FineTuning::LORA;
  if (lora) {
    trainable = 0;
    for (std::int64_t l = 0; l < model.num_layers; ++l) {
      trainable += static_cast<double>(lora_parameters(model, l, training.lora));
    }
  }
  const bool fp32_params = training.precision == Precision::FP32 || parallelism.framework == Framework::PYTORCH;
  const double weight_bytes = fp32_params ? 4 : 2;
  const double moments = training.optimizer == Optimizer::SGD ? 4 : 8;
  const double master = fp32_params ? 0 : 4;
  const double weights = weight_bytes * (lora ? trainable : all);
  return weights + (moments + master) * trainable;
}

CheckpointCost checkpoint_cost(double size_bytes, const hardware::StorageSpec& storage, int nodes,
                               const CheckpointSpec* overrides) {
  CheckpointCost c;
  c.enabled = true;
  c.storage = storage.name;
  c.size_bytes = size_bytes;
  const double n = nodes;
  const CheckpointSpec none;
  const CheckpointSpec& o = overrides ? *overrides : none;
  c.write_bandwidth = n * o.write_bandwidth_per_node.value_or(storage.write_bandwidth_per_node.value.bytes_per_second());
  c.read_bandwidth = n * o.read_bandwidth_per_node.value_or(storage.read_bandwidth_per_node.value.bytes_per_second());
  std::optional<double> aggregate = o.aggregate_bandwidth;
  if (!aggregate && storage.aggregate_limit) aggregate = storage.aggregate_limit->value.bytes_per_second();
  if (aggregate) {
    const double agg = *aggregate;
    if (agg < c.write_bandwidth) c.aggregate_limited = true;
    c.write_bandwidth = std::min(c.write_bandwidth, agg);
    c.read_bandwidth = std::min(c.read_bandwidth, agg);
  }
  c.write_s = size_bytes / c.write_bandwidth;
  c.read_s = size_bytes / c.read_bandwidth;
  return c;
}

double normal_quantile(double p) {
  // Bisection on Phi(z) = erfc(-z / sqrt 2) / 2, which rises with z: 200 halvings of [-40, 40]
  // reach the resolution of a double, and the result is the same on every machine.
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

double compute_at_confidence(double point, double low, double high, double q) {
  const double z = normal_quantile(q);
  return z >= 0 ? point + z * (high - point) : std::max(0.0, point + z * (point - low));
}

double job_interruption_rate(const PricingSpec& pricing, int nodes) {
  if (!pricing.spot) return 0;
  return pricing.spot->interruptions_per_node_day * nodes / kDay;
}

double job_failure_rate(double per_gpu_hour, int gpus) { return per_gpu_hour * gpus / kHour; }

double resolve_interval(const CheckpointSpec& spec, double step_s, double write_s, double job_interruptions_per_s) {
  switch (spec.interval) {
    case CheckpointSpec::Interval::DURATION: return spec.interval_s;
    case CheckpointSpec::Interval::STEPS: return static_cast<double>(spec.interval_steps) * step_s;
    case CheckpointSpec::Interval::AUTO:
      // Young (1974) / Daly (2006) first order: the interval that minimises write time plus
      // expected rework, sqrt(2 C MTBF). No interruptions: never checkpoint for their sake.
      if (job_interruptions_per_s <= 0) return std::numeric_limits<double>::infinity();
      return std::max(step_s, std::sqrt(2 * write_s / job_interruptions_per_s));
  }
  return spec.interval_s;
}

WallTime nominal_wall(double compute_s, const CheckpointCost& ckpt) {
  WallTime w;
  w.nominal_s = compute_s;
  if (ckpt.enabled && std::isfinite(ckpt.interval_s) && ckpt.interval_s > 0) {
    w.checkpoints = std::floor(compute_s / ckpt.interval_s + 1e-9);
    w.checkpoint_s = w.checkpoints * ckpt.write_s;
    w.nominal_s += w.checkpoint_s;
  }
  w.failure_free_s = w.nominal_s;
  return w;
}

WallTime expected_wall(double compute_s, const CheckpointCost& ckpt, const std::vector<Interruptions>& causes) {
  WallTime w = nominal_wall(compute_s, ckpt);
  const double t0 = w.failure_free_s;
  // Half a checkpoint cycle of work is lost on average; without checkpoints, half the run.
  const double cycle = ckpt.enabled && std::isfinite(ckpt.interval_s) && ckpt.interval_s > 0
                           ? ckpt.interval_s + ckpt.write_s
                           : t0;
  const double reload = ckpt.enabled ? ckpt.read_s : 0;
  double rework = 0, rate = 0;
  for (const auto& c : causes) {
    if (!(c.rate_per_s > 0)) continue;
    rework += c.rate_per_s * (c.restart_s + reload + cycle / 2);
    rate += c.rate_per_s;
  }
  if (rework >= 1) {
    w.finishes = false;
    w.nominal_s = w.lost_s = w.interruptions = std::numeric_limits<double>::infinity();
    return w;
  }
  w.nominal_s = t0 / (1 - rework);
  w.lost_s = w.nominal_s - t0;
  w.interruptions = rate * w.nominal_s;
  return w;
}

OptionCost cost_option(const PriceQuote& quote, const CostInputs& in) {
  OptionCost c;
  c.option = quote.option;
  c.quote = quote;
  if (!quote.available) {
    c.reason = quote.unavailable_reason;
    return c;
  }
  c.available = true;
  const PricingSpec& pricing = *in.pricing;
  const double n = in.nodes;
  const double p = quote.per_hour;

  struct End {
    double wall = 0, usd = 0, hours = 0, days = 0, interruptions = 0, commitment = 0, storage = 0;
    bool ok = true;
  };
  auto at = [&](double compute_s) {
    End e;
    std::vector<Interruptions> causes{in.failures};
    if (quote.option == PricingOption::SPOT) {
      causes.push_back(Interruptions{job_interruption_rate(pricing, in.nodes), pricing.spot->restart_s});
    }
    const WallTime w = expected_wall(compute_s, in.checkpoint, causes);
    if (!w.finishes) {
      e.ok = false;
      return e;
    }
    e.wall = w.nominal_s;
    e.interruptions = w.interruptions;
    switch (quote.option) {
      case PricingOption::ON_DEMAND:
      case PricingOption::SPOT: {
        e.hours = n * e.wall / kHour;
        e.usd = e.hours * p;
        break;
      }
      case PricingOption::SAVINGS_PLAN_1YR:
      case PricingOption::SAVINGS_PLAN_3YR: {
        // The commitment is bought whole: every hour of the term, for every node committed.
        const double years = quote.option == PricingOption::SAVINGS_PLAN_1YR ? 1 : 3;
        const double terms = std::max(1.0, ceil_clean(e.wall / (years * kYearHours * kHour)));
        const double term_hours = n * years * kYearHours * terms;
        e.commitment = term_hours * p;
        switch (pricing.commitment) {
          case SavingsPlanCommitment::DEDICATED: e.hours = term_hours; break;
          case SavingsPlanCommitment::SHARED: e.hours = term_hours * pricing.commitment_share; break;
          case SavingsPlanCommitment::UTILIZED: e.hours = n * e.wall / kHour; break;
        }
        e.usd = e.hours * p;
        break;
      }
      case PricingOption::CAPACITY_BLOCK: {
        e.days = book_blocks(std::max(1.0, ceil_clean(e.wall / kDay)), quote.block_rules).days;
        e.hours = n * 24 * e.days;
        e.usd = e.hours * p;
        break;
      }
    }
    e.storage = in.storage_usd_per_s * e.wall;
    e.usd += e.storage;
    return e;
  };

  const End mid = at(in.compute_s);
  const End q = in.compute_q_s >= 0 ? at(in.compute_q_s) : mid;
  const End lo = at(in.compute_low_s);
  const End hi = at(in.compute_high_s);
  if (!mid.ok) {
    c.available = false;
    const double lambda = in.failures.rate_per_s + (quote.option == PricingOption::SPOT
                                                        ? job_interruption_rate(pricing, in.nodes)
                                                        : 0.0);
    c.reason = std::string(quote.option == PricingOption::SPOT ? "expected spot interruptions and failures"
                                                               : "expected failures") +
               " outpace progress: " + fmt(lambda * kDay) +
               " interruptions per day for the job, each losing restart + reload + half a checkpoint cycle";
    return c;
  }
  c.wall_s = mid.wall;
  c.wall_low_s = lo.ok ? lo.wall : mid.wall;
  c.wall_high_s = hi.ok ? hi.wall : std::numeric_limits<double>::infinity();
  c.usd = mid.usd;
  c.usd_low = lo.ok ? lo.usd : mid.usd;
  c.usd_high = hi.ok ? hi.usd : std::numeric_limits<double>::infinity();
  c.wall_q_s = q.ok ? q.wall : std::numeric_limits<double>::infinity();
  c.usd_q = q.ok ? q.usd : std::numeric_limits<double>::infinity();
  c.instance_hours = mid.hours;
  c.commitment_usd = mid.commitment;
  c.expected_interruptions = mid.interruptions;
  c.storage_usd = mid.storage;
  c.billed_days = mid.days;
  if (!hi.ok) c.notes.push_back("at the slow end of the band, interruptions outpace progress");

  if (quote.option == PricingOption::CAPACITY_BLOCK) {
    const auto& rules = quote.block_rules;
    const std::string cite = rules.source.empty() ? "" : " (" + rules.source + ")";
    if (in.nodes > rules.max_instances_across_blocks) {
      c.available = false;
      c.reason = std::to_string(in.nodes) + " instances exceed the " + std::to_string(rules.max_instances_across_blocks) +
                 " an account may hold across Capacity Blocks" + cite;
      return c;
    }
    const int side = static_cast<int>(ceil_clean(static_cast<double>(in.nodes) / rules.max_instances_per_block));
    const BlockBooking booking = book_blocks(std::max(1.0, ceil_clean(mid.wall / kDay)), rules);
    const int row = booking.in_row;
    c.blocks = side * row;
    if (side > 1 || row > 1) {
      std::string why;
      if (side > 1)
        why += std::to_string(in.nodes) + " instances need " + std::to_string(side) + " blocks side by side (at most " +
               std::to_string(rules.max_instances_per_block) + " each)";
      if (row > 1) {
        if (!why.empty()) why += "; ";
        why += fmt(std::max(1.0, ceil_clean(mid.wall / kDay))) + " days need " + std::to_string(row) +
               " blocks in a row (at most " + std::to_string(rules.max_days) + " days each; a later block can be "
               "booked at most " + std::to_string(rules.max_lead_days / 7) + " weeks before it starts, capacity "
               "permitting)";
      }
      if (!pricing.capacity_block_allow_split) {
        c.available = false;
        c.reason = why + ", and the plan does not allow splitting" + cite;
        return c;
      }
      c.notes.push_back("split: " + why + cite);
    }
    c.notes.push_back("paid upfront for " + fmt(mid.days) + " days booked" +
                      (mid.days > ceil_clean(mid.wall / kDay) ? " (whole weeks past " +
                                                                    std::to_string(rules.daily_up_to_days) + " days)"
                                                              : ""));
  }
  if (mid.interruptions > 0) c.notes.push_back("expected " + fmt(mid.interruptions) + " interruptions");
  const bool sp =
      quote.option == PricingOption::SAVINGS_PLAN_1YR || quote.option == PricingOption::SAVINGS_PLAN_3YR;
  if (sp) {
    const std::string years = quote.option == PricingOption::SAVINGS_PLAN_1YR ? "1-year" : "3-year";
    const double terms = std::round(mid.commitment / (p * n * kYearHours * (years == "1-year" ? 1 : 3)));
    const std::string whole = (terms > 1 ? fmt(terms) + " whole " + years + " terms" : "the whole " + years + " term") +
                              " for " + std::to_string(in.nodes) + " nodes";
    const std::string after = pricing.after_job.empty() ? "" : " (after the job: " + pricing.after_job + ")";
    switch (pricing.commitment) {
      case SavingsPlanCommitment::DEDICATED:
        c.basis = whole + (pricing.commitment_stated ? " (the plan: dedicated)" : " (default: the plan states no share)");
        break;
      case SavingsPlanCommitment::SHARED:
        c.basis = fmt(100 * pricing.commitment_share) + "% of " + whole + " (" + money(mid.commitment) +
                  "), the plan's share" + after;
        break;
      case SavingsPlanCommitment::UTILIZED:
        c.basis = "the job's own hours, " + fmt(100 * (mid.usd - mid.storage) / mid.commitment) + "% of " + whole + " (" +
                  money(mid.commitment) + "): the plan states other work uses the rest" + after;
        break;
    }
    c.notes.push_back("commitment: " + c.basis);
  } else if (quote.option == PricingOption::CAPACITY_BLOCK) {
    c.basis = "paid upfront for " + fmt(mid.days) + " days booked (" + std::to_string(c.blocks) +
              (c.blocks == 1 ? " block)" : " blocks)");
  } else if (quote.assumed) {
    c.basis = quote.assumption;
  } else {
    c.basis = "billed by the hour for the job's wall time";
  }
  if (quote.assumed) c.notes.push_back("price assumed: " + quote.assumption);
  if (in.deadline_s) c.meets_deadline = c.wall_q_s <= *in.deadline_s;
  if (in.budget_usd) c.within_budget = c.usd_q <= *in.budget_usd;
  return c;
}

}  // namespace clustersim::models
