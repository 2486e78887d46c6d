#pragma once
// Runs the command line in-process (cli::run) and keeps what it printed, for the CLI tests.

#include <sstream>
#include <string>
#include <vector>

#include "cli/app.hpp"

namespace clustersim::testing {

struct CliResult {
  int rc;
  std::string out, err;
};

inline CliResult run_cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int rc = cli::run(args, out, err);
  return {rc, out.str(), err.str()};
}

}  // namespace clustersim::testing
