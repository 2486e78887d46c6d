// clustersim calibrate ...: calibration results (the harness clustersim-calibrate measures; these
// subcommands read, check and import).
//   import-nccl-tests LOG... [-o RESULTS.json] [--op OP] [--algo A] [--proto P] [--nranks N] [--gpus-per-node N]
//   summary RESULTS.json [--format text|json]

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "calibrate/nccl_tests_import.hpp"
#include "calibrate/results.hpp"
#include "cli/app.hpp"
#include "hardware/errors.hpp"
#include "hardware/units.hpp"
#include "reports/text_table.hpp"

namespace clustersim::cli {

namespace {

struct ImportArgs {
  std::vector<std::string> logs;
  std::string output;
  std::string op, algo, proto;
  int nranks = 0;
  int gpus_per_node = 0;
};

// The best busbw of each op over the out-of-place series, at the largest size measured.
void summarize(const calibrate::CalibrationResults& r, std::ostream& out) {
  out << "tool: " << r.tool.name << (r.tool.version.empty() ? "" : " " + r.tool.version) << '\n';
  if (r.environment) {
    const auto& e = *r.environment;
    out << "machine: " << e.hostname.value_or("?") << ", " << e.gpu_count.value_or(0) << "x "
        << e.gpu_name.value_or("?") << ", driver " << e.driver.value_or("?") << ", NCCL " << e.nccl_version.value_or("?")
        << ", fabric manager " << e.fabric_manager.value_or("?") << '\n';
    for (const auto& w : e.warnings) out << "warning: " << w << '\n';
  }
  out << "entries: collectives " << r.collectives.size() << ", p2p " << r.p2p.size() << ", gemm " << r.gemm.size()
      << ", attention " << r.attention.size() << ", memory " << r.memory.size() << ", host " << r.host.size()
      << ", cpu_adam " << r.cpu_adam.size() << ", failures " << r.failures.size() << "\n\n";
  using Align = reports::TextTable::Align;
  reports::TextTable t({"OP", "RANKS", "ALGO", "PROTO", "CHANNELS", "IN-PLACE", "POINTS", "MAX SIZE", "BUSBW GB/s",
                        "ERRORS"},
                       {Align::LEFT, Align::RIGHT, Align::LEFT, Align::LEFT, Align::RIGHT, Align::LEFT, Align::RIGHT,
                        Align::RIGHT, Align::RIGHT, Align::RIGHT});
  for (const auto& c : r.collectives) {
    if (c.points.empty()) continue;
    const auto& last = c.points.back();
    std::int64_t errors = 0;
    bool checked = false;
    for (const auto& p : c.points) {
      if (p.errors) {
        checked = true;
        errors += *p.errors;
      }
    }
    t.add_row({c.op, std::to_string(c.nranks), c.algo, c.proto, c.channels ? std::to_string(*c.channels) : "-",
               c.in_place ? "yes" : "no", std::to_string(c.points.size()), format_bytes(Bytes::of(last.size_bytes)),
               format_significant(last.busbw_GBps, 4), checked ? std::to_string(errors) : "n/a"});
  }
  if (t.rows() > 0) t.write(out);
}

}  // namespace

void add_calibrate_command(CLI::App& app, Context& ctx) {
  auto* cal = app.add_subcommand("calibrate",
                                 "Calibration: fit a profile to results, import nccl-tests logs, check harness results");
  cal->require_subcommand(1);
  add_calibrate_fit(*cal, ctx);

  auto args = std::make_shared<ImportArgs>();
  auto* imp = cal->add_subcommand("import-nccl-tests",
                                  "Read nccl-tests output (NCCL_DEBUG=INFO lines may be mixed in) into calibration "
                                  "results JSON");
  imp->add_option("LOG", args->logs, "nccl-tests output files")->required()->check(CLI::ExistingFile);
  imp->add_option("-o,--output", args->output, "Results JSON to write (atomically); stdout when absent");
  imp->add_option("--op", args->op, "The collective, when the log does not name it")
      ->check(CLI::IsMember(calibrate::collective_ops()));
  imp->add_option("--algo", args->algo, "NCCL algorithm, when the log does not say (NCCL_ALGO INFO line)")
      ->check(CLI::IsMember(calibrate::collective_algos()));
  imp->add_option("--proto", args->proto, "NCCL protocol, when the log does not say (NCCL_PROTO INFO line)")
      ->check(CLI::IsMember(calibrate::collective_protos()));
  imp->add_option("--nranks", args->nranks, "Number of ranks, when the log has no '#  Rank' device lines")
      ->check(CLI::Range(1, 1 << 24));
  imp->add_option("--gpus-per-node", args->gpus_per_node, "GPUs per node, when the log has no host names")
      ->check(CLI::Range(1, 1 << 16));
  imp->callback([&ctx, args]() {
    calibrate::NcclTestsImportOptions opt;
    if (!args->op.empty()) opt.op = args->op;
    if (!args->algo.empty()) opt.algo = args->algo;
    if (!args->proto.empty()) opt.proto = args->proto;
    if (args->nranks > 0) opt.nranks = args->nranks;
    if (args->gpus_per_node > 0) opt.gpus_per_node = args->gpus_per_node;
    const auto results = calibrate::import_nccl_tests_logs(args->logs, opt);
    if (results.environment) {
      for (const auto& w : results.environment->warnings) ctx.err << "warning: " << w << '\n';
    }
    ctx.emit(args->output, calibrate::format_calibration_results(results));
    if (!args->output.empty()) {
      ctx.err << "wrote " << args->output << ": " << results.collectives.size() << " series from " << args->logs.size()
              << " log(s)\n";
    }
  });

  auto file = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("text");
  auto* sum = cal->add_subcommand("summary", "Read calibration results strictly and summarize them");
  sum->add_option("RESULTS", *file, "Results JSON (clustersim-calibrate output or an import)")->required();
  sum->add_option("--format", *format, "text or json (the results as read, normalized)")
      ->check(CLI::IsMember({"text", "json"}));
  sum->callback([&ctx, file, format]() {
    const auto results = calibrate::load_calibration_results(*file);
    if (*format == "json") {
      ctx.out << calibrate::format_calibration_results(results);
    } else {
      summarize(results, ctx.out);
    }
  });
}

}  // namespace clustersim::cli
