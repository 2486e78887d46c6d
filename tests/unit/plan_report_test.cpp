#include "reports/plan_report.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/app.hpp"
#include "hardware/catalog.hpp"
#include "models/plan_runner.hpp"
#include "reports/html_report.hpp"
#include "reports/json_report.hpp"
#include "reports/report_format.hpp"
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"
#include "unit/plan_fakes.hpp"
#include "unit/reports_xml_check.hpp"

using namespace clustersim;
using clustersim::testing::XmlElement;

namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

struct Planned {
  models::PlanResult result;
  reports::Report report;
};

// Llama-3-8B on p4de and p5, 1 to 8 nodes, tensor and pipeline auto, with spot and checkpoints.
const Planned& planned() {
  static const Planned p = [] {
    const std::string text = R"({"schema_version": 1, "name": "report-test", "model": {"preset": "llama3-8b"},
        "training": {"seq_len": 4096, "global_batch_size": 64, "activation_checkpointing": ["selective"]},
        "parallelism": {"framework": "megatron", "tensor": "auto", "pipeline": "auto"},
        "cluster": {"system": ["p4de.24xlarge", "p5.48xlarge"], "nodes": [1, 2, 4, 8]},
        "job": {"tokens": 1e10, "deadline": "60 days"},
        "pricing": {"options": ["on_demand", "capacity_block", "savings_plan_1yr", "savings_plan_3yr", "spot"],
                    "spot": {"discount": 0.6, "interruptions_per_node_day": 0.05, "restart_time": "10 min"}},
        "checkpoint": {"storage": "s3", "interval": "1 h"}})";
    const auto plan = models::read_plan(parse_json_text(text, "report-test.json"), ".");
    testing::TempDir scratch;
    models::PlanRunOptions o;
    o.scratch_dir = scratch.path();
    Planned out{models::run_plan(plan, catalog(), testing::FakeStepModel{}, o), {}};
    out.report = reports::build_plan_report(out.result, catalog(), {.generated_by = "clustersim test", .created = "", .inputs = {}});
    return out;
  }();
  return p;
}

auto with_class(std::string_view name, std::string_view cls) {
  return [name, cls](const XmlElement& e) { return e.name == name && e.has_class(cls); };
}

}  // namespace

TEST_CASE("the plan's HTML report parses, holds its four charts and loads nothing from the network", "[unit][plan]") {
  const std::string html = reports::render_html(planned().report);
  std::unique_ptr<XmlElement> root;
  REQUIRE_NOTHROW(root = testing::parse_xml(html));
  std::vector<std::string> charts;
  for (const auto* e : root->find_all(with_class("svg", "chart"))) charts.push_back(e->attribute("data-chart"));
  CHECK(charts ==
        std::vector<std::string>{"cost-time-frontier", "step-time-vs-gpus", "step-breakdown", "memory-per-rank"});
  for (const char* forbidden : {"http://", "https://", "@import", "url(", "<link", "<img", "<iframe", "<object"}) {
    INFO(forbidden);
    CHECK(html.find(forbidden) == std::string::npos);
  }
  CHECK(root->find_all([](const XmlElement& e) { return e.attributes.count("src") > 0; }).empty());
  // The frontier is highlighted and labelled.
  const auto highlighted = root->find_all(with_class("g", "highlight"));
  REQUIRE(highlighted.size() == 1);
  CHECK(highlighted[0]->attribute("data-series") == "Pareto frontier");
  CHECK(root->find_all(with_class("text", "point-label")).size() == planned().result.frontier.size());
  // The frontier chart carries the plan's deadline (60 days, no budget), the memory chart the
  // GPU's usable memory.
  const auto refs = root->find_all(with_class("g", "reference-line"));
  REQUIRE(refs.size() == 2);
  CHECK(refs[0]->attribute("data-label") == "deadline");
  CHECK(refs[1]->attribute("data-label") == "usable");
}

