#include "models/step_band.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "hardware/json_reader.hpp"
#include "models/plan_costs.hpp"

namespace clustersim::models {

namespace {

// Root-mean-square relative uncertainty of the used parameters whose names start with `prefix`.
double rms_uncertainty(const std::vector<hardware::UsedParameter>& used, std::string_view prefix) {
  double sum = 0;
  int n = 0;
  for (const auto& u : used) {
    if (u.name.compare(0, prefix.size(), prefix) != 0) continue;
    sum += u.uncertainty * u.uncertainty;
    ++n;
  }
  return n > 0 ? std::sqrt(sum / n) : 0.0;
}

// The step's host part: the CPU optimizer (when the optimizer runs there), exposed offload copies
// and the GPU waiting for its CPU thread.
double host_part(const StepEstimate& e) {
  const StepBreakdown& b = e.breakdown;
  return b.offload_s + b.host_s + (e.host.cpu_optimizer_s > 0 ? b.optimizer_s : 0.0);
}

std::string_view family(StepRegime r) {
  switch (r) {
    case StepRegime::COMPUTE: return "compute.";
    case StepRegime::COMMUNICATION: return "nccl.";
    case StepRegime::HOST: return "host.";
  }
  return "compute.";
}

// z_(k) of sorted scores, k 1-based.
double order_stat(const std::vector<double>& z, std::size_t k) { return z[k - 1]; }

}  // namespace

std::string_view to_string(StepRegime r) {
  switch (r) {
    case StepRegime::COMPUTE: return "compute";
    case StepRegime::COMMUNICATION: return "communication";
    case StepRegime::HOST: return "host";
  }
  return "compute";
}

StepRegime step_regime(const StepEstimate& e) {
  const double T = e.step_time_s;
  if (T <= 0) return StepRegime::COMPUTE;
  const double host = host_part(e) / T, comm = e.breakdown.exposed_comm_s / T;
  if (host >= kRegimeShare && host >= comm) return StepRegime::HOST;
  if (comm >= kRegimeShare) return StepRegime::COMMUNICATION;
  return StepRegime::COMPUTE;
}

bool step_calibrated(const StepEstimate& e, StepRegime r) {
  const std::string_view prefix = family(r);
  int all = 0, calibrated = 0;
  for (const auto& u : e.parameters) {
    if (u.name.compare(0, prefix.size(), prefix) != 0) continue;
    ++all;
    calibrated += u.calibrated ? 1 : 0;
  }
  return all > 0 && 2 * calibrated > all;
}

double prior_sigma(const StepEstimate& e) {
  const double T = e.step_time_s;
  if (T <= 0) return 0;
  const StepBreakdown& b = e.breakdown;
  const double host = host_part(e);
  const double compute = std::max(0.0, T - b.exposed_comm_s - host);
  const double rc = compute / T * rms_uncertainty(e.parameters, "compute.");
  const double rn = b.exposed_comm_s / T * rms_uncertainty(e.parameters, "nccl.");
  const double rh = host / T * rms_uncertainty(e.parameters, "host.");
  return std::sqrt(rc * rc + rn * rn + rh * rh);
}

BandScore band_score(const std::string& set, const std::string& row, const StepEstimate& e, double measured_s,
                     bool in_sample) {
  BandScore s;
  s.set = set;
  s.row = row;
  s.regime = step_regime(e);
  s.calibrated = step_calibrated(e, s.regime);
  s.in_sample = in_sample;
  s.residual = std::log(measured_s / e.step_time_s);
  return s;
}

namespace {

// The residuals of one cell level (1: the basis, 0: all), sorted, less leave_out.
std::vector<double> cell_scores(const std::vector<BandScore>& all, bool calibrated, int level,
                                const BandScore* leave_out) {
  std::vector<double> z;
  for (const auto& s : all) {
    if (leave_out != nullptr && s.set == leave_out->set && s.row == leave_out->row) continue;
    if (level >= 1 && s.calibrated != calibrated) continue;
    z.push_back(s.residual);
  }
  std::sort(z.begin(), z.end());
  return z;
}

std::string cell_name(bool calibrated, int level) {
  if (level == 0) return "all";
  return calibrated ? "calibrated" : "catalog defaults";
}

}  // namespace

std::optional<StepBandTable::Interval> StepBandTable::central([[maybe_unused]] StepRegime regime, bool calibrated, double coverage,
                                                              const BandScore* leave_out) const {
  const double a = 1 - coverage;
  for (int level = 1; level >= 0; --level) {
    const std::vector<double> z = cell_scores(scores_, calibrated, level, leave_out);
    const double n1 = static_cast<double>(z.size()) + 1;
    const auto kl = static_cast<std::size_t>(std::floor(n1 * a / 2 + 1e-9));
    const auto kh = static_cast<std::size_t>(std::ceil(n1 * (1 - a / 2) - 1e-9));
    if (kl < 1 || kh > z.size()) continue;
    return Interval{order_stat(z, kl), order_stat(z, kh), {cell_name(calibrated, level), static_cast<int>(z.size())}};
  }
  return std::nullopt;
}

std::optional<StepBandTable::Interval> StepBandTable::upper([[maybe_unused]] StepRegime regime, bool calibrated, double q,
                                                            const BandScore* leave_out) const {
  for (int level = 1; level >= 0; --level) {
    const std::vector<double> z = cell_scores(scores_, calibrated, level, leave_out);
    const double n1 = static_cast<double>(z.size()) + 1;
    if (q >= 0.5) {
      const auto k = static_cast<std::size_t>(std::ceil(n1 * q - 1e-9));
      if (k < 1 || k > z.size()) continue;
      const double v = order_stat(z, k);
      return Interval{v, v, {cell_name(calibrated, level), static_cast<int>(z.size())}};
    }
    const auto k = static_cast<std::size_t>(std::floor(n1 * q + 1e-9));
    if (k < 1 || k > z.size()) continue;
    const double v = order_stat(z, k);
    return Interval{v, v, {cell_name(calibrated, level), static_cast<int>(z.size())}};
  }
  return std::nullopt;
}

StepBandTable StepBandTable::parse(std::string_view text, const std::string& file) {
  const JsonDocument doc = parse_json_text(text, file);
  std::vector<BandScore> scores;
  doc.root().read_object([&](ObjectReader& top) {
    top.at("schema_version").as_int({.min = 1, .max = 1});
    (void)top.maybe("note");
    for (const ValueReader& v : top.at("scores").as_array(0)) {
      v.read_object([&](ObjectReader& o) {
        BandScore s;
        s.set = o.at("set").as_string();
        s.row = o.at("row").as_string();
        const std::string r = o.at("regime").as_choice({"compute", "communication", "host"});
        s.regime = r == "host" ? StepRegime::HOST : r == "communication" ? StepRegime::COMMUNICATION : StepRegime::COMPUTE;
        s.calibrated = o.at("calibrated").as_bool();
        s.in_sample = o.at("in_sample").as_bool();
        s.residual = o.at("residual").as_number({.min = -100, .max = 100});
        scores.push_back(std::move(s));
      });
    }
  });
  return StepBandTable(std::move(scores));
}

const StepBandTable& StepBandTable::builtin() {
  static const StepBandTable table = [] {
    for (const auto& f : builtin_band_files()) {
      if (std::string_view(f.path) == "step_band_scores.json") {
        return parse(f.text, "models/data/step_band_scores.json");
      }
    }
    return StepBandTable({});
  }();
  return table;
}

std::string StepBandTable::to_json(const std::string& note) const {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["note"] = note;
  j["scores"] = nlohmann::ordered_json::array();
  for (const auto& s : scores_) {
    const auto round = [](double v, double places) { return std::round(v * places) / places; };
    j["scores"].push_back({{"set", s.set},
                           {"row", s.row},
                           {"regime", std::string(to_string(s.regime))},
                           {"calibrated", s.calibrated},
                           {"in_sample", s.in_sample},
                           {"residual", round(s.residual, 1e6)}});
  }
  return j.dump(1) + "\n";
}

void apply_step_band(StepEstimate& e, const StepBandTable& table) {
  const double T = e.step_time_s;
  StepBand& b = e.band;
  b = StepBand{};
  if (T <= 0) return;
  const StepRegime regime = step_regime(e);
  b.regime = std::string(to_string(regime));
  b.calibrated = step_calibrated(e, regime);
  b.scale = prior_sigma(e);
  const auto c68 = table.central(regime, b.calibrated, 0.68);
  const auto c90 = table.central(regime, b.calibrated, 0.90);
  if (c68 && c90) {
    e.low_s = T * std::exp(c68->low);
    e.high_s = T * std::exp(c68->high);
    b.low90_s = T * std::exp(c90->low);
    b.high90_s = T * std::exp(c90->high);
    b.cell = c90->cell.name;
    b.scores = c90->cell.scores;
    return;
  }
  // No table: the prior scale as a normal band (z = 1 and 1.645 for 68% and 90%).
  e.low_s = T * std::exp(-b.scale);
  e.high_s = T * std::exp(b.scale);
  b.low90_s = T * std::exp(-1.645 * b.scale);
  b.high90_s = T * std::exp(1.645 * b.scale);
}

double step_time_quantile(const StepEstimate& e, double q, const StepBandTable& table) {
  const double T = e.step_time_s;
  if (T <= 0) return 0;
  const StepRegime regime = step_regime(e);
  if (auto u = table.upper(regime, step_calibrated(e, regime), q)) return T * std::exp(u->low);
  // No table: a normal quantile of the prior scale.
  return T * std::exp(prior_sigma(e) * normal_quantile(q));
}

}  // namespace clustersim::models
