#include "calibrate/harness/harness_errors.hpp"

#include <cstring>

namespace clustersim::harness {

void throw_check_failure(const char* library, long code, const std::string& text, const char* expr, const char* file,
                         int line) {
  const char* slash = std::strrchr(file, '/');
  throw HarnessError(std::string(library) + " error " + std::to_string(code) + " (" + text + ") in " + expr + " at " +
                     (slash ? slash + 1 : file) + ":" + std::to_string(line));
}

}  // namespace clustersim::harness
