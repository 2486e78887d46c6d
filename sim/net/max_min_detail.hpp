#pragma once
// Constants and helpers shared by the files of MaxMinSolver (not part of its interface).

#include <bit>
#include <cstdint>

namespace clustersim::sim::max_min_detail {

// A link is saturated when its load is within this fraction of its capacity; two rates within
// this fraction of each other count as equal.
inline constexpr double TOLERANCE = 1e-9;
// A rate that moves by less than this fraction of itself is left as it was.
inline constexpr double RATE_TOLERANCE = 1e-12;

// c ? a : b without a branch, for choices that follow no pattern (the least key of a scan): a
// mispredicted branch costs more than computing both sides. Exact: the chosen bits are copied.
inline std::uint32_t pick(bool c, std::uint32_t a, std::uint32_t b) {
  return b ^ ((a ^ b) & (0U - static_cast<std::uint32_t>(c)));
}
inline double pick(bool c, double a, double b) {
  const auto ua = std::bit_cast<std::uint64_t>(a);
  const auto ub = std::bit_cast<std::uint64_t>(b);
  return std::bit_cast<double>(ub ^ ((ua ^ ub) & (std::uint64_t{0} - static_cast<std::uint64_t>(c))));
}
// Key order (level, then id) without a branch.
inline bool key_less(double level, std::uint32_t id, double other_level, std::uint32_t other_id) {
  return (level < other_level) | ((level == other_level) & (id < other_id));
}

// Calls fn(h) for each set bit h of mask, lowest first.
template <class F>
inline void for_each_bit(std::uint32_t mask, F&& fn) {
  while (mask != 0) {
    fn(static_cast<std::uint32_t>(std::countr_zero(mask)));
    mask &= mask - 1;
  }
}

// The same for a 64-bit set.
template <class F>
inline void for_each_bit64(std::uint64_t mask, F&& fn) {
  while (mask != 0) {
    fn(static_cast<std::uint32_t>(std::countr_zero(mask)));
    mask &= mask - 1;
  }
}

}  // namespace clustersim::sim::max_min_detail
