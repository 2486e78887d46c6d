// nccl-tests logs (nccl-tests output with NCCL_DEBUG=INFO lines mixed in). What the importer
// makes of a log must be calibration results the project reads back.
#include "calibrate/nccl_tests_import.hpp"
#include "calibrate/results.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clustersim;
  return fuzz::run_parser(data, size, [](std::string_view t) {
    const auto results = calibrate::import_nccl_tests_text({{"fuzz.log", std::string(t)}}, {});
    fuzz::must_accept("import written back", [&] {
      const auto again = parse_json_text(calibrate::format_calibration_results(results), "again.json");
      (void)calibrate::read_calibration_results(again.root());
    });
  });
}
