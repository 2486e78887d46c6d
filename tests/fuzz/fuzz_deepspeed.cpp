// DeepSpeed JSON configs as users have them ("auto" values included), against a fixed training
// section of 4 GPUs.
#include "fuzz_input.hpp"
#include "hardware/json_reader.hpp"
#include "models/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clustersim;
  return fuzz::run_parser(data, size, [](std::string_view t) {
    const auto doc = parse_json_text(t, "fuzz.json");
    models::TrainingSpec training;
    training.seq_len = 512;
    training.micro_batch_size = 1;
    training.global_batch_size = 8;
    models::ParallelismSpec p;
    p.data = 4;
    models::apply_deepspeed_config(doc, training, 4, p);
  });
}
