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
