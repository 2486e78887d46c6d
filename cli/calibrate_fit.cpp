// clustersim calibrate fit RESULTS.json... -o PROFILE.json: fits the simulator's parameters to
// calibration results and writes a calibration profile with its provenance and cross-validation.
//
// The results files are loaded once each and merged (calibrate/fit_input.hpp: their measurement
// sections concatenated; they must come from one kind of GPU), then the NCCL model's parameters
// ("nccl.*", calibrate/nccl_fit.hpp) and the compute and host parameters ("compute.*", "host.*",
// calibrate/compute_fit.hpp) are fitted. The profile
// records the machine, GPU, driver, CUDA and NCCL versions and date from the results' environment,
// and the results files it came from, so anyone can fit it again.

#include <CLI/CLI.hpp>
#include <filesystem>
#include <set>
#include <nlohmann/json.hpp>

#include "calibrate/compute_fit.hpp"
#include "calibrate/fit_input.hpp"
#include "calibrate/nccl_fit.hpp"
#include "cli/app.hpp"
#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "reports/text_table.hpp"

namespace clustersim::cli {

namespace {

struct FitArgs {
  std::vector<std::string> results;
  std::string output;
  std::string name;
  std::string machine;
  std::string system;
  std::string notes;
};

// The catalog GPU whose name the results' "NVIDIA H200" matches best.
const hardware::GpuSpec& gpu_of(const hardware::Catalog& catalog, const std::string& name, const std::string& file) {
  std::string want;
  for (char c : name) want += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const hardware::GpuSpec* best = nullptr;
  for (const auto& [n, g] : catalog.gpus()) {
    std::string model = n.substr(0, n.find('-'));  // "H200" of "H200-SXM-141GB"
    if (want.find(model) != std::string::npos) {
      // Prefer the entry whose memory size the name mentions (A100 40GB vs 80GB), else the first.
      if (best == nullptr || want.find(n.substr(n.rfind('-') + 1)) != std::string::npos) best = &g;
    }
  }
  if (best == nullptr) {
    throw InputError(file, "/environment/gpu_name", "no catalog GPU matches '" + name + "'; add it with --catalog");
  }
  return *best;
}

}  // namespace

void add_calibrate_fit(CLI::App& calibrate, Context& ctx) {
  auto args = std::make_shared<FitArgs>();
  auto* fit = calibrate.add_subcommand(
      "fit", "Fit the simulator's parameters to calibration results and write a calibration profile");
  fit->add_option("RESULTS", args->results, "Calibration results JSON files of one machine")
      ->required()
      ->check(CLI::ExistingFile);
  fit->add_option("-o,--output", args->output, "Profile JSON to write (atomically)")->required();
  fit->add_option("--name", args->name, "Profile name [the output file's stem]");
  fit->add_option("--machine", args->machine, "What the machine is, for the provenance [GPUs and driver]");
  fit->add_option("--system", args->system, "Catalog system or instance the machine is (for the NCCL model)");
  fit->add_option("--notes", args->notes, "Free text kept in the provenance");
  fit->callback([&ctx, args]() {
    const calibrate::CalibrationResults results = calibrate::load_fit_input(args->results);
    const calibrate::EnvironmentInfo& env = *results.environment;  // load_fit_input requires one
    const auto& catalog = ctx.catalog();
    const hardware::GpuSpec& gpu = gpu_of(catalog, env.gpu_name.value_or(""), args->results.front());

    calibrate::FitReport nccl_report;
    std::vector<hardware::ProfileParameter> params =
        args->system.empty() ? calibrate::fit_nccl_parameters(results, nccl_report)
                             : calibrate::fit_nccl_parameters(results, nccl_report, catalog, args->system);
    calibrate::ComputeFitReport compute_report;
    auto compute = calibrate::fit_compute_parameters(results, gpu, compute_report);
    params.insert(params.end(), compute.begin(), compute.end());

    hardware::ProfileProvenance prov;
    prov.gpu = env.gpu_name.value_or("");
    prov.gpu_count = std::max(env.gpu_count.value_or(0), 1);
    prov.driver = env.driver.value_or("");
    prov.cuda = env.cuda_runtime.value_or("");
    prov.nccl = env.nccl_version.value_or("");
    prov.date = env.date.value_or("").substr(0, 10);
    prov.machine = args->machine.empty() ? std::to_string(prov.gpu_count) + " x " + prov.gpu + ", driver " + prov.driver
                                         : args->machine;
    for (const auto& r : args->results) prov.results.push_back(std::filesystem::path(r).lexically_normal().string());
    prov.notes = args->notes;
    const std::string name =
        args->name.empty() ? std::filesystem::path(args->output).stem().string() : args->name;
    const nlohmann::json cv = {{"nccl", nccl_report.to_json()}, {"compute", compute_report.to_json()}};
    const auto profile = hardware::CalibrationProfile::from_parts(name, prov, params, cv);
    ctx.emit(args->output, profile.to_json().dump(2) + "\n");

    // The cross-validation tables: fit on part of the measurements, predict the rest.
    std::ostream& out = ctx.out;
    out << "profile " << name << ": " << params.size() << " parameters from " << args->results.size()
        << " results file(s) (" << nccl_report.points << " collective/p2p points)\n\n";
    out << "NCCL model, held-out time error (fit on alternate sizes, predict the others):\n";
    reports::TextTable t({"OP", "TRANSPORT", "POINTS", "MEDIAN |ERR|", "WORST |ERR|"},
                         {reports::TextTable::Align::LEFT, reports::TextTable::Align::LEFT,
                          reports::TextTable::Align::RIGHT, reports::TextTable::Align::RIGHT,
                          reports::TextTable::Align::RIGHT});
    for (const auto& e : nccl_report.cross_validation) {
      t.add_row({e.op, e.transport, std::to_string(e.points), format_significant(100 * e.median_abs_error, 3) + "%",
                 format_significant(100 * e.worst_abs_error, 3) + "%"});
    }
    t.write(out, "  ");
    out << "\nCompute and host model, held-out time error (k-fold):\n" << compute_report.to_text();
    // compute_report.to_text() already lists its notes; the NCCL fitter's repeat per series.
    std::set<std::string> seen;
    for (const auto& n : nccl_report.notes) {
      if (seen.insert(n).second) ctx.err << "note: " << n << '\n';
    }
  });
}

}  // namespace clustersim::cli