TEST_CASE("the plan report states prices with dates and regions, calibration and versions", "[unit][plan]") {
  const auto& rep = planned().report;
  std::map<std::string, const reports::AssumptionGroup*> groups;
  for (const auto& g : rep.assumptions) groups[g.id] = &g;
  REQUIRE(groups.count("prices"));
  bool p5_on_demand = false, spot_assumed = false;
  for (const auto& a : groups["prices"]->items) {
    if (a.name == "p5.48xlarge on-demand") {
      p5_on_demand = true;
      CHECK(a.value == "55.04 USD/h per instance");
      CHECK(a.date == "2026-09-25");
      CHECK(a.region == "us-east-1");
    }
    if (a.name == "p4de.24xlarge spot") spot_assumed = a.value.find("the plan's assumption") != std::string::npos;
  }
  CHECK(p5_on_demand);
  CHECK(spot_assumed);
  REQUIRE(groups.count("calibration"));
  CHECK(groups["calibration"]->items.front().value.find("defaults, uncalibrated") != std::string::npos);
  REQUIRE(groups.count("versions"));
  CHECK(groups["versions"]->items[1].value.find("2.28") != std::string::npos);
  REQUIRE(groups.count("pricing-terms"));
  // The plan states no share of its Savings Plans: the default is the whole term, said as such.
  bool commitment = false;
  for (const auto& a : groups["pricing-terms"]->items) {
    if (a.name != "Savings Plans commitment") continue;
    commitment = true;
    CHECK_THAT(a.value, Catch::Contains("dedicated: bought whole") && Catch::Contains("states no share"));
    CHECK(a.source == "default");
  }
  CHECK(commitment);
  // The headline cost names its option and how it is charged.
  for (const auto& f : rep.summary) {
    if (f.key == "cost") CHECK_THAT(f.detail, Catch::Contains("us-east-1; "));
  }
  REQUIRE(groups.count("checkpoint"));
  CHECK(groups["checkpoint"]->items.front().source.find("S3") != std::string::npos);
  // The summary carries the bands of the best candidate.
  CHECK(rep.summary.front().key == "time_to_train");
  CHECK(rep.summary.front().value.band().has_value());
}

TEST_CASE("the plan result JSON holds the contract's fields and the embedded report", "[unit][plan]") {
  const auto& p = planned();
  const auto j = nlohmann::json::parse(reports::render_plan_result(p.result, p.report));
  CHECK(j["schema_version"] == 1);
  CHECK(j["kind"] == "clustersim-plan-result");
  CHECK(j["evaluated"] == p.result.counts.evaluated);
  CHECK(j["feasible"] == p.result.counts.feasible);
  REQUIRE(j["candidates"].size() == static_cast<std::size_t>(p.result.counts.feasible));
  const auto& best = j["candidates"][0];
  for (const char* key : {"system", "nodes", "parallelism", "step_time_s", "time_to_train_s", "gpu_hours", "cost_usd",
                          "peak_memory_bytes", "fits_in_memory", "uncertainty"}) {
    INFO(key);
    CHECK(best.contains(key));
  }
  CHECK(best["rank"] == 1);
  CHECK(best["id"] == *p.result.best);
  for (const char* option : {"on_demand", "capacity_block", "savings_plan_1yr", "savings_plan_3yr", "spot"}) {
    INFO(option);
    CHECK(best["cost_usd"].contains(option));
  }
  // Prices once per system and option; spot is the plan's assumption.
  bool spot_assumed = false;
  for (const auto& q : j["prices"]) {
    if (q["system"] == best["system"] && q["option"] == "spot") spot_assumed = q["assumed"].get<bool>();
  }
  CHECK(spot_assumed);
  CHECK(best["uncertainty"]["low_s"].get<double>() < best["step_time_s"].get<double>());
  // Time-ranked best first.
  for (std::size_t i = 1; i < j["candidates"].size(); ++i) {
    CHECK(j["candidates"][i - 1]["time_to_train_s"].get<double>() <=
          j["candidates"][i]["time_to_train_s"].get<double>());
  }
  // Every valid layout that is not feasible is listed with its reason.
  CHECK(j["infeasible"].size() == static_cast<std::size_t>(p.result.counts.layouts - p.result.counts.feasible));
  for (const auto& x : j["infeasible"]) CHECK_FALSE(x["reason"].get<std::string>().empty());
  CHECK(j["report"]["kind"] == "clustersim-report");
  CHECK(j["sensitivity"].size() == 5);
}

