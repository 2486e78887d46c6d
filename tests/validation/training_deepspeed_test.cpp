// DeepSpeed ZeRO-3 against Megatron-LM's tensor + pipeline layout on the same clusters, and a
// later DeepSpeed's ZeRO-3 alone, as published (tests/validation/data/deepspeed/: published.json
// with the source of every figure, README.md, a scenario for each row the catalog can express), and
// DeepSpeed's 2025 ZeRO-Offload step times on 2 A100s. A row published as a step time is compared
// as one; the others as achieved TFLOP/s per GPU by the SC'21 paper's own count
// (Narayanan et al., SC'21, Eq. 3, recomputation included):
//   F = 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)) per step, TFLOP/s per GPU = F / (T x GPUs)
// with T the predicted step time. Fails when a row's |error| grows past its recorded threshold
// (thresholds.json beside the data), or when fewer pairs than recorded have the faster layout
// predicted faster. Prints every row and pair.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "hardware/catalog.hpp"
#include "models/scenario.hpp"
#include "models/step_model.hpp"
#include "models/transformer_config.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// "144 TFLOP/s per GPU" -> 144.
double leading_number(const std::string& s) { return std::stod(s); }

}  // namespace

TEST_CASE("DeepSpeed ZeRO-3 against Megatron TP + PP on the published pairs", "[validation][step][deepspeed]") {
  const auto dir = testing::source_dir() / "tests" / "validation" / "data" / "deepspeed";
  const nlohmann::json pub = read_json(dir / "published.json");
  const nlohmann::json thresholds = read_json(dir / "thresholds.json");
  const hardware::Catalog catalog = hardware::Catalog::load();
  StepSimulator sim(catalog);
  std::map<std::string, double> predicted, measured;
  std::map<std::string, std::pair<double, double>> step_rows;  // measured, predicted step time
  for (const auto& c : pub.at("cases")) {
    const std::string id = c.at("id").get<std::string>();
    if (!c.contains("scenario") || !c.at("scenario").is_string()) continue;
    const auto path = dir / c.at("scenario").get<std::string>();
    const Scenario s = load_scenario(path.string());
    const StepEstimate e = sim.estimate(s, Fidelity::EVENT);
    if (c.at("measured").contains("step_time_s")) {
      // A step time as published: compared as it is.
      const double m = c.at("measured").at("step_time_s").get<double>();
      const double err = e.step_time_s / m - 1;
      char line[256];
      std::snprintf(line, sizeof line, "   %-40s Expectation: %7.3f s  Prediction: %7.3f s  %+6.1f%%\n", id.c_str(), m,
                    e.step_time_s, 100 * err);
      std::cout << line;
      step_rows[id] = {m, e.step_time_s};
      INFO(id << ": " << err);
      REQUIRE(thresholds.at("rows").contains(id));
      CHECK(std::abs(err) <= thresholds.at("rows").at(id).get<double>());
      continue;
    }
    const TransformerConfig m = resolve_model(s.model);
    const double h = static_cast<double>(m.hidden_size), l = static_cast<double>(m.num_layers);
    const double V = static_cast<double>(m.vocab_size), sq = static_cast<double>(s.training.seq_len);
    const double B = static_cast<double>(s.training.global_batch_size);
    const double flops = 96 * B * sq * l * h * h * (1 + sq / (6 * h) + V / (16 * l * h));
    predicted[id] = flops / (e.step_time_s * s.world_size()) / 1e12;
    measured[id] = leading_number(c.at("measured").at("value").get<std::string>());
    const double err = predicted[id] / measured[id] - 1;
    char line[256];
    std::snprintf(line, sizeof line, "   %-28s Expectation: %6.1f TFLOP/s  Prediction: %6.1f  %+6.1f%%  step %.2f s\n",
                  id.c_str(), measured[id], predicted[id], 100 * err, e.step_time_s);
    std::cout << line;
    INFO(id << ": " << err);
    REQUIRE(thresholds.at("rows").contains(id));
    CHECK(std::abs(err) <= thresholds.at("rows").at(id).get<double>());
  }
  REQUIRE(predicted.size() == 13);
  REQUIRE(step_rows.size() == 4);
  // Offload over no offload where both were measured alike (offload_pairs).
  for (const auto& p : pub.at("offload_pairs")) {
    if (!p.at("no_offload").is_string() || !p.at("offload").is_string()) continue;
    const auto a = step_rows.find(p.at("no_offload").get<std::string>());
    const auto b = step_rows.find(p.at("offload").get<std::string>());
    if (a == step_rows.end() || b == step_rows.end()) continue;
    const double m = b->second.first / a->second.first, q = b->second.second / a->second.second;
    std::cout << "   offload ratio " << p.at("id").get<std::string>() << ": Expectation " << m << "x  Prediction " << q
              << "x  " << 100 * (q / m - 1) << "%\n";
  }
  int ordered = 0, pairs = 0;
  for (const auto& p : pub.at("pairs")) {
    const std::string z = p.at("zero3").get<std::string>(), t = p.at("tp_pp").get<std::string>();
    if (!predicted.count(z) || !predicted.count(t)) continue;
    ++pairs;
    const bool measured_tp = measured[t] > measured[z];
    const bool predicted_tp = predicted[t] > predicted[z];
    ordered += measured_tp == predicted_tp ? 1 : 0;
    std::cout << "   pair " << p.at("id").get<std::string>() << ": measured " << (measured_tp ? "TP+PP" : "ZeRO-3")
              << " faster, predicted " << (predicted_tp ? "TP+PP" : "ZeRO-3") << " faster\n";
  }
  std::cout << "   " << ordered << " of " << pairs << " pairs ordered as measured\n";
  CHECK(pairs == 6);
  CHECK(ordered >= thresholds.at("pairs_ordered_at_least").get<int>());
}
