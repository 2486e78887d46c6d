// Hugging Face config.json files, and what the models make of them first: the parameter count of
// every tensor (sizes the reader accepts must not overflow it).
#include "fuzz_input.hpp"
#include "hardware/json_reader.hpp"
#include "models/parameter_tensors.hpp"
#include "models/transformer_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clustersim;
  return fuzz::run_parser(data, size, [](std::string_view t) {
    const auto doc = parse_json_text(t, "config.json");
    const auto config = models::read_hf_config(doc);
    (void)models::count_parameters(config);
  });
}