TEST_CASE("clustersim report re-renders a saved plan result without recomputing it", "[unit][plan][cli]") {
  const auto& p = planned();
  testing::TempDir dir;
  const auto saved = dir.write("result.json", reports::render_plan_result(p.result, p.report));
  for (const auto& [name, format] :
       std::vector<std::pair<std::string, reports::ReportFormat>>{{"html", reports::ReportFormat::HTML},
                                                                  {"markdown", reports::ReportFormat::MARKDOWN},
                                                                  {"csv", reports::ReportFormat::CSV},
                                                                  {"text", reports::ReportFormat::TEXT},
                                                                  {"json", reports::ReportFormat::JSON}}) {
    INFO(name);
    std::ostringstream out, err;
    REQUIRE(cli::run({"report", saved.string(), "--format", name}, out, err) == 0);
    CHECK(out.str() == reports::render_report(p.report, format));
    CHECK(err.str().empty());
  }
  // -o writes the file; a report JSON on its own renders too.
  std::ostringstream out, err;
  const auto html = dir.path() / "plan.html";
  REQUIRE(cli::run({"report", saved.string(), "--format", "html", "-o", html.string()}, out, err) == 0);
  CHECK(std::filesystem::file_size(html) == reports::render_html(p.report).size());
  const auto bare = dir.write("report.json", reports::render_json(p.report));
  REQUIRE(cli::run({"report", bare.string(), "--format", "markdown"}, out, err) == 0);
  // Not a result: exit 2 naming the file and key.
  const auto other = dir.write("other.json", R"({"kind": "something-else"})");
  std::ostringstream o2, e2;
  CHECK(cli::run({"report", other.string()}, o2, e2) == 2);
  CHECK_THAT(e2.str(), Catch::Contains("other.json: /kind"));
}

TEST_CASE("clustersim plan with the step model: same bytes with 1 or 2 threads, re-rendered by report",
          "[unit][plan][cli]") {
  testing::TempDir dir;
  const auto plan = dir.write("small.json", R"({"schema_version": 1, "name": "small", "model": {"preset": "llama3-8b"},
      "training": {"seq_len": 4096, "global_batch_size": 64, "activation_checkpointing": ["selective"],
                   "micro_batch_size": [1, 2]},
      "parallelism": {"framework": "megatron", "tensor": "auto", "pipeline": [1, 2]},
      "cluster": {"system": ["p4de.24xlarge", "p5.48xlarge"], "nodes": [1, 2]},
      "job": {"tokens": 1e10},
      "checkpoint": {"storage": "s3", "interval": "1 h"},
      "search": {"top_k": 1}})");
  // The report's date comes from SOURCE_DATE_EPOCH, so that equal inputs give equal bytes:
  // 1765065600 s = 2025-12-07T00:00:00Z.
  setenv("SOURCE_DATE_EPOCH", "1765065600", 1);
  constexpr auto run = &testing::run_cli;
  const auto [rc1, json1, err1] = run({"plan", plan.string(), "--format", "json", "--threads", "1"});
  REQUIRE(rc1 == 0);
  const auto [rc2, json2, err2] = run({"plan", plan.string(), "--format", "json", "--threads", "2", "--quiet"});
  REQUIRE(rc2 == 0);
  CHECK(json1 == json2);
  CHECK(err2.empty());
  CHECK_THAT(err1, Catch::Contains("plan: fast"));
  const auto j = nlohmann::json::parse(json1);
  CHECK(j["evaluated"].get<int>() > 10);
  CHECK(j["candidates"][0]["fidelity"] == "event");
  // The report the plan wrote is the one `report` renders from the saved result.
  const auto saved = dir.write("result.json", json1);
  const auto [rc3, html_plan, e3] = run({"plan", plan.string(), "--format", "html", "--quiet"});
  const auto [rc4, html_report, e4] = run({"report", saved.string(), "--format", "html"});
  CHECK(rc3 == 0);
  CHECK(rc4 == 0);
  CHECK(html_plan == html_report);
  // Provenance: the date, the program and the SHA-256 of the inputs (the plan file, then every
  // catalog file), each file's own hash listed.
  CHECK(j["report"]["created"] == "2025-12-07T00:00:00Z");
  const std::string inputs = j["report"]["inputs_sha256"];
  CHECK(inputs.size() == 64);
  CHECK_THAT(html_plan, Catch::Contains("generated 2025-12-07T00:00:00Z") && Catch::Contains(inputs));
  bool listed = false;
  for (const auto& g : j["report"]["assumptions"]) {
    if (g["id"] != "provenance") continue;
    for (const auto& a : g["items"]) listed = listed || a["name"] == "small.json";
  }
  CHECK(listed);
  // Another plan file gives another hash.
  const auto plan2 = dir.write("small2.json", R"({"schema_version": 1, "name": "small", "model": {"preset": "llama3-8b"},
      "training": {"seq_len": 4096, "global_batch_size": 64, "micro_batch_size": 1},
      "parallelism": {"framework": "megatron", "tensor": 1, "pipeline": 1},
      "cluster": {"system": "p5.48xlarge", "nodes": 1}, "job": {"tokens": 1e9}})");
  const auto [rc5, json5, e5] = run({"plan", plan2.string(), "--format", "json", "--quiet"});
  REQUIRE(rc5 == 0);
  CHECK(nlohmann::json::parse(json5)["report"]["inputs_sha256"] != inputs);
  unsetenv("SOURCE_DATE_EPOCH");
}

