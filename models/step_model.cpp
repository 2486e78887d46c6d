#include "models/step_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "hardware/errors.hpp"
#include "models/compute_model.hpp"
#include "models/rank_grid.hpp"
#include "models/step_band.hpp"
#include "models/step_builder.hpp"
#include "models/step_fast.hpp"
#include "models/step_plan.hpp"
#include "models/training_model.hpp"

namespace clustersim::models {

std::string_view to_string(Fidelity f) { return f == Fidelity::FAST ? "fast" : "event"; }

namespace {

std::string gib(Bytes b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB", b.as_double() / (1024.0 * 1024 * 1024));
  return buf;
}

void check_batch(const Scenario& s, const ParallelLayout& L) {
  const std::int64_t per = L.micro_batch() * L.dp();
  if (s.training.global_batch_size % per != 0) {
    throw InputError(s.file, "/training/global_batch_size",
                     "expected a multiple of micro_batch_size x data parallelism = " + std::to_string(L.micro_batch()) +
                         " x " + std::to_string(L.dp()) + " = " + std::to_string(per) + ", got " +
                         std::to_string(s.training.global_batch_size));
  }
  if (L.vp() > 1 && L.num_micro_batches() % L.pp() != 0) {
    throw InputError(s.file, "/training/global_batch_size",
                     "the interleaved schedule needs the micro-batches per step (" +
                         std::to_string(L.num_micro_batches()) + ") to be a multiple of pipeline = " +
                         std::to_string(L.pp()) + " (Megatron-LM schedules.py)");
  }
}

std::string bottleneck_sentence(const StepEstimate& e, const StepOutcome& o, int stages) {
  const StepBreakdown& b = e.breakdown;
  const double T = e.step_time_s;
  if (T <= 0) return "";
  struct Part {
    const char* name;
    double v;
  };
  const Part parts[] = {{"compute", b.compute_s},
                        {"exposed communication", b.exposed_comm_s},
                        {"pipeline bubble", b.pipeline_bubble_s},
                        {"optimizer", b.optimizer_s},
                        {"offload (host<->device copies)", b.offload_s},
                        {"host (the rank's CPU thread)", b.host_s}};
  const Part* top = &parts[0];
  for (const Part& p : parts) {
    if (p.v > top->v) top = &p;
  }
  char buf[512];
  std::string out;
  if (top == &parts[1] || b.exposed_comm_s > 0.15 * T) {
    const CommSummary* worst = nullptr;
    for (const auto& c : e.comms) {
      if (worst == nullptr || c.exposed_s > worst->exposed_s) worst = &c;
    }
    if (worst != nullptr && worst->exposed_s > 0) {
      std::snprintf(buf, sizeof buf, "%s-bound: %.0f%% of the step; the most exposed collective is %s on the %s group (%s, %s): %.3g s exposed of %.3g s busy",
                    top == &parts[1] ? "communication" : top->name, 100 * top->v / T, worst->name.c_str(),
                    worst->group.c_str(), worst->transport.c_str(), worst->algorithm.c_str(), worst->exposed_s,
                    worst->time_s);
      out = buf;
    }
  }
  if (out.empty() && top == &parts[3] && e.host.cpu_adam_s > 0) {
    std::snprintf(buf, sizeof buf,
                  "CPU-optimizer-bound: %.0f%% of the step; the CPU step %.3g s (its optimizer %.3g s) on %.3g core(s) "
                  "per rank (%d thread(s): %s)",
                  100 * top->v / T, e.host.cpu_optimizer_s, e.host.cpu_adam_s, e.host.cores_per_rank, e.host.threads_per_rank,
                  e.host.threads_from.c_str());
    out = buf;
  }
  if (out.empty() && top == &parts[5]) {
    std::snprintf(buf, sizeof buf,
                  "host-bound (CPU-bound): %.0f%% of the step the GPU waits for its rank's CPU thread, which spends "
                  "%.3g s issuing kernels that run %.3g s on the GPU",
                  100 * top->v / T, e.host.dispatch_s, e.host.kernels_s);
    out = buf;
    if (e.host.hooks_s > 0) {
      std::snprintf(buf, sizeof buf, " and %.3g s in DeepSpeed ZeRO-3's module hooks", e.host.hooks_s);
      out += buf;
    }
  }
  if (out.empty()) {
    std::snprintf(buf, sizeof buf, "%s-bound: %.0f%% of the step", top->name, 100 * top->v / T);
    out = buf;
    if (stages > 1) out += " (critical stage " + std::to_string(o.critical_stage) + ")";
  }
  if (!o.link_note.empty()) out += "; " + o.link_note;
  return out;
}

}  // namespace

StepSimulator::StepSimulator(const hardware::Catalog& catalog) : catalog_(catalog) {}
StepSimulator::~StepSimulator() = default;

StepEvaluator StepSimulator::evaluator() {
  return [this](const Scenario& s, Fidelity f) { return estimate(s, f); };
}

const hardware::CalibrationProfile* StepSimulator::profile_for(const Scenario& s, const hardware::NodeSpec& node,
                                                               std::vector<std::string>& warnings) {
  std::string key;
  if (s.calibration == "none") {
    warnings.push_back("calibration: none; using catalog-derived defaults (wide uncertainty)");
    return nullptr;
  }
  if (s.calibration.empty() || s.calibration == "default") {
    if (node.calibration.empty()) {
      warnings.push_back("no calibration profile is named for " + node.name +
                         " in the catalog; using catalog-derived defaults (wide uncertainty)");
      return nullptr;
    }
    key = "builtin:" + node.calibration;
    auto it = profiles_.find(key);
    if (it != profiles_.end()) return it->second.get();
    try {
      auto p = std::make_unique<hardware::CalibrationProfile>(hardware::CalibrationProfile::builtin(node.calibration));
      return profiles_.emplace(key, std::move(p)).first->second.get();
    } catch (const InputError&) {
      warnings.push_back("the catalog names calibration profile '" + node.calibration + "' for " + node.name +
                         ", which is not built in; using catalog-derived defaults (wide uncertainty)");
      return nullptr;
    }
  }
  const bool builtin = is_builtin_profile_name(s.calibration);
  key = (builtin ? "builtin:" : "file:") + s.calibration;
  auto it = profiles_.find(key);
  if (it != profiles_.end()) return it->second.get();
  try {
    auto p = std::make_unique<hardware::CalibrationProfile>(builtin ? hardware::CalibrationProfile::builtin(s.calibration)
                                                                    : hardware::CalibrationProfile::load(s.calibration));
    return profiles_.emplace(key, std::move(p)).first->second.get();
  } catch (const InputError& e) {
    throw e.located(s.file, "/calibration");
  }
}

const TransformerConfig& StepSimulator::model_for(const Scenario& s) {
  std::string key;
  switch (s.model.kind) {
    case ModelRef::Kind::PRESET: key = "preset:" + s.model.preset; break;
    case ModelRef::Kind::HF_CONFIG: key = "hf:" + s.model.hf_config.string(); break;
    case ModelRef::Kind::INLINE: key = "inline:" + s.model.inline_fields.dump(); break;
  }
  auto it = models_.find(key);
  if (it != models_.end()) return it->second;
  return models_.emplace(key, resolve_model(s.model)).first->second;
}

StepEstimate StepSimulator::estimate(const Scenario& s, Fidelity fidelity, const StepRunOptions& options) {
  // The event simulation holds every node's links: about 8 KB per GPU (785 MB at 100,000 GPUs,
  // 2 GB at 262,144; tests/bench/scale_bench.cpp), so it is refused beyond 2^18 GPUs before any
  // allocation. The closed form's memory does not grow with the GPU count.
  constexpr int kMaxEventGpus = 1 << 18;
  if (fidelity == Fidelity::EVENT && s.world_size() > kMaxEventGpus) {
    throw InputError(s.file, "/cluster/nodes",
                     "the event simulation is bounded at " + std::to_string(kMaxEventGpus) +
                         " GPUs (about 2 GB of memory); this cluster has " + std::to_string(s.world_size()) +
                         ": use --fidelity fast, or fewer nodes");
  }
  StepEstimate e;
  e.fidelity = fidelity;
  hardware::NodeSpec node;
  try {
    node = hardware::resolve_node(catalog_, s.cluster.system);
  } catch (const InputError& err) {
    throw InputError(s.file, "/cluster/system", err.message());
  }
  if (s.cluster.gpus_per_node > node.gpus()) {
    throw InputError(s.file, "/cluster/gpus_per_node",
                     "expected at most " + std::to_string(node.gpus()) + " (" + node.name + " has " +
                         std::to_string(node.gpus()) + " GPUs), got " + std::to_string(s.cluster.gpus_per_node));
  }
  if (s.cluster.nodes > 1 && node.fabric == nullptr && !s.cluster.network.fabric) {
    throw InputError(s.file, "/cluster/nodes",
                     node.name + " has no network in the catalog: use one node, an instance with a network, or "
                                 "cluster.network.fabric");
  }
  const TransformerConfig& model = model_for(s);
  TrainingModel tm(model, s.parallelism, s.training, s.file);
  const ParallelLayout& L = tm.layout();
  check_batch(s, L);
  check_gpu_supports(s.training, *node.gpu, s.file);

  const hardware::CalibrationProfile* profile = profile_for(s, node, e.warnings);
  hardware::ParameterSet params(profile);
  ComputeModel compute(*node.gpu, params);
  HostModel host(node, params);
  RankGrid grid(L, s.parallelism.rank_order, s.cluster.gpus_per_node);

  const PlanInputs in{.scenario = s, .model = model, .training = tm, .node = node, .profile = profile,
                      .grid = grid, .compute = compute, .host = host, .params = params};
  const StepPlan plan = build_step_plan(in, predictors_);

  StepOutcome out;
  if (fidelity == Fidelity::FAST) {
    out = evaluate_fast(plan);
  } else {
    const EventInputs ev{.scenario = s, .catalog = catalog_, .node = node, .grid = grid, .host = host,
                         .params = params};
    out = simulate_step(plan, ev, options.timeline);
  }

  e.step_time_s = out.step_s;
  e.breakdown = out.breakdown;
  for (const std::string& w : s.warnings) e.warnings.push_back(w);
  {
    const StagePlan& st = plan.stages[static_cast<std::size_t>(std::max(0, out.critical_stage))];
    e.host.threads_per_rank = plan.host_threads.threads;
    e.host.cores_per_rank = plan.host_threads.cores;
    e.host.ranks_per_node = plan.host_threads.ranks_on_node;
    e.host.threads_from = plan.host_threads.why;
    e.host.cpu_adam_s = st.optimizer.cpu_adam_time.seconds();
    e.host.cpu_optimizer_s = st.optimizer.cpu_time.seconds();
    double hooks = 0, dispatch = 0, kernels = 0;
    std::int64_t launches = 0;
    for (const UnitPlan& u : st.units) {
      hooks += u.host_forward.seconds() + u.host_backward.seconds();
      const UnitPass& p = st.passes[static_cast<std::size_t>(u.pass)];
      dispatch += p.forward_dispatch.seconds() + p.backward_dispatch.seconds();
      kernels += p.forward_compute.seconds() + p.backward_compute.seconds();
      launches += p.forward_kernels + p.backward_kernels;
    }
    const double mb = static_cast<double>(plan.micro_batches);
    e.host.hooks_s = hooks * mb;
    e.host.dispatch_s = dispatch * mb;
    e.host.kernels_s = kernels * mb;
    e.host.kernels = launches * plan.micro_batches;
    e.host.cpu_work = e.host.cpu_optimizer_s > 0 || e.host.hooks_s > 0 || e.host.dispatch_s > 0;
  }
  e.comms = out.comms;
  std::sort(e.comms.begin(), e.comms.end(),
            [](const CommSummary& a, const CommSummary& b) { return a.exposed_s > b.exposed_s; });
  e.tokens_per_step = s.training.global_batch_size * s.training.seq_len;
  e.tokens_per_s = e.step_time_s > 0 ? static_cast<double>(e.tokens_per_step) / e.step_time_s : 0;
  e.model_flops_per_step =
      tm.step_flops({.attention = AttentionCounting::FULL_SQUARE, .include_recompute = false});
  const double peak = compute.peak(s.training.precision == Precision::FP32 ? Precision::FP32 : s.training.precision)
                          .flops_per_second();
  const double world = s.world_size();
  e.mfu = e.step_time_s > 0 && peak > 0 ? e.model_flops_per_step / (e.step_time_s * world * peak) : 0;

  // Memory: the largest per-stage peak.
  const StagePlan* worst = &plan.stages.front();
  for (const auto& st : plan.stages) {
    if (st.memory.peak > worst->memory.peak) worst = &st;
  }
  const MemoryBreakdown& m = worst->memory;
  e.memory.peak = m.peak;
  e.memory.weights = m.weights;
  e.memory.gradients = m.gradients;
  e.memory.optimizer_state = m.optimizer_state;
  e.memory.activations = m.activations;
  e.memory.buffers = m.buffers;
  e.memory.usable = m.usable;
  e.memory.fits = true;
  for (const auto& st : plan.stages) e.memory.fits = e.memory.fits && st.memory.fits;
  e.memory.shortfall = m.shortfall;
  {
    double outside = 0;
    for (const char* k : {"buffers.cuda_context", "buffers.nccl", "buffers.allocator_fragmentation"}) {
      if (auto it = m.details.find(k); it != m.details.end()) outside += it->second.as_double();
    }
    e.memory.allocated = Bytes::from_double(std::max(0.0, m.peak.as_double() - outside));
  }
  e.memory.host_bytes = Bytes::from_double(
      (m.host_optimizer_state.as_double() + m.host_gradients.as_double() + m.host_weights.as_double()) *
      s.cluster.gpus_per_node);
  if (!e.memory.fits) {
    e.warnings.push_back("does not fit in GPU memory: pipeline stage " + std::to_string(worst->stage) + " needs " +
                         gib(m.peak) + " per GPU but " + node.gpu->name + " offers " + gib(m.usable) + " (short by " +
                         gib(m.shortfall) + ")");
  }

  // Provenance: the step's parameters, then each NCCL predictor's.
  std::map<std::string, hardware::UsedParameter> used;
  for (const auto& [name, u] : params.used()) used.emplace(name, u);
  for (const auto& st : plan.stages) {
    for (const auto& g : st.groups) {
      if (g.predictor == nullptr) continue;
      for (const auto& [name, u] : g.predictor->parameters().used()) used.emplace(name, u);
    }
  }
  for (auto& [name, u] : used) e.parameters.push_back(u);
  bool any_default = false;
  for (const auto& u : e.parameters) any_default = any_default || !u.calibrated;
  if (any_default && profile != nullptr) {
    e.warnings.push_back("some parameters are not in calibration profile '" + profile->name() +
                         "' and use catalog-derived defaults");
  }

  // The band: widths from the validation scores of steps like this one (step_band.hpp).
  apply_step_band(e);
  for (const auto& st : plan.stages) {
    for (const auto& g : st.groups) {
      if (g.predictor == nullptr) continue;
      for (const auto& n : g.predictor->env().unknown) {
        const std::string w = g.predictor->version().unmodelled_variable_note(n);
        if (std::find(e.warnings.begin(), e.warnings.end(), w) == e.warnings.end()) e.warnings.push_back(w);
      }
      for (const auto& w : g.predictor->env().plugin_notes) {
        if (std::find(e.warnings.begin(), e.warnings.end(), w) == e.warnings.end()) e.warnings.push_back(w);
      }
    }
  }
  e.bottleneck = bottleneck_sentence(e, out, plan.pp);
  return e;
}

StepEstimate estimate_step(const Scenario& scenario, const hardware::Catalog& catalog, Fidelity fidelity,
                           const StepRunOptions& options) {
  StepSimulator sim(catalog);
  return sim.estimate(scenario, fidelity, options);
}

}  // namespace clustersim::models
