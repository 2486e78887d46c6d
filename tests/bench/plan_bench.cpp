// Speed of the planner with the real step model: layouts evaluated per second (x 60 for the
// per-minute figure), for the sweep alone and for a whole plan with its report.
//
//   BM_PlanSweep/N/T      expansion, memory pruning, FAST evaluation of every layout that fits,
//                         pricing and ranking (no EVENT re-check, no sensitivity) of Llama-3-70B,
//                         "parallelism": "auto", on p5 and p5en at the first N node counts of
//                         16, 32, 64, 128, 256, with T threads
//   BM_PlanEndToEnd/T     the same plan at all five node counts, with the EVENT re-check of the best
//                         3 of each ranking, the sensitivity analysis, the report, and its HTML and
//                         JSON renderings: what `clustersim plan --format html` does
// Items are layouts evaluated with the FAST model (the plan's "evaluated" count).
#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "hardware/catalog.hpp"
#include "models/plan_parallel.hpp"
#include "models/plan_runner.hpp"
#include "models/step_model.hpp"
#include "reports/plan_report.hpp"
#include "reports/report_format.hpp"

namespace {

using namespace clustersim;

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

models::PlanSpec llama70b_plan(std::int64_t node_counts, bool full) {
  std::string nodes;
  for (std::int64_t i = 0, n = 16; i < node_counts; ++i, n *= 2) {
    if (i > 0) nodes += ", ";
    nodes += std::to_string(n);
  }
  const std::string text = R"({"schema_version": 1, "name": "bench", "model": {"preset": "llama3-70b"},
      "training": {"seq_len": 8192, "global_batch_size": 1024},
      "parallelism": "auto",
      "cluster": {"system": ["p5.48xlarge", "p5en.48xlarge"], "nodes": [)" +
                           nodes + R"(]},
      "job": {"tokens": 2e12, "budget": "8e6 USD"},
      "checkpoint": {"storage": "fsx-lustre-12tib", "interval": "2 h"},
      "search": {"top_k": )" +
                           std::string(full ? "3" : "0") + R"(}, "sensitivity": {"enabled": )" +
                           (full ? "true" : "false") + "}}";
  return models::read_plan(parse_json_text(text, "bench.json"), ".");
}

models::StepEvaluator step_model() {
  const hardware::Catalog& cat = catalog();
  return models::per_thread<models::StepEvaluator>([&cat]() -> models::StepEvaluator {
    auto sim = std::make_shared<models::StepSimulator>(cat);
    return [sim](const models::Scenario& s, models::Fidelity f) { return sim->estimate(s, f); };
  });
}

void BM_PlanSweep(benchmark::State& state) {
  const models::PlanSpec plan = llama70b_plan(state.range(0), false);
  models::PlanRunOptions o;
  o.threads = static_cast<int>(state.range(1));
  std::int64_t evaluated = 0, layouts = 0;
  double seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const models::PlanResult r = models::run_plan(plan, catalog(), step_model(), o);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    evaluated += r.counts.evaluated;
    layouts = r.counts.layouts;
    benchmark::DoNotOptimize(r.best);
  }
  state.SetItemsProcessed(evaluated);
  state.counters["layouts"] = static_cast<double>(layouts);
  state.counters["evaluated_per_minute"] = static_cast<double>(evaluated) / seconds * 60;
}
BENCHMARK(BM_PlanSweep)
    ->Args({1, 1})
    ->Args({3, 1})
    ->Args({5, 1})
    ->Args({5, 2})
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

void BM_PlanEndToEnd(benchmark::State& state) {
  const models::PlanSpec plan = llama70b_plan(5, true);
  const auto scratch = std::filesystem::temp_directory_path() / "clustersim-plan-bench";
  std::filesystem::create_directories(scratch);
  models::PlanRunOptions o;
  o.threads = static_cast<int>(state.range(0));
  o.scratch_dir = scratch;
  std::int64_t evaluated = 0;
  std::size_t bytes = 0;
  double seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const models::PlanResult r = models::run_plan(plan, catalog(), step_model(), o);
    const reports::Report report = reports::build_plan_report(r, catalog(), {.generated_by = "bench", .created = "", .inputs = {}});
    const std::string html = reports::render_report(report, reports::ReportFormat::HTML);
    const std::string json = reports::render_plan_result(r, report);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    evaluated += r.counts.evaluated;
    bytes = html.size() + json.size();
    benchmark::DoNotOptimize(html.data());
  }
  std::filesystem::remove_all(scratch);
  state.SetItemsProcessed(evaluated);
  state.counters["output_bytes"] = static_cast<double>(bytes);
  state.counters["evaluated_per_minute"] = static_cast<double>(evaluated) / seconds * 60;
}
BENCHMARK(BM_PlanEndToEnd)->Arg(2)->Unit(benchmark::kSecond)->UseRealTime()->MeasureProcessCPUTime()->Iterations(1);

}  // namespace
