#include "reports/csv_report.hpp"

#include "hardware/atomic_file.hpp"
#include "hardware/units.hpp"
#include "reports/value_format.hpp"

namespace clustersim::reports {

namespace {

constexpr std::string_view kEnd = "\r\n";

std::string record(const std::vector<std::string>& fields) {
  std::string s;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) s += ',';
    s += csv_field(fields[i]);
  }
  return s + std::string(kEnd);
}

std::string raw(const Cell& c) {
  if (c.is_empty()) return "";
  if (c.is_text()) return c.text();
  return format_number(c.number());
}

std::string raw_low(const Cell& c) { return c.band() ? format_number(c.band()->low) : ""; }
std::string raw_high(const Cell& c) { return c.band() ? format_number(c.band()->high) : ""; }

}  // namespace

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string s = "\"";
  for (const char c : text) {
    if (c == '"') s += '"';
    s += c;
  }
  return s + "\"";
}

std::string render_table_csv(const Table& t) {
  std::vector<bool> banded(t.columns.size(), false);
  for (const auto& row : t.rows) {
    for (std::size_t c = 0; c < row.size() && c < banded.size(); ++c)
      banded[c] = banded[c] || row[c].band().has_value();
  }
  std::vector<std::string> header;
  for (std::size_t c = 0; c < t.columns.size(); ++c) {
    header.push_back(t.columns[c].key);
    if (banded[c]) {
      header.push_back(t.columns[c].key + "_low");
      header.push_back(t.columns[c].key + "_high");
    }
  }
  std::string s = record(header);
  for (const auto& row : t.rows) {
    std::vector<std::string> fields;
    for (std::size_t c = 0; c < row.size(); ++c) {
      fields.push_back(raw(row[c]));
      if (banded[c]) {
        fields.push_back(raw_low(row[c]));
        fields.push_back(raw_high(row[c]));
      }
    }
    s += record(fields);
  }
  return s;
}

std::string render_csv(const Report& r) {
  check_report(r);
  std::string s;
  auto open_section = [&](const std::string& id, const std::string& title) {
    if (!s.empty()) s += kEnd;
    s += record({"#section", id, title});
  };
  if (!r.summary.empty()) {
    open_section("summary", "Summary");
    s += record({"key", "label", "value", "low", "high", "unit", "detail"});
    for (const auto& f : r.summary) {
      s += record({f.key, f.label, raw(f.value), raw_low(f.value), raw_high(f.value),
                   f.value.is_text() ? "" : raw_unit(f.type, f.unit), f.detail});
    }
  }
  for (const auto& sec : r.sections) {
    for (const auto& t : sec.tables) {
      open_section(t.id, t.title);
      s += render_table_csv(t);
    }
  }
  if (!r.assumptions.empty()) {
    open_section("assumptions", "Assumptions");
    s += record({"group", "name", "value", "source", "date", "region"});
    for (const auto& g : r.assumptions) {
      for (const auto& a : g.items) s += record({g.id, a.name, a.value, a.source, a.date, a.region});
    }
  }
  return s;
}

std::vector<std::filesystem::path> write_csv_tables(const std::filesystem::path& directory, std::string_view stem,
                                                    const Report& report) {
  check_report(report);
  std::vector<std::filesystem::path> written;
  for (const auto& sec : report.sections) {
    for (const auto& t : sec.tables) {
      auto path = directory / (std::string(stem) + "-" + t.id + ".csv");
      write_file_atomically(path, render_table_csv(t));
      written.push_back(std::move(path));
    }
  }
  return written;
}

}  // namespace clustersim::reports
