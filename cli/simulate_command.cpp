// clustersim simulate SCENARIO.json: one training step of a model on a cluster under a layout.

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "models/scenario.hpp"

namespace clustersim::cli {

void add_simulate_command(CLI::App& app, Context& ctx) {
  auto* sim = app.add_subcommand("simulate", "Simulate one training step of a scenario (step time, breakdown, memory)");
  auto file = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("text");
  auto trace = std::make_shared<std::string>();
  sim->add_option("SCENARIO", *file, "Scenario JSON file")->required();
  sim->add_option("--format", *format, "text or json")->check(CLI::IsMember({"text", "json"}));
  sim->add_option("--trace", *trace, "Write a Perfetto (Chrome JSON) trace to this file");
  sim->callback([&ctx, file]() {
    const models::Scenario s = models::load_scenario(*file);
    try {
      (void)hardware::resolve_node(ctx.catalog(), s.cluster.system);
    } catch (const InputError& e) {
      throw InputError(s.file, "/cluster/system", e.message());
    }
    throw RuntimeError("scenario '" + s.name + "' is valid, but the training-step simulation is not built yet");
  });
}

}  // namespace clustersim::cli
