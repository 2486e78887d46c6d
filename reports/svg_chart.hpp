#pragma once
// Charts of the report model drawn as inline SVG: axes with nice ticks (chart_scale.hpp), grid,
// legend, labels, and a <title> on every mark so the browser shows a tooltip without script.
// The SVG references nothing outside itself (no fonts, images, links or url(...)), uses only
// XML-safe markup, and prints coordinates with two decimals: equal charts give equal bytes.
//
// Structure, for tests and for the page's script:
//   <svg class="chart" data-chart="ID" ...>
//     <g class="series" data-series="NAME">      one per XY series (class "series highlight")
//     <g class="bar" data-bar="LABEL">           one per bar, with <rect class="segment" data-segment="...">
//     <g class="reference-line" data-label="...">
//     <g class="legend-item" data-series="NAME"> one per series or segment

#include <string>

#include "reports/report_model.hpp"

namespace clustersim::reports {

std::string render_chart_svg(const Chart& chart);

}  // namespace clustersim::reports
