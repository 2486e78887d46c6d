#include "reports/chart_scale.hpp"

#include <algorithm>
#include <cmath>

#include "reports/value_format.hpp"

namespace clustersim::reports {

namespace {

constexpr double kEps = 1e-9;

// Heckbert's nice number: 1, 2, 5 or 10 times a power of ten, rounded or taken as a ceiling.
double nice_number(double x, bool round) {
  const double exponent = std::floor(std::log10(x));
  const double fraction = x / std::pow(10.0, exponent);
  double nice = 10;
  if (round) {
    nice = fraction < 1.5 ? 1 : fraction < 3 ? 2 : fraction < 7 ? 5 : 10;
  } else {
    nice = fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10;
  }
  return nice * std::pow(10.0, exponent);
}

// The power of ten `10^k` exactly as the nearest double (std::pow(10, -2) is not always 0.01).
double pow10(int k) { return k >= 0 ? std::pow(10.0, k) : 1.0 / std::pow(10.0, -k); }

void clip(AxisTicks& t) {
  std::vector<double> kept;
  for (double v : t.ticks) {
    const double tol = kEps * std::max(std::fabs(t.lo), std::fabs(t.hi));
    if (v >= t.lo - tol && v <= t.hi + tol) kept.push_back(v);
  }
  t.ticks = std::move(kept);
}

AxisTicks linear_ticks(double lo, double hi, int target, std::optional<double> fmin, std::optional<double> fmax) {
  if (fmin) lo = *fmin;
  if (fmax) hi = *fmax;
  if (hi - lo <= 0) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    if (!fmin) lo -= pad;
    if (!fmax) hi += pad;
    if (hi <= lo) hi = lo + 1;
  }
  const double range = nice_number(hi - lo, false);
  const double step = nice_number(range / std::max(1, target - 1), true);
  const int k = static_cast<int>(std::floor(std::log10(step) + kEps));
  const int decimals = std::max(0, -k);
  // Tick i is i * step, printed with `decimals` decimals; computed from the integer i so that
  // no rounding error accumulates along the axis.
  const auto first = static_cast<long long>(std::floor(lo / step + kEps));
  const auto last = static_cast<long long>(std::ceil(hi / step - kEps));
  AxisTicks t;
  t.lo = fmin ? *fmin : static_cast<double>(first) * step;
  t.hi = fmax ? *fmax : static_cast<double>(last) * step;
  for (long long i = first; i <= last; ++i) t.ticks.push_back(static_cast<double>(i) * step);
  clip(t);
  for (double v : t.ticks) t.labels.push_back(group_thousands(format_fixed(v, decimals)));
  return t;
}

AxisTicks log10_ticks(double lo, double hi, std::optional<double> fmin, std::optional<double> fmax) {
  if (fmin) lo = *fmin;
  if (fmax) hi = *fmax;
  int dlo = static_cast<int>(std::floor(std::log10(lo) + kEps));
  int dhi = static_cast<int>(std::ceil(std::log10(hi) - kEps));
  if (dhi <= dlo) dhi = dlo + 1;
  AxisTicks t;
  if (std::log10(hi / lo) <= 2 + kEps) {
    std::vector<double> candidates;
    for (int d = dlo; d <= dhi; ++d) {
      for (double m : {1.0, 2.0, 5.0}) candidates.push_back(m * pow10(d));
    }
    t.lo = candidates.front();
    for (double c : candidates) {
      if (c <= lo * (1 + kEps)) t.lo = c;
    }
    t.hi = candidates.back();
    for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
      if (*it >= hi * (1 - kEps)) t.hi = *it;
    }
    t.ticks = candidates;
  } else {
    const int stride = (dhi - dlo + 7) / 8;
    dlo = static_cast<int>(std::floor(static_cast<double>(dlo) / stride)) * stride;
    dhi = static_cast<int>(std::ceil(static_cast<double>(dhi) / stride)) * stride;
    t.lo = pow10(dlo);
    t.hi = pow10(dhi);
    for (int d = dlo; d <= dhi; d += stride) t.ticks.push_back(pow10(d));
  }
  if (fmin) t.lo = *fmin;
  if (fmax) t.hi = *fmax;
  clip(t);
  for (double v : t.ticks) t.labels.push_back(format_significant_grouped(v, 6));
  return t;
}

AxisTicks log2_ticks(double lo, double hi, std::optional<double> fmin, std::optional<double> fmax) {
  if (fmin) lo = *fmin;
  if (fmax) hi = *fmax;
  const int elo = static_cast<int>(std::floor(std::log2(lo) + kEps));
  int ehi = static_cast<int>(std::ceil(std::log2(hi) - kEps));
  if (ehi <= elo) ehi = elo + 1;
  const int stride = (ehi - elo + 9) / 10;
  ehi = elo + (ehi - elo + stride - 1) / stride * stride;
  AxisTicks t;
  t.lo = fmin ? *fmin : std::ldexp(1.0, elo);
  t.hi = fmax ? *fmax : std::ldexp(1.0, ehi);
  for (int e = elo; e <= ehi; e += stride) t.ticks.push_back(std::ldexp(1.0, e));
  clip(t);
  for (double v : t.ticks) t.labels.push_back(format_significant_grouped(v, 10));
  return t;
}

}  // namespace

AxisTicks compute_ticks(double lo, double hi, AxisScale scale, int target, std::optional<double> forced_min,
                        std::optional<double> forced_max) {
  switch (scale) {
    case AxisScale::LINEAR: return linear_ticks(lo, hi, target, forced_min, forced_max);
    case AxisScale::LOG10: return log10_ticks(lo, hi, forced_min, forced_max);
    case AxisScale::LOG2: return log2_ticks(lo, hi, forced_min, forced_max);
  }
  return linear_ticks(lo, hi, target, forced_min, forced_max);
}

double axis_fraction(double v, const AxisTicks& axis, AxisScale scale) {
  if (scale == AxisScale::LINEAR) return (v - axis.lo) / (axis.hi - axis.lo);
  return (std::log(v) - std::log(axis.lo)) / (std::log(axis.hi) - std::log(axis.lo));
}

}  // namespace clustersim::reports
