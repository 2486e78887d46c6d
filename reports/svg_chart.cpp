#include "reports/svg_chart.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "reports/chart_scale.hpp"
#include "reports/value_format.hpp"
#include "reports/xml_escape.hpp"

namespace clustersim::reports {

namespace {

constexpr double kWidth = 760;
constexpr double kFont = 12;           // px, tick labels and legend
constexpr double kCharWidth = 0.6;     // average glyph width of a sans-serif font, in em
constexpr std::size_t kMaxLabel = 28;  // characters of a category or legend label before "…"
// Okabe and Ito's palette, distinguishable with the common colour-vision deficiencies.
constexpr std::array<const char*, 8> kPalette{"#0072b2", "#e69f00", "#009e73", "#d55e00",
                                              "#cc79a7", "#56b4e9", "#000000", "#f0e442"};

const char* colour(std::size_t i) { return kPalette[i % kPalette.size()]; }

// Pixel coordinates with two decimals, trailing zeros dropped.
std::string px(double v) {
  std::string s = format_fixed(std::round(v * 100) / 100, 2);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

std::size_t code_points(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

double text_width(std::string_view s, double font = kFont) {
  return static_cast<double>(code_points(s)) * font * kCharWidth;
}

// At most `max` code points, the last replaced by an ellipsis when cut.
std::string shorten(std::string_view s, std::size_t max = kMaxLabel) {
  if (code_points(s) <= max) return std::string(s);
  std::string out;
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool starts = (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
    if (starts && ++n == max) break;
    out += s[i];
  }
  return out + "…";
}

std::string axis_title(const Axis& axis, const DisplayUnit& unit) {
  std::string t = axis.label;
  if (!unit.name.empty()) t += " (" + unit.name + ")";
  if (axis.scale != AxisScale::LINEAR) t += ", log scale";
  return t;
}

std::string svg_open(const Chart& chart, double height) {
  std::string s = "<svg class=\"chart\" data-chart=\"" + escape_xml(chart.id) + "\" viewBox=\"0 0 " + px(kWidth) + " " +
                  px(height) + "\" width=\"" + px(kWidth) + "\" height=\"" + px(height) +
                  "\" role=\"img\" aria-label=\"" + escape_xml(chart.title) + "\" font-size=\"" + px(kFont) + "\">\n";
  s += "<title>" + escape_xml(chart.title) + "</title>\n";
  return s;
}

std::string text(double x, double y, std::string_view content, std::string_view anchor = "start",
                 std::string_view extra = "") {
  std::string s = "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\"";
  if (anchor != "start") s += " text-anchor=\"" + std::string(anchor) + "\"";
  if (!extra.empty()) s += " " + std::string(extra);
  return s + ">" + escape_xml(content) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, std::string_view extra = "") {
  std::string s = "<line x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" + px(y2) + "\"";
  if (!extra.empty()) s += " " + std::string(extra);
  return s + "/>\n";
}

// A marker of shape `shape` (circle, square, triangle, diamond) centred on (x, y), with an
// optional tooltip.
std::string marker(std::size_t shape, double x, double y, double r, std::string_view tooltip) {
  std::string s;
  switch (shape % 4) {
    case 0: s = "<circle cx=\"" + px(x) + "\" cy=\"" + px(y) + "\" r=\"" + px(r) + "\""; break;
    case 1:
      s = "<rect x=\"" + px(x - r) + "\" y=\"" + px(y - r) + "\" width=\"" + px(2 * r) + "\" height=\"" + px(2 * r) +
          "\"";
      break;
    case 2:
      s = "<path d=\"M" + px(x) + "," + px(y - 1.2 * r) + " L" + px(x + 1.1 * r) + "," + px(y + 0.8 * r) + " L" +
          px(x - 1.1 * r) + "," + px(y + 0.8 * r) + " Z\"";
      break;
    default:
      s = "<path d=\"M" + px(x) + "," + px(y - 1.3 * r) + " L" + px(x + 1.3 * r) + "," + px(y) + " L" + px(x) + "," +
          px(y + 1.3 * r) + " L" + px(x - 1.3 * r) + "," + px(y) + " Z\"";
      break;
  }
  if (tooltip.empty()) return s + "/>\n";
  return s + "><title>" + escape_xml(tooltip) + "</title></" +
         (shape % 4 == 0   ? "circle"
          : shape % 4 == 1 ? "rect"
                           : "path") +
         ">\n";
}

std::string no_data(const Chart& chart) {
  const double h = 120;
  return svg_open(chart, h) + text(kWidth / 2, h / 2, "No data", "middle", "class=\"no-data\"") + "</svg>\n";
}

// One axis mapped onto pixels [p0, p1] (p1 < p0 for a vertical axis drawn upwards).
struct PixelAxis {
  AxisTicks ticks;
  AxisScale scale = AxisScale::LINEAR;
  DisplayUnit unit;
  double p0 = 0;
  double p1 = 1;
  double at(double value) const {  // value in SI units
    return p0 + (p1 - p0) * axis_fraction(value / unit.divisor, ticks, scale);
  }
  bool inside(double value) const {
    const double f = axis_fraction(value / unit.divisor, ticks, scale);
    return f >= -1e-9 && f <= 1 + 1e-9;
  }
};

double max_label_width(const AxisTicks& t) {
  double w = 0;
  for (const auto& l : t.labels) w = std::max(w, text_width(l));
  return w;
}

// Vertical value axis on the left: grid lines, tick labels, title rotated.
std::string left_axis(const PixelAxis& a, const Axis& axis, double x0, double x1, double title_x) {
  std::string s = "<g class=\"axis y-axis\">\n";
  for (std::size_t i = 0; i < a.ticks.ticks.size(); ++i) {
    const double y = a.p0 + (a.p1 - a.p0) * axis_fraction(a.ticks.ticks[i], a.ticks, a.scale);
    s += line(x0, y, x1, y, "class=\"grid\" stroke=\"#d9d9d9\"");
    s += text(x0 - 6, y + 4, a.ticks.labels[i], "end");
  }
  s += line(x0, a.p0, x0, a.p1, "stroke=\"#444444\"");
  const double mid = (a.p0 + a.p1) / 2;
  s += text(title_x, mid, axis_title(axis, a.unit), "middle",
            "class=\"axis-title\" transform=\"rotate(-90 " + px(title_x) + " " + px(mid) + ")\"");
  return s + "</g>\n";
}

// Horizontal value axis at the bottom.
std::string bottom_axis(const PixelAxis& a, const Axis& axis, double y0, double y1, bool vertical_grid) {
  std::string s = "<g class=\"axis x-axis\">\n";
  for (std::size_t i = 0; i < a.ticks.ticks.size(); ++i) {
    const double x = a.p0 + (a.p1 - a.p0) * axis_fraction(a.ticks.ticks[i], a.ticks, a.scale);
    if (vertical_grid) s += line(x, y0, x, y1, "class=\"grid\" stroke=\"#d9d9d9\"");
    s += line(x, y1, x, y1 + 4, "stroke=\"#444444\"");
    s += text(x, y1 + 17, a.ticks.labels[i], "middle");
  }
  s += line(a.p0, y1, a.p1, y1, "stroke=\"#444444\"");
  s += text((a.p0 + a.p1) / 2, y1 + 38, axis_title(axis, a.unit), "middle", "class=\"axis-title\"");
  return s + "</g>\n";
}

PixelAxis make_axis(const Axis& axis, double lo, double hi, double magnitude, int target) {
  PixelAxis a;
  a.scale = axis.scale;
  a.unit = display_unit(axis.type, axis.unit, magnitude);
  auto scaled = [&](const std::optional<double>& v) -> std::optional<double> {
    if (!v) return std::nullopt;
    return *v / a.unit.divisor;
  };
  a.ticks =
      compute_ticks(lo / a.unit.divisor, hi / a.unit.divisor, axis.scale, target, scaled(axis.min), scaled(axis.max));
  return a;
}

std::string value_text(double v, const Axis& axis) { return format_value(v, axis.type, axis.unit, 4); }

// ---------------------------------------------------------------------------------------------
// XY charts

std::string render_xy(const Chart& chart) {
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  for (const auto& s : chart.series) {
    for (const auto& p : s.points) {
      xlo = std::min({xlo, p.x, p.x_band ? p.x_band->low : p.x});
      xhi = std::max({xhi, p.x, p.x_band ? p.x_band->high : p.x});
      ylo = std::min({ylo, p.y, p.y_band ? p.y_band->low : p.y});
      yhi = std::max({yhi, p.y, p.y_band ? p.y_band->high : p.y});
    }
  }
  if (!(xlo <= xhi)) return no_data(chart);
  // Reference lines (a deadline, a budget) stay in view.
  for (const auto& ref : chart.reference_lines) {
    double& lo = ref.on_x ? xlo : ylo;
    double& hi = ref.on_x ? xhi : yhi;
    lo = std::min(lo, ref.value);
    hi = std::max(hi, ref.value);
  }

  // Tall enough for the legend, one 20 px row per series.
  const double height = std::max(400.0, 40 + 20 * static_cast<double>(chart.series.size()));
  PixelAxis ax = make_axis(chart.x, xlo, xhi, std::max(std::fabs(xlo), std::fabs(xhi)), 7);
  PixelAxis ay = make_axis(chart.y, ylo, yhi, std::max(std::fabs(ylo), std::fabs(yhi)), 6);

  double legend_w = 0;
  for (const auto& s : chart.series) legend_w = std::max(legend_w, 40 + text_width(shorten(s.name)));
  legend_w = std::min(legend_w, 250.0);
  const double left = 26 + max_label_width(ay.ticks) + 10;
  const double right = kWidth - legend_w - 18;
  const double top = 18;
  const double bottom = height - 52;
  ax.p0 = left;
  ax.p1 = right;
  ay.p0 = bottom;
  ay.p1 = top;

  // A highlighted series (the Pareto frontier) is drawn bold in near-black over the others,
  // which keep their colours (one per system).
  auto series_colour = [&](std::size_t si) -> std::string {
    return chart.series[si].highlight ? "#222222" : colour(si);
  };

  std::string out = svg_open(chart, height);
  out += left_axis(ay, chart.y, left, right, 14);
  out += bottom_axis(ax, chart.x, top, bottom, true);

  for (std::size_t si = 0; si < chart.series.size(); ++si) {
    const Series& s = chart.series[si];
    const std::string c = series_colour(si);
    const bool faint = s.style == Series::Style::SCATTER && s.points.size() > 200;
    out += "<g class=\"series" + std::string(s.highlight ? " highlight" : "") + "\" data-series=\"" +
           escape_xml(s.name) + "\" fill=\"" + c + "\" stroke=\"" + c + "\"" + (faint ? " opacity=\"0.6\"" : "") +
           ">\n";
    std::vector<std::size_t> order(s.points.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return s.points[a].x < s.points[b].x; });
    auto visible = [&](const ChartPoint& p) { return ax.inside(p.x) && ay.inside(p.y); };

    if (s.style != Series::Style::SCATTER) {
      std::string pts;
      for (std::size_t i : order) {
        const auto& p = s.points[i];
        if (!visible(p)) continue;
        if (!pts.empty()) pts += ' ';
        pts += px(ax.at(p.x)) + "," + px(ay.at(p.y));
      }
      if (!pts.empty()) {
        out += "<polyline fill=\"none\" stroke-width=\"" + std::string(s.highlight ? "2.5" : "1.6") + "\" points=\"" +
               pts + "\"/>\n";
      }
    }
    for (std::size_t i : order) {
      const auto& p = s.points[i];
      if (!visible(p) || !p.y_band) continue;
      const double x = ax.at(p.x);
      const double lo = ay.at(std::max(p.y_band->low, ay.ticks.lo * ay.unit.divisor));
      const double hi = ay.at(std::min(p.y_band->high, ay.ticks.hi * ay.unit.divisor));
      out += "<path class=\"band\" fill=\"none\" stroke-width=\"1\" d=\"M" + px(x - 3) + "," + px(lo) + " H" +
             px(x + 3) + " M" + px(x) + "," + px(lo) + " V" + px(hi) + " M" + px(x - 3) + "," + px(hi) + " H" +
             px(x + 3) + "\"/>\n";
    }
    for (std::size_t i : order) {
      const auto& p = s.points[i];
      if (!visible(p) || !p.x_band) continue;
      const double y = ay.at(p.y);
      const double lo = ax.at(std::max(p.x_band->low, ax.ticks.lo * ax.unit.divisor));
      const double hi = ax.at(std::min(p.x_band->high, ax.ticks.hi * ax.unit.divisor));
      out += "<path class=\"band x-band\" fill=\"none\" stroke-width=\"1\" d=\"M" + px(lo) + "," + px(y - 3) + " V" +
             px(y + 3) + " M" + px(lo) + "," + px(y) + " H" + px(hi) + " M" + px(hi) + "," + px(y - 3) + " V" +
             px(y + 3) + "\"/>\n";
    }
    const double r = s.highlight ? 4.5 : (s.style == Series::Style::SCATTER ? 3.2 : 3.5);
    for (std::size_t i : order) {
      const auto& p = s.points[i];
      if (!visible(p) || s.style == Series::Style::LINE) continue;
      std::string tip = (p.tooltip.empty() ? s.name : p.tooltip) + ": " + value_text(p.x, chart.x);
      if (p.x_band) tip += " (" + format_band(*p.x_band, chart.x.type, chart.x.unit, 4) + ")";
      tip += ", " + value_text(p.y, chart.y);
      if (p.y_band) tip += " (" + format_band(*p.y_band, chart.y.type, chart.y.unit, 4) + ")";
      if (!p.label.empty() && p.tooltip.empty()) tip += ", " + p.label;
      out += marker(si, ax.at(p.x), ay.at(p.y), r, tip);
    }
    for (std::size_t i : order) {
      const auto& p = s.points[i];
      if (!visible(p) || p.label.empty()) continue;
      const double x = ax.at(p.x);
      const double y = ay.at(p.y);
      const bool near_right = x + 8 + text_width(p.label, 11) > right;
      out += text(near_right ? x - 7 : x + 7, y - 7, p.label, near_right ? "end" : "start",
                  "class=\"point-label\" font-size=\"11\" stroke=\"none\" fill=\"#222222\"");
    }
    out += "</g>\n";
  }
  for (const auto& ref : chart.reference_lines) {
    const std::string label = ref.label + " " + value_text(ref.value, ref.on_x ? chart.x : chart.y);
    out += "<g class=\"reference-line\" data-label=\"" + escape_xml(ref.label) + "\">\n";
    if (ref.on_x) {
      const double x = ax.at(ref.value);
      out += line(x, top, x, bottom, "stroke=\"#c00000\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"");
      const bool near_right = x + 6 + text_width(label) > right;
      out += text(near_right ? x - 4 : x + 4, top + 12, label, near_right ? "end" : "start", "fill=\"#c00000\"");
    } else {
      const double y = ay.at(ref.value);
      out += line(left, y, right, y, "stroke=\"#c00000\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"");
      out += text(right - 4, y - 5, label, "end", "fill=\"#c00000\"");
    }
    out += "<title>" + escape_xml(label) + "</title>\n</g>\n";
  }

  out += "<g class=\"legend\">\n";
  for (std::size_t si = 0; si < chart.series.size(); ++si) {
    const Series& s = chart.series[si];
    const std::string c = series_colour(si);
    const double lx = right + 18;
    const double ly = top + 8 + 20 * static_cast<double>(si);
    out += "<g class=\"legend-item\" data-series=\"" + escape_xml(s.name) + "\" fill=\"" + c + "\" stroke=\"" + c +
           "\">\n";
    if (s.style != Series::Style::SCATTER) out += line(lx, ly, lx + 22, ly, "stroke-width=\"2\"");
    if (s.style != Series::Style::LINE) out += marker(si, lx + 11, ly, 3.5, "");
    out += text(lx + 28, ly + 4, shorten(s.name), "start", "stroke=\"none\" fill=\"#222222\"");
    out += "<title>" + escape_xml(s.name) + "</title>\n</g>\n";
  }
  out += "</g>\n</svg>\n";
  return out;
}

// ---------------------------------------------------------------------------------------------
// Stacked bars

double bar_total(const Bar& b) { return std::accumulate(b.values.begin(), b.values.end(), 0.0); }

std::string bar_tooltip(const Chart& chart, const Bar& bar, std::size_t seg) {
  const double total = bar_total(bar);
  std::string tip = bar.label + ": " + chart.segments[seg] + " " + value_text(bar.values[seg], chart.y);
  if (total > 0) tip += " (" + format_value(bar.values[seg] / total, ValueType::PERCENT, "", 3) + " of the total)";
  return tip;
}

std::string total_tooltip(const Chart& chart, const Bar& bar) {
  std::string tip = bar.label + ": total " + value_text(bar_total(bar), chart.y);
  if (bar.total_band) tip += " (" + format_band(*bar.total_band, chart.y.type, chart.y.unit, 4) + ")";
  return tip;
}

std::string legend_swatch(const std::string& name, std::size_t i, double x, double y) {
  std::string s = "<g class=\"legend-item\" data-series=\"" + escape_xml(name) + "\">\n";
  s += "<rect x=\"" + px(x) + "\" y=\"" + px(y - 9) + "\" width=\"12\" height=\"12\" fill=\"" + colour(i) + "\"/>\n";
  s += text(x + 17, y + 1, shorten(name), "start");
  return s + "<title>" + escape_xml(name) + "</title>\n</g>\n";
}

std::string render_bars_horizontal(const Chart& chart, double vmax) {
  const std::size_t n = chart.bars.size();
  constexpr double kBar = 22;
  constexpr double kGap = 14;
  // Legend rows at the top, wrapped to the width.
  std::vector<std::pair<double, double>> legend_pos;
  double lx = 12;
  double ly = 16;
  for (const auto& seg : chart.segments) {
    const double w = 30 + text_width(shorten(seg));
    if (lx + w > kWidth - 12 && lx > 12) {
      lx = 12;
      ly += 20;
    }
    legend_pos.emplace_back(lx, ly);
    lx += w;
  }
  double label_w = 0;
  for (const auto& b : chart.bars) label_w = std::max(label_w, text_width(shorten(b.label)));
  const double left = 14 + std::min(label_w, 230.0);
  const double right = kWidth - 96;
  // The category axis title sits between the legend and the first bar.
  const double top = ly + 18 + (chart.x.label.empty() ? 0 : 14);
  const double bottom = top + static_cast<double>(n) * (kBar + kGap) + kGap;
  const double height = bottom + 52;

  PixelAxis ax = make_axis(chart.y, 0, vmax, vmax, 6);
  if (!chart.y.min) {
    ax.ticks = compute_ticks(0, vmax / ax.unit.divisor, AxisScale::LINEAR, 6, 0.0,
                             chart.y.max ? std::optional<double>(*chart.y.max / ax.unit.divisor) : std::nullopt);
  }
  ax.p0 = left;
  ax.p1 = right;

  std::string out = svg_open(chart, height);
  out += "<g class=\"legend\">\n";
  for (std::size_t i = 0; i < chart.segments.size(); ++i) {
    out += legend_swatch(chart.segments[i], i, legend_pos[i].first, legend_pos[i].second);
  }
  out += "</g>\n";
  out += bottom_axis(ax, chart.y, top, bottom, true);
  if (!chart.x.label.empty()) {
    out += text(12, top + 2, chart.x.label, "start", "class=\"axis-title\" font-weight=\"bold\"");
  }
  for (std::size_t b = 0; b < n; ++b) {
    const Bar& bar = chart.bars[b];
    const double y = top + kGap + static_cast<double>(b) * (kBar + kGap);
    out += "<g class=\"bar\" data-bar=\"" + escape_xml(bar.label) + "\">\n";
    out += text(left - 6, y + kBar / 2 + 4, shorten(bar.label), "end", "class=\"category\"");
    double acc = 0;
    for (std::size_t s = 0; s < bar.values.size(); ++s) {
      if (bar.values[s] <= 0) continue;
      const double x0 = ax.at(acc);
      acc += bar.values[s];
      const double x1 = ax.at(acc);
      out += "<rect class=\"segment\" data-segment=\"" + escape_xml(chart.segments[s]) + "\" x=\"" + px(x0) +
             "\" y=\"" + px(y) + "\" width=\"" + px(std::max(0.0, x1 - x0)) + "\" height=\"" + px(kBar) + "\" fill=\"" +
             colour(s) + "\"><title>" + escape_xml(bar_tooltip(chart, bar, s)) + "</title></rect>\n";
    }
    const double total = bar_total(bar);
    double label_x = ax.at(total) + 6;
    if (bar.total_band) {
      const double lo = ax.at(bar.total_band->low);
      const double hi = ax.at(bar.total_band->high);
      const double cy = y + kBar / 2;
      out += "<path class=\"band\" fill=\"none\" stroke=\"#222222\" d=\"M" + px(lo) + "," + px(cy - 5) + " V" +
             px(cy + 5) + " M" + px(lo) + "," + px(cy) + " H" + px(hi) + " M" + px(hi) + "," + px(cy - 5) + " V" +
             px(cy + 5) + "\"/>\n";
      label_x = std::max(label_x, hi + 6);
    }
    out += "<text class=\"total\" x=\"" + px(label_x) + "\" y=\"" + px(y + kBar / 2 + 4) + "\"><title>" +
           escape_xml(total_tooltip(chart, bar)) + "</title>" + escape_xml(value_text(total, chart.y)) + "</text>\n";
    out += "</g>\n";
  }
  for (const auto& ref : chart.reference_lines) {
    const double x = ax.at(ref.value);
    out += "<g class=\"reference-line\" data-label=\"" + escape_xml(ref.label) + "\">\n";
    out += line(x, top, x, bottom, "stroke=\"#c00000\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"");
    out += text(x, top - 4, ref.label + " " + value_text(ref.value, chart.y), "middle", "fill=\"#c00000\"");
    out += "</g>\n";
  }
  return out + "</svg>\n";
}

std::string render_bars_vertical(const Chart& chart, double vmax) {
  const std::size_t n = chart.bars.size();
  const double height = std::max(420.0, 60 + 20 * static_cast<double>(chart.segments.size()));
  double legend_w = 0;
  for (const auto& s : chart.segments) legend_w = std::max(legend_w, 36 + text_width(shorten(s)));
  legend_w = std::min(legend_w, 230.0);

  PixelAxis ay = make_axis(chart.y, 0, vmax, vmax, 6);
  if (!chart.y.min) {
    ay.ticks = compute_ticks(0, vmax / ay.unit.divisor, AxisScale::LINEAR, 6, 0.0,
                             chart.y.max ? std::optional<double>(*chart.y.max / ay.unit.divisor) : std::nullopt);
  }
  const double left = 26 + max_label_width(ay.ticks) + 10;
  const double right = kWidth - legend_w - 18;
  const double slot = (right - left) / static_cast<double>(std::max<std::size_t>(n, 1));
  double label_w = 0;
  for (const auto& b : chart.bars) label_w = std::max(label_w, text_width(shorten(b.label, 24)));
  const bool rotate = label_w > slot - 4;
  const double label_h = rotate ? std::min(label_w * 0.6 + 10, 110.0) : 18;
  const double top = 28;
  const double bottom = height - 34 - label_h;
  ay.p0 = bottom;
  ay.p1 = top;
  const double bar_w = std::min(56.0, slot * 0.62);

  std::string out = svg_open(chart, height);
  out += left_axis(ay, chart.y, left, right, 14);
  out += line(left, bottom, right, bottom, "stroke=\"#444444\"");
  if (!chart.x.label.empty()) {
    out += text((left + right) / 2, height - 10, chart.x.label, "middle", "class=\"axis-title\"");
  }
  for (std::size_t b = 0; b < n; ++b) {
    const Bar& bar = chart.bars[b];
    const double cx = left + slot * (static_cast<double>(b) + 0.5);
    out += "<g class=\"bar\" data-bar=\"" + escape_xml(bar.label) + "\">\n";
    if (rotate) {
      out += text(cx, bottom + 14, shorten(bar.label, 24), "end",
                  "class=\"category\" transform=\"rotate(-35 " + px(cx) + " " + px(bottom + 14) + ")\"");
    } else {
      out += text(cx, bottom + 16, shorten(bar.label, 24), "middle", "class=\"category\"");
    }
    double acc = 0;
    for (std::size_t s = 0; s < bar.values.size(); ++s) {
      if (bar.values[s] <= 0) continue;
      const double y0 = ay.at(acc);
      acc += bar.values[s];
      const double y1 = ay.at(acc);
      out += "<rect class=\"segment\" data-segment=\"" + escape_xml(chart.segments[s]) + "\" x=\"" +
             px(cx - bar_w / 2) + "\" y=\"" + px(y1) + "\" width=\"" + px(bar_w) + "\" height=\"" +
             px(std::max(0.0, y0 - y1)) + "\" fill=\"" + colour(s) + "\"><title>" +
             escape_xml(bar_tooltip(chart, bar, s)) + "</title></rect>\n";
    }
    const double total = bar_total(bar);
    double label_y = ay.at(total) - 6;
    if (bar.total_band) {
      const double lo = ay.at(bar.total_band->low);
      const double hi = ay.at(bar.total_band->high);
      out += "<path class=\"band\" fill=\"none\" stroke=\"#222222\" d=\"M" + px(cx - 5) + "," + px(lo) + " H" +
             px(cx + 5) + " M" + px(cx) + "," + px(lo) + " V" + px(hi) + " M" + px(cx - 5) + "," + px(hi) + " H" +
             px(cx + 5) + "\"/>\n";
      label_y = std::min(label_y, hi - 6);
    }
    out += "<text class=\"total\" x=\"" + px(cx) + "\" y=\"" + px(label_y) +
           "\" text-anchor=\"middle\" font-size=\"11\"><title>" + escape_xml(total_tooltip(chart, bar)) + "</title>" +
           escape_xml(value_text(total, chart.y)) + "</text>\n";
    out += "</g>\n";
  }
  for (const auto& ref : chart.reference_lines) {
    const double y = ay.at(ref.value);
    out += "<g class=\"reference-line\" data-label=\"" + escape_xml(ref.label) + "\">\n";
    out += line(left, y, right, y, "stroke=\"#c00000\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"");
    out += text(right - 4, y - 5, ref.label + " " + value_text(ref.value, chart.y), "end", "fill=\"#c00000\"");
    out += "</g>\n";
  }
  out += "<g class=\"legend\">\n";
  for (std::size_t i = 0; i < chart.segments.size(); ++i) {
    out += legend_swatch(chart.segments[i], i, right + 18, top + 8 + 20 * static_cast<double>(i));
  }
  out += "</g>\n";
  return out + "</svg>\n";
}

std::string render_bars(const Chart& chart) {
  if (chart.bars.empty()) return no_data(chart);
  double vmax = 0;
  for (const auto& b : chart.bars) {
    vmax = std::max(vmax, bar_total(b));
    if (b.total_band) vmax = std::max(vmax, b.total_band->high);
  }
  for (const auto& r : chart.reference_lines) vmax = std::max(vmax, r.value);
  if (vmax <= 0) vmax = 1;
  return chart.orientation == Chart::Orientation::HORIZONTAL ? render_bars_horizontal(chart, vmax)
                                                             : render_bars_vertical(chart, vmax);
}

}  // namespace

std::string render_chart_svg(const Chart& chart) {
  return chart.kind == Chart::Kind::XY ? render_xy(chart) : render_bars(chart);
}

}  // namespace clustersim::reports