TEST_CASE("the plan report opens with the best per system and draws every system on the frontier chart",
          "[unit][plan]") {
  const auto& p = planned();
  const auto& rep = p.report;
  // The first section: one row per system of the plan, the best candidate of each.
  REQUIRE_FALSE(rep.sections.empty());
  REQUIRE(rep.sections.front().id == "systems");
  const reports::Table& best = rep.sections.front().tables.at(0);
  REQUIRE(best.rows.size() == p.result.space.systems.size());
  for (std::size_t s = 0; s < best.rows.size(); ++s) {
    CHECK(best.rows[s][0].text() == p.result.space.systems[s].name);
    std::size_t feasible = 0;
    for (std::size_t id : p.result.by_time) feasible += p.result.layout(id).system == static_cast<int>(s);
    CHECK(best.rows[s][2].number() == static_cast<double>(feasible));
    CHECK(best.rows[s][1].text() == (feasible > 0 ? "yes" : "no"));
  }
  // The frontier chart: one series per system with a feasible candidate, named with its count,
  // then the frontier with time and cost bands and a tooltip naming each candidate.
  const reports::Chart* chart = nullptr;
  for (const auto& sec : rep.sections) {
    for (const auto& c : sec.charts) {
      if (c.id == "cost-time-frontier") chart = &c;
    }
  }
  REQUIRE(chart != nullptr);
  std::size_t drawn = 0;
  for (const auto& s : chart->series) {
    if (s.highlight) continue;
    CHECK_THAT(s.name, Catch::Contains(" feasible)"));
    for (const auto& pt : s.points) CHECK_FALSE(pt.tooltip.empty());
    drawn += s.points.size();
  }
  // Every feasible candidate is drawn (fewer than 500 per system here).
  CHECK(drawn == p.result.by_cost.size());
  const auto& front = chart->series.back();
  REQUIRE(front.highlight);
  REQUIRE(front.points.size() == p.result.frontier.size());
  CHECK(front.points.front().x_band.has_value());
  CHECK(front.points.front().tooltip == models::candidate_label(p.result.layout(p.result.frontier.front()).scenario) +
                                            ", " +
                                            std::string(models::pricing_label(
                                                p.result.candidates[p.result.frontier.front()].cheapest_cost()->option)));
  REQUIRE(chart->reference_lines.size() == 1);
  CHECK(chart->reference_lines[0].on_x);
  CHECK(chart->reference_lines[0].value == Approx(60 * 86400.0));
  // The SVG names each candidate in a <title>.
  const std::string html = reports::render_html(rep);
  CHECK_THAT(html, Catch::Contains("<title>" + front.points.front().tooltip.substr(0, 20)));
}

TEST_CASE("the plan's CSV is one table: a header row and a row per evaluated candidate", "[unit][plan]") {
  const auto& p = planned();
  const std::string csv = reports::render_report(p.report, reports::ReportFormat::CSV);
  std::vector<std::string> lines;
  std::istringstream in(csv);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::size_t evaluated_infeasible = 0;
  for (const auto& c : p.result.candidates) {
    evaluated_infeasible += c.evaluated && c.status != models::CandidateStatus::FEASIBLE;
  }
  REQUIRE(lines.size() == 1 + p.result.by_time.size() + evaluated_infeasible);
  CHECK(csv.find("#section") == std::string::npos);
  for (const char* col : {"rank", "system", "layout", "time_to_train_s", "time_to_train_s_low", "cost_on_demand_usd",
                          "cost_capacity_block_usd", "cost_spot_usd", "cheapest", "mfu", "feasible", "status",
                          "reason", "on_frontier", "goodput", "storage_usd", "generated", "inputs_sha256"}) {
    INFO(col);
    CHECK(lines[0].find(col) != std::string::npos);
  }
  // Every row has as many fields as the header (no field here holds a comma inside quotes
  // except labels, which are quoted: count outside quotes).
  auto fields = [](const std::string& l) {
    std::size_t n = 1;
    bool quoted = false;
    for (char c : l) {
      if (c == '"') quoted = !quoted;
      if (c == ',' && !quoted) ++n;
    }
    return n;
  };
  for (const auto& l : lines) CHECK(fields(l) == fields(lines[0]));
}
