#include "reports/markdown_report.hpp"

#include <algorithm>
#include <numeric>

#include "reports/value_format.hpp"

namespace clustersim::reports {

namespace {

constexpr std::size_t kMaxLabelledPoints = 24;  // labelled points listed under an XY chart

std::string one_line(std::string_view text) {
  std::string s(text);
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return s;
}

// A paragraph: inline escaping, plus the characters that start a block at the start of a line.
std::string paragraph(std::string_view text) {
  std::string s = escape_markdown(text);
  if (!s.empty() && (s[0] == '#' || s[0] == '-' || s[0] == '+' || s[0] == '=')) s.insert(0, 1, '\\');
  std::size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
  if (digits > 0 && digits < s.size() && (s[digits] == '.' || s[digits] == ')')) s.insert(digits, 1, '\\');
  return s;
}

std::string value_of(const Figure& f) {
  if (f.value.is_empty()) return "n/a";
  if (f.value.is_text()) return f.value.text();
  std::string s = format_value(f.value.number(), f.type, f.unit, f.digits);
  if (f.value.band()) s += " (range " + format_band(*f.value.band(), f.type, f.unit, f.digits) + ")";
  return s;
}

std::string table_row(const std::vector<std::string>& cells) {
  std::string s = "|";
  for (const auto& c : cells) s.append(" ").append(escape_markdown(c)).append(" |");
  return s + "\n";
}

std::string align_row(const std::vector<bool>& right) {
  std::string s = "|";
  for (bool r : right) s += r ? " ---: |" : " :--- |";
  return s + "\n";
}

std::string render_table(const Table& t) {
  std::string s;
  if (!t.title.empty() || !t.caption.empty()) {
    s += "**" + escape_markdown(t.title) + "**";
    if (!t.caption.empty()) s.append(t.title.empty() ? "" : " ").append(escape_markdown(t.caption));
    s += "\n\n";
  }
  std::vector<std::string> header;
  std::vector<bool> right;
  for (const auto& c : t.columns) {
    header.push_back(c.label.empty() ? c.key : c.label);
    right.push_back(c.type != ValueType::TEXT);
  }
  s += table_row(header) + align_row(right);
  for (const auto& row : t.rows) {
    std::vector<std::string> cells;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const Column& col = t.columns[c];
      cells.push_back(format_cell(row[c], col.type, col.unit, col.digits));
    }
    s += table_row(cells);
  }
  return s + "\n";
}

std::string axis_name(const Axis& a) {
  std::string s = a.label.empty() ? "value" : a.label;
  if (a.scale != AxisScale::LINEAR) s += " (log scale)";
  return s;
}

std::string render_xy(const Chart& c) {
  std::string s = "x: " + escape_markdown(axis_name(c.x)) + "; y: " + escape_markdown(axis_name(c.y)) + ".\n\n";
  std::vector<std::pair<const Series*, const ChartPoint*>> labelled;
  for (const auto& ser : c.series) {
    s += "- " + escape_markdown(ser.name) + (ser.highlight ? " (highlighted)" : "") + ": ";
    if (ser.points.empty()) {
      s += "no points\n";
      continue;
    }
    auto [xmin, xmax] = std::minmax_element(ser.points.begin(), ser.points.end(),
                                            [](const ChartPoint& a, const ChartPoint& b) { return a.x < b.x; });
    auto [ymin, ymax] = std::minmax_element(ser.points.begin(), ser.points.end(),
                                            [](const ChartPoint& a, const ChartPoint& b) { return a.y < b.y; });
    s += std::to_string(ser.points.size()) + (ser.points.size() == 1 ? " point" : " points") + ", x " +
         escape_markdown(format_value(xmin->x, c.x.type, c.x.unit, 4)) + " to " +
         escape_markdown(format_value(xmax->x, c.x.type, c.x.unit, 4)) + ", y " +
         escape_markdown(format_value(ymin->y, c.y.type, c.y.unit, 4)) + " to " +
         escape_markdown(format_value(ymax->y, c.y.type, c.y.unit, 4)) + "\n";
    for (const auto& p : ser.points) {
      if (!p.label.empty()) labelled.emplace_back(&ser, &p);
    }
  }
  for (const auto& ref : c.reference_lines) {
    s += "- " + escape_markdown(ref.label) + " (reference line at " + (ref.on_x ? "x" : "y") + " = " +
         escape_markdown(format_value(ref.value, ref.on_x ? c.x.type : c.y.type, ref.on_x ? c.x.unit : c.y.unit, 4)) +
         ")\n";
  }
  if (!labelled.empty()) {
    s += "\nLabelled points:\n\n";
    for (std::size_t i = 0; i < labelled.size() && i < kMaxLabelledPoints; ++i) {
      const ChartPoint& p = *labelled[i].second;
      s += "- " + escape_markdown(p.label) + ": " + escape_markdown(format_value(p.x, c.x.type, c.x.unit, 4)) + ", " +
           escape_markdown(format_value(p.y, c.y.type, c.y.unit, 4)) + "\n";
    }
    if (labelled.size() > kMaxLabelledPoints) {
      s += "- and " + std::to_string(labelled.size() - kMaxLabelledPoints) + " more\n";
    }
  }
  return s + "\n";
}

std::string render_bars(const Chart& c) {
  std::vector<std::string> header{c.x.label.empty() ? "Bar" : c.x.label};
  std::vector<bool> right{false};
  for (const auto& seg : c.segments) {
    header.push_back(seg);
    right.push_back(true);
  }
  header.emplace_back("Total");
  right.push_back(true);
  std::string s = table_row(header) + align_row(right);
  for (const auto& b : c.bars) {
    std::vector<std::string> cells{b.label};
    for (double v : b.values) cells.push_back(format_value(v, c.y.type, c.y.unit, 3));
    const double total = std::accumulate(b.values.begin(), b.values.end(), 0.0);
    cells.push_back(format_cell(b.total_band ? Cell(total, *b.total_band) : Cell(total), c.y.type, c.y.unit, 3));
    s += table_row(cells);
  }
  for (const auto& r : c.reference_lines) {
    s += "\nReference line: " + escape_markdown(r.label) + " at " +
         escape_markdown(format_value(r.value, c.y.type, c.y.unit, 4)) + ".\n";
  }
  return s + "\n";
}

std::string render_chart(const Chart& c) {
  std::string s = "*Chart: " + escape_markdown(c.title) + ".*";
  if (!c.caption.empty()) s.append(" ").append(escape_markdown(c.caption));
  s += " (Drawn in the HTML report; its data follow.)\n\n";
  return s + (c.kind == Chart::Kind::XY ? render_xy(c) : render_bars(c));
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

std::string escape_markdown(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : one_line(text)) {
    switch (c) {
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '<':
      case '>':
      case '|':
        out += '\\';
        out += c;
        break;
      default: out += c;
    }
  }
  return out;
}

std::string render_markdown(const Report& r) {
  check_report(r);
  std::string s = "# " + escape_markdown(r.title) + "\n\n";
  if (!r.subtitle.empty()) s += paragraph(r.subtitle) + "\n\n";
  std::string meta;
  if (!r.type.empty()) meta += "Report type: " + escape_markdown(r.type);
  if (!r.generated_by.empty())
    meta += (meta.empty() ? "Generated by " : "; generated by ") + escape_markdown(r.generated_by);
  if (!r.created.empty()) meta += (meta.empty() ? "Generated " : " on ") + escape_markdown(r.created);
  if (!r.inputs_sha256.empty()) meta += (meta.empty() ? "" : "; ") + std::string("SHA-256 of the inputs ") + r.inputs_sha256;
  if (!meta.empty()) s += "*" + meta + ".*\n\n";

  if (!r.summary.empty()) {
    s += "## Summary\n\n";
    for (const auto& f : r.summary) {
      s += "- **" + escape_markdown(f.label) + ":** " + escape_markdown(value_of(f));
      if (!f.detail.empty()) s += " — " + escape_markdown(f.detail);
      s += "\n";
    }
    s += "\n";
  }
  if (!r.notes.empty()) {
    s += "## Notes\n\n";
    for (const auto& n : r.notes) s += "> **" + note_label(n.level) + ":** " + escape_markdown(n.text) + "\n\n";
  }
  for (const auto& sec : r.sections) {
    s += "## " + escape_markdown(sec.title) + "\n\n";
    for (const auto& p : sec.paragraphs) s += paragraph(p) + "\n\n";
    for (const auto& c : sec.charts) s += render_chart(c);
    for (const auto& t : sec.tables) s += render_table(t);
  }
  if (!r.assumptions.empty()) {
    s += "## Assumptions\n\n";
    for (const auto& g : r.assumptions) {
      s += "### " + escape_markdown(g.title) + "\n\n";
      for (const auto& a : g.items) {
        s += "- **" + escape_markdown(a.name) + ":** " + escape_markdown(a.value);
        std::string where;
        if (!a.source.empty()) where += "source: " + escape_markdown(a.source);
        if (!a.date.empty()) where += (where.empty() ? "" : "; ") + ("date: " + escape_markdown(a.date));
        if (!a.region.empty()) where += (where.empty() ? "" : "; ") + ("region: " + escape_markdown(a.region));
        if (!where.empty()) s += " (" + where + ")";
        s += "\n";
      }
      s += "\n";
    }
  }
  // One trailing newline, not two.
  while (s.size() > 1 && s[s.size() - 1] == '\n' && s[s.size() - 2] == '\n') s.pop_back();
  return s;
}

}  // namespace clustersim::reports
