#include "models/plan_spec.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "hardware/errors.hpp"
#include "models/plan_sections.hpp"

namespace clustersim::models {

namespace {

using Json = nlohmann::json;

void erase_at(Json& doc, const std::string& pointer) {
  const Json::json_pointer p(pointer);
  Json& parent = doc.at(p.parent_pointer());
  parent.erase(p.back());
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
  switch (c) {
    case SavingsPlanCommitment::DEDICATED: return "dedicated";
    case SavingsPlanCommitment::SHARED: return "shared";
    case SavingsPlanCommitment::UTILIZED: return "utilized";
  }
  return "dedicated";
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
  static const std::vector<std::pair<std::string, double>> units = {{"s", 1},         {"min", 60},      {"h", 3600},
                                                                    {"day", 86400},   {"days", 86400},  {"d", 86400},
                                                                    {"week", 604800}, {"weeks", 604800}};
  for (const auto& [name, f] : units) {
    if (pos > 0 && unit == name && std::isfinite(v) && v >= 0) return v * f;
  }
  throw InputError(
      "expected a duration such as \"30 days\", \"2 h\" or \"15 min\" (units s, min, h, day(s), "
      "week(s)), got '" +
      s + "'");
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
    p.pricing.options = {PricingOption::ON_DEMAND};
  }
  if (auto c = top.maybe("checkpoint")) p.checkpoint = read_checkpoint(*c);
  if (auto g = top.maybe("goodput")) p.goodput = read_goodput(*g);
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
    for (auto ptr : auto_parallelism_fields()) p.choices.push_back(PlanChoice{std::string(ptr), {}, true});
  } else if (!par.is_object()) {
    ValueReader(par, p.file, "/parallelism").fail("an object or \"auto\"");
  }

  for (const auto& f : plan_choice_fields()) {
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
    const ChoiceField env_spec{"", ChoiceKind::ENV_VALUE};
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
      throw InputError(p.file, "/job",
                       "expected the tokens to train: job.tokens, job.epochs with dataset_tokens or "
                       "dataset_samples, or training.tokens");
    }
  }
  // Checkpoints: the plan's section, else the defaults whenever something interrupts the job
  // (failures, spot), since the work lost is the work since the last checkpoint.
  const bool wants_spot =
      std::find(p.pricing.options.begin(), p.pricing.options.end(), PricingOption::SPOT) != p.pricing.options.end();
  if (!p.checkpoint && (p.goodput.enabled || wants_spot)) p.checkpoint = CheckpointSpec{};
  if (p.checkpoint && p.checkpoint->interval == CheckpointSpec::Interval::AUTO && !p.goodput.enabled && !wants_spot) {
    throw InputError(p.file, p.checkpoint->stated ? "/checkpoint/interval" : "/checkpoint",
                     "\"auto\" derives the interval from the job's interruption rate, and with goodput disabled "
                     "and no \"spot\" option there is none: give a duration (\"2 h\") or {\"steps\": N}");
  }
  return p;
}

PlanSpec load_plan(const std::string& path) {
  const JsonDocument doc = load_json_file(path);
  return read_plan(doc, std::filesystem::path(path).parent_path());
}

}  // namespace clustersim::models
