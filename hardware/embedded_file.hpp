#pragma once
// Data files compiled into the binary (cmake/ClustersimEmbed.cmake generates the tables).

#include <span>
#include <string_view>

namespace clustersim {

struct EmbeddedFile {
  std::string_view path;  // relative to the folder it was embedded from
  std::string_view text;
};

}  // namespace clustersim
