// Scenario files (paths inside them resolve against a directory that holds nothing), and the model
// they name when it is a preset or written inline.
#include "fuzz_input.hpp"
#include "models/parameter_tensors.hpp"
#include "models/scenario.hpp"
#include "models/transformer_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clustersim;
  return fuzz::run_parser(data, size, [](std::string_view t) {
    const auto doc = parse_json_text(t, "fuzz.json");
    const auto scenario = models::read_scenario(doc, "/nonexistent-fuzz-dir");
    if (scenario.model.kind != models::ModelRef::Kind::HF_CONFIG) {
      (void)models::count_parameters(models::resolve_model(scenario.model));
    }
  });
}
