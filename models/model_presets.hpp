#pragma once
// Built-in model presets: the config.json files under models/presets/, compiled into the binary
// (cmake/ClustersimEmbed.cmake). Their provenance is in models/presets/README.md.

#include <span>

#include "hardware/embedded_file.hpp"

namespace clustersim::models {

std::span<const EmbeddedFile> builtin_model_preset_files();  // generated at build time

}  // namespace clustersim::models
