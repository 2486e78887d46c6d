// The trace of an event-simulated step read back: flows pair with slices, slices carry their
// micro-batch, layer and collective, and the counters stay in range (reports/step_trace.hpp).

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "hardware/catalog.hpp"
#include "models/scenario.hpp"
#include "models/step_model.hpp"
#include "reports/step_trace.hpp"
#include "reports/trace_check.hpp"
#include "support/temp_dir.hpp"

namespace clustersim {
namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

// Llama 3.2 1B (hidden 2048, 16 layers), seq 1024, micro-batch 1, 4 micro-batches, TP 2 x PP 2
// (1F1B) on four GPUs of one p5.48xlarge; no sequence parallelism.
struct Traced {
  models::Scenario scenario;
  models::StepTimeline timeline;
  models::StepEstimate estimate;
  nlohmann::json trace;
};

const Traced& traced() {
  static const Traced t = [] {
    Traced r;
    r.scenario = models::load_scenario(
        (testing::source_dir() / "tests" / "data" / "trace" / "llama3.2-1b-tp2pp2-1node.json").string());
    models::StepRunOptions options;
    options.timeline = &r.timeline;
    r.estimate = models::estimate_step(r.scenario, catalog(), models::Fidelity::EVENT, options);
    r.trace = nlohmann::json::parse(reports::step_trace(r.scenario, r.timeline).str());
    return r;
  }();
  return t;
}

TEST_CASE("step trace: tracing changes no result", "[unit][trace]") {
  const Traced& t = traced();
  const models::StepEstimate plain = models::estimate_step(t.scenario, catalog(), models::Fidelity::EVENT);
  CHECK(plain.step_time_s == t.estimate.step_time_s);
  CHECK(plain.breakdown.exposed_comm_s == t.estimate.breakdown.exposed_comm_s);
  CHECK(plain.memory.peak == t.estimate.memory.peak);
}

TEST_CASE("step trace: every flow end binds to a slice of its thread", "[unit][trace]") {
  const Traced& t = traced();
  CHECK(reports::check_chrome_trace(t.trace.dump()).empty());
  // Slices by (pid, tid) as [ts, ts + dur] in nanoseconds (three decimals of a microsecond).
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::pair<std::int64_t, std::int64_t>>> slices;
  auto ns = [](const nlohmann::json& v) { return static_cast<std::int64_t>(std::llround(v.get<double>() * 1000)); };
  for (const auto& e : t.trace["traceEvents"]) {
    if (e["ph"] == "X") slices[{e["pid"], e["tid"]}].emplace_back(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]));
  }
  std::map<std::int64_t, int> starts, finishes;
  int unbound = 0;
  for (const auto& e : t.trace["traceEvents"]) {
    if (e["ph"] != "s" && e["ph"] != "f") continue;
    (e["ph"] == "s" ? starts : finishes)[e["id"].get<std::int64_t>()]++;
    if (e["ph"] == "f") CHECK(e["bp"] == "e");
    const auto& list = slices[{e["pid"], e["tid"]}];
    const std::int64_t at = ns(e["ts"]);
    const bool inside = std::any_of(list.begin(), list.end(), [&](const auto& s) { return s.first <= at && at <= s.second; });
    if (!inside) ++unbound;
  }
  CHECK(unbound == 0);
  CHECK_FALSE(starts.empty());
  CHECK(starts.size() == finishes.size());
  for (const auto& [id, n] : starts) {
    CHECK(n == 1);
    CHECK(finishes[id] == 1);
  }
}

