#include <catch2/catch.hpp>

#include "hardware/errors.hpp"
#include "reports/csv_report.hpp"
#include "reports/markdown_report.hpp"
#include "reports/report_format.hpp"
#include "support/temp_dir.hpp"
#include "unit/reports_sample.hpp"

using namespace clustersim;
using namespace clustersim::reports;

namespace {

Table tricky_table() {
  Table t{.id = "tricky", .title = "Tricky | text"};
  t.columns = {Column::text("name", "Name | kind"), Column::duration("time_s", "Time")};
  t.add_row({"plain", 1.5});
  t.add_row({"a, b", Cell(0.002, {0.0015, 0.0025})});
  t.add_row({"say \"hi\"", Cell::empty()});
  t.add_row({"two\nlines", 90});
  t.add_row({"TP8|PP4 *bold* _x_ `c` <b>", 7200});
  return t;
}

}  // namespace

TEST_CASE("CSV fields are quoted as RFC 4180 asks", "[unit][reports]") {
  CHECK(csv_field("plain") == "plain");
  CHECK(csv_field("a, b") == "\"a, b\"");
  CHECK(csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_field("two\nlines") == "\"two\nlines\"");
  CHECK(csv_field("cr\r") == "\"cr\r\"");
  CHECK(csv_field("") == "");
  CHECK(csv_field(" spaces kept ") == " spaces kept ");
}

TEST_CASE("a table as CSV: raw SI values, band columns, empty fields, CRLF", "[unit][reports]") {
  // The band on time_s (row 2) adds time_s_low and time_s_high to every row; raw values are the
  // shortest text that reads back: 0.002 s, 90 s, 7200 s.
  CHECK(render_table_csv(tricky_table()) ==
        "name,time_s,time_s_low,time_s_high\r\n"
        "plain,1.5,,\r\n"
        "\"a, b\",0.002,0.0015,0.0025\r\n"
        "\"say \"\"hi\"\"\",,,\r\n"
        "\"two\nlines\",90,,\r\n"
        "TP8|PP4 *bold* _x_ `c` <b>,7200,,\r\n");
}

TEST_CASE("the report as a sectioned CSV", "[unit][reports]") {
  const std::string csv = render_csv(testing::sample_simulation_report());
  CHECK(csv ==
        "#section,summary,Summary\r\n"
        "key,label,value,low,high,unit,detail\r\n"
        "step_time,Step time,2.41,2.2,2.7,s,\r\n"
        "tokens_per_s,Throughput,6798.3,,,tokens/s,\r\n"
        "\r\n"
        "#section,breakdown,Breakdown\r\n"
        "part,time_s,share\r\n"
        "compute,1.2,0.5\r\n"
        "exposed communication,0.9,0.375\r\n"
        "optimizer,0.3,0.125\r\n");
  // The capacity sample: summary, one table, assumptions; quoting inside the table.
  const std::string plan = render_csv(testing::sample_capacity_report());
  CHECK(plan.find("#section,candidates,Candidates\r\n") != std::string::npos);
  CHECK(plan.find("\"demo.8gpu, \"\"spot\"\"\",16,ZeRO-3 + CPU offload,") != std::string::npos);
  CHECK(plan.find("#section,assumptions,Assumptions\r\ngroup,name,value,source,date,region\r\n"
                  "prices,demo.8gpu on-demand,12.34 $/h,demo price list,2026-01-01,demo-region-1\r\n") !=
        std::string::npos);
}

TEST_CASE("CSV tables can be written one file per table", "[unit][reports]") {
  testing::TempDir dir;
  const auto paths = write_csv_tables(dir.path(), "plan", testing::sample_capacity_report());
  REQUIRE(paths.size() == 1);
  CHECK(paths[0].filename() == "plan-candidates.csv");
  CHECK(std::filesystem::file_size(paths[0]) > 100);
}

