#include "reports/text_table.hpp"

#include <algorithm>
#include <stdexcept>

namespace clustersim::reports {

namespace {
// Display width of UTF-8 text: count the bytes that start a code point.
std::size_t display_width(const std::string& s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}
}  // namespace

TextTable::TextTable(std::vector<std::string> headers, std::vector<Align> align)
    : headers_(std::move(headers)), align_(std::move(align)) {
  align_.resize(headers_.size(), Align::LEFT);
}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != headers_.size()) throw std::logic_error("TextTable: row width differs from header");
  rows_.push_back(std::move(cells));
}

void TextTable::write(std::ostream& out, std::string_view indent) const {
  std::vector<std::size_t> width(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) {
    width[c] = display_width(headers_[c]);
    for (const auto& r : rows_) width[c] = std::max(width[c], display_width(r[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s(indent);
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::size_t pad = width[c] - display_width(cells[c]);
      if (align_[c] == Align::RIGHT) {
        s += std::string(pad, ' ') + cells[c];
      } else {
        s += cells[c] + (c + 1 == cells.size() ? "" : std::string(pad, ' '));
      }
      if (c + 1 != cells.size()) s += "  ";
    }
    s.erase(s.find_last_not_of(' ') + 1);  // an empty last cell leaves no trailing blanks
    out << s << '\n';
  };
  line(headers_);
  for (const auto& r : rows_) line(r);
}

}  // namespace clustersim::reports
