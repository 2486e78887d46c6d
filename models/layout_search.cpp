#include "models/layout_search.hpp"

#include <algorithm>
#include <mutex>

#include "hardware/errors.hpp"
#include "models/compute_model.hpp"
#include "models/plan_parallel.hpp"
#include "models/training_model.hpp"

namespace clustersim::models {

namespace {

using Json = nlohmann::json;

// Levels of the expansion, outermost first (layout_search.hpp "Order").
enum Level : int {
  SYSTEM,
  GPN,
  NODES,
  SEQ,
  GBS,
  PRECISION,
  FINE_TUNING,
  FRAMEWORK,
  TP,
  CP,
  PP,
  DP,
  EP,
  ZERO,
  MBS,
  VP,
  SCHEDULE,
  SP,
  RECOMPUTE,
  OFFLOAD,
  P2P,
  FIXED_LEVELS
};

constexpr const char* kPointers[FIXED_LEVELS] = {
    "/cluster/system",
    "/cluster/gpus_per_node",
    "/cluster/nodes",
    "/training/seq_len",
    "/training/global_batch_size",
    "/training/precision",
    "/training/fine_tuning",
    "/parallelism/framework",
    "/parallelism/tensor",
    "/parallelism/context",
    "/parallelism/pipeline",
    "/parallelism/data",
    "/parallelism/expert",
    "/parallelism/zero_stage",
    "/training/micro_batch_size",
    "/parallelism/virtual_stages",
    "/parallelism/pipeline_schedule",
    "/parallelism/sequence_parallel",
    "/training/activation_checkpointing",
    "/parallelism/offload",
    "/cluster/p2p",
};

// One assignment of every level (null: not set, the scenario's default applies).
using State = std::vector<Json>;

std::int64_t as_int(const Json& v, std::int64_t fallback) { return v.is_number() ? v.get<std::int64_t>() : fallback; }
std::string as_str(const Json& v, const std::string& fallback) { return v.is_string() ? v.get<std::string>() : fallback; }

std::string value_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// "system=p5.48xlarge nodes=16 tensor=8" for the levels assigned so far.
std::string describe(const State& s, const std::vector<std::string>& pointers, const std::vector<PlanSystem>& systems,
                     std::size_t upto) {
  std::string out;
  for (std::size_t i = 0; i < upto && i < s.size(); ++i) {
    if (s[i].is_null()) continue;
    const std::string& p = pointers[i];
    const std::string key = p.substr(p.rfind('/') + 1);
    if (!out.empty()) out += ' ';
    out += key + "=" + (i == SYSTEM ? systems[static_cast<std::size_t>(s[i].get<std::int64_t>())].name : value_text(s[i]));
  }
  return out;
}

std::vector<Json> ints(std::initializer_list<std::int64_t> v) { return {v.begin(), v.end()}; }

struct Expander {
  const PlanSpec& plan;
  const TransformerConfig& model;
  const std::vector<PlanSystem>& systems;
  std::vector<std::string> pointers;   // one per level
  std::vector<const PlanChoice*> choices;
  std::int64_t limit;

  // Leaves and rejections in enumeration order; `sink` sees each leaf.
  std::function<void(const State&)> leaf;
  std::function<void(const std::string& reason, const std::string& example)> reject;

  std::int64_t count = 0;

  void bump() {
    if (++count > limit) {
      throw InputError(plan.file, "/search/max_combinations",
                       "the plan expands to more than " + std::to_string(limit) +
                           " combinations; narrow its choices or raise search.max_combinations");
    }
  }

  void rejected(const State& s, std::size_t level, const std::string& reason) {
    bump();
    reject(reason, describe(s, pointers, systems, level + 1));
  }

  const PlanChoice* choice(int level) const { return choices[static_cast<std::size_t>(level)]; }

