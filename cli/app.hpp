#pragma once
// The clustersim command. main() calls run(); tests call it too, with their own streams.
//
// Exit codes: 0 success, 1 runtime failure, 2 bad input or usage (CLI11's parse errors included).
// Data goes to `out`, diagnostics to `err`.

#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace clustersim::hardware {
class Catalog;
}

namespace clustersim::cli {

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// What every subcommand sees: the streams and the catalog (loaded on first use, with the user's
// --catalog directories and CLUSTERSIM_CATALOG).
class Context {
 public:
  Context(std::ostream& out, std::ostream& err);
  ~Context();
  std::ostream& out;
  std::ostream& err;
  std::vector<std::string> catalog_dirs;
  const hardware::Catalog& catalog();
  // Writes `content` to stdout, or atomically to `path` when one is given.
  void emit(const std::string& path, const std::string& content);

 private:
  std::unique_ptr<hardware::Catalog> catalog_;
};

// One function per subcommand file: adds the subcommand and its callback to `app`.
void add_hardware_command(CLI::App& app, Context& ctx);
void add_simulate_command(CLI::App& app, Context& ctx);
void add_plan_command(CLI::App& app, Context& ctx);
void add_report_command(CLI::App& app, Context& ctx);
void add_collective_command(CLI::App& app, Context& ctx);
void add_validate_command(CLI::App& app, Context& ctx);
void add_calibrate_command(CLI::App& app, Context& ctx);
void add_import_command(CLI::App& app, Context& ctx);
// `calibrate fit` (cli/calibrate_fit.cpp), added to the calibrate subcommand.
void add_calibrate_fit(CLI::App& calibrate, Context& ctx);
// `validate training` (cli/validate_training.cpp), added to the validate subcommand.
void add_validate_training(CLI::App& validate, Context& ctx);

}  // namespace clustersim::cli
