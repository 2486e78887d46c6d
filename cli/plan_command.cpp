// clustersim plan PLAN.json: every candidate layout of a plan, ranked by time to train and cost.
// --export megatron|nemo|torchtitan|deepspeed writes the launch settings of the headline candidate
// (the first by the plan's ranking, rank_by time or cost) to --export-file, or of the first N with
// --export-top N to --export-dir DIR as rank01-<target>.<ext>, rank02-..., one file each
// (models/launch_export.hpp). Warnings name the candidate; nothing feasible exports nothing.

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "cli/app.hpp"
#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "hardware/sha256.hpp"
#include "models/launch_export.hpp"
#include "models/layout_search.hpp"
#include "models/plan_parallel.hpp"
#include "models/plan_runner.hpp"
#include "models/plan_spec.hpp"
#include "models/step_model.hpp"
#include "reports/json_report.hpp"
#include "reports/plan_report.hpp"
#include "reports/report_format.hpp"

#ifndef CLUSTERSIM_VERSION
#define CLUSTERSIM_VERSION "unknown"
#endif

namespace clustersim::cli {

namespace {

// The step model, one simulator per evaluation thread (a simulator caches and is not shared).
models::StepEvaluator step_evaluator(Context& ctx) {
  const hardware::Catalog& catalog = ctx.catalog();
  return models::per_thread<models::StepEvaluator>([&catalog]() -> models::StepEvaluator {
    auto sim = std::make_shared<models::StepSimulator>(catalog);
    return [sim](const models::Scenario& s, models::Fidelity f) { return sim->estimate(s, f); };
  });
}

// A private directory for the sensitivity analysis' derived profiles, removed on exit.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "clustersim-plan-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The report's date: SOURCE_DATE_EPOCH (reproducible builds' convention) when set, else now; UTC.
std::string report_timestamp() {
  std::time_t t = std::time(nullptr);
  if (const char* env = std::getenv("SOURCE_DATE_EPOCH"); env && *env) {
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (*end != '\0' || v < 0) {
      throw InputError("SOURCE_DATE_EPOCH", "", "expected whole seconds since 1970-01-01 UTC, got '" + std::string(env) + "'");
    }
    t = static_cast<std::time_t>(v);
  }
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::ostringstream s;
  s << std::put_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
  return s.str();
}

std::string file_sha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return hardware::sha256_hex(ss.str());
}

struct PlanExportArgs {
  std::string target, file, dir;
  int top = 0;
};

void check_export_args(const PlanExportArgs& ex, const std::string& output) {
  if (ex.target.empty()) {
    if (!ex.file.empty() || ex.top > 0 || !ex.dir.empty()) {
      throw InputError("", "--export", "--export-file, --export-top and --export-dir need --export TARGET");
    }
    return;
  }
  if (ex.top > 0) {
    if (ex.dir.empty()) throw InputError("", "--export-dir", "--export-top needs a directory (--export-dir DIR)");
    if (!ex.file.empty()) throw InputError("", "--export-file", "give --export-file or --export-top, not both");
    return;
  }
  if (ex.file.empty()) throw InputError("", "--export-file", "--export needs --export-file FILE (or --export-top N --export-dir DIR)");
  if (ex.file == "-" && (output.empty() || output == "-")) {
    throw InputError("", "--export-file", "'-' (stdout) needs the report in a file (-o FILE)");
  }
}

// The launch settings of the best candidates (by the plan's ranking).
void export_candidates(Context& ctx, const models::PlanResult& result, const PlanExportArgs& ex) {
  const auto target = models::export_target_from(ex.target);
  const auto& ranked = result.primary();
  if (ranked.empty()) {
    ctx.err << "warning: --export " << ex.target << ": no feasible candidate, nothing exported\n";
    return;
  }
  const std::size_t n = ex.top > 0 ? std::min<std::size_t>(static_cast<std::size_t>(ex.top), ranked.size()) : 1;
  std::vector<std::pair<std::string, std::string>> files;  // path, content: all made before any is written
  for (std::size_t k = 0; k < n; ++k) {
    const models::LayoutCandidate& c = result.layout(ranked[k]);
    const models::LaunchExport e = models::export_launch(c.scenario, result.space.model, target);
    for (const auto& w : e.warnings) {
      ctx.err << "warning: --export " << ex.target << ", rank " << (k + 1) << " (" << c.layout << "): " << w << "\n";
    }
    std::string path = ex.file;
    if (ex.top > 0) {
      char name[32];
      std::snprintf(name, sizeof name, "rank%02zu-", k + 1);
      path = (std::filesystem::path(ex.dir) / (name + ex.target + std::string(models::export_extension(target)))).string();
    }
    files.emplace_back(path, e.text);
  }
  if (ex.top > 0) {
    std::error_code ec;
    std::filesystem::create_directories(ex.dir, ec);
    if (ec) throw InputError(ex.dir, "--export-dir", "cannot create the directory: " + ec.message());
  }
  for (const auto& [path, text] : files) ctx.emit(path, text);
  if (ex.top > 0 && static_cast<std::size_t>(ex.top) > ranked.size()) {
    ctx.err << "warning: --export-top " << ex.top << ": only " << ranked.size() << " feasible candidate(s) exported\n";
  }
}

}  // namespace

