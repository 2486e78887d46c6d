#pragma once
// A scenario's layout and training settings written as the launch settings of the framework that
// would run it (docs/interop.md lists every setting and its source):
//   megatron    Megatron-LM command-line arguments (names of megatron/training/arguments.py at
//               core_v0.19.0, tests/data/interop/megatron_arguments.json), as a bash array
//   nemo        NeMo 2 recipe overrides in nemo-run's CLI syntax (`trainer.strategy.x=...`,
//               MegatronStrategy, MockDataModule and GPTConfig names at NeMo v2.4.0), as a bash array
//   torchtitan  a torchtitan job TOML (torchtitan/config/job_config.py at v0.2.2)
//   deepspeed   a DeepSpeed config JSON (deepspeed/runtime/constants.py, zero/config.py), which
//               `parallelism.deepspeed_config` reads back
// A setting the target cannot express is left out with a warning naming it; a layout the target
// cannot run (LoRA under Megatron-LM or torchtitan, ...) is an InputError naming why.

#include <string>
#include <string_view>
#include <vector>

#include "models/scenario.hpp"
#include "models/transformer_config.hpp"

namespace clustersim::models {

enum class ExportTarget { MEGATRON, NEMO, TORCHTITAN, DEEPSPEED };

// "megatron", "nemo", "torchtitan", "deepspeed"; another name is an InputError at `key`.
ExportTarget export_target_from(std::string_view name, const std::string& key = "--export");
std::string_view to_string(ExportTarget t);
// The file name suffix a user would give the export (".sh", ".toml", ".json").
std::string_view export_extension(ExportTarget t);

struct LaunchExport {
  std::string text;                   // the file's content
  std::vector<std::string> warnings;  // settings left out or approximated, one line each
};

LaunchExport export_launch(const Scenario& scenario, const TransformerConfig& model, ExportTarget target);

}  // namespace clustersim::models
