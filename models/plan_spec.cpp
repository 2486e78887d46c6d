#include "models/plan_spec.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <set>

#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"

namespace clustersim::models {

namespace {

using Json = nlohmann::json;

enum class ChoiceKind { INT, STRING, BOOL, OBJECT, ENV_VALUE };

struct FieldSpec {
  std::string_view pointer;
  ChoiceKind kind;
  IntRange range{};
  std::vector<std::string> allowed{};  // STRING: the accepted values (empty: any string)
  bool auto_ok = false;
};

constexpr IntRange kDim{.min = 1, .max = 1 << 20};

// Every field of the scenario sections that may hold choices (plan_spec.hpp lists them).
const std::vector<FieldSpec>& choice_fields() {
  static const std::vector<FieldSpec> fields = {
      {"/cluster/system", ChoiceKind::STRING},
      {"/cluster/nodes", ChoiceKind::INT, {.min = 1, .max = 1'000'000}},
      {"/cluster/gpus_per_node", ChoiceKind::INT, {.min = 1, .max = 1024}},
      {"/cluster/p2p", ChoiceKind::STRING, {}, {"write", "read", "disabled"}},
      {"/training/seq_len", ChoiceKind::INT, {.min = 1, .max = 1 << 24}},
      {"/training/global_batch_size", ChoiceKind::INT, {.min = 1, .max = 1LL << 32}},
      {"/training/micro_batch_size", ChoiceKind::INT, {.min = 1, .max = 1 << 20}, {}, true},
      {"/training/activation_checkpointing", ChoiceKind::STRING, {}, {"none", "selective", "full"}, true},
      {"/training/precision", ChoiceKind::STRING, {}, {"bf16", "fp16", "fp8", "fp32"}},
      {"/training/fine_tuning", ChoiceKind::OBJECT},
      {"/parallelism/framework", ChoiceKind::STRING, {}, {"pytorch", "megatron", "deepspeed"}},
      {"/parallelism/data", ChoiceKind::INT, kDim, {}, true},
      {"/parallelism/tensor", ChoiceKind::INT, kDim, {}, true},
      {"/parallelism/pipeline", ChoiceKind::INT, kDim, {}, true},
      {"/parallelism/context", ChoiceKind::INT, kDim, {}, true},
      {"/parallelism/expert", ChoiceKind::INT, kDim, {}, true},
      {"/parallelism/zero_stage", ChoiceKind::INT, {.min = 0, .max = 3}, {}, true},
      {"/parallelism/sequence_parallel", ChoiceKind::BOOL, {}, {}, true},
      {"/parallelism/virtual_stages", ChoiceKind::INT, {.min = 1, .max = 1024}, {}, true},
      {"/parallelism/pipeline_schedule", ChoiceKind::STRING, {}, {"gpipe", "1f1b", "interleaved_1f1b"}, true},
      {"/parallelism/offload", ChoiceKind::OBJECT},
  };
  return fields;
}

// Fields that are "auto" when "parallelism" is "auto".
constexpr std::string_view kAutoParallelism[] = {
    "/parallelism/data",       "/parallelism/tensor",         "/parallelism/pipeline",
    "/parallelism/context",    "/parallelism/expert",         "/parallelism/zero_stage",
    "/parallelism/sequence_parallel", "/parallelism/virtual_stages", "/parallelism/pipeline_schedule"};

std::vector<Json> expand_range(const ValueReader& v, IntRange range) {
  std::int64_t lo = 0, hi = 0;
  std::string scale = "x2";
  v.read_object([&](ObjectReader& o) {
    lo = o.at("min").as_int(range);
    hi = o.at("max").as_int(range);
    if (auto s = o.maybe("scale")) scale = s->as_string();
    if (hi < lo) o.at("max").fail("a maximum >= min (" + std::to_string(lo) + ")");
  });
  const std::string where = v.pointer() + "/scale";
  auto bad_scale = [&]() {
    throw InputError(v.file(), where, "expected \"x<k>\" (multiply by an integer k >= 2) or \"+<k>\" (add k >= 1), got '" +
                                          scale + "'");
  };
  if (scale.size() < 2 || (scale[0] != 'x' && scale[0] != '+')) bad_scale();
  std::int64_t k = 0;
  const auto [ptr, ec] = std::from_chars(scale.data() + 1, scale.data() + scale.size(), k);
  if (ec != std::errc() || ptr != scale.data() + scale.size()) bad_scale();
  if ((scale[0] == 'x' && k < 2) || (scale[0] == '+' && k < 1)) bad_scale();
  if (scale[0] == 'x' && lo < 1) throw InputError(v.file(), v.pointer() + "/min", "a geometric range needs min >= 1");
  std::vector<Json> out;
  for (std::int64_t x = lo; x <= hi; x = scale[0] == 'x' ? x * k : x + k) {
    out.emplace_back(x);
    if (out.size() > 100000) throw InputError(v.file(), v.pointer(), "a range of at most 100000 values");
  }
  return out;
}

Json read_scalar(const ValueReader& v, const FieldSpec& f) {
  switch (f.kind) {
    case ChoiceKind::INT: return Json(v.as_int(f.range));
    case ChoiceKind::STRING: return Json(f.allowed.empty() ? v.as_string() : v.as_choice(f.allowed));
    case ChoiceKind::BOOL: return Json(v.as_bool());
    case ChoiceKind::OBJECT:
      if (!v.raw().is_object()) v.fail("an object");
      return v.raw();
    case ChoiceKind::ENV_VALUE:
      if (v.raw().is_number_integer() || v.raw().is_number_unsigned()) return Json(std::to_string(v.as_int()));
      return Json(v.as_string());
  }
  return Json();
}

PlanChoice read_choice(const ValueReader& v, const FieldSpec& f) {
  PlanChoice c;
  c.pointer = v.pointer();
  const Json& raw = v.raw();
  if (raw.is_string() && raw.get<std::string>() == "auto" && f.auto_ok) {
    c.is_auto = true;
    return c;
  }
  if (raw.is_array()) {
    for (const auto& e : v.as_array(1)) c.values.push_back(read_scalar(e, f));
    for (std::size_t i = 0; i < c.values.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (c.values[i] == c.values[j]) {
          throw InputError(v.file(), v.pointer() + "/" + std::to_string(i), "a value not already listed");
        }
      }
    }
    return c;
  }
  if (raw.is_object() && f.kind == ChoiceKind::INT) {
    c.values = expand_range(v, f.range);
    return c;
  }
  try {
    c.values.push_back(read_scalar(v, f));
  } catch (const InputError&) {
    std::string expected = f.kind == ChoiceKind::INT ? "an integer, a list [1, 2, 4] or a range {\"min\", \"max\", \"scale\"}"
                           : f.kind == ChoiceKind::OBJECT ? "an object or a list of objects"
                                                          : "a value or a list of values";
    if (f.auto_ok) expected += ", or \"auto\"";
    // Keep the precise message for a wrong scalar of the right type (an out-of-range integer).
    if ((f.kind == ChoiceKind::INT && raw.is_number()) || (f.kind == ChoiceKind::STRING && raw.is_string()) ||
        (f.kind == ChoiceKind::BOOL && raw.is_boolean())) {
      throw;
    }
    v.fail(expected);
  }
  return c;
}

void erase_at(Json& doc, const std::string& pointer) {
  const Json::json_pointer p(pointer);
  Json& parent = doc.at(p.parent_pointer());
  parent.erase(p.back());
}

double read_duration(const ValueReader& v) {
  try {
    return parse_plan_duration(v.as_string());
  } catch (const InputError& e) {
    throw InputError(v.file(), v.pointer(), e.message());
  }
}

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
      if (!dt && !ds) o.fail("\"epochs\" needs \"dataset_tokens\" or \"dataset_samples\" (sequences of seq_len tokens)");
      if (dt) j.dataset_tokens = dt->as_number(positive);
      if (ds) j.dataset_samples = ds->as_number(positive);
    }
    if (auto d = o.maybe("deadline")) {
      j.deadline_s = read_duration(*d);
      if (*j.deadline_s <= 0) d->fail("a deadline > 0");
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
        if (std::find(p.options.begin(), p.options.end(), opt) != p.options.end()) e.fail("an option not already listed");
        p.options.push_back(opt);
      }
    }
    if (auto sp = o.maybe("savings_plan")) {
      sp->read_object([&](ObjectReader& x) {
        if (auto c = x.maybe("commitment")) {
          p.commitment = c->as_choice({"utilized", "dedicated"}) == "dedicated" ? SavingsPlanCommitment::DEDICATED
                                                                                 : SavingsPlanCommitment::UTILIZED;
        }
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
        o.fail("the \"spot\" option needs a \"spot\" section (interruptions_per_node_day, restart_time, and "
               "discount or price where the catalog has no spot price)");
      }
    }
  });
  if (!options_given) {
    p.options = {PricingOption::ON_DEMAND, PricingOption::CAPACITY_BLOCK, PricingOption::SAVINGS_PLAN_1YR,
                 PricingOption::SAVINGS_PLAN_3YR};
    if (p.spot) p.options.push_back(PricingOption::SPOT);
  }
  return p;
}

