#pragma once
// Axis ends and ticks for the SVG charts.
//
// Linear (Heckbert, "Nice numbers for graph labels", Graphics Gems, 1990): the tick step is
// 1, 2 or 5 x 10^k, chosen as nice(nice(hi - lo) / (target - 1)) where nice() rounds to the
// nearest of 1, 2, 5, 10 x 10^k; the ends are rounded out to multiples of the step, and labels
// carry max(0, -k) decimals. 0..7.3 with 6 ticks: range nice(7.3) = 10, step nice(10/5) = 2,
// ticks 0 2 4 6 8.
// Log10: when the data span at most two decades, ticks at 1, 2, 5 x 10^k and the ends at the
// nearest of those outside the data (8..256 -> 5 .. 500); beyond, one tick per decade (every
// n-th decade past 8 decades), ends at whole decades.
// Log2: ticks at powers of two (every n-th when more than 10), ends at powers of two
// (8..16384 GPUs -> 8 16 32 ... 16384).
// Forced ends (Axis::min/max) replace the computed ones; ticks outside them are dropped.

#include <optional>
#include <string>
#include <vector>

#include "reports/report_model.hpp"

namespace clustersim::reports {

struct AxisTicks {
  double lo = 0;
  double hi = 1;
  std::vector<double> ticks;
  std::vector<std::string> labels;  // one per tick
};

// `lo`..`hi`: the data range (lo <= hi; > 0 for log scales). `target`: about how many ticks.
AxisTicks compute_ticks(double lo, double hi, AxisScale scale, int target = 6,
                        std::optional<double> forced_min = std::nullopt,
                        std::optional<double> forced_max = std::nullopt);

// Where `v` lies between the axis ends, 0 at lo and 1 at hi (log scales are logarithmic).
double axis_fraction(double v, const AxisTicks& axis, AxisScale scale);

}  // namespace clustersim::reports
