#include "models/step_residuals.hpp"

#include <cmath>
#include <filesystem>
#include <map>

#include "hardware/statistics.hpp"

#include "hardware/json_reader.hpp"
#include "models/scenario.hpp"
#include "models/step_model.hpp"
#include "models/training_validation.hpp"
#include "models/transformer_config.hpp"

namespace clustersim::models {

double StepResidual::residual() const { return std::log(measured_s / predicted_s); }

namespace {

// deepspeed/published.json: each case with a scenario, measured as a step time or as achieved
// TFLOP/s per GPU by the SC'21 paper's Eq. 3 (recomputation included):
//   F = 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)),  measured step = F / (TFLOP/s x 1e12 x GPUs).
void add_deepspeed(const std::function<std::string(const std::string&)>& read, StepSimulator& sim,
                   std::vector<StepResidual>& out) {
  const std::string file = "deepspeed/published.json";
  const nlohmann::json pub = nlohmann::json::parse(read(file));
  for (const auto& c : pub.at("cases")) {
    if (!c.contains("scenario") || !c.at("scenario").is_string()) continue;
    const std::string path = "deepspeed/" + c.at("scenario").get<std::string>();
    const Scenario s = read_scenario(parse_json_text(read(path), path), ".");
    StepResidual r;
    r.set = "deepspeed_published";
    r.row = c.at("id").get<std::string>();
    r.estimate = sim.estimate(s, Fidelity::EVENT);
    r.predicted_s = r.estimate.step_time_s;
    const auto& m = c.at("measured");
    if (m.contains("step_time_s")) {
      r.measured_s = m.at("step_time_s").get<double>();
    } else {
      const TransformerConfig model = resolve_model(s.model);
      const double h = static_cast<double>(model.hidden_size), l = static_cast<double>(model.num_layers);
      const double V = static_cast<double>(model.vocab_size), sq = static_cast<double>(s.training.seq_len);
      const double B = static_cast<double>(s.training.global_batch_size);
      const double flops = 96 * B * sq * l * h * h * (1 + sq / (6 * h) + V / (16 * l * h));
      const double tflops = std::stod(m.at("value").get<std::string>());
      r.measured_s = flops / (tflops * 1e12 * static_cast<double>(s.world_size()));
    }
    out.push_back(std::move(r));
  }
}

void add_probes(const ProbeValidationSet& set, std::vector<StepResidual>& out) {
  for (const auto& p : set.rows) {
    StepResidual r;
    r.set = set.name;
    r.row = p.label;
    r.measured_s = p.measured_step_s;
    r.predicted_s = p.predicted_step_s;
    r.in_sample = p.in_sample;
    r.estimate = p.estimate;
    out.push_back(std::move(r));
  }
}

}  // namespace

std::vector<StepResidual> collect_step_residuals(const std::function<std::string(const std::string&)>& read,
                                                 const hardware::Catalog& catalog) {
  std::vector<StepResidual> out;
  for (const auto& set : run_training_validation(read("training_sets.json"), read, catalog)) {
    for (const auto& row : set.rows) {
      StepResidual r;
      r.set = set.name;
      r.row = row.label;
      r.measured_s = row.measured_step_s;
      r.predicted_s = row.step_s;
      r.estimate = row.estimate;
      out.push_back(std::move(r));
    }
  }
  for (const char* f : {"training_fsdp2_probes.json", "training_offload_probes_1xh100.json",
                        "training_eager_probes_1xh100.json", "training_impl_probes_1xh100.json"}) {
    add_probes(run_probe_validation(read(f), catalog), out);
  }
  StepSimulator sim(catalog);
  add_deepspeed(read, sim, out);
  return out;
}

StepBandTable step_band_table(const std::vector<StepResidual>& residuals) {
  std::vector<BandScore> scores;
  for (const auto& r : residuals) scores.push_back(band_score(r.set, r.row, r.estimate, r.measured_s, r.in_sample));
  return StepBandTable(std::move(scores));
}

std::vector<BandCheck> check_step_bands(const std::vector<StepResidual>& residuals, const StepBandTable& table) {
  std::vector<BandCheck> out;
  for (const auto& r : residuals) {
    const BandScore own = band_score(r.set, r.row, r.estimate, r.measured_s, r.in_sample);
    BandCheck c;
    c.residual = &r;
    const auto c68 = table.central(own.regime, own.calibrated, 0.68, &own);
    const auto c90 = table.central(own.regime, own.calibrated, 0.90, &own);
    if (c68 && c90) {
      c.in68 = own.residual >= c68->low && own.residual <= c68->high;
      c.in90 = own.residual >= c90->low && own.residual <= c90->high;
      c.half_width90 = (std::exp(c90->high) - std::exp(c90->low)) / 2;
      c.cell = c90->cell.name;
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<BandCoverage> band_coverage(const std::vector<BandCheck>& checks) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const BandCheck*>> groups;
  auto add = [&](const std::string& g, const BandCheck& c) {
    if (!groups.count(g)) order.push_back(g);
    groups[g].push_back(&c);
  };
  for (const auto& c : checks) add(c.residual->set, c);
  for (const auto& c : checks) add("regime " + c.residual->estimate.band.regime, c);
  for (const auto& c : checks) add(c.residual->in_sample ? "in sample" : "out of sample", c);
  for (const auto& c : checks) add("all", c);
  std::vector<BandCoverage> out;
  for (const auto& g : order) {
    const auto& v = groups[g];
    BandCoverage b;
    b.group = g;
    b.measurements = static_cast<int>(v.size());
    std::vector<double> widths;
    for (const BandCheck* c : v) {
      b.within68 += c->in68 ? 1 : 0;
      b.within90 += c->in90 ? 1 : 0;
      widths.push_back(c->half_width90);
    }
    b.within68 /= static_cast<double>(v.size());
    b.within90 /= static_cast<double>(v.size());
    b.median_half_width90 = median(widths);
    out.push_back(b);
  }
  return out;
}

}  // namespace clustersim::models