CheckpointSpec read_checkpoint(ValueReader v) {
  CheckpointSpec c;
  v.read_object([&](ObjectReader& o) {
    auto s = o.at("storage");
    c.storage = s.as_string();
    c.storage_pointer = s.pointer();
    auto iv = o.at("interval");
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

}  // namespace

std::string_view to_string(PricingOption o) {
  switch (o) {
    case PricingOption::ON_DEMAND: return "on_demand";
    case PricingOption::CAPACITY_BLOCK: return "capacity_block";
    case PricingOption::SAVINGS_PLAN_1YR: return "savings_plan_1yr";
    case PricingOption::SAVINGS_PLAN_3YR: return "savings_plan_3yr";
    case PricingOption::SPOT: return "spot";
  }
  return "on_demand";
}

std::string_view pricing_label(PricingOption o) {
  switch (o) {
    case PricingOption::ON_DEMAND: return "on-demand";
    case PricingOption::CAPACITY_BLOCK: return "Capacity Blocks";
    case PricingOption::SAVINGS_PLAN_1YR: return "1-year Savings Plan";
    case PricingOption::SAVINGS_PLAN_3YR: return "3-year Savings Plan";
    case PricingOption::SPOT: return "spot";
  }
  return "on-demand";
}

const std::vector<PricingOption>& all_pricing_options() {
  static const std::vector<PricingOption> all = {PricingOption::ON_DEMAND, PricingOption::CAPACITY_BLOCK,
                                                 PricingOption::SAVINGS_PLAN_1YR, PricingOption::SAVINGS_PLAN_3YR,
                                                 PricingOption::SPOT};
  return all;
}

std::string_view to_string(SavingsPlanCommitment c) {
  return c == SavingsPlanCommitment::DEDICATED ? "dedicated" : "utilized";
}

std::string_view to_string(RankBy r) { return r == RankBy::COST ? "cost" : "time"; }

double JobSpec::tokens_for(std::int64_t seq_len) const {
  if (tokens) return *tokens;
  if (epochs && dataset_tokens) return *epochs * *dataset_tokens;
  if (epochs && dataset_samples) return *epochs * *dataset_samples * static_cast<double>(seq_len);
  return 0;
}

namespace {
// 2e+12 -> "2e12", 1.25e9 -> "1.25e9", 3 -> "3": short and exact enough for a title.
std::string count_text(double v) {
  if (v < 1e6) return format_significant(v, 6);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  std::string s(buf);
  if (const auto e = s.find("e+"); e != std::string::npos) s.erase(e + 1, 1);
  return s;
}
}  // namespace

std::string JobSpec::describe() const {
  if (tokens) return count_text(*tokens) + " tokens";
  if (epochs && dataset_tokens) return count_text(*epochs) + " epochs of " + count_text(*dataset_tokens) + " tokens";
  if (epochs && dataset_samples) {
    return count_text(*epochs) + " epochs of " + count_text(*dataset_samples) + " samples of seq_len tokens";
  }
  return "no tokens";
}

const PlanChoice* PlanSpec::choice(std::string_view pointer) const {
  for (const auto& c : choices) {
    if (c.pointer == pointer) return &c;
  }
  return nullptr;
}

double parse_plan_duration(std::string_view text) {
  const std::string s(text);
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(s, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  std::string unit = s.substr(pos);
  unit.erase(0, unit.find_first_not_of(' '));
  static const std::vector<std::pair<std::string, double>> units = {
      {"s", 1},          {"min", 60},          {"h", 3600},      {"day", 86400},
      {"days", 86400},   {"d", 86400},         {"week", 604800}, {"weeks", 604800}};
  for (const auto& [name, f] : units) {
    if (pos > 0 && unit == name && std::isfinite(v) && v >= 0) return v * f;
  }
  throw InputError("expected a duration such as \"30 days\", \"2 h\" or \"15 min\" (units s, min, h, day(s), "
                   "week(s)), got '" + s + "'");
}

double parse_usd(std::string_view text) {
  const std::string s(text);
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(s, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  std::string unit = s.substr(pos);
  unit.erase(0, unit.find_first_not_of(' '));
  if (pos == 0 || unit != "USD" || !std::isfinite(v)) {
    throw InputError("expected an amount such as \"2.5e6 USD\", got '" + s + "'");
  }
  return v;
}

PlanSpec read_plan(const JsonDocument& doc, const std::filesystem::path& base_dir) {
  PlanSpec p;
  p.file = doc.file();
  p.base_dir = base_dir;
  const Json& root = doc.json();
  ObjectReader top = doc.root().as_object();
  top.at("schema_version").as_int({.min = 1, .max = 1});
  p.name = top.get_or("name", std::filesystem::path(doc.file()).stem().string());
  for (const char* key : {"model", "training", "parallelism", "cluster"}) (void)top.at(key);
  for (const char* key : {"nccl", "calibration"}) (void)top.maybe(key);
  if (auto j = top.maybe("job")) p.job = read_job(*j);
  if (auto pr = top.maybe("pricing")) {
    p.pricing = read_pricing(*pr);
  } else {
    p.pricing.options = {PricingOption::ON_DEMAND, PricingOption::CAPACITY_BLOCK, PricingOption::SAVINGS_PLAN_1YR,
                         PricingOption::SAVINGS_PLAN_3YR};
  }
  if (auto c = top.maybe("checkpoint")) p.checkpoint = read_checkpoint(*c);
  if (auto s = top.maybe("search")) p.search = read_search(*s);
  if (auto s = top.maybe("sensitivity")) p.sensitivity = read_sensitivity(*s);
  top.finish();

  // The scenario sections, as a template.
  Json& t = p.scenario_template;
  t = Json::object();
  for (const char* key : {"schema_version", "model", "training", "parallelism", "cluster", "nccl", "calibration"}) {
    if (root.contains(key) && !root.at(key).is_null()) t[key] = root.at(key);
  }
  t["name"] = p.name;
  for (const char* key : {"training", "cluster"}) {
    if (!t.at(key).is_object()) ValueReader(root.at(key), p.file, std::string("/") + key).fail("an object");
  }
  const Json& par = root.at("parallelism");
  if (par.is_string()) {
    if (par.get<std::string>() != "auto") ValueReader(par, p.file, "/parallelism").fail("an object or \"auto\"");
    p.parallelism_auto = true;
    t["parallelism"] = Json::object();
    p.choices.push_back(PlanChoice{"/parallelism/framework", {Json("megatron")}, false});
    for (auto ptr : kAutoParallelism) p.choices.push_back(PlanChoice{std::string(ptr), {}, true});
  } else if (!par.is_object()) {
    ValueReader(par, p.file, "/parallelism").fail("an object or \"auto\"");
  }

  for (const auto& f : choice_fields()) {
    const Json::json_pointer ptr{std::string(f.pointer)};
    if (!t.contains(ptr) || t.at(ptr).is_null()) continue;
    ValueReader v(root.at(ptr), p.file, std::string(f.pointer));
    p.choices.push_back(read_choice(v, f));
    erase_at(t, std::string(f.pointer));
  }
  // Plans enumerate micro-batch sizes and recomputation unless told otherwise.
  for (const char* ptr : {"/training/micro_batch_size", "/training/activation_checkpointing"}) {
    if (!p.choice(ptr)) p.choices.push_back(PlanChoice{ptr, {}, true});
  }
  // NCCL variables: each may hold a list of values.
  if (t.contains("nccl") && t["nccl"].is_object() && t["nccl"].contains("env") && t["nccl"]["env"].is_object()) {
    const FieldSpec env_spec{"", ChoiceKind::ENV_VALUE};
    std::vector<std::string> names;
    for (const auto& [k, _] : t["nccl"]["env"].items()) names.push_back(k);
    for (const auto& k : names) {
      const std::string ptr = "/nccl/env/" + json_pointer_token(k);
      ValueReader v(root.at(Json::json_pointer(ptr)), p.file, ptr);
      if (k.rfind("NCCL_", 0) != 0 && k.rfind("FI_", 0) != 0 && k.rfind("OFI_NCCL_", 0) != 0) {
        v.fail_message("expected an NCCL_*, FI_* or OFI_NCCL_* variable name");
      }
      p.choices.push_back(read_choice(v, env_spec));
      t["nccl"]["env"].erase(k);
    }
  }

  // Tokens to train: the job's, or the scenario's training.tokens.
  if (!p.job.tokens && !p.job.epochs) {
    if (t["training"].contains("tokens") && t["training"]["tokens"].is_number()) {
      p.job.tokens = ValueReader(root.at("training").at("tokens"), p.file, "/training/tokens")
                         .as_number({.min = 0, .max = 1e18, .min_exclusive = true});
    } else {
      throw InputError(p.file, "/job", "expected the tokens to train: job.tokens, job.epochs with dataset_tokens or "
                                       "dataset_samples, or training.tokens");
    }
  }
  if (p.checkpoint && p.checkpoint->interval == CheckpointSpec::Interval::AUTO &&
      (!p.pricing.spot ||
       std::find(p.pricing.options.begin(), p.pricing.options.end(), PricingOption::SPOT) == p.pricing.options.end())) {
    throw InputError(p.file, "/checkpoint/interval",
                     "\"auto\" derives the interval from the spot interruption rate: add the \"spot\" pricing option, "
                     "or give a duration (\"2 h\") or {\"steps\": N}");
  }
  const bool wants_spot =
      std::find(p.pricing.options.begin(), p.pricing.options.end(), PricingOption::SPOT) != p.pricing.options.end();
  if (wants_spot && !p.checkpoint) {
    throw InputError(p.file, "/checkpoint",
                     "spot pricing needs a \"checkpoint\" section: the work lost at an interruption is the work since "
                     "the last checkpoint");
  }
  return p;
}

PlanSpec load_plan(const std::string& path) {
  const JsonDocument doc = load_json_file(path);
  return read_plan(doc, std::filesystem::path(path).parent_path());
}

}  // namespace clustersim::models
