// Calibration profiles.
#include "fuzz_input.hpp"
#include "hardware/calibration_profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return clustersim::fuzz::run_parser(data, size, [](std::string_view t) {
    const auto p = clustersim::hardware::CalibrationProfile::parse(t, "fuzz.json");
    clustersim::hardware::ParameterSet ps(&p);
    for (const auto& [name, param] : p.parameters()) {
      try {
        (void)ps.bandwidth(name, clustersim::Bandwidth::gigabytes_per_second(1), "fuzz");
      } catch (const clustersim::InputError&) {
      }
    }
  });
}
