#pragma once
// Megatron-LM's argument names and kinds (tests/data/interop/megatron_arguments.json, made by
// tests/data/interop/extract_megatron_arguments.py from megatron/training/arguments.py),
// compiled into the binary (cmake/ClustersimEmbed.cmake).

#include <span>

#include "hardware/embedded_file.hpp"

namespace clustersim::models {

std::span<const EmbeddedFile> megatron_argument_files();  // generated at build time

}  // namespace clustersim::models
