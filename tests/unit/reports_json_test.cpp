#include <catch2/catch.hpp>

#include "hardware/errors.hpp"
#include "reports/json_report.hpp"
#include "support/temp_dir.hpp"
#include "unit/reports_sample.hpp"

using namespace clustersim;
using namespace clustersim::reports;

namespace {

std::string error_of(const std::string& text) {
  try {
    parse_report_json(text, "result.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// The sample simulation report's JSON with `from` replaced by `to` (once).
std::string edited(const std::string& from, const std::string& to) {
  std::string text = render_json(testing::sample_simulation_report());
  const auto pos = text.find(from);
  REQUIRE(pos != std::string::npos);
  return text.replace(pos, from.size(), to);
}

}  // namespace

TEST_CASE("a report survives write, read, write with identical bytes", "[unit][reports]") {
  for (const auto& report : {testing::sample_capacity_report(), testing::sample_simulation_report()}) {
    const std::string first = render_json(report);
    const Report back = parse_report_json(first, "result.json");
    CHECK(back == report);
    CHECK(render_json(back) == first);
  }
  testing::TempDir dir;
  const auto path = dir.write("plan.json", render_json(testing::sample_capacity_report()));
  CHECK(load_report_file(path.string()) == testing::sample_capacity_report());
}

TEST_CASE("the report JSON carries its schema version, kind and typed cells", "[unit][reports]") {
  const auto j = report_to_json(testing::sample_capacity_report());
  CHECK(j.begin().key() == "schema_version");
  CHECK(j["schema_version"] == kReportSchemaVersion);
  CHECK(j["kind"] == "clustersim-report");
  CHECK_FALSE(j.contains("created"));  // not set in the data, so not invented
  const auto& table = j["sections"][1]["tables"][0];
  CHECK(table["columns"][3]["type"] == "duration");
  // Row 0: text, a whole number written as an integer, a banded value as an object.
  CHECK(table["rows"][0][0] == "demo.8gpu");
  CHECK(table["rows"][0][1].is_number_integer());
  CHECK(table["rows"][0][3] == nlohmann::ordered_json({{"value", 0.33}, {"low", 0.3}, {"high", 0.37}}));
  CHECK(table["rows"][3][4].is_null());
  const auto& chart = j["sections"][0]["charts"][0];
  CHECK(chart["kind"] == "xy");
  CHECK(chart["x"]["scale"] == "log2");
  CHECK_FALSE(chart.contains("bars"));
}

TEST_CASE("the report reader is strict and says where the input is wrong", "[unit][reports]") {
  CHECK_THAT(error_of(edited("\"title\":", "\"titel\": \"x\", \"title\":")),
             Catch::Contains("result.json") && Catch::Contains("/titel") && Catch::Contains("did you mean 'title'"));
  CHECK_THAT(error_of(edited("\"schema_version\": 1", "\"schema_version\": 2")),
             Catch::Contains("/schema_version") && Catch::Contains("newer than this clustersim reads (1)"));
  CHECK_THAT(error_of(edited("\"kind\": \"clustersim-report\"", "\"kind\": \"clustersim-plan\"")),
             Catch::Contains("/kind"));
  // A text cell in a duration column: found by the model check, located by pointer.
  CHECK_THAT(
      error_of(edited("\"compute\",\n              1.2", "\"compute\",\n              \"fast\"")),
      Catch::Contains("/sections/0/tables/0/rows/0/1") && Catch::Contains("expected a number in a duration column"));
  // A row of the wrong width.
  CHECK_THAT(
      error_of(edited("\"optimizer\",\n              0.3,\n              0.125", "\"optimizer\",\n              0.3")),
      Catch::Contains("/sections/0/tables/0/rows/2"));
  // A band needs both ends.
  CHECK_THAT(error_of(edited("\"low\": 2.2,", "")), Catch::Contains("/summary/0/value") && Catch::Contains("both"));
  CHECK_THAT(error_of(edited("\"type\": \"duration\"", "\"type\": \"durations\"")),
             Catch::Contains("/summary/0/type") && Catch::Contains("did you mean 'duration'"));
}

TEST_CASE("a report embedded in a larger result reads back with its pointers", "[unit][reports]") {
  nlohmann::ordered_json result = {{"schema_version", 1}, {"candidates", nlohmann::ordered_json::array()}};
  result["report"] = report_to_json(testing::sample_simulation_report());
  result["report"]["summary"][1]["digits"] = 40;
  const auto doc = parse_json_text(result.dump(), "plan-result.json");
  try {
    doc.root().read_object([](ObjectReader& o) {
      o.allow({"schema_version", "candidates"});
      return read_report(o.at("report"));
    });
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()),
               Catch::Contains("plan-result.json") && Catch::Contains("/report/summary/1/digits"));
  }
}
