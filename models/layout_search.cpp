#include "models/layout_search.hpp"
#include "models/recompute.hpp"

#include <algorithm>
#include <mutex>

#include "hardware/errors.hpp"
#include "models/compute_model.hpp"
#include "models/layout_expander.hpp"
#include "models/plan_parallel.hpp"
#include "models/training_model.hpp"

namespace clustersim::models {

namespace {

using namespace layout_expansion;

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
Json scenario_json(const PlanSpec& plan, const std::vector<PlanSystem>& systems,
                   const std::vector<std::string>& pointers, const State& s) {
  Json doc = plan.scenario_template;
  for (std::size_t i = 0; i < pointers.size(); ++i) {
    if (s[i].is_null()) continue;
    Json v = s[i];
    if (i == SYSTEM) v = systems[static_cast<std::size_t>(s[i].get<std::int64_t>())].name;
    doc[Json::json_pointer(pointers[i])] = v;
  }
  // The plan's recompute_method and recompute_num_layers go with the candidates that recompute
  // in full; the others run without them (Megatron-Core refuses them beside "selective").
  if (doc.contains("training") && doc["training"].is_object()) {
    Json& t = doc["training"];
    if (!t.contains("activation_checkpointing") || t["activation_checkpointing"] != "full") {
      t.erase("recompute_method");
      t.erase("recompute_num_layers");
    }
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
  std::string out =
      std::string(to_string(p.framework)) + " TP" + std::to_string(p.tensor) + " PP" + std::to_string(p.pipeline);
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
    if (s.training.recompute_given) {
      out += " (" + std::string(to_string(s.training.recompute_method)) + " " +
             std::to_string(s.training.recompute_num_layers) + ")";
    }
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
    parallel_for_index(batch.size(), po,
                       [&](std::size_t i) { results[i] = materialise(plan, space, ex.pointers, batch[i]); });
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
    throw InputError(plan.file, "",
                     "no valid layout among " + std::to_string(space.combinations) +
                         " combinations; the most frequent reason (" +
                         std::to_string(most == space.rejected.end() ? 0 : most->count) + "): " + reason +
                         (most == space.rejected.end() ? "" : " (e.g. " + most->example + ")"));
  }
  return space;
}

}  // namespace clustersim::models
