#include "reports/report_model.hpp"

#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

namespace clustersim::reports {

namespace {

bool is_id(std::string_view s) {
  if (s.empty()) return false;
  for (const char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

std::string at(const std::string& base, std::string_view key) { return base + "/" + std::string(key); }
std::string at(const std::string& base, std::size_t i) { return base + "/" + std::to_string(i); }

// Walks the report and stops at the first problem.
class Checker {
 public:
  std::optional<ReportProblem> problem;

  bool fail(std::string pointer, std::string message) {
    if (!problem) problem = ReportProblem{std::move(pointer), std::move(message)};
    return false;
  }

  bool finite(const std::string& p, double v) { return std::isfinite(v) || fail(p, "expected a finite number"); }

  // `kind`: "section", "chart", "table" or "assumption group"; ids are unique within a kind.
  bool id(const std::string& p, const std::string& value, const std::string& kind) {
    if (!is_id(value)) return fail(p, "expected an id of a-z, 0-9, '-' and '_', got '" + value + "'");
    if (!ids_[kind].insert(value).second) return fail(p, kind + " id '" + value + "' is used twice in the report");
    if (kind == "table" && (value == "summary" || value == "assumptions")) {
      return fail(p, "table id '" + value + "' is reserved for the CSV section of the same name");
    }
    return true;
  }

  bool digits(const std::string& p, int d) { return (d >= 1 && d <= 17) || fail(p, "expected 1 to 17 digits"); }

  bool band(const std::string& p, const std::optional<Band>& b) {
    if (!b) return true;
    return finite(at(p, "low"), b->low) && finite(at(p, "high"), b->high) &&
           (b->low <= b->high || fail(p, "band low is above band high"));
  }

  bool cell(const std::string& p, const Cell& c, ValueType type) {
    if (c.is_empty()) return true;
    if (type == ValueType::TEXT) {
      return c.is_text() || fail(p, "expected text in a text column");
    }
    if (!c.is_number()) return fail(p, "expected a number in a " + std::string(value_type_name(type)) + " column");
    return finite(p, c.number()) && band(p, c.band());
  }

  bool table(const std::string& p, const Table& t) {
    if (!id(at(p, "id"), t.id, "table")) return false;
    if (t.columns.empty()) return fail(at(p, "columns"), "a table needs at least one column");
    std::set<std::string, std::less<>> keys;
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
      const std::string cp = at(at(p, "columns"), c);
      const Column& col = t.columns[c];
      if (!is_id(col.key)) return fail(at(cp, "key"), "expected a key of a-z, 0-9, '-' and '_', got '" + col.key + "'");
      if (!keys.insert(col.key).second) return fail(at(cp, "key"), "column key '" + col.key + "' is used twice");
      if (!digits(at(cp, "digits"), col.digits)) return false;
    }
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      const std::string rp = at(at(p, "rows"), r);
      if (t.rows[r].size() != t.columns.size()) {
        return fail(rp,
                    std::to_string(t.rows[r].size()) + " cells for " + std::to_string(t.columns.size()) + " columns");
      }
      for (std::size_t c = 0; c < t.columns.size(); ++c) {
        if (!cell(at(rp, c), t.rows[r][c], t.columns[c].type)) return false;
      }
    }
    return true;
  }

  bool axis_value(const std::string& p, double v, const Axis& axis) {
    if (!finite(p, v)) return false;
    if (axis.scale != AxisScale::LINEAR && !(v > 0)) return fail(p, "a log axis needs values > 0");
    return true;
  }

  bool axis(const std::string& p, const Axis& a) {
    if (a.type == ValueType::TEXT) return fail(at(p, "type"), "an axis holds numbers, not text");
    if (a.min && !axis_value(at(p, "min"), *a.min, a)) return false;
    if (a.max && !axis_value(at(p, "max"), *a.max, a)) return false;
    if (a.min && a.max && !(*a.min < *a.max)) return fail(p, "axis min must be below max");
    return true;
  }

  bool chart(const std::string& p, const Chart& ch) {
    if (!id(at(p, "id"), ch.id, "chart")) return false;
    if (!axis(at(p, "y"), ch.y)) return false;
    if (ch.kind == Chart::Kind::XY) {
      if (!axis(at(p, "x"), ch.x)) return false;
      if (!ch.segments.empty() || !ch.bars.empty()) return fail(p, "an xy chart has series, not bars or segments");
      for (std::size_t r = 0; r < ch.reference_lines.size(); ++r) {
        const auto& ref = ch.reference_lines[r];
        if (!axis_value(at(at(at(p, "reference_lines"), r), "value"), ref.value, ref.on_x ? ch.x : ch.y)) return false;
      }
      for (std::size_t s = 0; s < ch.series.size(); ++s) {
        const std::string sp = at(at(p, "series"), s);
        const Series& ser = ch.series[s];
        if (ser.name.empty()) return fail(at(sp, "name"), "a series needs a name");
        for (std::size_t i = 0; i < ser.points.size(); ++i) {
          const std::string pp = at(at(sp, "points"), i);
          const ChartPoint& pt = ser.points[i];
          if (!axis_value(at(pp, "x"), pt.x, ch.x) || !axis_value(at(pp, "y"), pt.y, ch.y)) return false;
          if (!band(pp, pt.y_band) || !band(pp, pt.x_band)) return false;
          if (pt.x_band && !(axis_value(at(pp, "x_low"), pt.x_band->low, ch.x) &&
                             axis_value(at(pp, "x_high"), pt.x_band->high, ch.x))) {
            return false;
          }
          if (pt.y_band &&
              !(axis_value(at(pp, "low"), pt.y_band->low, ch.y) && axis_value(at(pp, "high"), pt.y_band->high, ch.y))) {
            return false;
          }
        }
      }
      return true;
    }
    if (!ch.series.empty()) return fail(at(p, "series"), "a bar chart has bars, not series");
    if (ch.y.scale != AxisScale::LINEAR) return fail(at(p, "y"), "stacked bars need a linear value axis");
    if (ch.x.type != ValueType::TEXT && ch.x.type != ValueType::NUMBER) {
      return fail(at(p, "x"), "the category axis of a bar chart has no value type");
    }
    if (ch.segments.empty()) return fail(at(p, "segments"), "a bar chart needs at least one segment");
    for (std::size_t b = 0; b < ch.bars.size(); ++b) {
      const std::string bp = at(at(p, "bars"), b);
      const Bar& bar = ch.bars[b];
      if (bar.values.size() != ch.segments.size()) {
        return fail(at(bp, "values"), std::to_string(bar.values.size()) + " values for " +
                                          std::to_string(ch.segments.size()) + " segments");
      }
      for (std::size_t i = 0; i < bar.values.size(); ++i) {
        if (!finite(at(at(bp, "values"), i), bar.values[i])) return false;
        if (bar.values[i] < 0) return fail(at(at(bp, "values"), i), "stacked values must be >= 0");
      }
      if (!band(bp, bar.total_band)) return false;
    }
    for (std::size_t r = 0; r < ch.reference_lines.size(); ++r) {
      if (!finite(at(at(at(p, "reference_lines"), r), "value"), ch.reference_lines[r].value)) return false;
    }
    return true;
  }

  bool report(const Report& r) {
    for (std::size_t i = 0; i < r.summary.size(); ++i) {
      const std::string fp = at(std::string("/summary"), i);
      const Figure& f = r.summary[i];
      if (!is_id(f.key)) return fail(at(fp, "key"), "expected a key of a-z, 0-9, '-' and '_', got '" + f.key + "'");
      if (!digits(at(fp, "digits"), f.digits) || !cell(at(fp, "value"), f.value, f.type)) return false;
    }
    for (std::size_t s = 0; s < r.sections.size(); ++s) {
      const std::string sp = at(std::string("/sections"), s);
      const Section& sec = r.sections[s];
      if (!id(at(sp, "id"), sec.id, "section")) return false;
      for (std::size_t c = 0; c < sec.charts.size(); ++c) {
        if (!chart(at(at(sp, "charts"), c), sec.charts[c])) return false;
      }
      for (std::size_t t = 0; t < sec.tables.size(); ++t) {
        if (!table(at(at(sp, "tables"), t), sec.tables[t])) return false;
      }
    }
    for (std::size_t g = 0; g < r.assumptions.size(); ++g) {
      if (!id(at(at(std::string("/assumptions"), g), "id"), r.assumptions[g].id, "assumption group")) return false;
    }
    if (r.csv_table && !table("/csv_table", *r.csv_table)) return false;
    return true;
  }

 private:
  std::map<std::string, std::set<std::string, std::less<>>> ids_;
};

}  // namespace

void Table::add_row(std::vector<Cell> cells) {
  if (cells.size() != columns.size()) {
    throw std::invalid_argument("table '" + id + "': a row of " + std::to_string(cells.size()) + " cells for " +
                                std::to_string(columns.size()) + " columns");
  }
  rows.push_back(std::move(cells));
}

std::optional<ReportProblem> find_problem(const Report& report) {
  Checker checker;
  checker.report(report);
  return checker.problem;
}

void check_report(const Report& report) {
  if (auto p = find_problem(report)) throw std::invalid_argument("report: " + p->pointer + ": " + p->message);
}

std::string_view value_type_name(ValueType t) {
  switch (t) {
    case ValueType::TEXT: return "text";
    case ValueType::NUMBER: return "number";
    case ValueType::INTEGER: return "integer";
    case ValueType::DURATION: return "duration";
    case ValueType::BYTES: return "bytes";
    case ValueType::DOLLARS: return "dollars";
    case ValueType::PERCENT: return "percent";
  }
  return "number";
}

std::string_view note_level_name(Note::Level l) {
  switch (l) {
    case Note::Level::INFO: return "info";
    case Note::Level::WARNING: return "warning";
    case Note::Level::ERROR: return "error";
  }
  return "info";
}

}  // namespace clustersim::reports
