// clustersim report RESULT.json: re-renders a saved plan result (or report) without recomputing it.

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "reports/json_report.hpp"
#include "reports/plan_report.hpp"
#include "reports/report_format.hpp"

namespace clustersim::cli {

void add_report_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("report", "Re-render a saved plan result (clustersim plan --format json) or report");
  auto file = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("text");
  auto output = std::make_shared<std::string>();
  cmd->add_option("RESULT", *file, "Plan result JSON or report JSON")->required();
  cmd->add_option("--format", *format, "text, json (the report), csv, markdown or html")
      ->check(CLI::IsMember({"text", "json", "csv", "markdown", "md", "html"}));
  cmd->add_option("-o,--output", *output, "Write to this file instead of stdout");
  cmd->callback([&ctx, file, format, output]() {
    const reports::Report report = reports::load_saved_report(*file);
    ctx.emit(*output, reports::render_report(report, reports::parse_report_format(*format)));
  });
}

}  // namespace clustersim::cli
