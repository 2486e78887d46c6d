// Saved reports and plan results (clustersim report RESULT.json): what is read must render in
// every format.
#include "fuzz_input.hpp"
#include "hardware/json_reader.hpp"
#include "reports/plan_report.hpp"
#include "reports/report_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clustersim;
  return fuzz::run_parser(data, size, [](std::string_view t) {
    const auto doc = parse_json_text(t, "fuzz.json");
    const auto report = reports::read_saved_report(doc);
    fuzz::must_accept("report rendered", [&] {
      for (const auto f : {reports::ReportFormat::TEXT, reports::ReportFormat::MARKDOWN, reports::ReportFormat::HTML,
                           reports::ReportFormat::CSV, reports::ReportFormat::JSON}) {
        (void)reports::render_report(report, f);
      }
    });
  });
}