void add_plan_command(CLI::App& app, Context& ctx) {
  auto* cmd =
      app.add_subcommand("plan", "Capacity plan: evaluate every candidate of a plan file, rank by time and cost");
  auto file = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("text");
  auto output = std::make_shared<std::string>();
  auto threads = std::make_shared<int>(models::hardware_threads());
  auto quiet = std::make_shared<bool>(false);
  cmd->add_option("PLAN", *file, "Plan JSON file (a scenario whose fields may hold choices, plus the job)")->required();
  cmd->add_option("--format", *format, "text, json, csv, markdown or html")
      ->check(CLI::IsMember({"text", "json", "csv", "markdown", "md", "html"}));
  cmd->add_option("-o,--output", *output, "Write to this file instead of stdout");
  cmd->add_option("--threads", *threads, "Evaluation threads (default: every core)")->check(CLI::Range(1, 1024));
  cmd->add_flag("--quiet", *quiet, "No progress on stderr");
  auto ex = std::make_shared<PlanExportArgs>();
  cmd->add_option("--export", ex->target, "Export the best candidate's launch settings: megatron, nemo, torchtitan or deepspeed")
      ->check(CLI::IsMember({"megatron", "nemo", "torchtitan", "deepspeed"}));
  cmd->add_option("--export-file", ex->file, "With --export: the file for the best candidate ('-': stdout, with -o)");
  cmd->add_option("--export-top", ex->top, "With --export: the first N candidates, one file each in --export-dir")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--export-dir", ex->dir, "With --export-top: the directory for rank01-<target>.<ext>, ...");
  cmd->callback([&ctx, file, format, output, threads, quiet, ex]() {
    check_export_args(*ex, *output);
    const models::PlanSpec plan = models::load_plan(*file);
    const models::StepEvaluator evaluator = step_evaluator(ctx);
    ScratchDir scratch;
    models::PlanRunOptions options;
    options.threads = *threads;
    options.scratch_dir = scratch.path();
    bool progressed = false;
    if (!*quiet) {
      options.progress = [&ctx, &progressed](const models::PlanProgress& p) {
        std::ostringstream line;
        line << "\rplan: " << p.phase;
        if (p.phase == "prepare") line << ": " << p.done << " combinations";
        if (p.total > 0) line << ": " << p.done << " of " << p.total;
        line << "        ";
        ctx.err << line.str() << std::flush;
        progressed = true;
      };
    }
    const models::PlanResult result = models::run_plan(plan, ctx.catalog(), evaluator, options);
    if (progressed) ctx.err << "\n";
    reports::PlanReportOptions ro;
    ro.generated_by = std::string("clustersim ") + CLUSTERSIM_VERSION;
    ro.created = report_timestamp();
    ro.inputs.push_back(hardware::InputDigest{std::filesystem::path(*file).filename().string(), file_sha256(*file)});
    const reports::Report report = reports::build_plan_report(result, ctx.catalog(), ro);
    const auto fmt = reports::parse_report_format(*format);
    ctx.emit(*output, fmt == reports::ReportFormat::JSON ? reports::render_plan_result(result, report)
                                                         : reports::render_report(report, fmt));
    if (!ex->target.empty()) export_candidates(ctx, result, *ex);
    // Nothing feasible is an answer (exit 0); when the report goes to a file, say so here too.
    if (result.counts.feasible == 0 && !output->empty() && *output != "-" && !result.notes.empty()) {
      ctx.err << "clustersim plan: " << result.notes.front().text << "\n";
    }
  });
}

}  // namespace clustersim::cli
