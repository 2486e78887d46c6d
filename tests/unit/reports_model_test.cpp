#include <catch2/catch.hpp>
#include <cmath>

#include "reports/chart_scale.hpp"
#include "reports/report_model.hpp"
#include "reports/value_format.hpp"
#include "unit/reports_sample.hpp"

using namespace clustersim;
using namespace clustersim::reports;

namespace {

std::string problem_of(const Report& r) {
  const auto p = find_problem(r);
  return p ? p->pointer + ": " + p->message : "none";
}

}  // namespace

TEST_CASE("values print with fixed rules and their unit", "[unit][reports]") {
  // Three significant digits, trailing zeros dropped, grouped from 10,000 up.
  CHECK(format_value(1234.5, ValueType::NUMBER, "tokens/s") == "1230 tokens/s");
  CHECK(format_value(12345.6, ValueType::NUMBER, "tokens/s") == "12,300 tokens/s");
  CHECK(format_value(0.5, ValueType::NUMBER) == "0.5");
  CHECK(format_value(2.5e-7, ValueType::NUMBER) == "2.5e-07");
  CHECK(format_value(16384, ValueType::INTEGER) == "16,384");
  CHECK(format_value(2048, ValueType::INTEGER) == "2048");
  // Durations in the largest fitting unit; 0.9996 s rounds to 1.00 s before the unit is chosen.
  CHECK(format_value(812e-6, ValueType::DURATION) == "812 µs");
  CHECK(format_value(0.9996, ValueType::DURATION) == "1 s");
  CHECK(format_value(0.0009996, ValueType::DURATION) == "1 ms");
  CHECK(format_value(1.234, ValueType::DURATION) == "1.23 s");
  // 150 s is past 120 s: 2.5 min; 7200 s is 2 h; 2.71 million s is 31.37 days -> 31.4 days.
  CHECK(format_value(150, ValueType::DURATION) == "2.5 min");
  CHECK(format_value(7200, ValueType::DURATION) == "2 h");
  CHECK(format_value(2.71e6, ValueType::DURATION) == "31.4 days");
  CHECK(format_value(0, ValueType::DURATION) == "0 s");
  // Bytes with binary prefixes: 80e9 B / 2^30 = 74.51 GiB -> 74.5 GiB.
  CHECK(format_value(80e9, ValueType::BYTES) == "74.5 GiB");
  CHECK(format_value(512, ValueType::BYTES) == "512 B");
  // 1023.9 KiB to 3 digits is 1020 KiB. 1023.99 KiB to 4 digits would be 1024 KiB, so the unit
  // steps up: 1023.99 / 1024 = 0.99999 MiB, 4 digits: 1 MiB.
  CHECK(format_value(1023.9 * 1024, ValueType::BYTES) == "1020 KiB");
  CHECK(format_value(1023.99 * 1024, ValueType::BYTES, "", 4) == "1 MiB");
  // Dollars: cents below $1,000, whole grouped dollars above.
  CHECK(format_value(12.346, ValueType::DOLLARS) == "$12.35");
  CHECK(format_value(1234567.8, ValueType::DOLLARS) == "$1,234,568");
  CHECK(format_value(-5, ValueType::DOLLARS) == "-$5.00");
  CHECK(format_value(0.4237, ValueType::PERCENT) == "42.4%");
  CHECK(format_cell(Cell(2.0, {1.5, 2.5}), ValueType::DURATION) == "2 s (1.5 s – 2.5 s)");
  CHECK(format_cell(Cell(), ValueType::DURATION) == "n/a");
}