  // Values of a level given the levels before it; empty with `reason` set when nothing fits.
  std::vector<Json> values(int level, const State& s) const {
    const PlanChoice* c = choice(level);
    if (c && !c->is_auto) return c->values;
    const bool is_auto = c != nullptr;  // present and "auto"
    const PlanSystem& sys = systems[static_cast<std::size_t>(s[SYSTEM].get<std::int64_t>())];
    const std::int64_t gpn = level > GPN ? s[GPN].get<std::int64_t>() : 0;
    const std::int64_t world = level > NODES ? gpn * s[NODES].get<std::int64_t>() : 0;
    const std::int64_t tp = level > TP ? as_int(s[TP], 1) : 1;
    const std::int64_t cp = level > CP ? as_int(s[CP], 1) : 1;
    const std::int64_t pp = level > PP ? as_int(s[PP], 1) : 1;
    const std::int64_t dp = level > DP ? as_int(s[DP], 1) : 1;
    const std::string framework = level > FRAMEWORK ? as_str(s[FRAMEWORK], "pytorch") : "pytorch";
    switch (level) {
      case GPN: return {Json(static_cast<std::int64_t>(sys.node.gpus()))};
      case TP: {
        if (!is_auto) return {Json()};
        std::vector<Json> out;
        for (std::int64_t t = 1; t <= gpn; t *= 2) out.emplace_back(t);
        return out;
      }
      case CP: {
        if (!is_auto) return {Json()};
        const std::int64_t seq = s[SEQ].get<std::int64_t>();
        std::vector<Json> out{Json(std::int64_t{1})};
        for (std::int64_t c = 2; seq / c >= 4096; c *= 2) out.emplace_back(c);
        return out;
      }
      case PP: {
        if (!is_auto) return {Json()};
        std::vector<Json> out;
        for (std::int64_t p = 1; p <= std::min<std::int64_t>(64, model.num_layers); p *= 2) {
          if (world % (tp * cp * p) == 0) out.emplace_back(p);
        }
        return out;
      }
      case DP: return {Json(world % (tp * cp * pp) == 0 ? world / (tp * cp * pp) : 0)};
      case EP: {
        if (!is_auto) return {Json()};
        if (!model.moe.enabled()) return ints({1});
        std::vector<Json> out;
        for (std::int64_t e = 1; e <= model.moe.num_experts; e *= 2) {
          if (model.moe.num_experts % e == 0 && (dp * cp) % e == 0) out.emplace_back(e);
        }
        return out;
      }
      case ZERO: {
        if (!is_auto) return {Json()};
        if (framework == "megatron") {
          const Json& m = plan.scenario_template["parallelism"];
          const bool dist_opt = !(m.contains("megatron") && m["megatron"].is_object() &&
                                  m["megatron"].contains("distributed_optimizer") &&
                                  m["megatron"]["distributed_optimizer"] == false);
          return ints({dist_opt ? 1 : 0});
        }
        if (framework == "deepspeed" && pp > 1) return ints({0, 1});
        return ints({0, 1, 2, 3});
      }
      case MBS: {
        // is_auto always: plans enumerate micro-batches unless told otherwise.
        const std::int64_t gbs = s[GBS].get<std::int64_t>();
        std::vector<Json> out;
        for (std::int64_t b = 1; b <= 8; b *= 2) {
          if (gbs % (b * dp) == 0) out.emplace_back(b);
        }
        return out;
      }
      case VP: {
        if (!is_auto || pp == 1) return {Json()};
        std::vector<Json> out{Json()};
        const std::int64_t micro = s[GBS].get<std::int64_t>() / (as_int(s[MBS], 1) * dp);
        for (std::int64_t v : {2, 3, 4, 5, 6, 8}) {
          if (model.num_layers % (pp * v) == 0 && micro % pp == 0) out.emplace_back(v);
        }
        return out;
      }
      case SCHEDULE: {
        // Absent or "auto": follows the virtual stages.
        const std::int64_t vp = as_int(s[VP], 1);
        return {Json(vp > 1 ? "interleaved_1f1b" : "1f1b")};
      }
      case SP: {
        if (!is_auto) return {Json()};
        return {Json(tp > 1)};
      }
      case RECOMPUTE: return {Json("none"), Json("selective"), Json("full")};
      default: return {Json()};
    }
  }

