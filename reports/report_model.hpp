#pragma once
// The report data model: one description of a result, written as HTML, Markdown, CSV, JSON and
// text by the writers beside this file. The planner and the simulator fill a Report with data
// only; every decision about layout, number formatting and charts is the writers'.
//
//   Report
//     title, subtitle, type ("capacity-plan", "simulation", ...), generated_by, created
//     summary       key figures: a typed value with its unit and an optional band (low, high)
//     notes         info / warning / error lines
//     sections      id, title, paragraphs, charts, tables (rendered in that order)
//     assumptions   groups of key/value items with source, date and region
//
// Values are doubles in SI base units: DURATION in seconds, BYTES in bytes, DOLLARS in US
// dollars, PERCENT as a fraction (0.42 is 42%), NUMBER in the column's own `unit`. A band is the
// uncertainty range of a value (low <= value <= high is not required: a band may be one-sided).
//
// Ids (sections, tables, charts, assumption groups) are HTML anchors and CSV section names:
// lower-case letters, digits, '-' and '_', unique among their kind (a section and a chart may
// share one); "summary" and "assumptions" are not table ids (CSV uses them). Column keys follow
// the same rule and name the CSV column; by convention they carry their unit ("step_time_s").
//
// Charts hold their own data, so a saved report re-renders without the planner:
//   XY            series of points (line, scatter or both), linear / log10 / log2 axes, optional
//                 x and y bands drawn as error bars, optional point labels (the Pareto frontier)
//                 and tooltips, reference lines at an x (a deadline) or a y (a budget).
//   STACKED_BARS  one bar per category, one stacked segment per component, horizontal or
//                 vertical; optional band on each bar's total; reference lines on the value axis
//                 (a GPU's memory capacity). `x` is the category axis, `y` the value axis,
//                 whatever the orientation.

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace clustersim::reports {

enum class ValueType { TEXT, NUMBER, INTEGER, DURATION, BYTES, DOLLARS, PERCENT };

struct Band {
  double low = 0;
  double high = 0;
  bool operator==(const Band&) const = default;
};

// One value of a table or a summary figure: empty, text, or a number with an optional band.
class Cell {
 public:
  enum class Kind { EMPTY, TEXT, NUMBER };

  Cell() = default;
  Cell(std::string text) : kind_(Kind::TEXT), text_(std::move(text)) {}  // NOLINT: implicit on purpose
  Cell(const char* text) : Cell(std::string(text)) {}                    // NOLINT
  template <class T>
    requires(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
  Cell(T v) : kind_(Kind::NUMBER), number_(static_cast<double>(v)) {}  // NOLINT
  Cell(double v, Band band) : kind_(Kind::NUMBER), number_(v), band_(band) {}
  static Cell empty() { return Cell(); }

  Kind kind() const { return kind_; }
  bool is_empty() const { return kind_ == Kind::EMPTY; }
  bool is_text() const { return kind_ == Kind::TEXT; }
  bool is_number() const { return kind_ == Kind::NUMBER; }
  const std::string& text() const { return text_; }
  double number() const { return number_; }
  const std::optional<Band>& band() const { return band_; }

  bool operator==(const Cell&) const = default;

 private:
  Kind kind_ = Kind::EMPTY;
  std::string text_{};
  double number_ = 0;
  std::optional<Band> band_{};
};

struct Column {
  std::string key{};
  std::string label{};
  ValueType type = ValueType::TEXT;
  std::string unit{};  // NUMBER only ("tokens/s", "GB/s"); the other types imply theirs
  int digits = 3;      // significant digits shown in HTML, Markdown and text

  static Column text(std::string key, std::string label) {
    return {std::move(key), std::move(label), ValueType::TEXT, "", 3};
  }
  static Column number(std::string key, std::string label, std::string unit, int digits = 3) {
    return {std::move(key), std::move(label), ValueType::NUMBER, std::move(unit), digits};
  }
  static Column integer(std::string key, std::string label) {
    return {std::move(key), std::move(label), ValueType::INTEGER, "", 3};
  }
  static Column duration(std::string key, std::string label, int digits = 3) {
    return {std::move(key), std::move(label), ValueType::DURATION, "", digits};
  }
  static Column bytes(std::string key, std::string label, int digits = 3) {
    return {std::move(key), std::move(label), ValueType::BYTES, "", digits};
  }
  static Column dollars(std::string key, std::string label) {
    return {std::move(key), std::move(label), ValueType::DOLLARS, "", 3};
  }
  static Column percent(std::string key, std::string label, int digits = 3) {
    return {std::move(key), std::move(label), ValueType::PERCENT, "", digits};
  }
  bool operator==(const Column&) const = default;
};

struct Table {
  std::string id{};
  std::string title{};
  std::string caption{};
  std::vector<Column> columns{};
  std::vector<std::vector<Cell>> rows{};

  // Appends a row; throws std::invalid_argument when its width differs from the columns'.
  void add_row(std::vector<Cell> cells);
  bool operator==(const Table&) const = default;
};

// A key figure of the summary: "Time to train 31.2 days (28.0 days - 35.1 days)".
struct Figure {
  std::string key{};
  std::string label{};
  ValueType type = ValueType::NUMBER;
  std::string unit{};  // NUMBER only
  int digits = 3;
  Cell value{};
  std::string detail{};  // one short line under the figure ("on-demand, us-east-1")
  bool operator==(const Figure&) const = default;
};

struct Note {
  enum class Level { INFO, WARNING, ERROR };
  Level level = Level::INFO;
  std::string text{};
  bool operator==(const Note&) const = default;
};

enum class AxisScale { LINEAR, LOG10, LOG2 };

struct Axis {
  std::string label{};
  ValueType type = ValueType::NUMBER;  // decides the display unit of the ticks (s, ms, GiB, $)
  std::string unit{};                  // NUMBER only
  AxisScale scale = AxisScale::LINEAR;
  std::optional<double> min{};  // forced ends of the axis (in the value's SI unit)
  std::optional<double> max{};
  bool operator==(const Axis&) const = default;
};

struct ChartPoint {
  double x = 0;
  double y = 0;
  std::optional<Band> y_band{};
  std::string label{};  // drawn beside the point when not empty
  std::optional<Band> x_band{};  // a horizontal error bar
  std::string tooltip{};         // named in the point's tooltip (a candidate), not drawn
  bool operator==(const ChartPoint&) const = default;
};

struct Series {
  enum class Style { LINE, SCATTER, LINE_POINTS };
  std::string name{};
  Style style = Style::LINE_POINTS;
  bool highlight = false;  // drawn bold, others muted (the Pareto frontier among all candidates)
  std::vector<ChartPoint> points{};
  bool operator==(const Series&) const = default;
};

struct Bar {
  std::string label{};
  std::vector<double> values{};  // one per segment of the chart
  std::optional<Band> total_band{};
  bool operator==(const Bar&) const = default;
};

struct ReferenceLine {
  std::string label{};
  double value = 0;
  bool on_x = false;  // XY charts: a vertical line at x = value (else horizontal at y = value)
  bool operator==(const ReferenceLine&) const = default;
};

struct Chart {
  enum class Kind { XY, STACKED_BARS };
  enum class Orientation { HORIZONTAL, VERTICAL };
  std::string id{};
  std::string title{};
  std::string caption{};
  Kind kind = Kind::XY;
  Axis x{};
  Axis y{};
  std::vector<Series> series{};                       // XY
  std::vector<std::string> segments{};                // STACKED_BARS
  std::vector<Bar> bars{};                            // STACKED_BARS
  Orientation orientation = Orientation::HORIZONTAL;  // STACKED_BARS
  std::vector<ReferenceLine> reference_lines{};       // bars: on the value axis; XY: at x or y
  bool operator==(const Chart&) const = default;
};

struct Section {
  std::string id{};
  std::string title{};
  std::vector<std::string> paragraphs{};
  std::vector<Chart> charts{};
  std::vector<Table> tables{};
  bool operator==(const Section&) const = default;
};

// One stated assumption: "p5.48xlarge on-demand = 55.04 $/h", source "AWS Price List",
// date "2026-09-25", region "us-east-1". Empty fields are not shown.
struct Assumption {
  std::string name{};
  std::string value{};
  std::string source{};
  std::string date{};
  std::string region{};
  bool operator==(const Assumption&) const = default;
};

struct AssumptionGroup {
  std::string id{};
  std::string title{};  // "Prices", "Calibration", "Versions", "Model"
  std::vector<Assumption> items{};
  bool operator==(const AssumptionGroup&) const = default;
};

struct Report {
  std::string type{};  // "capacity-plan", "simulation"
  std::string title{};
  std::string subtitle{};
  std::string generated_by{};  // "clustersim 0.1.0"
  std::string created{};       // written only when set: output stays byte-identical for equal data
  std::string inputs_sha256{};  // SHA-256 of the inputs read (plan_report.hpp says which), hex
  std::vector<Figure> summary{};
  std::vector<Note> notes{};
  std::vector<Section> sections{};
  std::vector<AssumptionGroup> assumptions{};
  // When set, the one table the CSV writer writes (one header row, one row per item, every
  // column, the report's date and inputs' hash as columns): a spreadsheet opens it as is. Not
  // shown in HTML, Markdown or text, whose sections carry the same facts.
  std::optional<Table> csv_table{};
  bool operator==(const Report&) const = default;
};

// The first thing wrong with a report, as a JSON pointer into its JSON form and a message:
// a bad or repeated id, a row of the wrong width, a text cell in a numeric column, a non-finite
// number, a point <= 0 on a log axis, a bar with the wrong number of segment values.
struct ReportProblem {
  std::string pointer{};
  std::string message{};
};
std::optional<ReportProblem> find_problem(const Report& report);
// Throws std::invalid_argument "report: <pointer>: <message>" when find_problem finds one (the
// writers call it: a malformed report is a programming error of whoever built it).
void check_report(const Report& report);

std::string_view value_type_name(ValueType t);    // "text", "number", ... (the JSON names)
std::string_view note_level_name(Note::Level l);  // "info", "warning", "error"

}  // namespace clustersim::reports
