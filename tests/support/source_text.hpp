#pragma once
// The text of a file, for tests: any path (outputs a command wrote) or a file of this repository
// (test data, scenarios, results).

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace clustersim::testing {

// The bytes of `path`; empty when it cannot be read (tests compare against expected text).
inline std::string read_file_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string read_source_text(const std::string& relative_path) {
  const std::filesystem::path path = std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / relative_path;
  if (!std::filesystem::is_regular_file(path)) throw std::runtime_error("test data missing: " + relative_path);
  return read_file_text(path);
}

// Validation data by file name (tests/validation/data/NAME).
inline std::string read_validation_data(const std::string& name) {
  return read_source_text("tests/validation/data/" + name);
}

}  // namespace clustersim::testing
