#include "reports/value_format.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace clustersim::reports {

namespace {

constexpr double kDay = 86400;

// `v` rounded to `digits` significant digits (through the decimal text, so the result is the
// double nearest to the printed digits).
double round_significant(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return v;
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "%.*e", digits - 1, v);
  return std::strtod(buf.data(), nullptr);
}

// Decimal exponent of an already rounded value: 1230 -> 3, 0.05 -> -2.
int exponent_of(double r) {
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "%.16e", r);
  const char* e = std::strchr(buf.data(), 'e');
  return e != nullptr ? std::atoi(e + 1) : 0;
}

std::string trim_zeros(std::string s) {
  if (s.find('.') == std::string::npos) return s;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::string with_unit(std::string number, std::string_view unit) {
  if (unit.empty()) return number;
  return number + " " + std::string(unit);
}

struct Step {
  double factor;
  std::string_view name;
};

std::string format_duration_seconds(double v, int digits) {
  static constexpr std::array<Step, 9> ladder{{{1e-12, "ps"},
                                               {1e-9, "ns"},
                                               {1e-6, "µs"},
                                               {1e-3, "ms"},
                                               {1, "s"},
                                               {60, "min"},
                                               {3600, "h"},
                                               {kDay, "days"},
                                               {0, ""}}};
  if (v == 0) return "0 s";
  const double a = std::fabs(round_significant(v, digits));
  std::size_t k = 0;
  if (a < 1) {
    while (k + 1 < 4 && a >= ladder[k + 1].factor) ++k;
    // Rounding in the smaller unit may reach 1000: step up then.
    if (std::fabs(round_significant(v / ladder[k].factor, digits)) >= 1000) ++k;
  } else if (a < 120) {
    k = 4;
  } else if (a < 7200) {
    k = 5;
  } else if (a < 2 * kDay) {
    k = 6;
  } else {
    k = 7;
  }
  return with_unit(format_significant_grouped(v / ladder[k].factor, digits), ladder[k].name);
}

std::string format_bytes_binary(double v, int digits) {
  static constexpr std::array<std::string_view, 7> names{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  std::size_t k = 0;
  double scale = 1;
  while (k + 1 < names.size() && std::fabs(v) >= scale * 1024) {
    ++k;
    scale *= 1024;
  }
  if (k + 1 < names.size() && std::fabs(round_significant(v / scale, digits)) >= 1024) {
    ++k;
    scale *= 1024;
  }
  if (k == 0) return with_unit(format_significant_grouped(std::round(v), 17, false), "B");
  return with_unit(format_significant_grouped(v / scale, digits, false), names[k]);
}

std::string format_dollars(double v) {
  const bool negative = v < 0;
  const double a = std::fabs(v);
  std::string digits_text = a < 1000 ? format_fixed(a, 2) : group_thousands(format_fixed(std::round(a), 0));
  if (digits_text == "0.00" || digits_text == "0") return "$0.00";
  return (negative ? "-$" : "$") + digits_text;
}

}  // namespace

std::string format_fixed(double v, int decimals) {
  std::array<char, 400> buf{};
  auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::fixed, decimals);
  if (ec != std::errc()) return "nan";
  std::string s(buf.data(), ptr);
  if (s.front() == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);  // no "-0"
  return s;
}

std::string group_thousands(std::string plain) {
  const std::size_t start = (!plain.empty() && plain.front() == '-') ? 1 : 0;
  std::size_t end = plain.find('.');
  if (end == std::string::npos) end = plain.size();
  if (end - start < 5) return plain;  // below 10,000: "2048" reads better than "2,048"
  for (std::size_t pos = end; pos > start + 3;) {
    pos -= 3;
    plain.insert(pos, 1, ',');
  }
  return plain;
}

std::string format_significant_grouped(double v, int digits, bool group) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  if (v == 0) return "0";
  const double r = round_significant(v, digits);
  const double a = std::fabs(r);
  if (a < 1e-4 || a >= 1e15) {
    std::array<char, 64> buf{};
    std::snprintf(buf.data(), buf.size(), "%.*e", digits - 1, r);
    std::string s(buf.data());
    const std::size_t e = s.find('e');
    return trim_zeros(s.substr(0, e)) + s.substr(e);
  }
  const int decimals = std::max(0, digits - 1 - exponent_of(r));
  std::string s = trim_zeros(format_fixed(r, decimals));
  return group ? group_thousands(std::move(s)) : s;
}

std::string format_value(double v, ValueType type, std::string_view unit, int digits) {
  switch (type) {
    case ValueType::TEXT:
    case ValueType::NUMBER: return with_unit(format_significant_grouped(v, digits), unit);
    case ValueType::INTEGER: return group_thousands(format_fixed(std::round(v), 0));
    case ValueType::DURATION: return format_duration_seconds(v, digits);
    case ValueType::BYTES: return format_bytes_binary(v, digits);
    case ValueType::DOLLARS: return format_dollars(v);
    case ValueType::PERCENT: return format_significant_grouped(v * 100, digits) + "%";
  }
  return format_significant_grouped(v, digits);
}

std::string format_band(const Band& band, ValueType type, std::string_view unit, int digits) {
  return format_value(band.low, type, unit, digits) + " – " + format_value(band.high, type, unit, digits);
}

std::string format_cell(const Cell& cell, ValueType type, std::string_view unit, int digits) {
  if (cell.is_empty()) return "n/a";
  if (cell.is_text()) return cell.text();
  std::string s = format_value(cell.number(), type, unit, digits);
  if (cell.band()) s += " (" + format_band(*cell.band(), type, unit, digits) + ")";
  return s;
}

DisplayUnit display_unit(ValueType type, std::string_view unit, double magnitude) {
  const double a = std::fabs(magnitude);
  switch (type) {
    case ValueType::DURATION: {
      if (a >= 2 * kDay) return {kDay, "days"};
      if (a >= 7200) return {3600, "h"};
      if (a >= 120) return {60, "min"};
      if (a >= 1 || a == 0) return {1, "s"};
      if (a >= 1e-3) return {1e-3, "ms"};
      if (a >= 1e-6) return {1e-6, "µs"};
      if (a >= 1e-9) return {1e-9, "ns"};
      return {1e-12, "ps"};
    }
    case ValueType::BYTES: {
      static constexpr std::array<std::string_view, 7> names{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
      std::size_t k = 0;
      double scale = 1;
      while (k + 1 < names.size() && a >= scale * 1024) {
        ++k;
        scale *= 1024;
      }
      return {scale, std::string(names[k])};
    }
    case ValueType::DOLLARS:
      if (a >= 1e9) return {1e9, "$ billions"};
      if (a >= 1e6) return {1e6, "$ millions"};
      if (a >= 1e4) return {1e3, "$ thousands"};
      return {1, "$"};
    case ValueType::PERCENT: return {0.01, "%"};
    case ValueType::INTEGER:
    case ValueType::TEXT: return {1, ""};
    case ValueType::NUMBER: return {1, std::string(unit)};
  }
  return {1, std::string(unit)};
}

std::string raw_unit(ValueType type, std::string_view unit) {
  switch (type) {
    case ValueType::DURATION: return "s";
    case ValueType::BYTES: return "bytes";
    case ValueType::DOLLARS: return "USD";
    case ValueType::PERCENT: return "fraction";
    case ValueType::NUMBER: return std::string(unit);
    case ValueType::INTEGER:
    case ValueType::TEXT: return "";
  }
  return "";
}

}  // namespace clustersim::reports
