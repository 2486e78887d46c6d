// clustersim simulate SCENARIO.json [--format text|json] [--trace FILE] [--fidelity event|fast]
//     [--require-fit]
// One training step of a model on a cluster under a layout (DESIGN.md "clustersim simulate"):
// step time, tokens/s, MFU, where the time goes, the collectives, the memory peak and whether it
// fits, with the uncertainty band and the provenance of every parameter used.
//
// A layout that does not fit in GPU memory is still simulated: exit 0, "fits_in_memory": false
// and a warning saying by how much; --require-fit makes that an input error (exit 2).
// --trace writes a Perfetto (Chrome JSON) trace of the event simulation (reports/step_trace.hpp):
// one process per simulated rank (one per pipeline stage), one thread per stream, slices with
// their micro-batch, layer and collective, arrows for pipeline sends and gradient collectives, and
// counters for memory and the busiest links.
// --export megatron|nemo|torchtitan|deepspeed writes the scenario's layout and training settings
// as that framework's launch settings (models/launch_export.hpp): to stdout in place of the report
// (nothing is simulated), or with --export-file FILE to that file beside the usual report.
// Settings the target cannot express are warned about on stderr; a layout it cannot run exits 2.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/app.hpp"
#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "models/launch_export.hpp"
#include "models/parallel_layout.hpp"
#include "models/scenario.hpp"
#include "models/transformer_config.hpp"
#include "models/step_model.hpp"
#include "reports/step_trace.hpp"
#include "reports/text_table.hpp"