  // The first reason a (partial) combination cannot run, or "".
  std::string check(int level, const State& s) const {
    switch (level) {
      case DP: {
        const std::int64_t world = s[GPN].get<std::int64_t>() * s[NODES].get<std::int64_t>();
        const std::int64_t tp = as_int(s[TP], 1), cp = as_int(s[CP], 1), pp = as_int(s[PP], 1);
        const std::int64_t dp = as_int(s[DP], 1);
        if (dp == 0) return "GPUs (nodes x gpus_per_node) not divisible by tensor x pipeline x context";
        if (tp * cp * pp * dp != world) return "tensor x pipeline x context x data differs from the GPU count";
        return "";
      }
      case EP: {
        const std::int64_t ep = as_int(s[EP], 1);
        if (ep > 1 && (as_int(s[DP], 1) * as_int(s[CP], 1)) % ep != 0) return "expert does not divide data x context";
        return "";
      }
      case ZERO: {
        const std::string fw = as_str(s[FRAMEWORK], "pytorch");
        const std::int64_t z = as_int(s[ZERO], 0);
        if (fw == "megatron" && z > 1) return "Megatron shards optimizer state with its distributed optimizer (ZeRO 0 or 1)";
        if (fw == "deepspeed" && z > 1 && as_int(s[PP], 1) > 1) {
          return "DeepSpeed's pipeline engine accepts ZeRO stage 0 or 1 only";
        }
        return "";
      }
      case MBS: {
        const std::int64_t gbs = s[GBS].get<std::int64_t>();
        if (gbs % (as_int(s[MBS], 1) * as_int(s[DP], 1)) != 0) {
          return "global batch not a multiple of micro-batch x data";
        }
        return "";
      }
      case SCHEDULE: {
        const std::int64_t pp = as_int(s[PP], 1), vp = as_int(s[VP], 1);
        const std::string sched = as_str(s[SCHEDULE], "1f1b");
        if (sched == "interleaved_1f1b" && pp == 1) return "interleaved schedule needs pipeline > 1";
        if (vp > 1 && sched != "interleaved_1f1b") return "virtual stages need the interleaved schedule";
        if (sched == "interleaved_1f1b") {
          const std::int64_t micro = s[GBS].get<std::int64_t>() / (as_int(s[MBS], 1) * as_int(s[DP], 1));
          if (micro % pp != 0) return "interleaved schedule needs micro-batches per step divisible by pipeline";
          if (model.num_layers % (pp * vp) != 0) return "interleaved schedule needs layers divisible by pipeline x virtual stages";
        }
        return "";
      }
      default: return "";
    }
  }

