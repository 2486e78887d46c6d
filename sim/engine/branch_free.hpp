#pragma once
// c ? a : b without a branch, for choices that follow no pattern (the least key of a scan, the
// least child of a heap): a mispredicted branch costs more than computing both sides. Exact: the
// chosen bits are copied.

#include <bit>
#include <cstdint>

namespace clustersim::sim {

inline std::uint32_t pick(bool c, std::uint32_t a, std::uint32_t b) {
  return b ^ ((a ^ b) & (0U - static_cast<std::uint32_t>(c)));
}

inline double pick(bool c, double a, double b) {
  const auto ua = std::bit_cast<std::uint64_t>(a);
  const auto ub = std::bit_cast<std::uint64_t>(b);
  return std::bit_cast<double>(ub ^ ((ua ^ ub) & (std::uint64_t{0} - static_cast<std::uint64_t>(c))));
}

}  // namespace clustersim::sim
