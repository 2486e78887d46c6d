#include "reports/json_report.hpp"

#include <cmath>

namespace clustersim::reports {

namespace {

using OJson = nlohmann::ordered_json;

// Whole numbers are written without a fraction ("16", not "16.0"); reading gives the same double.
OJson number(double v) {
  if (std::fabs(v) < 1e15 && v == std::trunc(v)) return static_cast<std::int64_t>(v);
  return v;
}

std::string_view scale_name(AxisScale s) {
  switch (s) {
    case AxisScale::LINEAR: return "linear";
    case AxisScale::LOG10: return "log10";
    case AxisScale::LOG2: return "log2";
  }
  return "linear";
}

std::string_view style_name(Series::Style s) {
  switch (s) {
    case Series::Style::LINE: return "line";
    case Series::Style::SCATTER: return "scatter";
    case Series::Style::LINE_POINTS: return "line_points";
  }
  return "line_points";
}

OJson cell_json(const Cell& c) {
  if (c.is_empty()) return nullptr;
  if (c.is_text()) return c.text();
  if (!c.band()) return number(c.number());
  OJson o = OJson::object();
  o["value"] = number(c.number());
  o["low"] = number(c.band()->low);
  o["high"] = number(c.band()->high);
  return o;
}

OJson axis_json(const Axis& a) {
  OJson o = OJson::object();
  o["label"] = a.label;
  o["type"] = value_type_name(a.type);
  o["unit"] = a.unit;
  o["scale"] = scale_name(a.scale);
  if (a.min) o["min"] = number(*a.min);
  if (a.max) o["max"] = number(*a.max);
  return o;
}

OJson chart_json(const Chart& c) {
  OJson o = OJson::object();
  o["id"] = c.id;
  o["title"] = c.title;
  o["caption"] = c.caption;
  o["kind"] = c.kind == Chart::Kind::XY ? "xy" : "stacked_bars";
  o["x"] = axis_json(c.x);
  o["y"] = axis_json(c.y);
  if (c.kind == Chart::Kind::XY) {
    OJson series = OJson::array();
    for (const auto& s : c.series) {
      OJson js = OJson::object();
      js["name"] = s.name;
      js["style"] = style_name(s.style);
      js["highlight"] = s.highlight;
      OJson points = OJson::array();
      for (const auto& p : s.points) {
        OJson jp = OJson::object();
        jp["x"] = number(p.x);
        jp["y"] = number(p.y);
        if (p.y_band) {
          jp["low"] = number(p.y_band->low);
          jp["high"] = number(p.y_band->high);
        }
        if (!p.label.empty()) jp["label"] = p.label;
        if (p.x_band) {
          jp["x_low"] = number(p.x_band->low);
          jp["x_high"] = number(p.x_band->high);
        }
        if (!p.tooltip.empty()) jp["tooltip"] = p.tooltip;
        points.push_back(std::move(jp));
      }
      js["points"] = std::move(points);
      series.push_back(std::move(js));
    }
    o["series"] = std::move(series);
    if (!c.reference_lines.empty()) {
      OJson refs = OJson::array();
      for (const auto& r : c.reference_lines) {
        refs.push_back(OJson{{"label", r.label}, {"value", number(r.value)}, {"axis", r.on_x ? "x" : "y"}});
      }
      o["reference_lines"] = std::move(refs);
    }
    return o;
  }
  o["orientation"] = c.orientation == Chart::Orientation::HORIZONTAL ? "horizontal" : "vertical";
  o["segments"] = c.segments;
  OJson bars = OJson::array();
  for (const auto& b : c.bars) {
    OJson jb = OJson::object();
    jb["label"] = b.label;
    OJson values = OJson::array();
    for (double v : b.values) values.push_back(number(v));
    jb["values"] = std::move(values);
    if (b.total_band) {
      jb["low"] = number(b.total_band->low);
      jb["high"] = number(b.total_band->high);
    }
    bars.push_back(std::move(jb));
  }
  o["bars"] = std::move(bars);
  OJson refs = OJson::array();
  for (const auto& r : c.reference_lines) refs.push_back(OJson{{"label", r.label}, {"value", number(r.value)}});
  o["reference_lines"] = std::move(refs);
  return o;
}

OJson table_json(const Table& t) {
  OJson o = OJson::object();
  o["id"] = t.id;
  o["title"] = t.title;
  o["caption"] = t.caption;
  OJson columns = OJson::array();
  for (const auto& c : t.columns) {
    OJson jc = OJson::object();
    jc["key"] = c.key;
    jc["label"] = c.label;
    jc["type"] = value_type_name(c.type);
    jc["unit"] = c.unit;
    jc["digits"] = c.digits;
    columns.push_back(std::move(jc));
  }
  o["columns"] = std::move(columns);
  OJson rows = OJson::array();
  for (const auto& row : t.rows) {
    OJson jr = OJson::array();
    for (const auto& cell : row) jr.push_back(cell_json(cell));
    rows.push_back(std::move(jr));
  }
  o["rows"] = std::move(rows);
  return o;
}

// ---------------------------------------------------------------------------------------------
// Reading

const std::initializer_list<std::string_view> kTypeNames{"text",  "number",  "integer", "duration",
                                                         "bytes", "dollars", "percent"};

ValueType read_type(const ValueReader& v) {
  const std::string s = v.as_choice(kTypeNames);
  for (ValueType t : {ValueType::TEXT, ValueType::NUMBER, ValueType::INTEGER, ValueType::DURATION, ValueType::BYTES,
                      ValueType::DOLLARS, ValueType::PERCENT}) {
    if (value_type_name(t) == s) return t;
  }
  v.fail("a value type");
}

std::vector<std::string> read_strings(const ValueReader& v) {
  std::vector<std::string> out;
  for (const auto& item : v.as_array()) out.push_back(item.as_string());
  return out;
}

std::optional<Band> read_band(ObjectReader& o) {
  const bool low = o.has("low");
  const bool high = o.has("high");
  if (!low && !high) return std::nullopt;
  if (low != high) o.fail("a band needs both 'low' and 'high'");
  return Band{o.at("low").as_number(), o.at("high").as_number()};
}

Cell read_cell(const ValueReader& v) {
  const auto& raw = v.raw();
  if (raw.is_null()) return Cell::empty();
  if (raw.is_string()) return Cell(v.as_string());
  if (raw.is_number()) return Cell(v.as_number());
  if (raw.is_object()) {
    return v.read_object([](ObjectReader& o) {
      const double value = o.at("value").as_number();
      const auto band = read_band(o);
      return band ? Cell(value, *band) : Cell(value);
    });
  }
  v.fail("null, a string, a number or an object {\"value\", \"low\", \"high\"}");
}

Axis read_axis(const ValueReader& v) {
  return v.read_object([](ObjectReader& o) {
    Axis a;
    a.label = o.at("label").as_string();
    a.type = read_type(o.at("type"));
    a.unit = o.at("unit").as_string();
    const std::string scale = o.at("scale").as_choice({"linear", "log10", "log2"});
    a.scale = scale == "log10" ? AxisScale::LOG10 : scale == "log2" ? AxisScale::LOG2 : AxisScale::LINEAR;
    if (auto m = o.maybe("min")) a.min = m->as_number();
    if (auto m = o.maybe("max")) a.max = m->as_number();
    return a;
  });
}

Chart read_chart(const ValueReader& v) {
  return v.read_object([](ObjectReader& o) {
    Chart c;
    c.id = o.at("id").as_string();
    c.title = o.at("title").as_string();
    c.caption = o.at("caption").as_string();
    c.kind = o.at("kind").as_choice({"xy", "stacked_bars"}) == "xy" ? Chart::Kind::XY : Chart::Kind::STACKED_BARS;
    c.x = read_axis(o.at("x"));
    c.y = read_axis(o.at("y"));
    if (c.kind == Chart::Kind::XY) {
      for (const auto& js : o.at("series").as_array()) {
        c.series.push_back(js.read_object([](ObjectReader& so) {
          Series s;
          s.name = so.at("name").as_string();
          const std::string style = so.at("style").as_choice({"line", "scatter", "line_points"});
          s.style = style == "line"      ? Series::Style::LINE
                    : style == "scatter" ? Series::Style::SCATTER
                                         : Series::Style::LINE_POINTS;
          s.highlight = so.at("highlight").as_bool();
          for (const auto& jp : so.at("points").as_array()) {
            s.points.push_back(jp.read_object([](ObjectReader& po) {
              ChartPoint p;
              p.x = po.at("x").as_number();
              p.y = po.at("y").as_number();
              p.y_band = read_band(po);
              p.label = po.get_or("label", std::string());
              const bool xl = po.has("x_low"), xh = po.has("x_high");
              if (xl != xh) po.fail("an x band needs both 'x_low' and 'x_high'");
              if (xl) p.x_band = Band{po.at("x_low").as_number(), po.at("x_high").as_number()};
              p.tooltip = po.get_or("tooltip", std::string());
              return p;
            }));
          }
          return s;
        }));
      }
      if (auto refs = o.maybe("reference_lines")) {
        for (const auto& jr : refs->as_array()) {
          c.reference_lines.push_back(jr.read_object([](ObjectReader& ro) {
            ReferenceLine r{ro.at("label").as_string(), ro.at("value").as_number()};
            if (ro.has("axis")) r.on_x = ro.at("axis").as_choice({"x", "y"}) == "x";
            return r;
          }));
        }
      }
      return c;
    }
    c.orientation = o.at("orientation").as_choice({"horizontal", "vertical"}) == "horizontal"
                        ? Chart::Orientation::HORIZONTAL
                        : Chart::Orientation::VERTICAL;
    c.segments = read_strings(o.at("segments"));
    for (const auto& jb : o.at("bars").as_array()) {
      c.bars.push_back(jb.read_object([](ObjectReader& bo) {
        Bar b;
        b.label = bo.at("label").as_string();
        for (const auto& jv : bo.at("values").as_array()) b.values.push_back(jv.as_number());
        b.total_band = read_band(bo);
        return b;
      }));
    }
    for (const auto& jr : o.at("reference_lines").as_array()) {
      c.reference_lines.push_back(jr.read_object([](ObjectReader& ro) {
        return ReferenceLine{ro.at("label").as_string(), ro.at("value").as_number()};
      }));
    }
    return c;
  });
}

Table read_table(const ValueReader& v) {
  return v.read_object([](ObjectReader& o) {
    Table t;
    t.id = o.at("id").as_string();
    t.title = o.at("title").as_string();
    t.caption = o.at("caption").as_string();
    for (const auto& jc : o.at("columns").as_array(1)) {
      t.columns.push_back(jc.read_object([](ObjectReader& co) {
        Column c;
        c.key = co.at("key").as_string();
        c.label = co.at("label").as_string();
        c.type = read_type(co.at("type"));
        c.unit = co.at("unit").as_string();
        c.digits = static_cast<int>(co.at("digits").as_int({.min = 1, .max = 17}));
        return c;
      }));
    }
    for (const auto& jr : o.at("rows").as_array()) {
      const auto cells = jr.as_array(t.columns.size(), t.columns.size());
      std::vector<Cell> row;
      for (const auto& jc : cells) row.push_back(read_cell(jc));
      t.rows.push_back(std::move(row));
    }
    return t;
  });
}

Report read_fields(ObjectReader& o) {
  const auto version = o.at("schema_version");
  if (version.as_int({.min = 1}) > kReportSchemaVersion) {
    version.fail_message("schema_version " + std::to_string(version.as_int()) +
                         " is newer than this clustersim reads (" + std::to_string(kReportSchemaVersion) + ")");
  }
  o.at("kind").as_choice({kReportKind});
  Report r;
  r.type = o.at("type").as_string();
  r.title = o.at("title").as_string();
  r.subtitle = o.at("subtitle").as_string();
  r.generated_by = o.at("generated_by").as_string();
  r.created = o.get_or("created", std::string());
  r.inputs_sha256 = o.get_or("inputs_sha256", std::string());
  for (const auto& jf : o.at("summary").as_array()) {
    r.summary.push_back(jf.read_object([](ObjectReader& fo) {
      Figure f;
      f.key = fo.at("key").as_string();
      f.label = fo.at("label").as_string();
      f.type = read_type(fo.at("type"));
      f.unit = fo.at("unit").as_string();
      f.digits = static_cast<int>(fo.at("digits").as_int({.min = 1, .max = 17}));
      f.value = read_cell(fo.at("value"));
      f.detail = fo.at("detail").as_string();
      return f;
    }));
  }
  for (const auto& jn : o.at("notes").as_array()) {
    r.notes.push_back(jn.read_object([](ObjectReader& no) {
      const std::string level = no.at("level").as_choice({"info", "warning", "error"});
      return Note{level == "error"     ? Note::Level::ERROR
                  : level == "warning" ? Note::Level::WARNING
                                       : Note::Level::INFO,
                  no.at("text").as_string()};
    }));
  }
  for (const auto& js : o.at("sections").as_array()) {
    r.sections.push_back(js.read_object([](ObjectReader& so) {
      Section s;
      s.id = so.at("id").as_string();
      s.title = so.at("title").as_string();
      s.paragraphs = read_strings(so.at("paragraphs"));
      for (const auto& jc : so.at("charts").as_array()) s.charts.push_back(read_chart(jc));
      for (const auto& jt : so.at("tables").as_array()) s.tables.push_back(read_table(jt));
      return s;
    }));
  }
  for (const auto& jg : o.at("assumptions").as_array()) {
    r.assumptions.push_back(jg.read_object([](ObjectReader& go) {
      AssumptionGroup g;
      g.id = go.at("id").as_string();
      g.title = go.at("title").as_string();
      for (const auto& ja : go.at("items").as_array()) {
        g.items.push_back(ja.read_object([](ObjectReader& ao) {
          return Assumption{ao.at("name").as_string(), ao.at("value").as_string(), ao.at("source").as_string(),
                            ao.at("date").as_string(), ao.at("region").as_string()};
        }));
      }
      return g;
    }));
  }
  if (auto t = o.maybe("csv_table")) r.csv_table = read_table(*t);
  return r;
}

}  // namespace

nlohmann::ordered_json report_to_json(const Report& r) {
  check_report(r);
  OJson o = OJson::object();
  o["schema_version"] = kReportSchemaVersion;
  o["kind"] = kReportKind;
  o["type"] = r.type;
  o["title"] = r.title;
  o["subtitle"] = r.subtitle;
  o["generated_by"] = r.generated_by;
  if (!r.created.empty()) o["created"] = r.created;
  if (!r.inputs_sha256.empty()) o["inputs_sha256"] = r.inputs_sha256;
  OJson summary = OJson::array();
  for (const auto& f : r.summary) {
    OJson jf = OJson::object();
    jf["key"] = f.key;
    jf["label"] = f.label;
    jf["type"] = value_type_name(f.type);
    jf["unit"] = f.unit;
    jf["digits"] = f.digits;
    jf["value"] = cell_json(f.value);
    jf["detail"] = f.detail;
    summary.push_back(std::move(jf));
  }
  o["summary"] = std::move(summary);
  OJson notes = OJson::array();
  for (const auto& n : r.notes) notes.push_back(OJson{{"level", note_level_name(n.level)}, {"text", n.text}});
  o["notes"] = std::move(notes);
  OJson sections = OJson::array();
  for (const auto& s : r.sections) {
    OJson js = OJson::object();
    js["id"] = s.id;
    js["title"] = s.title;
    js["paragraphs"] = s.paragraphs;
    OJson charts = OJson::array();
    for (const auto& c : s.charts) charts.push_back(chart_json(c));
    js["charts"] = std::move(charts);
    OJson tables = OJson::array();
    for (const auto& t : s.tables) tables.push_back(table_json(t));
    js["tables"] = std::move(tables);
    sections.push_back(std::move(js));
  }
  o["sections"] = std::move(sections);
  OJson assumptions = OJson::array();
  for (const auto& g : r.assumptions) {
    OJson jg = OJson::object();
    jg["id"] = g.id;
    jg["title"] = g.title;
    OJson items = OJson::array();
    for (const auto& a : g.items) {
      OJson ja = OJson::object();
      ja["name"] = a.name;
      ja["value"] = a.value;
      ja["source"] = a.source;
      ja["date"] = a.date;
      ja["region"] = a.region;
      items.push_back(std::move(ja));
    }
    jg["items"] = std::move(items);
    assumptions.push_back(std::move(jg));
  }
  o["assumptions"] = std::move(assumptions);
  if (r.csv_table) o["csv_table"] = table_json(*r.csv_table);
  return o;
}

std::string render_json(const Report& report) {
  // Invalid UTF-8 in user text becomes U+FFFD rather than an exception.
  return report_to_json(report).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

Report read_report(const ValueReader& value) {
  Report r = value.read_object([](ObjectReader& o) { return read_fields(o); });
  if (auto problem = find_problem(r)) {
    throw InputError(value.file(), value.pointer() + problem->pointer, problem->message);
  }
  return r;
}

Report parse_report_json(std::string_view text, const std::string& file) {
  const JsonDocument doc = parse_json_text(text, file);
  return read_report(doc.root());
}

Report load_report_file(const std::string& path) {
  const JsonDocument doc = load_json_file(path);
  return read_report(doc.root());
}

}  // namespace clustersim::reports
