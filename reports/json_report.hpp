#pragma once
// The report as JSON, and the strict reader that loads it back, so `clustersim report
// RESULT.json --format html|markdown|csv|json` re-renders a saved result without recomputing.
//
//   {
//     "schema_version": 1, "kind": "clustersim-report", "type": "capacity-plan",
//     "title": "...", "subtitle": "...", "generated_by": "clustersim 0.1.0", ["created": "..."],
//     "summary": [{"key", "label", "type", "unit", "digits", "value": CELL, "detail"}],
//     "notes": [{"level": "info|warning|error", "text"}],
//     "sections": [{"id", "title", "paragraphs": [...], "charts": [CHART], "tables": [TABLE]}],
//     "assumptions": [{"id", "title", "items": [{"name", "value", "source", "date", "region"}]}]
//   }
//   CELL   null | "text" | number | {"value": number, "low": number, "high": number}
//   TABLE  {"id", "title", "caption", "columns": [{"key", "label", "type", "unit", "digits"}],
//           "rows": [[CELL, ...], ...]}
//   CHART  {"id", "title", "caption", "kind": "xy" | "stacked_bars", "x": AXIS, "y": AXIS,
//           xy: "series": [{"name", "style": "line|scatter|line_points", "highlight",
//                           "points": [{"x", "y", ["low", "high"], ["label"]}]}]
//           stacked_bars: "orientation": "horizontal|vertical", "segments": [...],
//                         "bars": [{"label", "values": [...], ["low", "high"]}],
//                         "reference_lines": [{"label", "value"}]}
//   AXIS   {"label", "type", "unit", "scale": "linear|log10|log2", ["min"], ["max"]}
//   type   "text" | "number" | "integer" | "duration" | "bytes" | "dollars" | "percent";
//          values in SI units: seconds, bytes, US dollars, fractions.
//
// The object is self-describing, so a larger result file (the planner's) may embed it under a
// key of its own and read it back with read_report(reader.at("report")). Writing, reading and
// writing again gives identical bytes. The reader is strict (hardware/json_reader.hpp): unknown
// keys, wrong types and a malformed report (report_model.hpp find_problem) are InputErrors that
// name the file and the JSON pointer.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "hardware/json_reader.hpp"
#include "reports/report_model.hpp"

namespace clustersim::reports {

inline constexpr int kReportSchemaVersion = 1;
inline constexpr std::string_view kReportKind = "clustersim-report";

// Throws std::invalid_argument when the report is malformed (check_report).
nlohmann::ordered_json report_to_json(const Report& report);
// report_to_json, two-space indented, with a final newline.
std::string render_json(const Report& report);

Report read_report(const ValueReader& value);
Report parse_report_json(std::string_view text, const std::string& file);
Report load_report_file(const std::string& path);

}  // namespace clustersim::reports
