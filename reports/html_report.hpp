#pragma once
// The report as one self-contained HTML page: inline CSS, inline SVG charts (svg_chart.hpp) and
// a few lines of inline script (sortable tables, legend entries that hide a series). It loads
// nothing: no external stylesheet, script, font or image, so it works offline and can be mailed.
// The markup is XHTML-compatible (every element closed, void elements self-closed, script in
// CDATA), so an XML parser reads it as well as a browser does.
//
// Page: header (title, subtitle, type, generator, date), contents, summary figures with their
// bands, notes, each section (paragraphs, charts as <figure>, tables with a band under each
// value and the raw value in data-v), assumptions grouped with source, date and region.

#include <string>

#include "reports/report_model.hpp"

namespace clustersim::reports {

// Throws std::invalid_argument when the report is malformed (check_report).
std::string render_html(const Report& report);

}  // namespace clustersim::reports
