// Plan files (paths inside them resolve against a directory that holds nothing).
#include "fuzz_input.hpp"
#include "hardware/json_reader.hpp"
#include "models/plan_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return clustersim::fuzz::run_parser(data, size, [](std::string_view t) {
    const auto doc = clustersim::parse_json_text(t, "fuzz.json");
    (void)clustersim::models::read_plan(doc, "/nonexistent-fuzz-dir");
  });
}
