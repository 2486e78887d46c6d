#include "unit/reports_sample.hpp"

namespace clustersim::testing {

using namespace clustersim::reports;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kDay = 86400;

Chart scaling_chart() {
  Chart c;
  c.id = "step-time-vs-gpus";
  c.title = "Step time against GPU count";
  c.caption = "Per layout; error bars show the uncertainty band.";
  c.kind = Chart::Kind::XY;
  c.x = Axis{.label = "GPUs", .type = ValueType::INTEGER, .scale = AxisScale::LOG2};
  c.y = Axis{.label = "Step time", .type = ValueType::DURATION, .scale = AxisScale::LOG10};
  c.series.push_back(Series{.name = "ZeRO-3",
                            .points = {{64, 9.1, Band{8.2, 10.3}},
                                       {128, 4.9, Band{4.4, 5.6}},
                                       {256, 2.8, Band{2.5, 3.3}},
                                       {512, 1.9, Band{1.6, 2.3}}}});
  c.series.push_back(
      Series{.name = "TP8 PP4", .points = {{64, 8.4}, {128, 4.3}, {256, 2.2}, {512, 1.15}, {1024, 0.62}}});
  c.series.push_back(Series{.name = "TP8 PP8 interleaved",
                            .points = {{128, 4.6}, {256, 2.35}, {512, 1.2}, {1024, 0.61}, {2048, 0.33}}});
  return c;
}

Chart frontier_chart() {
  Chart c;
  c.id = "cost-time-frontier";
  c.title = "Cost against time to train";
  c.caption = "Every candidate; the Pareto frontier is highlighted.";
  c.x = Axis{.label = "Time to train", .type = ValueType::DURATION};
  c.y = Axis{.label = "Cost (on-demand)", .type = ValueType::DOLLARS};
  Series all{.name = "Candidates", .style = Series::Style::SCATTER};
  const double days[] = {12, 14, 16, 19, 23, 27, 31, 36, 44, 52, 61, 75};
  const double cost[] = {4.1e6, 3.6e6, 3.9e6, 3.1e6, 3.4e6, 2.9e6, 3.2e6, 2.8e6, 3.0e6, 2.7e6, 2.9e6, 2.75e6};
  for (int i = 0; i < 12; ++i) all.points.push_back({days[i] * kDay, cost[i]});
  c.series.push_back(all);
  c.series.push_back(Series{.name = "Pareto frontier",
                            .highlight = true,
                            .points = {{12 * kDay, 4.1e6, std::nullopt, "demo.8gpu x 256, TP8 PP8"},
                                       {14 * kDay, 3.6e6, std::nullopt, "x 192, TP8 PP4"},
                                       {19 * kDay, 3.1e6, std::nullopt, "x 128, TP8 PP4"},
                                       {27 * kDay, 2.9e6, std::nullopt, "x 96, ZeRO-3"},
                                       {36 * kDay, 2.8e6, std::nullopt, "x 64, ZeRO-3"},
                                       {52 * kDay, 2.7e6, std::nullopt, "x 48, ZeRO-3"}}});
  return c;
}

Chart breakdown_chart() {
  Chart c;
  c.id = "step-breakdown";
  c.title = "Step-time breakdown";
  c.kind = Chart::Kind::STACKED_BARS;
  c.orientation = Chart::Orientation::HORIZONTAL;
  c.x = Axis{.label = "Candidate", .type = ValueType::TEXT};
  c.y = Axis{.label = "Time per step", .type = ValueType::DURATION};
  c.segments = {"compute", "exposed communication", "pipeline bubble", "optimizer", "offload"};
  c.bars = {Bar{"x 256, TP8 PP8", {0.21, 0.05, 0.06, 0.01, 0}, Band{0.30, 0.37}},
            Bar{"x 128, TP8 PP4", {0.42, 0.09, 0.06, 0.01, 0}, Band{0.53, 0.64}},
            Bar{"x 64, ZeRO-3", {0.84, 0.95, 0, 0.04, 0}, Band{1.65, 2.05}},
            Bar{"x 16, ZeRO-3 + CPU offload", {3.4, 1.2, 0, 0.9, 2.6}, Band{7.1, 9.4}}};
  return c;
}

Chart memory_chart() {
  Chart c;
  c.id = "memory-per-rank";
  c.title = "Memory per rank";
  c.caption = "Peak per GPU by pipeline stage; the dashed line is the GPU's capacity.";
  c.kind = Chart::Kind::STACKED_BARS;
  c.orientation = Chart::Orientation::VERTICAL;
  c.x = Axis{.label = "Pipeline stage", .type = ValueType::TEXT};
  c.y = Axis{.label = "Memory", .type = ValueType::BYTES};
  c.segments = {"weights", "gradients", "optimizer state", "activations", "buffers"};
  c.bars = {Bar{"stage 0", {4.4 * kGiB, 4.4 * kGiB, 8.8 * kGiB, 31 * kGiB, 3 * kGiB}},
            Bar{"stage 1", {4.1 * kGiB, 4.1 * kGiB, 8.2 * kGiB, 27 * kGiB, 3 * kGiB}},
            Bar{"stage 2", {4.1 * kGiB, 4.1 * kGiB, 8.2 * kGiB, 23 * kGiB, 3 * kGiB}},
            Bar{"stage 3", {4.9 * kGiB, 4.9 * kGiB, 9.8 * kGiB, 19 * kGiB, 3 * kGiB}}};
  c.reference_lines = {ReferenceLine{"capacity", 64 * kGiB}};
  return c;
}

Table candidates_table() {
  Table t;
  t.id = "candidates";
  t.title = "Candidates";
  t.caption = "best first, by time to train";
  t.columns = {Column::text("system", "System"),
               Column::integer("nodes", "Nodes"),
               Column::text("layout", "Layout"),
               Column::duration("step_time_s", "Step time"),
               Column::duration("time_to_train_s", "Time to train"),
               Column::number("gpu_hours", "GPU-hours", "GPU-h"),
               Column::dollars("cost_on_demand_usd", "Cost, on-demand"),
               Column::bytes("peak_memory_bytes", "Peak memory"),
               Column::percent("mfu", "MFU"),
               Column::text("fits", "Fits")};
  t.add_row({"demo.8gpu", 256, "TP8 PP8 interleaved", Cell(0.33, {0.30, 0.37}),
             Cell(12 * kDay, {10.9 * kDay, 13.5 * kDay}), 589824, Cell(4.1e6, {3.7e6, 4.6e6}), 49.5 * kGiB, 0.41,
             "yes"});
  t.add_row({"demo.8gpu", 128, "TP8 PP4", Cell(0.58, {0.53, 0.64}), Cell(19 * kDay, {17.4 * kDay, 21 * kDay}), 466944,
             Cell(3.1e6, {2.85e6, 3.45e6}), 51.2 * kGiB, 0.47, "yes"});
  t.add_row({"demo.8gpu", 64, "ZeRO-3", Cell(1.84, {1.65, 2.05}), Cell(36 * kDay, {32 * kDay, 41 * kDay}), 442368,
             Cell(2.8e6, {2.5e6, 3.2e6}), 58.7 * kGiB, 0.52, "yes"});
  t.add_row({"demo.8gpu, \"spot\"", 16, "ZeRO-3 + CPU offload", Cell(8.1, {7.1, 9.4}), Cell::empty(), Cell::empty(),
             Cell::empty(), 71.0 * kGiB, Cell::empty(), "no: 7 GiB over"});
  return t;
}

}  // namespace

