#pragma once
// Calibration profiles that tests build from a few parameters.

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hardware/calibration_profile.hpp"
#include "hardware/units.hpp"

namespace clustersim::testing {

inline hardware::ProfileParameter ratio_parameter(std::string name, double value) {
  hardware::ProfileParameter p;
  p.name = std::move(name);
  p.kind = hardware::ProfileParameter::Kind::RATIO;
  p.value = value;
  p.text = format_significant(value, 6);
  return p;
}

inline hardware::ProfileParameter duration_parameter(std::string name, double seconds) {
  hardware::ProfileParameter p;
  p.name = std::move(name);
  p.kind = hardware::ProfileParameter::Kind::DURATION;
  p.value = seconds;
  p.text = format_duration(Duration::from_seconds(seconds));
  return p;
}

inline hardware::ProfileParameter bandwidth_parameter(std::string name, double bytes_per_second) {
  hardware::ProfileParameter p;
  p.name = std::move(name);
  p.kind = hardware::ProfileParameter::Kind::BANDWIDTH;
  p.value = bytes_per_second;
  p.text = format_bandwidth(Bandwidth::bytes_per_second(bytes_per_second));
  return p;
}

inline hardware::ProfileParameter bytes_parameter(std::string name, double bytes) {
  hardware::ProfileParameter p;
  p.name = std::move(name);
  p.kind = hardware::ProfileParameter::Kind::BYTES;
  p.value = bytes;
  p.text = format_bytes(Bytes::of(std::llround(bytes)));
  return p;
}

inline hardware::CalibrationProfile profile_of(std::string name, std::vector<hardware::ProfileParameter> parameters,
                                               hardware::ProfileProvenance provenance = {}) {
  return hardware::CalibrationProfile::from_parts(std::move(name), std::move(provenance), std::move(parameters),
                                                  nlohmann::json::object());
}

}  // namespace clustersim::testing
