#pragma once
// A point on the simulated clock, distinct from a Duration (hardware/units.hpp).
//
// Representation: int64 picoseconds since the start of the simulation (t = 0), the same integer
// unit as Duration, so TimePoint + Duration is exact and never rounds. The span is +-106 days of
// simulated time, far beyond a training step or a calibration sweep.
//
// Arithmetic is the affine kind: TimePoint + Duration -> TimePoint, TimePoint - TimePoint ->
// Duration; two time points cannot be added, and a bare number is not a time point (ns-3's Time
// discipline). Times derived from a rate are computed where they are used, from bytes and the
// rate, and rounded once (hardware::transfer_time).

#include <compare>
#include <cstdint>
#include <string>

#include "hardware/units.hpp"

namespace clustersim::sim {

class TimePoint {
 public:
  constexpr TimePoint() = default;  // the start of the simulation
  static constexpr TimePoint zero() { return TimePoint(0); }
  static constexpr TimePoint from_picoseconds(std::int64_t ps) { return TimePoint(ps); }
  static constexpr TimePoint max() { return TimePoint(INT64_MAX); }

  constexpr std::int64_t picoseconds() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) / 1e12; }
  constexpr double microseconds() const { return static_cast<double>(ps_) / 1e6; }
  // The time elapsed since t = 0.
  constexpr Duration since_start() const { return Duration::ps(ps_); }

  constexpr auto operator<=>(const TimePoint&) const = default;
  constexpr TimePoint operator+(Duration d) const { return TimePoint(ps_ + d.picoseconds()); }
  constexpr TimePoint operator-(Duration d) const { return TimePoint(ps_ - d.picoseconds()); }
  constexpr Duration operator-(TimePoint o) const { return Duration::ps(ps_ - o.ps_); }
  constexpr TimePoint& operator+=(Duration d) {
    ps_ += d.picoseconds();
    return *this;
  }
  constexpr TimePoint& operator-=(Duration d) {
    ps_ -= d.picoseconds();
    return *this;
  }

 private:
  explicit constexpr TimePoint(std::int64_t ps) : ps_(ps) {}
  std::int64_t ps_ = 0;
};

constexpr TimePoint operator+(Duration d, TimePoint t) { return t + d; }

// "t=12.5 us" (the duration since the start, in the largest unit that reads well).
std::string format_time(TimePoint t);

}  // namespace clustersim::sim
