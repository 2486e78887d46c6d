#include "reports/html_report.hpp"

#include <string_view>

#include "hardware/units.hpp"
#include "reports/svg_chart.hpp"
#include "reports/value_format.hpp"
#include "reports/xml_escape.hpp"

namespace clustersim::reports {

namespace {

constexpr std::string_view kStyle = R"css(
:root { --ink: #1f2328; --muted: #59636e; --line: #d0d7de; --panel: #f6f8fa; --accent: #0072b2; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #ffffff;
  font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header, main, footer, nav { max-width: 1480px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 28px; border-bottom: 1px solid var(--line); padding-bottom: 12px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 32px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 16px; margin: 20px 0 6px; }
.subtitle { font-size: 16px; color: var(--muted); margin: 0 0 6px; }
.meta { color: var(--muted); font-size: 12px; margin: 0; }
nav.toc { margin-top: 12px; font-size: 13px; }
nav.toc ul { list-style: none; padding: 0; margin: 0; display: flex; flex-wrap: wrap; gap: 4px 16px; }
nav.toc a { color: var(--accent); text-decoration: none; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(200px, 1fr)); gap: 12px; }
.figure { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; }
.figure-label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: 0.03em; }
.figure-value { font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; }
.figure-band, .figure-detail { font-size: 12px; color: var(--muted); }
.note { border-left: 4px solid var(--accent); background: var(--panel); padding: 6px 12px; margin: 6px 0; }
.note.warning { border-color: #e69f00; background: #fff8e6; }
.note.error { border-color: #c00000; background: #fdecea; }
.note-level { font-weight: 600; margin-right: 6px; }
figure.chart-figure { margin: 16px 0; }
figure.chart-figure figcaption { font-size: 13px; color: var(--muted); margin-bottom: 4px; }
figure.chart-figure figcaption strong { color: var(--ink); }
svg.chart { max-width: 100%; height: auto; font-family: inherit; }
svg.chart text { fill: #222222; }
svg.chart .legend-item { cursor: pointer; }
svg.chart .legend-item.off { opacity: 0.35; }
.table-wrap { overflow-x: auto; max-width: 100%; margin: 12px 0; }
table { border-collapse: collapse; font-size: 13px; }
table.data { font-size: 12px; }
table.data td { overflow-wrap: break-word; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
caption .table-caption { font-weight: 400; color: var(--muted); }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; vertical-align: top; }
th { background: var(--panel); text-align: left; min-width: 4.5em; }
td.num { white-space: nowrap; }
table.sortable th { cursor: pointer; }
th.num, td.num { text-align: right; font-variant-numeric: tabular-nums; }
td .band { display: block; font-size: 0.9em; color: var(--muted); white-space: normal; }
td.empty { color: var(--muted); }
tbody tr:nth-child(even) { background: #fbfcfd; }
footer { color: var(--muted); font-size: 12px; border-top: 1px solid var(--line); margin-top: 32px; padding-top: 8px;
  padding-bottom: 24px; }
@media (max-width: 900px) { header, main, footer, nav { padding: 0 10px; } table.data { font-size: 11px; }
  th, td { padding: 3px 5px; } }
/* Print (Chromium's --print-to-pdf): landscape, small type, every column on the page. */
@page { size: A4 landscape; margin: 8mm; }
@media print {
  body { font-size: 9px; }
  header, main, footer, nav { max-width: none; padding: 0; }
  nav.toc { display: none; }
  h1 { font-size: 16px; } h2 { font-size: 13px; margin: 12px 0 4px; break-after: avoid; } h3 { font-size: 11px; }
  .figures { grid-template-columns: repeat(5, 1fr); gap: 4px; }
  .figure { padding: 4px 6px; } .figure-value { font-size: 13px; }
  .table-wrap { overflow: visible; max-width: none; }
  table, table.data { width: 100%; font-size: 6.5px; }
  th, td, th.num, td.num, td .band { padding: 1px 2px; white-space: normal; min-width: 0; }
  table.data td { overflow-wrap: break-word; }
  td.num { white-space: nowrap; }
  th { overflow-wrap: normal; word-break: normal; hyphens: none; }
  tbody tr { break-inside: avoid; }
  figure { break-inside: avoid; }
  svg.chart { max-width: 100%; height: auto; }
  tbody tr:nth-child(even) { background: none; }
}
)css";

// Sortable tables (click a header; numbers sort by data-v) and legend entries that hide their
// series. Kept in CDATA so that the page stays well-formed XML.
constexpr std::string_view kScript = R"js(
(function () {
  document.querySelectorAll('svg.chart .legend-item').forEach(function (item) {
    var svg = item.closest('svg');
    var name = item.getAttribute('data-series');
    var targets = Array.prototype.filter.call(svg.querySelectorAll('.series'), function (g) {
      return g.getAttribute('data-series') === name;
    });
    if (targets.length === 0) { item.style.cursor = 'default'; return; }
    item.addEventListener('click', function () {
      var off = item.classList.toggle('off');
      targets.forEach(function (g) { g.style.display = off ? 'none' : ''; });
    });
  });
  document.querySelectorAll('table.sortable').forEach(function (table) {
    var body = table.tBodies[0];
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.addEventListener('click', function () {
        var ascending = th.getAttribute('data-order') !== 'ascending';
        Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.removeAttribute('data-order'); });
        th.setAttribute('data-order', ascending ? 'ascending' : 'descending');
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col], y = b.cells[col];
          var xv = x.getAttribute('data-v'), yv = y.getAttribute('data-v');
          if (xv === null || yv === null) {
            if (xv === null && yv === null) return x.textContent.localeCompare(y.textContent) * (ascending ? 1 : -1);
            return xv === null ? 1 : -1;
          }
          return (parseFloat(xv) - parseFloat(yv)) * (ascending ? 1 : -1);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
})();
)js";

bool is_numeric(ValueType t) { return t != ValueType::TEXT; }

std::string e(std::string_view s) { return escape_xml(s); }

std::string type_label(std::string_view type) {
  std::string s(type);
  for (char& c : s) {
    if (c == '-' || c == '_') c = ' ';
  }
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s;
}

std::string render_figure(const Figure& f) {
  std::string s = "<div class=\"figure\" data-key=\"" + e(f.key) + "\">\n";
  s += "<div class=\"figure-label\">" + e(f.label) + "</div>\n";
  const std::string value = f.value.is_empty()  ? "n/a"
                            : f.value.is_text() ? f.value.text()
                                                : format_value(f.value.number(), f.type, f.unit, f.digits);
  s += "<div class=\"figure-value\">" + e(value) + "</div>\n";
  if (f.value.band()) {
    s += "<div class=\"figure-band\">range " + e(format_band(*f.value.band(), f.type, f.unit, f.digits)) + "</div>\n";
  }
  if (!f.detail.empty()) s += "<div class=\"figure-detail\">" + e(f.detail) + "</div>\n";
  return s + "</div>\n";
}

std::string render_cell(const Cell& c, const Column& col) {
  const bool num = is_numeric(col.type);
  std::string cls = num ? "num" : "";
  if (c.is_empty()) cls += cls.empty() ? "empty" : " empty";
  std::string s = "<td" + (cls.empty() ? std::string() : " class=\"" + cls + "\"");
  if (c.is_number()) {
    s += " data-v=\"" + format_number(c.number()) + "\"";
    if (c.band()) {
      s += " data-low=\"" + format_number(c.band()->low) + "\" data-high=\"" + format_number(c.band()->high) + "\"";
    }
  }
  s += ">";
  if (c.is_empty()) return s + "n/a</td>";
  if (c.is_text()) return s + e(c.text()) + "</td>";
  s += e(format_value(c.number(), col.type, col.unit, col.digits));
  if (c.band()) s += "<span class=\"band\">" + e(format_band(*c.band(), col.type, col.unit, col.digits)) + "</span>";
  return s + "</td>";
}

std::string render_table(const Table& t) {
  std::string s = "<div class=\"table-wrap\" id=\"table-" + e(t.id) +
                  "\">\n<table class=\"data sortable\" data-table=\"" + e(t.id) + "\">\n";
  if (!t.title.empty() || !t.caption.empty()) {
    s += "<caption>" + e(t.title);
    if (!t.caption.empty()) s += " <span class=\"table-caption\">" + e(t.caption) + "</span>";
    s += "</caption>\n";
  }
  s += "<thead><tr>";
  for (const auto& col : t.columns) {
    s += "<th" + std::string(is_numeric(col.type) ? " class=\"num\"" : "") + " data-key=\"" + e(col.key) +
         "\" data-type=\"" + std::string(value_type_name(col.type)) + "\">" + e(col.label) + "</th>";
  }
  s += "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    s += "<tr>";
    for (std::size_t c = 0; c < row.size(); ++c) s += render_cell(row[c], t.columns[c]);
    s += "</tr>\n";
  }
  return s + "</tbody>\n</table>\n</div>\n";
}

std::string render_chart(const Chart& c) {
  std::string s =
      "<figure class=\"chart-figure\" id=\"chart-" + e(c.id) + "\">\n<figcaption><strong>" + e(c.title) + "</strong>";
  if (!c.caption.empty()) s.append(" ").append(e(c.caption));
  s += "</figcaption>\n";
  return s + render_chart_svg(c) + "</figure>\n";
}

std::string render_assumptions(const AssumptionGroup& g) {
  bool has_date = false;
  bool has_region = false;
  for (const auto& a : g.items) {
    has_date = has_date || !a.date.empty();
    has_region = has_region || !a.region.empty();
  }
  std::string s = "<h3 id=\"assumptions-" + e(g.id) + "\">" + e(g.title) + "</h3>\n";
  s += "<div class=\"table-wrap\">\n<table class=\"assumptions\" data-group=\"" + e(g.id) +
       "\">\n<thead><tr><th>Item</th><th>Value</th><th>Source</th>";
  if (has_date) s += "<th>Date</th>";
  if (has_region) s += "<th>Region</th>";
  s += "</tr></thead>\n<tbody>\n";
  for (const auto& a : g.items) {
    s += "<tr><td>" + e(a.name) + "</td><td>" + e(a.value) + "</td><td>" + e(a.source) + "</td>";
    if (has_date) s += "<td>" + e(a.date) + "</td>";
    if (has_region) s += "<td>" + e(a.region) + "</td>";
    s += "</tr>\n";
  }
  return s + "</tbody>\n</table>\n</div>\n";
}

std::string note_label(Note::Level l) {
  switch (l) {
    case Note::Level::INFO: return "Note";
    case Note::Level::WARNING: return "Warning";
    case Note::Level::ERROR: return "Error";
  }
  return "Note";
}

}  // namespace

std::string render_html(const Report& r) {
  check_report(r);
  std::string s;
  s.reserve(64 * 1024);
  s += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n";
  s += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n";
  if (!r.generated_by.empty()) s += "<meta name=\"generator\" content=\"" + e(r.generated_by) + "\"/>\n";
  s += "<title>" + e(r.title) + "</title>\n<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n";

  s += "<header>\n<h1>" + e(r.title) + "</h1>\n";
  if (!r.subtitle.empty()) s += "<p class=\"subtitle\">" + e(r.subtitle) + "</p>\n";
  std::string meta;
  auto add_meta = [&](const std::string& part) {
    if (part.empty()) return;
    if (!meta.empty()) meta += " · ";
    meta += part;
  };
  add_meta(type_label(r.type));
  if (!r.generated_by.empty()) add_meta("generated by " + r.generated_by);
  if (!r.created.empty()) add_meta("generated " + r.created);
  if (!r.inputs_sha256.empty()) add_meta("inputs SHA-256 " + r.inputs_sha256.substr(0, 16) + "…");
  if (!meta.empty()) s += "<p class=\"meta\">" + e(meta) + "</p>\n";
  s += "</header>\n";

  s += "<nav class=\"toc\">\n<ul>\n";
  if (!r.summary.empty()) s += "<li><a href=\"#summary\">Summary</a></li>\n";
  if (!r.notes.empty()) s += "<li><a href=\"#notes\">Notes</a></li>\n";
  for (const auto& sec : r.sections) {
    s += "<li><a href=\"#section-" + e(sec.id) + "\">" + e(sec.title) + "</a></li>\n";
  }
  if (!r.assumptions.empty()) s += "<li><a href=\"#assumptions\">Assumptions</a></li>\n";
  s += "</ul>\n</nav>\n<main>\n";

  if (!r.summary.empty()) {
    s += "<section id=\"summary\">\n<h2>Summary</h2>\n<div class=\"figures\">\n";
    for (const auto& f : r.summary) s += render_figure(f);
    s += "</div>\n</section>\n";
  }
  if (!r.notes.empty()) {
    s += "<section id=\"notes\">\n<h2>Notes</h2>\n";
    for (const auto& n : r.notes) {
      s += "<div class=\"note " + std::string(note_level_name(n.level)) + "\"><span class=\"note-level\">" +
           note_label(n.level) + "</span>" + e(n.text) + "</div>\n";
    }
    s += "</section>\n";
  }
  for (const auto& sec : r.sections) {
    s += "<section id=\"section-" + e(sec.id) + "\">\n<h2>" + e(sec.title) + "</h2>\n";
    for (const auto& p : sec.paragraphs) s += "<p>" + e(p) + "</p>\n";
    for (const auto& c : sec.charts) s += render_chart(c);
    for (const auto& t : sec.tables) s += render_table(t);
    s += "</section>\n";
  }
  if (!r.assumptions.empty()) {
    s += "<section id=\"assumptions\">\n<h2>Assumptions</h2>\n";
    for (const auto& g : r.assumptions) s += render_assumptions(g);
    s += "</section>\n";
  }
  s += "</main>\n<footer>\n<p>" + e(r.title);
  if (!r.generated_by.empty()) s += " · generated by " + e(r.generated_by);
  if (!r.created.empty()) s += " on " + e(r.created);
  if (!r.inputs_sha256.empty()) s += " · SHA-256 of the inputs <code>" + e(r.inputs_sha256) + "</code>";
  s += " · a self-contained page: it loads nothing from the network.</p>\n</footer>\n";
  s += "<script>//<![CDATA[" + std::string(kScript) + "//]]></script>\n</body>\n</html>\n";
  return s;
}

}  // namespace clustersim::reports
