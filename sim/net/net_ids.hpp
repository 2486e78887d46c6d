#pragma once
// Dense integer ids of the network's vertices and directional links.

#include <cstdint>

namespace clustersim::sim {

using VertexId = std::uint32_t;
using LinkId = std::uint32_t;
inline constexpr VertexId NO_VERTEX = UINT32_MAX;
inline constexpr LinkId NO_LINK = UINT32_MAX;

}  // namespace clustersim::sim