Report sample_capacity_report() {
  Report r;
  r.type = "capacity-plan";
  r.title = "Capacity plan: demo-70b, 2T tokens";
  r.subtitle = "demo.8gpu nodes, 48 to 256 nodes, every layout that fits";
  r.generated_by = "clustersim (test data)";
  r.summary = {
      Figure{.key = "time_to_train",
             .label = "Time to train",
             .type = ValueType::DURATION,
             .value = Cell(19 * kDay, {17.4 * kDay, 21 * kDay}),
             .detail = "x 128, TP8 PP4"},
      Figure{.key = "cost",
             .label = "Cost",
             .type = ValueType::DOLLARS,
             .value = Cell(3.1e6, {2.85e6, 3.45e6}),
             .detail = "on-demand, demo-region-1"},
      Figure{.key = "gpus", .label = "GPUs", .type = ValueType::INTEGER, .value = 1024},
      Figure{.key = "step_time", .label = "Step time", .type = ValueType::DURATION, .value = Cell(0.58, {0.53, 0.64})},
      Figure{.key = "mfu", .label = "MFU", .type = ValueType::PERCENT, .value = 0.47},
      Figure{.key = "peak_memory", .label = "Peak memory per GPU", .type = ValueType::BYTES, .value = 51.2 * kGiB},
      Figure{.key = "layout", .label = "Layout", .type = ValueType::TEXT, .value = "TP8 PP4 DP32"},
  };
  r.notes = {Note{Note::Level::WARNING,
                  "No calibration profile for demo.8gpu: compute efficiency uses the default, "
                  "and the bands are widened."},
             Note{Note::Level::INFO, "Prices change; check them against the provider's list before a budget review."}};

  Section scaling{.id = "scaling", .title = "Scaling"};
  scaling.paragraphs = {"Step time of each layout as the cluster grows, at a fixed global batch."};
  scaling.charts = {scaling_chart()};

  Section frontier{.id = "frontier", .title = "Cost and time"};
  frontier.paragraphs = {"Each point is one candidate; the frontier holds those that no other beats on both axes."};
  frontier.charts = {frontier_chart()};
  frontier.tables = {candidates_table()};

  Section where{.id = "breakdown", .title = "Where the time goes"};
  where.charts = {breakdown_chart()};

  Section memory{.id = "memory", .title = "Memory"};
  memory.charts = {memory_chart()};

  r.sections = {scaling, frontier, where, memory};
  r.assumptions = {
      AssumptionGroup{
          "prices",
          "Prices",
          {Assumption{"demo.8gpu on-demand", "12.34 $/h", "demo price list", "2026-01-01", "demo-region-1"},
           Assumption{"demo.8gpu 1-year plan", "8.76 $/h", "demo price list", "2026-01-01", "demo-region-1"}}},
      AssumptionGroup{"calibration",
                      "Calibration",
                      {Assumption{"profile", "none (defaults from the catalog)", "catalog demo.8gpu", "", ""}}},
      AssumptionGroup{"versions",
                      "Model and versions",
                      {Assumption{"model", "demo-70b preset", "models/presets", "", ""},
                       Assumption{"NCCL", "2.28 tuning constants", "NCCL source", "", ""}}},
  };
  return r;
}

Report sample_simulation_report() {
  Report r;
  r.type = "simulation";
  r.title = "Simulation: demo-8b ZeRO-3 on 4 GPUs";
  r.generated_by = "clustersim (test data)";
  r.summary = {
      Figure{.key = "step_time", .label = "Step time", .type = ValueType::DURATION, .value = Cell(2.41, {2.2, 2.7})},
      Figure{.key = "tokens_per_s",
             .label = "Throughput",
             .type = ValueType::NUMBER,
             .unit = "tokens/s",
             .value = 6798.3}};
  Section s{.id = "step", .title = "Step"};
  s.charts = {breakdown_chart()};
  Table t{.id = "breakdown", .title = "Breakdown"};
  t.columns = {Column::text("part", "Part"), Column::duration("time_s", "Time"), Column::percent("share", "Share")};
  t.add_row({"compute", 1.2, 0.5});
  t.add_row({"exposed communication", 0.9, 0.375});
  t.add_row({"optimizer", 0.3, 0.125});
  s.tables = {t};
  r.sections = {s};
  return r;
}

}  // namespace clustersim::testing
