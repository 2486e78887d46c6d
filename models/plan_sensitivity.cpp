#include "models/plan_sensitivity.hpp"

#include <algorithm>
#include <cmath>

#include "hardware/atomic_file.hpp"
#include "models/compute_model.hpp"
#include "models/compute_parameters.hpp"
#include "models/plan_parallel.hpp"

namespace clustersim::models {

namespace {

std::string fmt(double v, int digits = 3) { return format_significant(v, digits); }

std::string fabric_name(const hardware::FabricSpec* f) {
  if (!f) return "network";
  switch (f->kind) {
    case hardware::FabricKind::EFA: return "EFA";
    case hardware::FabricKind::INFINIBAND: return "InfiniBand";
    case hardware::FabricKind::ROCE: return "RoCE";
    case hardware::FabricKind::ETHERNET: return "Ethernet";
  }
  return "network";
}

// Error text without the scratch directory's (random) name, so output stays byte-identical.
std::string without_scratch(std::string text, const std::filesystem::path& scratch) {
  const std::string dir = scratch.string();
  if (dir.empty()) return text;
  for (auto pos = text.find(dir); pos != std::string::npos; pos = text.find(dir))
    text.replace(pos, dir.size(), "(scratch)");
  return text;
}

struct Perturbation {
  SensitivityRow row;
  Scenario scenario;
};

}  // namespace

double write_scaled_profile(const hardware::CalibrationProfile* base, const hardware::GpuSpec& gpu,
                            const std::string& name, double factor, double cap, const std::filesystem::path& path) {
  // The value in use: the profile's, or the compute model's documented default.
  hardware::ParameterSet used(base);
  const ComputeModel probe(gpu, used);
  const auto it = used.used().find(name);
  const double current = it != used.used().end() ? it->second.value : 0;
  const double value = std::min(cap, current * factor);
  std::vector<hardware::ProfileParameter> params;
  hardware::ProfileProvenance prov;
  std::string profile_name = "derived";
  if (!base) {
    prov.machine = "none: defaults derived from the catalog";
    prov.gpu = gpu.name;
    prov.gpu_count = 1;
  }
  if (base) {
    prov = base->provenance();
    profile_name = base->name();
    for (const auto& [n, p] : base->parameters()) {
      if (n != name) params.push_back(p);
    }
  }
  hardware::ProfileParameter p;
  p.name = name;
  p.kind = hardware::ProfileParameter::Kind::RATIO;
  p.value = value;
  p.text = format_significant(value, 6);
  p.uncertainty = it != used.used().end() ? it->second.uncertainty : 0.1;
  params.push_back(p);
  prov.notes = "sensitivity: " + name + " x " + fmt(factor, 4) + " of the value in use (" + fmt(current, 4) + ")";
  const auto profile = hardware::CalibrationProfile::from_parts(profile_name + "+" + name + "x" + fmt(factor, 4), prov,
                                                                params, nlohmann::json::object());
  write_file_atomically(path, profile.to_json().dump(2) + "\n");
  return value;
}

std::vector<SensitivityRow> run_sensitivity(const SensitivityContext& ctx) {
  const PlanResult& r = ctx.result;
  const std::size_t id = *r.best;
  const PlanCandidate& best = r.candidates[id];
  const LayoutCandidate& layout = r.layout(id);
  const PlanSystem& sys = r.system_of(id);
  const SensitivitySpec& spec = r.plan.sensitivity;
  const Fidelity fidelity = best.event ? Fidelity::EVENT : Fidelity::FAST;

  std::vector<Perturbation> ps;
  // Network.
  {
    Perturbation p;
    p.scenario = layout.scenario;
    const double f = spec.nic_bandwidth_factor;
    const std::string fabric = fabric_name(sys.node.fabric);
    p.row.key = "nic_bandwidth_x" + fmt(f);
    if (sys.node.nics() == 0) {
      p.row.label = "NIC bandwidth x" + fmt(f);
      p.row.skipped_reason = sys.name + " has no network cards";
    } else {
      const Bandwidth base =
          p.scenario.cluster.network.nic_bandwidth.value_or(sys.node.instance->network.nic_bandwidth.value);
      p.row.label = fabric + " bandwidth x" + fmt(f) + " (" + format_bandwidth_bits(base) + " -> " +
                    format_bandwidth_bits(base * f) + " per NIC)";
      if (p.scenario.cluster.nodes == 1) {
        p.row.skipped_reason = "one node: no traffic between nodes";
      } else {
        p.scenario.cluster.network.nic_bandwidth = base * f;
      }
    }
    ps.push_back(std::move(p));
  }
  // NCCL settings.
  for (const auto& env : spec.nccl_env) {
    Perturbation p;
    p.scenario = layout.scenario;
    std::string text;
    for (const auto& [k, v] : env) {
      text += (text.empty() ? "" : " ") + k + "=" + v;
      p.scenario.nccl.env[k] = v;
    }
    p.row.key = "nccl:" + text;
    p.row.label = text;
    ps.push_back(std::move(p));
  }
  // GEMM efficiency.
  for (int sign : {+1, -1}) {
    Perturbation p;
    p.scenario = layout.scenario;
    const double change = spec.gemm_efficiency_change * sign;
    const std::string pct = (sign > 0 ? "+" : "-") + fmt(spec.gemm_efficiency_change * 100) + "%";
    const std::string name = compute_params::gemm_max_efficiency(p.scenario.training.precision);
    p.row.key = "gemm_efficiency_" + pct;
    p.row.label = "GEMM efficiency " + pct + " (" + name + ")";
    if (ctx.scratch_dir.empty()) {
      p.row.skipped_reason = "no scratch directory for the derived calibration profile";
    } else {
      const auto path = ctx.scratch_dir / ("sensitivity-gemm-" + std::string(sign > 0 ? "up" : "down") + ".json");
      const double value =
          write_scaled_profile(sys.profile ? &*sys.profile : nullptr, *sys.node.gpu, name, 1 + change, 1.0, path);
      p.row.label += ": " + fmt(value, 4);
      p.scenario.calibration = path.string();
    }
    ps.push_back(std::move(p));
  }

  std::vector<StepEstimate> estimates(ps.size());
  std::vector<std::string> errors(ps.size());
  ParallelOptions po;
  po.threads = ctx.threads;
  parallel_for_index(ps.size(), po, [&](std::size_t i) {
    if (!ps[i].row.skipped_reason.empty()) return;
    try {
      estimates[i] = ctx.evaluate(ps[i].scenario, fidelity);
    } catch (const std::exception& e) {
      errors[i] = without_scratch(e.what(), ctx.scratch_dir);
    }
  });

  const OptionCost* base_cost = best.cheapest_cost();
  std::vector<SensitivityRow> rows;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    SensitivityRow row = ps[i].row;
    row.fidelity = fidelity;
    if (row.skipped_reason.empty() && !errors[i].empty())
      row.skipped_reason = "the step model rejected it: " + errors[i];
    if (row.skipped_reason.empty()) {
      PlanCandidate c = best;
      LayoutCandidate l = layout;
      l.scenario = ps[i].scenario;
      ctx.pricer.price(c, l, estimates[i]);
      row.applied = true;
      row.step_time_s = estimates[i].step_time_s;
      row.wall_s = c.wall.nominal_s;
      row.delta_step_s = row.step_time_s - best.estimate().step_time_s;
      row.delta_days = (row.wall_s - best.wall.nominal_s) / 86400;
      row.bottleneck = estimates[i].bottleneck;
      if (base_cost && best.cheapest >= 0) {
        const OptionCost& o = c.costs[static_cast<std::size_t>(best.cheapest)];
        if (o.available) {
          row.usd = o.usd;
          row.delta_usd = o.usd - base_cost->usd;
        }
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace clustersim::models
