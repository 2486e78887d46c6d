#pragma once
// The text of a file of this repository (test data, scenarios, results), for tests.

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace clustersim::testing {

inline std::string read_source_text(const std::string& relative_path) {
  const std::string path = std::string(CLUSTERSIM_SOURCE_DIR) + "/" + relative_path;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("test data missing: " + relative_path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Validation data by file name (tests/validation/data/NAME).
inline std::string read_validation_data(const std::string& name) {
  return read_source_text("tests/validation/data/" + name);
}

}  // namespace clustersim::testing
