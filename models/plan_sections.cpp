#include "models/plan_sections.hpp"

#include <algorithm>

#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"

namespace clustersim::models {

namespace {

double read_duration(const ValueReader& v) {
  try {
    return parse_plan_duration(v.as_string());
  } catch (const InputError& e) {
    throw InputError(v.file(), v.pointer(), e.message());
  }
}

}  // namespace

JobSpec read_job(ValueReader v) {
  JobSpec j;
  v.read_object([&](ObjectReader& o) {
    constexpr NumberRange positive{.min = 0, .max = 1e18, .min_exclusive = true};
    if (auto t = o.maybe("tokens")) j.tokens = t->as_number(positive);
    if (auto e = o.maybe("epochs")) {
      if (j.tokens) e->fail_message("give either \"tokens\" or \"epochs\", not both");
      j.epochs = e->as_number({.min = 0, .max = 1e6, .min_exclusive = true});
      auto dt = o.maybe("dataset_tokens");
      auto ds = o.maybe("dataset_samples");
      if (dt && ds) ds->fail_message("give either \"dataset_tokens\" or \"dataset_samples\", not both");
      if (!dt && !ds)
        o.fail("\"epochs\" needs \"dataset_tokens\" or \"dataset_samples\" (sequences of seq_len tokens)");
      if (dt) j.dataset_tokens = dt->as_number(positive);
      if (ds) j.dataset_samples = ds->as_number(positive);
    }
    if (auto d = o.maybe("deadline")) {
      j.deadline_s = read_duration(*d);
      if (*j.deadline_s <= 0) d->fail("a deadline > 0");
    }
    if (auto c = o.maybe("confidence")) {
      j.confidence = c->as_number({.min = 0, .max = 1, .min_exclusive = true});
      if (*j.confidence >= 1) c->fail("a probability below 1 (0.9 judges the deadline at the 90th percentile)");
    }
    if (auto b = o.maybe("budget")) {
      try {
        j.budget_usd = parse_usd(b->as_string());
      } catch (const InputError& e) {
        throw InputError(b->file(), b->pointer(), e.message());
      }
      if (*j.budget_usd <= 0) b->fail("a budget > 0 USD");
    }
  });
  return j;
}

PricingSpec read_pricing(ValueReader v) {
  PricingSpec p;
  bool options_given = false;
  v.read_object([&](ObjectReader& o) {
    if (auto r = o.maybe("region")) p.region = r->as_string();
    if (auto opts = o.maybe("options")) {
      options_given = true;
      std::vector<std::string> names;
      for (auto opt : all_pricing_options()) names.emplace_back(to_string(opt));
      for (const auto& e : opts->as_array(1)) {
        const std::string s = e.as_choice(names);
        const auto it = std::find(names.begin(), names.end(), s);
        const auto opt = all_pricing_options()[static_cast<std::size_t>(it - names.begin())];
        if (std::find(p.options.begin(), p.options.end(), opt) != p.options.end())
          e.fail("an option not already listed");
        p.options.push_back(opt);
      }
    }
    if (auto d = o.maybe("negotiated_discount")) {
      p.negotiated_discount = d->as_number({.min = 0, .max = 1});
      if (*p.negotiated_discount >= 1) d->fail("a fraction off on-demand below 1");
    }
    if (auto sp = o.maybe("savings_plan")) {
      sp->read_object([&](ObjectReader& x) {
        auto c = x.maybe("commitment");
        auto share = x.maybe("share");
        if (c) {
          const std::string how = c->as_choice({"dedicated", "shared", "utilized"});
          p.commitment = how == "utilized" ? SavingsPlanCommitment::UTILIZED
                         : how == "shared" ? SavingsPlanCommitment::SHARED
                                           : SavingsPlanCommitment::DEDICATED;
          p.commitment_stated = true;
          if (share && p.commitment != SavingsPlanCommitment::SHARED) {
            share->fail_message("\"share\" goes with \"commitment\": \"shared\" (or no \"commitment\"), not \"" +
                                how + "\"");
          }
          if (!share && p.commitment == SavingsPlanCommitment::SHARED) {
            x.fail("\"commitment\": \"shared\" needs \"share\": the fraction (0 to 1] of the whole term's cost "
                   "this job carries");
          }
        }
        if (share) {
          p.commitment = SavingsPlanCommitment::SHARED;
          p.commitment_stated = true;
          p.commitment_share = share->as_number({.min = 0, .max = 1, .min_exclusive = true});
        }
        if (auto a = x.maybe("after_job")) p.after_job = a->as_string();
      });
    }
    if (auto cb = o.maybe("capacity_block")) {
      cb->read_object([&](ObjectReader& x) { p.capacity_block_allow_split = x.get_or("allow_split", true); });
    }
    if (auto s = o.maybe("spot")) {
      SpotSpec spot;
      s->read_object([&](ObjectReader& x) {
        auto disc = x.maybe("discount");
        auto price = x.maybe("price");
        if (disc && price) price->fail_message("give either \"discount\" or \"price\", not both");
        if (disc) spot.discount = disc->as_number({.min = 0, .max = 1, .min_exclusive = true});
        if (disc && *spot.discount >= 1) disc->fail("a fraction off on-demand below 1");
        if (price) {
          try {
            const auto hp = hardware::parse_hourly_price(price->as_string());
            if (hp.currency != "USD") price->fail("a price in USD/h");
            spot.price_per_hour = hp.per_hour;
          } catch (const InputError& e) {
            throw InputError(price->file(), price->pointer(), e.message());
          }
        }
        spot.interruptions_per_node_day = x.at("interruptions_per_node_day").as_number({.min = 0, .max = 1000});
        spot.restart_s = read_duration(x.at("restart_time"));
      });
      p.spot = spot;
    }
    if (options_given) {
      const bool wants_spot = std::find(p.options.begin(), p.options.end(), PricingOption::SPOT) != p.options.end();
      if (wants_spot && !p.spot) {
        o.fail(
            "the \"spot\" option needs a \"spot\" section (interruptions_per_node_day, restart_time, and "
            "discount or price where the catalog has no spot price)");
      }
    }
  });
  // No option is priced that the plan does not list: without a list, on-demand (and spot, whose
  // terms the plan gave).
  p.options_listed = options_given;
  if (!options_given) {
    p.options = {PricingOption::ON_DEMAND};
    if (p.spot) p.options.push_back(PricingOption::SPOT);
  }
  return p;
}

CheckpointSpec read_checkpoint(ValueReader v) {
  CheckpointSpec c;
  c.stated = true;
  v.read_object([&](ObjectReader& o) {
    if (auto s = o.maybe("storage")) {
      c.storage = s->as_string();
      c.storage_pointer = s->pointer();
    }
    auto bandwidth = [&](const char* key) -> std::optional<double> {
      auto b = o.maybe(key);
      if (!b) return std::nullopt;
      const double v = b->as_bandwidth().bytes_per_second();
      if (!(v > 0)) b->fail("a bandwidth > 0 such as \"5 GB/s\"");
      return v;
    };
    c.write_bandwidth_per_node = bandwidth("write_bandwidth_per_node");
    c.read_bandwidth_per_node = bandwidth("read_bandwidth_per_node");
    c.aggregate_bandwidth = bandwidth("aggregate_bandwidth");
    if (auto p = o.maybe("price")) {
      try {
        c.usd_per_gb_month = hardware::parse_usd_per_gb_month(p->as_string());
      } catch (const InputError& e) {
        throw InputError(p->file(), p->pointer(), e.message());
      }
    }
    c.keep = static_cast<int>(o.get_or("keep", std::int64_t{2}, {.min = 1, .max = 1000}));
    if (auto d = o.maybe("dataset_size")) c.dataset_bytes = d->as_bytes().as_double();
    auto ivo = o.maybe("interval");
    if (!ivo) return;
    auto iv = *ivo;
    if (iv.raw().is_string() && iv.raw().get<std::string>() == "auto") {
      c.interval = CheckpointSpec::Interval::AUTO;
    } else if (iv.raw().is_object()) {
      iv.read_object([&](ObjectReader& x) {
        c.interval = CheckpointSpec::Interval::STEPS;
        c.interval_steps = x.at("steps").as_int({.min = 1, .max = 1LL << 40});
      });
    } else if (iv.raw().is_string()) {
      c.interval = CheckpointSpec::Interval::DURATION;
      c.interval_s = read_duration(iv);
      if (c.interval_s <= 0) iv.fail("an interval > 0");
    } else {
      iv.fail("a duration (\"2 h\"), {\"steps\": N} or \"auto\"");
    }
  });
  return c;
}

GoodputSpec read_goodput(ValueReader v) {
  GoodputSpec g;
  v.read_object([&](ObjectReader& o) {
    g.enabled = o.get_or("enabled", true);
    if (auto f = o.maybe("failure_rate")) {
      g.failure_rate = f->as_string();
      g.failure_rate_pointer = f->pointer();
      g.failure_rate_stated = true;
    }
    auto gpu = o.maybe("interruptions_per_gpu_hour");
    auto node = o.maybe("interruptions_per_node_day");
    if (gpu && node) node->fail_message("give either \"interruptions_per_gpu_hour\" or \"interruptions_per_node_day\", not both");
    if (gpu) g.interruptions_per_gpu_hour = gpu->as_number({.min = 0, .max = 1});
    if (node) g.interruptions_per_node_day = node->as_number({.min = 0, .max = 1000});
    if (auto r = o.maybe("restart_time")) g.restart_s = read_duration(*r);
  });
  return g;
}

SearchSpec read_search(ValueReader v) {
  SearchSpec s;
  v.read_object([&](ObjectReader& o) {
    if (auto r = o.maybe("rank_by")) s.rank_by = r->as_choice({"time", "cost"}) == "cost" ? RankBy::COST : RankBy::TIME;
    s.top_k = static_cast<int>(o.get_or("top_k", s.top_k, {.min = 0, .max = 1000}));
    s.max_combinations = o.get_or("max_combinations", s.max_combinations, {.min = 1, .max = 100'000'000});
    s.report_rows = static_cast<int>(o.get_or("report_rows", s.report_rows, {.min = 1, .max = 100000}));
  });
  return s;
}

SensitivitySpec read_sensitivity(ValueReader v) {
  SensitivitySpec s;
  v.read_object([&](ObjectReader& o) {
    s.enabled = o.get_or("enabled", s.enabled);
    s.nic_bandwidth_factor =
        o.get_or("nic_bandwidth_factor", s.nic_bandwidth_factor, {.min = 0, .max = 1000, .min_exclusive = true});
    s.gemm_efficiency_change =
        o.get_or("gemm_efficiency_change", s.gemm_efficiency_change, {.min = 0, .max = 0.9, .min_exclusive = true});
    if (auto envs = o.maybe("nccl_env")) {
      s.nccl_env.clear();
      for (const auto& e : envs->as_array()) {
        std::map<std::string, std::string> env;
        ObjectReader x = e.as_object();
        for (const auto& k : x.keys()) {
          auto val = x.at(k);
          if (k.rfind("NCCL_", 0) != 0 && k.rfind("FI_", 0) != 0 && k.rfind("OFI_NCCL_", 0) != 0) {
            val.fail_message("expected an NCCL_*, FI_* or OFI_NCCL_* variable name");
          }
          env[k] = val.raw().is_number_integer() ? std::to_string(val.as_int()) : val.as_string();
        }
        if (env.empty()) e.fail("an object with at least one variable");
        s.nccl_env.push_back(env);
      }
    }
  });
  return s;
}

}  // namespace clustersim::models