TEST_CASE("step trace: slices carry micro-batch, layer and collective", "[unit][trace]") {
  const Traced& t = traced();
  // Stage 0 is pid 1, stage 1 pid 2.
  std::set<std::int64_t> micro_batches;
  std::set<std::int64_t> layers_stage1;
  int tp = 0, pp = 0;
  for (const auto& e : t.trace["traceEvents"]) {
    if (e["ph"] != "X" || !e.contains("args")) continue;
    const auto& a = e["args"];
    if (a.contains("micro_batch")) micro_batches.insert(a["micro_batch"].get<std::int64_t>());
    if (e["pid"] == 2 && a.contains("layer")) layers_stage1.insert(a["layer"].get<std::int64_t>());
    if (e["name"] == "TP all-reduce" && e["pid"] == 1) {
      ++tp;
      // The all-reduce of a layer's output: b s h x 2 bytes = 1 x 1024 x 2048 x 2 = 4,194,304.
      CHECK(a["bytes"] == 4194304);
      CHECK(a["collective"] == "all_reduce");
      CHECK(a["group"] == "tensor");
      CHECK(a["group_ranks"] == "0,1");  // TP is the innermost dimension
      CHECK(a["transport"].get<std::string>().rfind("P2P", 0) == 0);  // NVLink inside the node
      CHECK_FALSE(a["algorithm"].get<std::string>().empty());
      CHECK(a.contains("protocol"));
      CHECK(a["channels"].get<int>() > 0);
      CHECK(a.contains("micro_batch"));
      CHECK(a.contains("pass"));
      CHECK(a["wire_bytes"].get<std::int64_t>() > 0);
    }
    if (e["name"] == "PP send" && e["pid"] == 1) {
      ++pp;
      // The activations of one micro-batch: 1 x 1024 x 2048 x 2 bytes = 4,194,304, from rank 0 to
      // rank 2 (the next stage's TP rank 0).
      CHECK(a["bytes"] == 4194304);
      CHECK(a["group"] == "pipeline");
      CHECK(a["group_ranks"] == "0,2");
      CHECK(a.contains("chunk"));
    }
  }
  // 4 micro-batches; stage 1 holds layers 8..15 of 16.
  CHECK(micro_batches == std::set<std::int64_t>{0, 1, 2, 3});
  CHECK(layers_stage1.size() == 8);
  CHECK(*layers_stage1.begin() == 8);
  CHECK(tp > 0);
  // Stage 0 sends each micro-batch's forward output once: 4 sends.
  CHECK(pp == 4);
}

TEST_CASE("step trace: link utilisation in [0, 1], memory peaks at the memory model's", "[unit][trace]") {
  const Traced& t = traced();
  std::map<std::int64_t, double> memory_max;
  int links = 0;
  double busiest = 0;
  std::set<std::string> link_names;
  for (const auto& e : t.trace["traceEvents"]) {
    if (e["ph"] != "C") continue;
    if (e["name"] == "memory") {
      const double b = e["args"]["bytes"].get<double>();
      memory_max[e["pid"].get<std::int64_t>()] = std::max(memory_max[e["pid"].get<std::int64_t>()], b);
      continue;
    }
    ++links;
    link_names.insert(e["name"].get<std::string>());
    const double u = e["args"]["value"].get<double>();
    CHECK(u >= 0.0);
    CHECK(u <= 1.0);
    busiest = std::max(busiest, u);
  }
  CHECK(links > 0);
  CHECK(link_names.size() <= 8);
  CHECK(busiest > 0.5);  // the TP all-reduces saturate an NVLink at times
  // 1F1B keeps min(pp - s, m) micro-batches of activations in flight on stage s (2 on stage 0, 1
  // on stage 1), as the memory model counts them: each stage's track peaks at its model peak.
  REQUIRE(memory_max.size() == 2);
  for (int s = 0; s < 2; ++s) {
    const double model = t.timeline.memory_peak[static_cast<std::size_t>(s)].as_double();
    CHECK(memory_max[s + 1] == Approx(model).epsilon(1e-12));
  }
  CHECK(t.timeline.memory_peak[0] == t.estimate.memory.peak);  // stage 0 is the largest here
  // The track starts below the peak (no activations saved yet) by stage 0's saved activations.
  const auto& m0 = t.timeline.memory[0];
  CHECK(m0.front().value < memory_max[1]);
}

}  // namespace
}  // namespace clustersim
