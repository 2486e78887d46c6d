// Calibration results (clustersim-calibrate output, imports). What is accepted must also be written
// back and read again: a results file the project writes is one it can read.
#include "calibrate/results.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clustersim;
  return fuzz::run_parser(data, size, [](std::string_view t) {
    const auto doc = parse_json_text(t, "fuzz.json");
    const auto results = calibrate::read_calibration_results(doc.root());
    fuzz::must_accept("results written back", [&] {
      const auto again = parse_json_text(calibrate::format_calibration_results(results), "again.json");
      (void)calibrate::read_calibration_results(again.root());
    });
  });
}
