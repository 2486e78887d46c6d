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

// Calls fn(h) for each set bit h of mask, lowest first.
template <class F>
inline void for_each_bit(std::uint32_t mask, F&& fn) {
  while (mask != 0) {
    fn(static_cast<std::uint32_t>(std::countr_zero(mask)));
    mask &= mask - 1;
  }
}

}  // namespace clustersim::sim::max_min_detail