namespace clustersim::cli {

namespace {

struct SimulateArgs {
  std::string file;
  std::string format = "text";
  std::string trace;
  std::string fidelity = "event";
  bool require_fit = false;
  std::string export_target;
  std::string export_file;
};

constexpr int kSchemaVersion = 1;

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string gib(Bytes b) { return fixed(b.as_double() / (1024.0 * 1024 * 1024), 2) + " GiB"; }

// Where the band's widths come from, in one line.
std::string band_method(const models::StepEstimate& e) {
  const std::string basis = e.band.calibrated ? "calibrated" : "catalog-default";
  const std::string head = e.band.regime + "-bound step on " + basis + " parameters; ";
  if (e.band.cell.empty()) {
    return head + "no validation residuals are built in: the parameters' own uncertainty (" +
           fixed(100 * e.band.scale, 1) + "%) as a normal band";
  }
  return head + "widths from the residuals of " + std::to_string(e.band.scores) + " validation steps (" +
         e.band.cell + "), split conformal";
}

std::string seconds(double s) {
  if (s >= 1) return fixed(s, 3) + " s";
  if (s >= 1e-3) return fixed(s * 1e3, 2) + " ms";
  return fixed(s * 1e6, 1) + " us";
}

// What training.implementation says runs outside the GEMMs and attention (models/layer_ops.hpp),
// and whether the scenario chose it or the framework's default did.
std::string implementation_note(const models::Scenario& s) {
  std::string note;
  switch (s.training.implementation) {
    case models::Implementation::HF_EAGER: note = "hf_eager (Hugging Face transformers modules run eagerly"; break;
    case models::Implementation::EAGER: note = "eager (plain PyTorch modules run eagerly"; break;
    case models::Implementation::COMPILED: note = "compiled (torch.compile of plain PyTorch modules"; break;
    case models::Implementation::FUSED:
      note = "fused (Megatron-Core with Transformer Engine's fused kernels";
      break;
  }
  if (s.training.implementation_given) return note + "; training.implementation)";
  return note + "; the default for framework " + std::string(models::to_string(s.parallelism.framework)) +
         ", training.implementation chooses)";
}

nlohmann::json to_json(const models::Scenario& s, const models::StepEstimate& e) {
  using nlohmann::json;
  json j;
  j["schema_version"] = kSchemaVersion;
  j["scenario"] = s.name;
  j["fidelity"] = std::string(models::to_string(e.fidelity));
  j["implementation"] = std::string(models::to_string(s.training.implementation));
  j["step_time_s"] = e.step_time_s;
  j["tokens_per_step"] = e.tokens_per_step;
  j["tokens_per_s"] = e.tokens_per_s;
  j["model_flops_per_step"] = e.model_flops_per_step;
  j["mfu"] = e.mfu;
  j["breakdown"] = {{"compute_s", e.breakdown.compute_s},
                    {"exposed_comm_s", e.breakdown.exposed_comm_s},
                    {"pipeline_bubble_s", e.breakdown.pipeline_bubble_s},
                    {"optimizer_s", e.breakdown.optimizer_s},
                    {"offload_s", e.breakdown.offload_s},
                    {"host_s", e.breakdown.host_s}};
  if (e.host.cpu_work) {
    j["host"] = {{"threads_per_rank", e.host.threads_per_rank},
                 {"cores_per_rank", e.host.cores_per_rank},
                 {"ranks_per_node", e.host.ranks_per_node},
                 {"threads_from", e.host.threads_from},
                 {"cpu_adam_s", e.host.cpu_adam_s},
                 {"cpu_optimizer_s", e.host.cpu_optimizer_s},
                 {"hooks_s", e.host.hooks_s},
                 {"dispatch_s", e.host.dispatch_s},
                 {"kernels", e.host.kernels},
                 {"kernels_s", e.host.kernels_s}};
  }
  j["memory"] = {{"peak_bytes", e.memory.peak.count()},
                 {"weights_bytes", e.memory.weights.count()},
                 {"gradients_bytes", e.memory.gradients.count()},
                 {"optimizer_state_bytes", e.memory.optimizer_state.count()},
                 {"activations_bytes", e.memory.activations.count()},
                 {"buffers_bytes", e.memory.buffers.count()},
                 {"allocated_bytes", e.memory.allocated.count()},
                 {"usable_bytes", e.memory.usable.count()},
                 {"shortfall_bytes", e.memory.shortfall.count()},
                 {"host_bytes_per_node", e.memory.host_bytes.count()}};
  j["fits_in_memory"] = e.memory.fits;
  j["uncertainty"] = {{"coverage", e.band.coverage},
                      {"low_s", e.low_s},
                      {"high_s", e.high_s},
                      {"bands",
                       json::array({{{"coverage", e.band.coverage}, {"low_s", e.low_s}, {"high_s", e.high_s}},
                                    {{"coverage", 0.9}, {"low_s", e.band.low90_s}, {"high_s", e.band.high90_s}}})},
                      {"regime", e.band.regime},
                      {"parameters", e.band.calibrated ? "calibrated" : "catalog defaults"},
                      {"scale", e.band.scale},
                      {"validation_cell", e.band.cell},
                      {"validation_steps", e.band.scores},
                      {"method", band_method(e)}};
  json comms = json::array();
  for (const auto& c : e.comms) {
    comms.push_back({{"name", c.name},
                     {"group", c.group},
                     {"algorithm", c.algorithm},
                     {"transport", c.transport},
                     {"calls", c.calls},
                     {"bytes", c.bytes.count()},
                     {"time_s", c.time_s},
                     {"exposed_s", c.exposed_s}});
  }
  j["comms"] = comms;
  j["bottleneck"] = e.bottleneck;
  json params = json::array();
  for (const auto& p : e.parameters) {
    params.push_back({{"name", p.name},
                      {"value", p.value},
                      {"text", p.text},
                      {"calibrated", p.calibrated},
                      {"provenance", p.provenance},
                      {"uncertainty", p.uncertainty}});
  }
  j["parameters"] = params;
  j["warnings"] = e.warnings;
  return j;
}

std::string to_text(const models::Scenario& s, const models::StepEstimate& e) {
  std::ostringstream o;
  const double T = e.step_time_s;
  auto pct = [&](double v) { return T > 0 ? fixed(100 * v / T, 1) + "%" : std::string("-"); };
  o << "Scenario:        " << s.name << " (" << models::to_string(e.fidelity) << " simulation)\n";
  o << "Step time:       " << seconds(T) << "  (68% band " << seconds(e.low_s) << " - " << seconds(e.high_s)
    << ", 90% band " << seconds(e.band.low90_s) << " - " << seconds(e.band.high90_s) << ")\n";
  o << "Band:            " << band_method(e) << "\n";
  o << "Tokens/step:     " << e.tokens_per_step << "\n";
  o << "Throughput:      " << fixed(e.tokens_per_s, 0) << " tokens/s\n";
  o << "MFU:             " << fixed(100 * e.mfu, 1) << "%\n";
  o << "Kernels:         " << implementation_note(s) << "\n";
  o << "\nWhere the time goes (critical rank):\n";
  reports::TextTable bt({"part", "time", "share"});
  bt.add_row({"compute", seconds(e.breakdown.compute_s), pct(e.breakdown.compute_s)});
  bt.add_row({"exposed communication", seconds(e.breakdown.exposed_comm_s), pct(e.breakdown.exposed_comm_s)});
  bt.add_row({"pipeline bubble", seconds(e.breakdown.pipeline_bubble_s), pct(e.breakdown.pipeline_bubble_s)});
  bt.add_row({"optimizer", seconds(e.breakdown.optimizer_s), pct(e.breakdown.optimizer_s)});
  bt.add_row({"offload", seconds(e.breakdown.offload_s), pct(e.breakdown.offload_s)});
  if (e.host.cpu_work) bt.add_row({"host (CPU thread)", seconds(e.breakdown.host_s), pct(e.breakdown.host_s)});
  bt.write(o);
  if (e.host.cpu_work) {
    o << "\nHost (one rank): " << e.host.threads_per_rank << " thread(s) on " << fixed(e.host.cores_per_rank, 2)
      << " core(s), " << e.host.ranks_per_node << " rank(s) a node; " << e.host.threads_from << "\n";
    if (e.host.cpu_optimizer_s > 0) {
      o << "  CPU optimizer:  " << seconds(e.host.cpu_optimizer_s) << " (CPU Adam " << seconds(e.host.cpu_adam_s)
        << ")\n";
    }
    if (e.host.hooks_s > 0) o << "  module hooks:   " << seconds(e.host.hooks_s) << " of CPU time a step\n";
    if (e.host.dispatch_s > 0) {
      o << "  kernel issue:   " << seconds(e.host.dispatch_s) << " of CPU time a step for " << e.host.kernels
        << " kernels that run " << seconds(e.host.kernels_s) << " on the GPU\n";
    }
  }
  if (!e.comms.empty()) {
    o << "\nCollectives (critical rank, whole step):\n";
    reports::TextTable ct({"collective", "group", "transport", "algorithm", "calls", "bytes", "busy", "exposed"});
    for (const auto& c : e.comms) {
      ct.add_row({c.name, c.group, c.transport, c.algorithm, std::to_string(c.calls), gib(c.bytes), seconds(c.time_s),
                  seconds(c.exposed_s)});
    }
    ct.write(o);
  }
  o << "\nBottleneck:      " << e.bottleneck << "\n";
  o << "\nMemory per GPU (largest stage): " << gib(e.memory.peak) << " of " << gib(e.memory.usable)
    << (e.memory.fits ? " - fits" : " - DOES NOT FIT (short by " + gib(e.memory.shortfall) + ")") << "\n";
  reports::TextTable mt({"weights", "gradients", "optimizer state", "activations", "buffers"});
  mt.add_row({gib(e.memory.weights), gib(e.memory.gradients), gib(e.memory.optimizer_state), gib(e.memory.activations),
              gib(e.memory.buffers)});
  mt.write(o);
  if (e.memory.host_bytes.count() > 0) o << "Host memory per node (offloaded state): " << gib(e.memory.host_bytes) << "\n";
  int calibrated = 0;
  for (const auto& p : e.parameters) calibrated += p.calibrated ? 1 : 0;
  o << "\nParameters: " << e.parameters.size() << " used, " << calibrated << " calibrated (--format json lists them)\n";
  for (const auto& w : e.warnings) o << "warning: " << w << "\n";
  return o.str();
}

}  // namespace

void add_simulate_command(CLI::App& app, Context& ctx) {
  auto* sim = app.add_subcommand("simulate", "Simulate one training step of a scenario (step time, breakdown, memory)");
  auto a = std::make_shared<SimulateArgs>();
  sim->add_option("SCENARIO", a->file, "Scenario JSON file")->required();
  sim->add_option("--format", a->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  sim->add_option("--trace", a->trace, "Write a Perfetto (Chrome JSON) trace of the event simulation to this file");
  sim->add_option("--fidelity", a->fidelity, "event (task graph on the event simulator, default) or fast (closed form)")
      ->check(CLI::IsMember({"event", "fast"}));
  sim->add_flag("--require-fit", a->require_fit, "Exit 2 when the layout does not fit in GPU memory");
  sim->add_option("--export", a->export_target,
                  "Write the layout and training settings as megatron (Megatron-LM arguments), nemo (NeMo 2 "
                  "overrides), torchtitan (TOML) or deepspeed (JSON): to stdout instead of the report, or to "
                  "--export-file")
      ->check(CLI::IsMember({"megatron", "nemo", "torchtitan", "deepspeed"}));
  sim->add_option("--export-file", a->export_file, "With --export: write the export here and print the report");
  sim->callback([&ctx, a]() {
    const models::Scenario s = models::load_scenario(a->file);
    if (!a->export_file.empty() && a->export_target.empty()) {
      throw InputError("", "--export-file", "needs --export megatron|nemo|torchtitan|deepspeed");
    }
    if (!a->export_target.empty()) {
      const models::TransformerConfig model = models::resolve_model(s.model);
      const models::ParallelLayout layout(model, s.parallelism, s.training, s.file);  // the layout must be valid
      const auto target = models::export_target_from(a->export_target);
      const models::LaunchExport ex = models::export_launch(s, model, target);
      for (const auto& w : ex.warnings) ctx.err << "warning: --export " << a->export_target << ": " << w << "\n";
      ctx.emit(a->export_file, ex.text);
      if (a->export_file.empty()) return;
    }
    const models::Fidelity fidelity = a->fidelity == "fast" ? models::Fidelity::FAST : models::Fidelity::EVENT;
    if (!a->trace.empty() && fidelity == models::Fidelity::FAST) {
      throw InputError("", "--trace", "a trace needs the event simulation (--fidelity event)");
    }
    models::StepSimulator simulator(ctx.catalog());
    models::StepTimeline timeline;
    models::StepRunOptions options;
    if (!a->trace.empty()) options.timeline = &timeline;
    const models::StepEstimate e = simulator.estimate(s, fidelity, options);
    if (a->require_fit && !e.memory.fits) {
      throw InputError(s.file, "/parallelism",
                       "the layout does not fit in GPU memory: peak " + gib(e.memory.peak) + " per GPU, usable " +
                           gib(e.memory.usable) + ", short by " + gib(e.memory.shortfall));
    }
    if (!a->trace.empty()) reports::step_trace(s, timeline).write(a->trace);
    if (a->format == "json") {
      ctx.out << to_json(s, e).dump(2) << "\n";
    } else {
      ctx.out << to_text(s, e);
    }
  });
}

}  // namespace clustersim::cli
