#pragma once
// Plain-text tables for terminal output: columns sized to their widest cell, numbers right-aligned.

#include <ostream>
#include <string>
#include <vector>

namespace clustersim::reports {

class TextTable {
 public:
  enum class Align { LEFT, RIGHT };
  explicit TextTable(std::vector<std::string> headers, std::vector<Align> align = {});
  void add_row(std::vector<std::string> cells);
  void write(std::ostream& out, std::string_view indent = "") const;
  std::size_t rows() const { return rows_.size(); }

 private:
  std::vector<std::string> headers_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace clustersim::reports