  void expand(std::size_t level, State& s) {
    if (level == pointers.size()) {
      bump();
      leaf(s);
      return;
    }
    const int lv = static_cast<int>(level);
    std::vector<Json> vals;
    if (level < FIXED_LEVELS) {
      if (level == SYSTEM) {
        for (std::size_t i = 0; i < systems.size(); ++i) vals.emplace_back(static_cast<std::int64_t>(i));
      } else {
        vals = values(lv, s);
      }
    } else {
      vals = choices[level]->values;
    }
    if (vals.empty()) {
      rejected(s, level,
               level == MBS ? "global batch not divisible by data x a micro-batch of 1, 2, 4 or 8"
                            : "no valid value of " + pointers[level] + " fits the choices before it");
      return;
    }
    for (const auto& v : vals) {
      s[level] = v;
      if (level < FIXED_LEVELS) {
        const std::string why = check(lv, s);
        if (!why.empty()) {
          rejected(s, level, why);
          continue;
        }
      }
      expand(level + 1, s);
    }
    s[level] = Json();
  }
};

// Neutral values for a structure check of the plan's scenario sections: one GPU, no splits.
Json neutral_value(int level, const PlanChoice* c, const std::vector<PlanSystem>& systems) {
  switch (level) {
    case SYSTEM: return systems.front().name;
    case GPN:
    case NODES:
    case GBS:
    case MBS:
    case TP:
    case CP:
    case PP:
    case DP:
    case EP:
    case VP: return std::int64_t{1};
    case ZERO: return std::int64_t{0};
    case SCHEDULE: return "1f1b";
    case SP: return false;
    case RECOMPUTE: return "none";
    case OFFLOAD: return Json();
    default: break;
  }
  return c && !c->is_auto && !c->values.empty() ? c->values.front() : Json();
}

struct LeafResult {
  std::optional<LayoutCandidate> candidate;
  std::string reason;  // rejected: why
  std::string example;
  std::optional<InputError> fatal;
};

bool is_combination_pointer(const std::string& where, const PlanSpec& plan) {
  if (where == "/parallelism" || where == "/training/global_batch_size" || where == "/training/seq_len") return true;
  for (const auto& c : plan.choices) {
    if (where == c.pointer || where.rfind(c.pointer + "/", 0) == 0) return true;
  }
  return false;
}

// The scenario sections of one combination, as the scenario reader reads them.
Json scenario_json(const PlanSpec& plan, const std::vector<PlanSystem>& systems, const std::vector<std::string>& pointers,
                   const State& s) {
  Json doc = plan.scenario_template;
  for (std::size_t i = 0; i < pointers.size(); ++i) {
    if (s[i].is_null()) continue;
    Json v = s[i];
    if (i == SYSTEM) v = systems[static_cast<std::size_t>(s[i].get<std::int64_t>())].name;
    doc[Json::json_pointer(pointers[i])] = v;
  }
  return doc;
}

// Model-derived validity, memory, labels.
LeafResult materialise(const PlanSpec& plan, const SearchSpace& space, const std::vector<std::string>& pointers,
                       const State& s) {
  LeafResult r;
  const std::size_t sys_index = static_cast<std::size_t>(s[SYSTEM].get<std::int64_t>());
  const PlanSystem& sys = space.systems[sys_index];
  r.example = describe(s, pointers, space.systems, pointers.size());
  Scenario scenario;
  try {
    const JsonDocument doc(scenario_json(plan, space.systems, pointers, s), plan.file);
    scenario = read_scenario(doc, plan.base_dir);
  } catch (const InputError& e) {
    if (!is_combination_pointer(e.where(), plan)) {
      r.fatal = e;
      return r;
    }
    r.reason = e.where() + ": " + e.message();
    return r;
  }
  try {
    check_gpu_supports(scenario.training, *sys.node.gpu, plan.file);
    TrainingModel tm(space.model, scenario.parallelism, scenario.training, plan.file);
    hardware::ParameterSet params(sys.profile ? &*sys.profile : nullptr);
    LayoutCandidate c;
    c.system = static_cast<int>(sys_index);
    const int last = tm.layout().pp() - 1;
    c.memory = tm.memory(0, *sys.node.gpu, params, &scenario.nccl.env);
    c.peak_stage = 0;
    if (last > 0) {
      MemoryBreakdown m = tm.memory(last, *sys.node.gpu, params, &scenario.nccl.env);
      if (m.peak > c.memory.peak) {
        c.memory = std::move(m);
        c.peak_stage = last;
      }
    }
    c.fits = c.memory.fits;
    c.layout = layout_label(scenario, true);
    c.shape = sys.name + ", " + layout_label(scenario, false);
    c.scenario = std::move(scenario);
    r.candidate = std::move(c);
  } catch (const InputError& e) {
    r.reason = e.where() + ": " + e.message();
  }
  return r;
}

}  // namespace

std::optional<hardware::CalibrationProfile> resolve_calibration(const std::string& calibration,
                                                                const hardware::NodeSpec& node) {
  if (calibration == "default") {
    if (node.calibration.empty()) return std::nullopt;
    return hardware::CalibrationProfile::builtin(node.calibration);
  }
  return hardware::CalibrationProfile::load(calibration);
}

std::string layout_label(const Scenario& s, bool with_data) {
  const auto& p = s.parallelism;
  std::string out = std::string(to_string(p.framework)) + " TP" + std::to_string(p.tensor) + " PP" +
                    std::to_string(p.pipeline);
  if (p.virtual_stages > 1) out += "v" + std::to_string(p.virtual_stages);
  if (p.pipeline_schedule == PipelineSchedule::GPIPE) out += " gpipe";
  if (p.context > 1) out += " CP" + std::to_string(p.context);
  if (p.expert > 1) out += " EP" + std::to_string(p.expert);
  if (with_data) out += " DP" + std::to_string(p.data);
  if (p.framework == Framework::MEGATRON) {
    if (p.megatron.distributed_optimizer) out += " distopt";  // what the memory model shards by
  } else if (p.zero_stage > 0) {
    out += " ZeRO-" + std::to_string(p.zero_stage);
  }
  if (p.sequence_parallel && p.tensor > 1) out += " SP";
  if (p.offload_optimizer == OffloadTarget::CPU) out += " +opt-offload";
  if (p.offload_params == OffloadTarget::CPU) out += " +param-offload";
  out += ", mb " + std::to_string(s.training.micro_batch_size);
  if (s.training.activation_checkpointing != Checkpointing::NONE) {
    out += ", " + std::string(to_string(s.training.activation_checkpointing)) + " recompute";
  }
  if (s.training.fine_tuning == FineTuning::LORA) out += ", LoRA r" + std::to_string(s.training.lora.rank);
  if (s.training.precision != Precision::BF16) out += ", " + std::string(to_string(s.training.precision));
  for (const auto& [k, v] : s.nccl.env) out += ", " + k + "=" + v;
  if (s.cluster.p2p != P2pMode::WRITE) out += ", p2p " + std::string(to_string(s.cluster.p2p));
  return out;
}

std::string candidate_label(const Scenario& s) {
  return s.cluster.system + " x " + std::to_string(s.cluster.nodes) + ", " + layout_label(s, true);
}

SearchSpace enumerate_layouts(const PlanSpec& plan, const hardware::Catalog& catalog,
                              const LayoutSearchOptions& options) {
  SearchSpace space;

  // The model, read as the scenario reader reads it (errors name the plan's /model keys).
  {
    Json probe = {{"schema_version", 1},
                  {"model", plan.scenario_template.at("model")},
                  {"training", {{"seq_len", 1}, {"micro_batch_size", 1}, {"global_batch_size", 1}}},
                  {"parallelism", Json::object()},
                  {"cluster", {{"system", "-"}, {"nodes", 1}, {"gpus_per_node", 1}}}};
    const Scenario s = read_scenario(JsonDocument(probe, plan.file), plan.base_dir);
    space.model = resolve_model(s.model);
  }

  // Systems, each resolved once with its calibration profile.
  const PlanChoice* sys_choice = plan.choice("/cluster/system");
  if (!sys_choice) throw InputError(plan.file, "/cluster/system", "missing required key");
  const std::string calibration = [&]() -> std::string {
    if (!plan.scenario_template.contains("calibration")) return "default";
    const Json& c = plan.scenario_template["calibration"];
    if (!c.is_string()) ValueReader(c, plan.file, "/calibration").fail("a string");
    const std::string v = c.get<std::string>();
    if (v == "default") return v;
    const std::filesystem::path path(v);
    return (path.is_absolute() ? path : plan.base_dir / path).string();
  }();
  for (std::size_t i = 0; i < sys_choice->values.size(); ++i) {
    const std::string name = sys_choice->values[i].get<std::string>();
    const std::string where = sys_choice->values.size() == 1 && sys_choice->pointer == "/cluster/system"
                                  ? sys_choice->pointer
                                  : sys_choice->pointer + "/" + std::to_string(i);
    PlanSystem ps;
    ps.name = name;
    ps.calibration = calibration;
    try {
      ps.node = hardware::resolve_node(catalog, name);
      ps.profile = resolve_calibration(calibration, ps.node);
    } catch (const InputError& e) {
      throw InputError(plan.file, e.where().empty() ? where : e.where(), e.message());
    }
    space.systems.push_back(std::move(ps));
  }

  // The scenario sections on their own, with neutral values in the choice fields: a typo or a missing
  // key is the plan's error, not a rejected combination.
  {
    Json probe = plan.scenario_template;
    for (int i = 0; i < FIXED_LEVELS; ++i) {
      const PlanChoice* c = plan.choice(kPointers[i]);
      const bool required = i == SYSTEM || i == NODES || i == SEQ || i == GBS;
      if (!c && required) continue;  // the scenario reader reports it, with a typo's suggestion
      const Json v = neutral_value(i, c, space.systems);
      if (!v.is_null()) probe[Json::json_pointer(kPointers[i])] = v;
    }
    for (const auto& c : plan.choices) {
      if (c.pointer.rfind("/nccl/env/", 0) == 0) probe[Json::json_pointer(c.pointer)] = c.values.front();
    }
    try {
      (void)read_scenario(JsonDocument(probe, plan.file), plan.base_dir);
    } catch (const InputError& e) {
      if (!is_combination_pointer(e.where(), plan)) throw;
    }
  }

  if (plan.checkpoint) {
    try {
      (void)catalog.storage(plan.checkpoint->storage);
    } catch (const InputError& e) {
      throw InputError(plan.file, plan.checkpoint->storage_pointer, e.message());
    }
  }

  Expander ex{plan, space.model, space.systems, {}, {}, plan.search.max_combinations, {}, {}, 0};
  for (int i = 0; i < FIXED_LEVELS; ++i) {
    ex.pointers.emplace_back(kPointers[i]);
    ex.choices.push_back(plan.choice(kPointers[i]));
  }
  // NCCL variables by name (the plan reader keeps them in document order; sort for a stable order).
  std::vector<const PlanChoice*> env;
  for (const auto& c : plan.choices) {
    if (c.pointer.rfind("/nccl/env/", 0) == 0) env.push_back(&c);
  }
  std::sort(env.begin(), env.end(), [](const PlanChoice* a, const PlanChoice* b) { return a->pointer < b->pointer; });
  for (const auto* c : env) {
    ex.pointers.push_back(c->pointer);
    ex.choices.push_back(c);
  }

  // Enumerate in batches; each batch is materialised on every core and merged in order.
  constexpr std::size_t kBatch = 2048;
  std::vector<State> batch;
  std::map<std::string, std::size_t> reason_index;
  auto add_rejection = [&](const std::string& reason, const std::string& example) {
    ++space.rejected_count;
    const auto [it, inserted] = reason_index.emplace(reason, space.rejected.size());
    if (inserted) space.rejected.push_back(RejectedCombinations{reason, 0, example});
    ++space.rejected[it->second].count;
  };
  // Rejections found while enumerating are held until the batch they belong to is merged, so the
  // order of reasons follows the enumeration order.
  std::vector<std::pair<std::size_t, std::pair<std::string, std::string>>> pending;  // (position in batch, reason)
  std::int64_t prepared = 0;
  auto flush = [&]() {
    std::vector<LeafResult> results(batch.size());
    ParallelOptions po;
    po.threads = options.threads;
    parallel_for_index(batch.size(), po, [&](std::size_t i) { results[i] = materialise(plan, space, ex.pointers, batch[i]); });
    std::size_t next_pending = 0;
    for (std::size_t i = 0; i <= results.size(); ++i) {
      while (next_pending < pending.size() && pending[next_pending].first == i) {
        add_rejection(pending[next_pending].second.first, pending[next_pending].second.second);
        ++next_pending;
      }
      if (i == results.size()) break;
      LeafResult& r = results[i];
      if (r.fatal) throw *r.fatal;
      if (r.candidate) {
        r.candidate->index = space.candidates.size();
        if (!r.candidate->fits) ++space.does_not_fit;
        space.candidates.push_back(std::move(*r.candidate));
      } else {
        add_rejection(r.reason, r.example);
      }
    }
    prepared += static_cast<std::int64_t>(batch.size() + pending.size());
    batch.clear();
    pending.clear();
    if (options.progress) options.progress(SearchProgress{prepared});
  };
  ex.leaf = [&](const State& s) {
    batch.push_back(s);
    if (batch.size() >= kBatch) flush();
  };
  ex.reject = [&](const std::string& reason, const std::string& example) {
    pending.emplace_back(batch.size(), std::make_pair(reason, example));
  };
  State state(ex.pointers.size());
  ex.expand(0, state);
  flush();
  space.combinations = static_cast<std::int64_t>(space.candidates.size()) + space.rejected_count;

  if (space.candidates.empty()) {
    const auto most = std::max_element(space.rejected.begin(), space.rejected.end(),
                                       [](const auto& a, const auto& b) { return a.count < b.count; });
    const std::string reason = most == space.rejected.end() ? "no combination" : most->reason;
    throw InputError(plan.file, "", "no valid layout among " + std::to_string(space.combinations) +
                                        " combinations; the most frequent reason (" +
                                        std::to_string(most == space.rejected.end() ? 0 : most->count) +
                                        "): " + reason + (most == space.rejected.end() ? "" : " (e.g. " + most->example + ")"));
  }
  return space;
}

}  // namespace clustersim::models
