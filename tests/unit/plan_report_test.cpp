#include "reports/plan_report.hpp"

#include <catch2/catch.hpp>
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
    out.report = reports::build_plan_report(out.result, catalog(), {.generated_by = "clustersim test"});
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
  // The memory chart carries the GPU's usable memory as a reference line.
  CHECK(root->find_all(with_class("g", "reference-line")).size() == 1);
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
}
