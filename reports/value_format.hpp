#pragma once
// Display text of report values. Fixed rules, no locale: the same value gives the same text on
// every machine, so rendered reports are byte-identical for equal data.
//
//   NUMBER    `digits` significant digits, thousands grouped from 10,000 up ("12,300 tokens/s"),
//             an exponent outside [1e-4, 1e15) ("2.5e-07")
//   INTEGER   rounded, grouped from 10,000 up ("2048", "16,384")
//   DURATION  seconds shown in the largest fitting unit: ps ns µs ms s, then min below 2 h,
//             h below 2 days, days beyond ("812 µs", "1.23 s", "31.2 days")
//   BYTES     binary prefixes ("73.2 GiB")
//   DOLLARS   cents below $1,000 ("$12.34"), whole grouped dollars above ("$1,234,567")
//   PERCENT   a fraction shown as percent ("0.4237" -> "42.4%")
// Values are rounded to `digits` significant digits first and the unit is chosen from the
// rounded value, so 0.9996 s prints as "1 s", not "1000 ms". Trailing zeros are dropped.

#include <string>
#include <string_view>

#include "reports/report_model.hpp"

namespace clustersim::reports {

std::string format_value(double v, ValueType type, std::string_view unit = {}, int digits = 3);
// A cell as shown in a table: "n/a" when empty, the text, or the value with its band.
std::string format_cell(const Cell& cell, ValueType type, std::string_view unit = {}, int digits = 3);
// "1.1 s – 1.4 s" (an en dash between the two ends).
std::string format_band(const Band& band, ValueType type, std::string_view unit = {}, int digits = 3);

// `v` rounded to `digits` significant digits, trailing zeros dropped, thousands grouped from
// 10,000 up when `group` is set.
std::string format_significant_grouped(double v, int digits, bool group = true);
// `v` with exactly `decimals` digits after the point (std::to_chars, no locale).
std::string format_fixed(double v, int decimals);
// Inserts ',' every three digits of the integer part of a plain decimal number from 10,000 up.
std::string group_thousands(std::string plain);

// The unit an axis shows its ticks in: ticks are value / divisor, the title gets "(name)".
struct DisplayUnit {
  double divisor = 1;
  std::string name;  // "ms", "GiB", "$ millions", "%", or the NUMBER column's unit
};
DisplayUnit display_unit(ValueType type, std::string_view unit, double magnitude);

// The unit of raw numbers in CSV and JSON: "s", "bytes", "USD", "fraction", the NUMBER unit, or
// "" for integers and text.
std::string raw_unit(ValueType type, std::string_view unit);

}  // namespace clustersim::reports
