#pragma once
// Megatron-LM launch arguments read back as a scenario (docs/interop.md). The arguments are
// checked against Megatron-LM's own parser (tests/data/interop/megatron_arguments.json: every
// argument of megatron/training/arguments.py at core_v0.19.0 with its kind: int, float, str,
// flag or list): an argument Megatron does not know is a warning naming it; a value of the wrong
// kind, or a missing one, is an InputError naming the argument. What the arguments say becomes the
// scenario's parallelism (framework "megatron"), training and, unless a model preset or
// Hugging Face config is given, an inline model:
//   --swiglu, RMSNorm, rope       llama (qwen2 with --disable-bias-linear --add-qkv-bias;
//                                 mixtral with --num-experts)
//   GeLU, LayerNorm, learned      gpt2;  GeLU, LayerNorm, rope: gpt_neox
// Megatron's defaults apply to what the arguments leave out (no recompute, fp32, no distributed
// optimizer, no overlap, dropout 0.1, tied embeddings, biases on every linear). The world size is
// not an argument of Megatron's (torchrun gives it): the cluster comes from the options.
// Arguments known to Megatron that change neither time nor memory here (learning rate, data,
// logging, checkpoints, tokenizer) are accepted quietly; other known ones get a warning.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace clustersim::models {

struct MegatronImportOptions {
  std::string source = "--args";  // where the arguments came from, for messages (a file or "--args")
  std::string name;               // the scenario's name
  std::string system;             // catalog system or instance
  int nodes = 1;
  int gpus_per_node = 8;
  std::optional<std::string> model_preset;  // instead of the arguments' model shape
  std::optional<std::string> hf_config;
  std::optional<std::int64_t> vocab_size;  // the tokenizer's vocabulary, where --vocab-size is not given
};

struct MegatronImport {
  nlohmann::ordered_json scenario;
  std::vector<std::string> warnings;
};

// Splits a launch script's text into arguments as a shell would for a plain command line: '#'
// comments, single and double quotes, backslash-newline, and a bash array's `NAME=(` and `)`.
std::vector<std::string> split_launch_arguments(const std::string& text);

MegatronImport import_megatron_arguments(const std::vector<std::string>& args, const MegatronImportOptions& options);

// Megatron-LM's argument names and kinds (the embedded megatron_arguments.json).
struct MegatronArgument {
  std::string kind;  // int | float | str | flag | list
  std::vector<std::string> choices;
};
const MegatronArgument* find_megatron_argument(const std::string& name);
// The source line of the embedded list ("NVIDIA/Megatron-LM core_v0.19.0 (commit ...)").
std::string megatron_arguments_source();

}  // namespace clustersim::models
