// clustersim import megatron --system NAME --nodes N [--gpus-per-node G] [--model-preset P |
//     --hf-config PATH] [--vocab-size V] [--name NAME] [-o FILE]
//     (--args="FLAGS" | --args-file FILE | -- FLAGS...)
// Megatron-LM launch arguments as a scenario (models/megatron_import.hpp). The arguments come as
// one string (--args="..."; the '=' keeps CLI11 from reading the flags as its own), a file of a
// launch script's flags (--args-file, '-' for stdin: comments, quotes, line continuations and a
// bash array as `simulate --export megatron` writes it), or everything after `--`. The scenario
// is read back before it is written, so a layout clustersim would refuse exits 2 and writes
// nothing; warnings (unknown or unmodelled arguments) go to stderr.

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/app.hpp"
#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"
#include "models/megatron_import.hpp"
#include "models/parallel_layout.hpp"
#include "models/scenario.hpp"
#include "models/transformer_config.hpp"

namespace clustersim::cli {

namespace {

struct ImportArgs {
  std::string args_text;
  std::string args_file;
  std::vector<std::string> rest;
  std::string output;
  std::string model_preset, hf_config;
  std::int64_t vocab_size = 0;
  models::MegatronImportOptions options;
};

std::string read_text(const std::string& path) {
  if (path == "-") {
    std::ostringstream s;
    s << std::cin.rdbuf();
    return s.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "--args-file", "cannot read the file");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

void add_import_command(CLI::App& app, Context& ctx) {
  auto* imp = app.add_subcommand("import", "Read another tool's launch settings as a scenario");
  imp->require_subcommand(1);
  auto* meg = imp->add_subcommand("megatron", "Megatron-LM arguments (--tensor-model-parallel-size ...) as a scenario");
  auto a = std::make_shared<ImportArgs>();
  meg->add_option("--args", a->args_text, "The arguments as one string: --args=\"--tensor-model-parallel-size 8 ...\"");
  meg->add_option("--args-file", a->args_file, "A file of the arguments (a launch script's flags; '-': stdin)");
  meg->add_option("ARGS", a->rest, "The arguments after --");
  meg->add_option("--system", a->options.system, "Catalog system or instance the job runs on")->required();
  meg->add_option("--nodes", a->options.nodes, "Nodes (the world size is nodes x GPUs per node)")
      ->required()
      ->check(CLI::Range(1, 1'000'000));
  meg->add_option("--gpus-per-node", a->options.gpus_per_node, "GPUs (processes) per node, default 8")
      ->check(CLI::Range(1, 1024));
  meg->add_option("--model-preset", a->model_preset, "Take the model from this built-in preset");
  meg->add_option("--hf-config", a->hf_config, "Take the model from this Hugging Face config.json");
  meg->add_option("--vocab-size", a->vocab_size, "The tokenizer's vocabulary, where the arguments do not give it")
      ->check(CLI::Range(static_cast<std::int64_t>(1), static_cast<std::int64_t>(1) << 31));
  meg->add_option("--name", a->options.name, "The scenario's name");
  meg->add_option("-o,--output", a->output, "Write the scenario here instead of stdout");
  meg->callback([&ctx, a]() {
    const int sources = (a->args_text.empty() ? 0 : 1) + (a->args_file.empty() ? 0 : 1) + (a->rest.empty() ? 0 : 1);
    if (sources != 1) {
      throw InputError("", "--args", "give the Megatron arguments once: --args=\"...\", --args-file FILE or after --");
    }
    if (!a->model_preset.empty() && !a->hf_config.empty()) {
      throw InputError("", "--model-preset", "give --model-preset or --hf-config, not both");
    }
    models::MegatronImportOptions o = a->options;
    std::vector<std::string> args;
    if (!a->args_file.empty()) {
      o.source = a->args_file == "-" ? "stdin" : a->args_file;
      args = models::split_launch_arguments(read_text(a->args_file));
    } else if (!a->args_text.empty()) {
      o.source = "--args";
      args = models::split_launch_arguments(a->args_text);
    } else {
      o.source = "arguments";
      args = a->rest;
    }
    if (!a->model_preset.empty()) o.model_preset = a->model_preset;
    if (!a->hf_config.empty()) o.hf_config = std::filesystem::absolute(a->hf_config).string();
    if (a->vocab_size > 0) o.vocab_size = a->vocab_size;
    if (o.name.empty()) o.name = "megatron-import";
    const models::MegatronImport r = models::import_megatron_arguments(args, o);
    // Read it back as any scenario is read: the layout must be one clustersim accepts.
    const std::string text = r.scenario.dump(2) + "\n";
    const JsonDocument doc = parse_json_text(text, "the imported scenario");
    const models::Scenario s = models::read_scenario(doc, std::filesystem::current_path());
    const models::TransformerConfig model = models::resolve_model(s.model);
    const models::ParallelLayout layout(model, s.parallelism, s.training, "the imported scenario");
    (void)hardware::resolve_node(ctx.catalog(), s.cluster.system);  // a known system or instance
    for (const auto& w : r.warnings) ctx.err << "warning: " << w << "\n";
    ctx.emit(a->output, text);
  });
}

}  // namespace clustersim::cli
