// clustersim validate training: training-step predictions beside published Megatron-LM
// measurements (SC'21 Table 1 on A100, the Megatron-Core H100 weak-scaling table), row by row:
// the measurement (the expectation), the prediction, the error, then the median and worst
// absolute error per table and the recorded thresholds (--check fails when one is exceeded);
// then this project's own measured PyTorch FSDP2 steps on 4 x H200, step time and peak memory.
// --calibration FILE uses that profile for the sets on Hopper GPUs (the H100 table, the H200
// probes); the A100 table keeps its system's default.
// Then the step band (models/step_band.hpp) over every committed step measurement: per set, the
// share inside the 68% and 90% bands, each band made without the measurement's own score, and the
// 90% band's median half-width. --check also fails when the share of all steps, or of the
// out-of-sample ones, falls more than kCoverageSlack below the band's claim; --record-bands FILE writes the scores the built-in band
// uses (models/data/step_band_scores.json).

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/app.hpp"
#include "hardware/embedded_file.hpp"
#include "hardware/atomic_file.hpp"
#include "hardware/errors.hpp"
#include "models/step_residuals.hpp"
#include "models/training_validation.hpp"
#include "reports/text_table.hpp"

namespace clustersim::cli {

std::span<const EmbeddedFile> builtin_validation_files();  // generated from tests/validation/data/*

namespace {

struct TrainingArgs {
  std::string data_dir;
  std::string format = "text";
  std::string calibration;
  std::string record_bands;
  bool check = false;
};

// How far below its claim a set's band coverage may fall before --check fails.
constexpr double kCoverageSlack = 0.10;

std::string read_data(const TrainingArgs& a, const std::string& name) {
  if (!a.data_dir.empty()) {
    const auto p = std::filesystem::path(a.data_dir) / name;
    std::ifstream in(p, std::ios::binary);
    if (!in) throw InputError(p.string(), "", "cannot read the file");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  for (const auto& f : builtin_validation_files()) {
    if (f.path == name) return std::string(f.text);
  }
  throw RuntimeError("validation data file '" + name + "' is not built in");
}

std::string num(double v, int d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", d, v);
  return buf;
}
std::string pct(double v, bool sign = true) {
  char buf[64];
  std::snprintf(buf, sizeof buf, sign ? "%+.1f%%" : "%.1f%%", 100 * v);
  return buf;
}

// The probes' thresholds: "<set>.step" and "<set>.memory" in training_thresholds.json.
bool probe_breach(const models::ProbeValidationSet& p, const std::map<std::string, models::TrainingThreshold>& th) {
  bool over = false;
  if (auto t = th.find(p.name + ".step"); t != th.end()) {
    over = over || p.median_step_error > t->second.median_abs_error || p.worst_step_error > t->second.worst_abs_error;
  }
  if (auto t = th.find(p.name + ".memory"); t != th.end()) {
    over = over || p.median_memory_error > t->second.median_abs_error || p.worst_memory_error > t->second.worst_abs_error;
  }
  return over;
}

void run(Context& ctx, const TrainingArgs& a) {
  const auto sets = models::run_training_validation(
      read_data(a, "training_sets.json"), [&](const std::string& n) { return read_data(a, n); }, ctx.catalog(),
      a.calibration);
  const auto probes = models::run_probe_validation(read_data(a, "training_fsdp2_probes.json"), ctx.catalog(), a.calibration);
  const auto thresholds = models::load_training_thresholds(read_data(a, "training_thresholds.json"),
                                                           "training_thresholds.json");
  bool breach = false;
  const std::vector<models::StepResidual> residuals =
      models::collect_step_residuals([&](const std::string& n) { return read_data(a, n); }, ctx.catalog());
  const models::StepBandTable band_table = models::step_band_table(residuals);
  const std::vector<models::BandCheck> band_checks = models::check_step_bands(residuals, band_table);
  const std::vector<models::BandCoverage> coverage = models::band_coverage(band_checks);
  for (const auto& c : coverage) {
    if (c.group != "all" && c.group != "out of sample") continue;
    breach = breach || c.within68 < 0.68 - kCoverageSlack || c.within90 < 0.90 - kCoverageSlack;
  }
  std::ostringstream out;
  if (a.format == "json") {
    nlohmann::json j;
    j["schema_version"] = 1;
    j["kind"] = "clustersim-training-validation";
    j["sets"] = nlohmann::json::array();
    for (const auto& s : sets) {
      nlohmann::json js{{"name", s.name}, {"description", s.description}, {"provenance", s.provenance},
                        {"median_abs_error", s.median_abs_error}, {"worst_abs_error", s.worst_abs_error}};
      if (auto t = thresholds.find(s.name); t != thresholds.end()) {
        const bool over = s.median_abs_error > t->second.median_abs_error || s.worst_abs_error > t->second.worst_abs_error;
        breach = breach || over;
        js["threshold"] = {{"median_abs_error", t->second.median_abs_error}, {"worst_abs_error", t->second.worst_abs_error}};
        js["within_threshold"] = !over;
      }
      js["rows"] = nlohmann::json::array();
      for (const auto& r : s.rows) {
        js["rows"].push_back({{"row", r.label},
                              {"measured_tflops_per_gpu", r.measured_tflops},
                              {"predicted_tflops_per_gpu", r.predicted_tflops},
                              {"fast_tflops_per_gpu", r.fast_tflops},
                              {"error", r.error},
                              {"predicted_step_s", r.step_s},
                              {"measured_step_s", r.measured_step_s},
                              {"compute_s", r.estimate.breakdown.compute_s},
                              {"exposed_comm_s", r.estimate.breakdown.exposed_comm_s},
                              {"pipeline_bubble_s", r.estimate.breakdown.pipeline_bubble_s},
                              {"optimizer_s", r.estimate.breakdown.optimizer_s},
                              {"fits_in_memory", r.estimate.memory.fits}});
      }
      j["sets"].push_back(js);
    }
    nlohmann::json jp{{"name", probes.name}, {"description", probes.description}, {"provenance", probes.provenance},
                      {"median_abs_step_error", probes.median_step_error}, {"worst_abs_step_error", probes.worst_step_error},
                      {"median_abs_memory_error", probes.median_memory_error},
                      {"worst_abs_memory_error", probes.worst_memory_error}};
    breach = probe_breach(probes, thresholds) || breach;
    jp["rows"] = nlohmann::json::array();
    for (const auto& r : probes.rows) {
      jp["rows"].push_back({{"row", r.label},
                            {"measured_step_s", r.measured_step_s},
                            {"predicted_step_s", r.predicted_step_s},
                            {"fast_step_s", r.fast_step_s},
                            {"step_error", r.step_error},
                            {"measured_peak_allocated_bytes", r.measured_peak_bytes},
                            {"predicted_peak_allocated_bytes", r.predicted_peak_bytes},
                            {"memory_error", r.memory_error},
                            {"compute_s", r.estimate.breakdown.compute_s},
                            {"exposed_comm_s", r.estimate.breakdown.exposed_comm_s},
                            {"optimizer_s", r.estimate.breakdown.optimizer_s}});
    }
    j["probes"] = jp;
    nlohmann::json jb = nlohmann::json::array();
    for (const auto& c : coverage) {
      jb.push_back({{"group", c.group},
                    {"measurements", c.measurements},
                    {"coverage_68", c.within68},
                    {"coverage_90", c.within90},
                    {"median_half_width_90", c.median_half_width90}});
    }
    j["bands"] = {{"method", "split conformal, leave-one-out"}, {"groups", jb}};
    out << j.dump(2) << "\n";
  } else {
    using Align = reports::TextTable::Align;
    for (const auto& s : sets) {
      out << "== " << s.name << ": " << s.description << "\n   source: " << s.provenance << "\n";
      reports::TextTable t({"row", "expected TFLOP/s", "predicted", "error", "fast", "step s (pred)", "step s (meas)",
                            "compute", "exp. comm", "bubble", "optim", "fits"},
                           {Align::LEFT, Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::RIGHT,
                            Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::LEFT});
      for (const auto& r : s.rows) {
        const auto& b = r.estimate.breakdown;
        t.add_row({r.label, num(r.measured_tflops, 1), num(r.predicted_tflops, 1), pct(r.error), num(r.fast_tflops, 1),
                   num(r.step_s, 2), num(r.measured_step_s, 2), num(b.compute_s, 2), num(b.exposed_comm_s, 2),
                   num(b.pipeline_bubble_s, 2), num(b.optimizer_s, 2), r.estimate.memory.fits ? "yes" : "NO"});
      }
      t.write(out, "   ");
      out << "   |error| over " << s.rows.size() << " rows: median " << pct(s.median_abs_error, false) << ", worst "
          << pct(s.worst_abs_error, false);
      if (auto th = thresholds.find(s.name); th != thresholds.end()) {
        const bool over = s.median_abs_error > th->second.median_abs_error || s.worst_abs_error > th->second.worst_abs_error;
        breach = breach || over;
        out << "; recorded thresholds " << pct(th->second.median_abs_error, false) << " / "
            << pct(th->second.worst_abs_error, false) << (over ? "  EXCEEDED" : "  ok");
      }
      out << "\n\n";
    }
    out << "== " << probes.name << ": " << probes.description << "\n   source: " << probes.provenance << "\n";
    reports::TextTable t({"row", "expected step s", "predicted", "error", "fast", "expected peak GiB", "predicted",
                          "error", "compute", "exp. comm", "optim"},
                         {Align::LEFT, Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::RIGHT,
                          Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::RIGHT});
    const double gib = 1024.0 * 1024 * 1024;
    for (const auto& r : probes.rows) {
      const auto& b = r.estimate.breakdown;
      t.add_row({r.label, num(r.measured_step_s, 3), num(r.predicted_step_s, 3), pct(r.step_error), num(r.fast_step_s, 3),
                 num(r.measured_peak_bytes / gib, 1), num(r.predicted_peak_bytes / gib, 1), pct(r.memory_error),
                 num(b.compute_s, 3), num(b.exposed_comm_s, 3), num(b.optimizer_s, 3)});
    }
    t.write(out, "   ");
    out << "   |error| over " << probes.rows.size() << " rows: step median " << pct(probes.median_step_error, false)
        << ", worst " << pct(probes.worst_step_error, false) << "; peak memory median "
        << pct(probes.median_memory_error, false) << ", worst " << pct(probes.worst_memory_error, false);
    const bool over = probe_breach(probes, thresholds);
    breach = breach || over;
    out << (over ? "  EXCEEDED a recorded threshold" : "") << "\n";
    out << "\n== step bands: every committed step measurement inside its 68% and 90% bands, each band made\n"
           "   from the other measurements' scores (leave-one-out; models/step_band.hpp)\n";
    reports::TextTable bt({"set", "steps", "in 68% band", "in 90% band", "90% half-width (median)", ""},
                          {Align::LEFT, Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::LEFT});
    for (const auto& c : coverage) {
      const bool low = c.within68 < 0.68 - kCoverageSlack || c.within90 < 0.90 - kCoverageSlack;
      bt.add_row({c.group, std::to_string(c.measurements), pct(c.within68, false), pct(c.within90, false),
                  pct(c.median_half_width90, false), low ? "BELOW CLAIM" : "ok"});
    }
    bt.write(out, "   ");
  }
  if (!a.record_bands.empty()) {
    write_file_atomically(a.record_bands,
                          band_table.to_json("Residuals of the step band (models/step_band.hpp): every committed "
                                             "step measurement, written by `clustersim validate training "
                                             "--record-bands`."));
  }
  ctx.emit("", out.str());
  if (a.check && breach) throw RuntimeError("a training validation error exceeds its recorded threshold");
}

}  // namespace

void add_validate_training(CLI::App& validate, Context& ctx) {
  auto args = std::make_shared<TrainingArgs>();
  auto* cmd = validate.add_subcommand("training", "Training steps against published Megatron-LM measurements and measured FSDP2 steps");
  cmd->add_option("--data", args->data_dir, "Directory with the validation data (default: the built-in copies)")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--format", args->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--calibration", args->calibration,
                  "Calibration profile for the sets on Hopper GPUs (H100 table, H200 probes)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--check", args->check,
                "Exit 1 when an error exceeds its recorded threshold or a band covers far less than it claims");
  cmd->add_option("--record-bands", args->record_bands,
                  "Write the step band's scores (models/data/step_band_scores.json) from this run");
  cmd->callback([&ctx, args]() { run(ctx, *args); });
}

}  // namespace clustersim::cli
