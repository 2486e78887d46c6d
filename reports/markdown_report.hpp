#pragma once
// The report as GitHub-flavoured Markdown for review documents: the summary and the
// assumptions as lists, notes as block quotes, tables as GFM pipe tables (numbers right-aligned,
// the band after each value). Charts cannot be drawn in Markdown: an XY chart becomes a sentence
// per series (points, x and y ranges) and its labelled points; a bar chart becomes a table of
// its bars and segments.
//
// Escaping: text that could be read as markup (\ ` * _ [ ] < > |) is backslash-escaped; inside
// tables a newline becomes a space, so a cell never breaks its row.

#include <string>
#include <string_view>

#include "reports/report_model.hpp"

namespace clustersim::reports {

// Throws std::invalid_argument when the report is malformed (check_report).
std::string render_markdown(const Report& report);

// Escapes `text` for Markdown inline text (also safe inside a pipe-table cell).
std::string escape_markdown(std::string_view text);

}  // namespace clustersim::reports
