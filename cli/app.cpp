#include "cli/app.hpp"

#include <CLI/CLI.hpp>
#include <optional>

#include "hardware/atomic_file.hpp"
#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"

#ifndef CLUSTERSIM_VERSION
#define CLUSTERSIM_VERSION "unknown"
#endif

namespace clustersim::cli {

Context::Context(std::ostream& o, std::ostream& e) : out(o), err(e) {}
Context::~Context() = default;

const hardware::Catalog& Context::catalog() {
  if (!catalog_) {
    std::vector<std::filesystem::path> extra(catalog_dirs.begin(), catalog_dirs.end());
    catalog_ = std::make_unique<hardware::Catalog>(
        hardware::Catalog::load(hardware::Catalog::user_dirs_from_env(extra)));
  }
  return *catalog_;
}

void Context::emit(const std::string& path, const std::string& content) {
  if (path.empty() || path == "-") {
    out << content;
    out.flush();
  } else {
    write_file_atomically(path, content);
  }
}

namespace {

// CLI11 reports a misspelt subcommand as "A subcommand is required": name the word and suggest.
std::optional<std::string> unknown_subcommand(CLI::App& app, int argc, const char* const* argv) {
  if (!app.get_subcommands().empty()) return std::nullopt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--catalog") {
      ++i;
      continue;
    }
    if (a.empty() || a[0] == '-') continue;
    std::vector<std::string> names;
    for (const CLI::App* sc : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(sc->get_name());
    std::string msg = "unknown subcommand '" + a + "'";
    if (auto near = nearest_word(a, names)) return msg + "; did you mean '" + *near + "'?";
    for (std::size_t k = 0; k < names.size(); ++k) msg += (k == 0 ? "; expected one of: " : ", ") + names[k];
    return msg;
  }
  return std::nullopt;
}

}  // namespace

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  Context ctx(out, err);
  CLI::App app{"clustersim: cluster simulator and capacity planner for distributed LLM training", "clustersim"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("clustersim ") + CLUSTERSIM_VERSION);
  app.add_option("--catalog", ctx.catalog_dirs,
                 "Directory of catalog JSON files that add to or override the built-in catalog (repeatable; "
                 "CLUSTERSIM_CATALOG also works)")
      ->check(CLI::ExistingDirectory);
  add_hardware_command(app, ctx);
  add_simulate_command(app, ctx);
  add_plan_command(app, ctx);
  add_report_command(app, ctx);
  add_collective_command(app, ctx);
  add_validate_command(app, ctx);
  add_calibrate_command(app, ctx);
  add_import_command(app, ctx);
  try {
    app.parse(argc, argv);
    return 0;
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << '\n';
    return 0;
  } catch (const CLI::ParseError& e) {
    if (const auto unknown = unknown_subcommand(app, argc, argv)) {
      err << "clustersim: error: " << *unknown << '\n';
      return 2;
    }
    err << "clustersim: " << e.what() << '\n';
    err << "Run with --help for usage.\n";
    return 2;
  } catch (const InputError& e) {
    err << "clustersim: error: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    err << "clustersim: failure: " << e.what() << '\n';
    return 1;
  }
}

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::vector<const char*> argv;
  argv.push_back("clustersim");
  for (const auto& a : args) argv.push_back(a.c_str());
  return run(static_cast<int>(argv.size()), argv.data(), out, err);
}

}  // namespace clustersim::cli
