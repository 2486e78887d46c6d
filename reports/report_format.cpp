#include "reports/report_format.hpp"

#include <sstream>

#include "hardware/atomic_file.hpp"
#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"
#include "reports/csv_report.hpp"
#include "reports/html_report.hpp"
#include "reports/json_report.hpp"
#include "reports/markdown_report.hpp"
#include "reports/text_table.hpp"
#include "reports/value_format.hpp"

namespace clustersim::reports {

namespace {

std::string note_label(Note::Level l) {
  switch (l) {
    case Note::Level::INFO: return "note";
    case Note::Level::WARNING: return "warning";
    case Note::Level::ERROR: return "error";
  }
  return "note";
}

}  // namespace

std::vector<std::string> report_format_names() { return {"text", "markdown", "html", "csv", "json"}; }

ReportFormat parse_report_format(std::string_view name) {
  if (name == "text") return ReportFormat::TEXT;
  if (name == "markdown" || name == "md") return ReportFormat::MARKDOWN;
  if (name == "html") return ReportFormat::HTML;
  if (name == "csv") return ReportFormat::CSV;
  if (name == "json") return ReportFormat::JSON;
  std::string message =
      "unknown report format '" + std::string(name) + "'; expected one of text, markdown, html, csv, json";
  if (auto near = nearest_word(name, report_format_names())) message += "; did you mean '" + *near + "'?";
  throw InputError("", "--format", message);
}

std::string render_text(const Report& r) {
  check_report(r);
  std::ostringstream out;
  out << r.title << "\n";
  if (!r.subtitle.empty()) out << r.subtitle << "\n";
  if (!r.summary.empty()) {
    out << "\nSummary\n";
    TextTable t({"", "", ""}, {TextTable::Align::LEFT, TextTable::Align::RIGHT, TextTable::Align::LEFT});
    for (const auto& f : r.summary) {
      std::string band;
      if (f.value.band()) band.append("(").append(format_band(*f.value.band(), f.type, f.unit, f.digits)).append(")");
      if (!f.detail.empty()) band += (band.empty() ? "" : " ") + f.detail;
      const std::string value = f.value.is_number() ? format_value(f.value.number(), f.type, f.unit, f.digits)
                                                    : format_cell(f.value, f.type, f.unit, f.digits);
      t.add_row({f.label, value, band});
    }
    std::ostringstream body;
    t.write(body, "  ");
    // Drop the empty header line TextTable writes first.
    const std::string text = body.str();
    out << text.substr(text.find('\n') + 1);
  }
  for (const auto& n : r.notes) out << (r.summary.empty() ? "\n" : "") << note_label(n.level) << ": " << n.text << "\n";
  for (const auto& sec : r.sections) {
    out << "\n" << sec.title << "\n";
    for (const auto& p : sec.paragraphs) out << "  " << p << "\n";
    for (const auto& c : sec.charts) out << "  [chart: " << c.title << "; see the HTML report]\n";
    for (const auto& tab : sec.tables) {
      if (!tab.title.empty()) out << "\n  " << tab.title << "\n";
      std::vector<std::string> headers;
      std::vector<TextTable::Align> align;
      for (const auto& col : tab.columns) {
        headers.push_back(col.label.empty() ? col.key : col.label);
        align.push_back(col.type == ValueType::TEXT ? TextTable::Align::LEFT : TextTable::Align::RIGHT);
      }
      TextTable t(headers, align);
      for (const auto& row : tab.rows) {
        std::vector<std::string> cells;
        for (std::size_t c = 0; c < row.size(); ++c) {
          const Column& col = tab.columns[c];
          cells.push_back(format_cell(row[c], col.type, col.unit, col.digits));
        }
        t.add_row(cells);
      }
      t.write(out, "  ");
    }
  }
  if (!r.assumptions.empty()) {
    out << "\nAssumptions\n";
    for (const auto& g : r.assumptions) {
      out << "  " << g.title << "\n";
      for (const auto& a : g.items) {
        out << "    " << a.name << ": " << a.value;
        std::string where = a.source;
        if (!a.date.empty()) where += (where.empty() ? "" : ", ") + a.date;
        if (!a.region.empty()) where += (where.empty() ? "" : ", ") + a.region;
        if (!where.empty()) out << " (" << where << ")";
        out << "\n";
      }
    }
  }
  return out.str();
}

std::string render_report(const Report& report, ReportFormat format) {
  switch (format) {
    case ReportFormat::TEXT: return render_text(report);
    case ReportFormat::MARKDOWN: return render_markdown(report);
    case ReportFormat::HTML: return render_html(report);
    case ReportFormat::CSV: return render_csv(report);
    case ReportFormat::JSON: return render_json(report);
  }
  return render_text(report);
}

void write_report(const std::filesystem::path& path, const Report& report, ReportFormat format) {
  write_file_atomically(path, render_report(report, format));
}

}  // namespace clustersim::reports
