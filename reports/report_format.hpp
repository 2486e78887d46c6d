#pragma once
// One entry point for every writer of the report model: the CLI parses --format with
// parse_report_format and calls render_report or write_report.
//
//   text      terminal: summary lines, tables aligned (text_table.hpp), charts named only
//   markdown  markdown_report.hpp      html   html_report.hpp
//   csv       csv_report.hpp (sectioned)   json   json_report.hpp

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "reports/report_model.hpp"

namespace clustersim::reports {

enum class ReportFormat { TEXT, MARKDOWN, HTML, CSV, JSON };

// "text", "markdown" (also "md"), "html", "csv", "json"; anything else is an InputError that
// lists the choices.
ReportFormat parse_report_format(std::string_view name);
std::vector<std::string> report_format_names();

// The report in `format`. Throws std::invalid_argument when the report is malformed.
std::string render_report(const Report& report, ReportFormat format);
std::string render_text(const Report& report);
// render_report written atomically to `path` (hardware/atomic_file.hpp).
void write_report(const std::filesystem::path& path, const Report& report, ReportFormat format);

}  // namespace clustersim::reports
