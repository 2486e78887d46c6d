// clustersim plan PLAN.json: every candidate layout of a plan, ranked by time to train and cost.

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
  cmd->callback([&ctx, file, format, output, threads, quiet]() {
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
    // Nothing feasible is an answer (exit 0); when the report goes to a file, say so here too.
    if (result.counts.feasible == 0 && !output->empty() && *output != "-" && !result.notes.empty()) {
      ctx.err << "clustersim plan: " << result.notes.front().text << "\n";
    }
  });
}

}  // namespace clustersim::cli