TEST_CASE("axis ticks are nice numbers", "[unit][reports]") {
  // Heckbert: 0..7.3, 6 ticks: nice range 10, step nice(10 / 5) = 2; ends 0 and 8.
  auto t = compute_ticks(0, 7.3, AxisScale::LINEAR, 6);
  CHECK(t.ticks == std::vector<double>{0, 2, 4, 6, 8});
  CHECK(t.labels == std::vector<std::string>{"0", "2", "4", "6", "8"});
  // 0.013..0.087: range nice(0.074) = 0.1, step nice(0.02) = 0.02: every label with two decimals.
  t = compute_ticks(0.013, 0.087, AxisScale::LINEAR, 6);
  CHECK(t.labels == std::vector<std::string>{"0.00", "0.02", "0.04", "0.06", "0.08", "0.10"});
  // 1.2e6..3.4e6 dollars: range nice(2.2e6) = 5e6, step nice(5e6 / 5) = 1e6; ends 1e6 and 4e6.
  t = compute_ticks(1.2e6, 3.4e6, AxisScale::LINEAR, 6);
  CHECK(t.lo == 1e6);
  CHECK(t.hi == 4e6);
  CHECK(t.labels.back() == "4,000,000");
  // Forced ends: ticks outside them are dropped.
  t = compute_ticks(0, 7.3, AxisScale::LINEAR, 6, 1.0, 7.0);
  CHECK(t.lo == 1);
  CHECK(t.ticks == std::vector<double>{2, 4, 6});
  // A single value still spans an axis: 5 +- 10%.
  t = compute_ticks(5, 5, AxisScale::LINEAR, 6);
  CHECK(t.lo < 5);
  CHECK(t.hi > 5);
  // Log10 over 8..256 (1.5 decades): 1-2-5 ticks, ends 5 and 500.
  t = compute_ticks(8, 256, AxisScale::LOG10);
  CHECK(t.labels == std::vector<std::string>{"5", "10", "20", "50", "100", "200", "500"});
  // Log10 over 1e-6..1e3 (9 decades): one tick per 2nd decade (stride ceil(9 / 8) = 2).
  t = compute_ticks(1e-6, 1e3, AxisScale::LOG10);
  CHECK(t.labels == std::vector<std::string>{"1e-06", "0.0001", "0.01", "1", "100", "10,000"});
  // Log2 over 8..16384 GPUs: 2^3..2^14, 11 powers; more than 10 ticks, so every 2nd: 2^3..2^15.
  t = compute_ticks(8, 16384, AxisScale::LOG2);
  CHECK(t.labels == std::vector<std::string>{"8", "32", "128", "512", "2048", "8192", "32,768"});
  CHECK(axis_fraction(128, t, AxisScale::LOG2) == Approx(4.0 / 12.0));
}

TEST_CASE("the model check names the first malformed place", "[unit][reports]") {
  CHECK(problem_of(testing::sample_capacity_report()) == "none");
  auto r = testing::sample_capacity_report();
  r.sections[1].tables[0].rows[0].pop_back();
  CHECK(problem_of(r) == "/sections/1/tables/0/rows/0: 9 cells for 10 columns");
  r = testing::sample_capacity_report();
  r.sections[1].tables[0].rows[1][3] = Cell("slow");
  CHECK(problem_of(r) == "/sections/1/tables/0/rows/1/3: expected a number in a duration column");
  r = testing::sample_capacity_report();
  r.sections[2].id = "scaling";
  CHECK(problem_of(r) == "/sections/2/id: section id 'scaling' is used twice in the report");
  // A chart may share its section's id; a table may not take a CSV section's name.
  r = testing::sample_capacity_report();
  r.sections[0].charts[0].id = "scaling";
  CHECK(problem_of(r) == "none");
  r.sections[1].tables[0].id = "summary";
  CHECK(problem_of(r) ==
        "/sections/1/tables/0/id: table id 'summary' is reserved for the CSV section of the same name");
  r = testing::sample_capacity_report();
  r.sections[0].charts[0].series[0].points[0].x = 0;
  CHECK(problem_of(r) == "/sections/0/charts/0/series/0/points/0/x: a log axis needs values > 0");
  r = testing::sample_capacity_report();
  r.sections[3].charts[0].bars[0].values.pop_back();
  CHECK(problem_of(r) == "/sections/3/charts/0/bars/0/values: 4 values for 5 segments");
  r = testing::sample_capacity_report();
  r.summary[0].value = Cell(NAN);
  CHECK(problem_of(r) == "/summary/0/value: expected a finite number");
  r = testing::sample_capacity_report();
  r.sections[0].id = "Scaling Section";
  CHECK_THROWS_WITH(check_report(r), Catch::Contains("report: /sections/0/id: expected an id"));
  Table t{.id = "t", .columns = {Column::text("a", "A")}};
  CHECK_THROWS_AS(t.add_row({"x", 1}), std::invalid_argument);
}