TEST_CASE("Markdown escapes pipes and markup so tables keep their shape", "[unit][reports]") {
  CHECK(escape_markdown("a|b") == "a\\|b");
  CHECK(escape_markdown("*x* _y_ `z` [l](u) <b>") == "\\*x\\* \\_y\\_ \\`z\\` \\[l\\](u) \\<b\\>");
  CHECK(escape_markdown("back\\slash") == "back\\\\slash");
  CHECK(escape_markdown("two\nlines") == "two lines");

  Report r;
  r.title = "T";
  r.sections.push_back(Section{.id = "s", .title = "S", .tables = {tricky_table()}});
  const std::string md = render_markdown(r);
  // Every table line has exactly as many unescaped pipes as the header: 3 for 2 columns.
  std::size_t pos = md.find("| Name");
  REQUIRE(pos != std::string::npos);
  const std::string table = md.substr(pos);
  std::size_t lines = 0;
  for (std::size_t start = 0; start < table.size();) {
    const std::size_t end = table.find('\n', start);
    const std::string line = table.substr(start, end - start);
    if (line.empty()) break;
    int pipes = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '|' && (i == 0 || line[i - 1] != '\\')) ++pipes;
    }
    INFO(line);
    CHECK(pipes == 3);
    ++lines;
    start = end + 1;
  }
  // Header, alignment row and 5 rows.
  CHECK(lines == 7);
  CHECK(md.find("| Name \\| kind | Time |\n| :--- | ---: |\n") != std::string::npos);
  // 0.002 s with its band; 90 s stays in seconds (below 120 s); 7200 s reaches the 2 h threshold
  // for hours.
  CHECK(md.find("| a, b | 2 ms (1.5 ms – 2.5 ms) |") != std::string::npos);
  CHECK(md.find("| TP8\\|PP4 \\*bold\\* \\_x\\_ \\`c\\` \\<b\\> | 2 h |") != std::string::npos);
  CHECK(md.find("| two lines | 90 s |") != std::string::npos);
  CHECK(md.find("**Tricky \\| text**") != std::string::npos);
}

TEST_CASE("the Markdown report lists the summary and assumptions and describes its charts", "[unit][reports]") {
  const std::string md = render_markdown(testing::sample_capacity_report());
  CHECK(md.rfind("# Capacity plan: demo-70b, 2T tokens\n", 0) == 0);
  CHECK(md.find("## Summary\n\n- **Time to train:** 19 days (range 17.4 days – 21 days) — x 128, TP8 PP4\n") !=
        std::string::npos);
  CHECK(md.find("> **Warning:** No calibration profile") != std::string::npos);
  CHECK(md.find("- **demo.8gpu on-demand:** 12.34 $/h (source: demo price list; date: 2026-01-01; region: "
                "demo-region-1)") != std::string::npos);
  // XY charts become a sentence per series and the labelled points.
  CHECK(md.find("*Chart: Step time against GPU count.*") != std::string::npos);
  CHECK(md.find("- ZeRO-3: 4 points, x 64 to 512, y 1.9 s to 9.1 s\n") != std::string::npos);
  CHECK(md.find("- Pareto frontier (highlighted): 6 points") != std::string::npos);
  CHECK(md.find("- x 128, TP8 PP4: 19 days, $3,100,000\n") != std::string::npos);
  // Bar charts become a table; the memory chart's capacity line a sentence.
  CHECK(md.find("| Candidate | compute | exposed communication | pipeline bubble | optimizer | offload | Total |") !=
        std::string::npos);
  CHECK(md.find("Reference line: capacity at 64 GiB.") != std::string::npos);
  CHECK(md.back() == '\n');
  CHECK(md.substr(md.size() - 2) != "\n\n");
  CHECK(md == render_markdown(testing::sample_capacity_report()));
}

TEST_CASE("report formats parse by name and render through one entry point", "[unit][reports]") {
  CHECK(parse_report_format("html") == ReportFormat::HTML);
  CHECK(parse_report_format("md") == ReportFormat::MARKDOWN);
  CHECK_THROWS_AS(parse_report_format("htm"), InputError);
  CHECK_THROWS_WITH(parse_report_format("htm"), Catch::Contains("did you mean 'html'"));
  const auto report = testing::sample_capacity_report();
  CHECK(render_report(report, ReportFormat::MARKDOWN) == render_markdown(report));
  CHECK(render_report(report, ReportFormat::CSV) == render_csv(report));
  const std::string text = render_text(report);
  CHECK(text.find("Capacity plan: demo-70b, 2T tokens\n") == 0);
  CHECK(text.find("Time to train") != std::string::npos);
  CHECK(text.find("[chart: Memory per rank; see the HTML report]") != std::string::npos);
  testing::TempDir dir;
  write_report(dir.path() / "plan.md", report, ReportFormat::MARKDOWN);
  CHECK(std::filesystem::file_size(dir.path() / "plan.md") == render_markdown(report).size());
}
