// Speed of the trace writer (events per second, which must stay linear in the trace's size) and
// of rendering a planner-sized report (a frontier of N candidates and a table of N rows).
#include <benchmark/benchmark.h>

#include <string>

#include "reports/html_report.hpp"
#include "reports/json_report.hpp"
#include "reports/perfetto_trace.hpp"

namespace {

using namespace clustersim;
using namespace clustersim::reports;

// state.range(0) slices over 8 ranks and 2 streams, one flow for every 2 slices.
void BM_TraceSlices(benchmark::State& state) {
  const auto n = state.range(0);
  std::size_t bytes = 0;
  for (auto _ : state) {
    PerfettoTrace t;
    for (int r = 0; r < 8; ++r) {
      t.add_process(r, "rank " + std::to_string(r));
      t.add_thread(r, 0, "compute");
      t.add_thread(r, 1, "nccl");
    }
    for (std::int64_t i = 0; i < n; ++i) {
      const int r = static_cast<int>(i % 8);
      const int s = static_cast<int>((i / 8) % 2);
      const Duration start = Duration::ps(1'234'567 * (i / 16));
      t.slice(r, s, "gemm", "compute", start, Duration::ps(1'234'000), {{"flops", 1.2e12}, {"layer", i % 80}});
      if (s == 1) t.flow({r, 1, start}, {(r + 1) % 8, 1, start + Duration::ps(1000)}, "ring");
    }
    const std::string text = t.str();
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_TraceSlices)->Arg(10'000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

Report planner_sized_report(std::int64_t n) {
  Report r;
  r.type = "capacity-plan";
  r.title = "bench";
  Chart c{.id = "frontier", .title = "frontier"};
  c.x = Axis{.label = "Time to train", .type = ValueType::DURATION};
  c.y = Axis{.label = "Cost", .type = ValueType::DOLLARS};
  Series all{.name = "Candidates", .style = Series::Style::SCATTER};
  Table t{.id = "candidates", .title = "Candidates"};
  t.columns = {Column::text("layout", "Layout"), Column::integer("nodes", "Nodes"),
               Column::duration("time_to_train_s", "Time to train"), Column::dollars("cost_usd", "Cost")};
  for (std::int64_t i = 0; i < n; ++i) {
    const double days = 10 + static_cast<double>((i * 7919) % 1000) / 10;
    const double cost = 2e6 + static_cast<double>((i * 104729) % 1000) * 3000;
    all.points.push_back({days * 86400, cost});
    t.add_row({"TP" + std::to_string(1 << (i % 4)) + " PP" + std::to_string(1 + i % 16), 8 + i % 256,
               Cell(days * 86400, {days * 86400 * 0.9, days * 86400 * 1.1}), cost});
  }
  c.series = {all};
  r.sections = {Section{.id = "frontier", .title = "Frontier", .charts = {c}, .tables = {t}}};
  return r;
}

void BM_RenderHtml(benchmark::State& state) {
  const Report r = planner_sized_report(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(render_html(r));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_RenderHtml)->Arg(100)->Arg(1'000)->Arg(10'000)->Unit(benchmark::kMillisecond);

void BM_JsonRoundTrip(benchmark::State& state) {
  const Report r = planner_sized_report(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(parse_report_json(render_json(r), "bench.json"));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_JsonRoundTrip)->Arg(1'000)->Arg(10'000)->Unit(benchmark::kMillisecond);

}  // namespace
