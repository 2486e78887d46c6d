// Parallel layouts checked against models: splits, layer placement, micro-batches in flight.

#include <catch2/catch.hpp>

#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"
#include "models/training_model.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

TrainingSpec training(std::int64_t seq = 4096, std::int64_t micro = 1, std::int64_t global = 8) {
  TrainingSpec t;
  t.seq_len = seq;
  t.micro_batch_size = micro;
  t.global_batch_size = global;
  return t;
}

ParallelismSpec layout(int dp, int tp, int pp, int cp = 1, int ep = 1) {
  ParallelismSpec p;
  p.framework = Framework::MEGATRON;
  p.data = dp;
  p.tensor = tp;
  p.pipeline = pp;
  p.context = cp;
  p.expert = ep;
  return p;
}

}  // namespace

TEST_CASE("impossible splits are input errors naming the scenario key", "[unit][models][bad-input]") {
  const auto llama = builtin_model_preset("llama3-8b");
  SECTION("tensor parallelism that does not divide the heads") {
    try {
      (void)TrainingModel(llama, layout(1, 5, 1), training(), "scenario.json");
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK_THAT(e.what(), Catch::Contains("scenario.json") && Catch::Contains("/parallelism/tensor") &&
                               Catch::Contains("num_attention_heads = 32"));
    }
  }
  SECTION("tensor parallelism beyond the kv heads (8) of GQA") {
    CHECK_THROWS_WITH(TrainingModel(llama, layout(1, 16, 1), training(), "s.json"),
                      Catch::Contains("num_key_value_heads = 8"));
  }
  SECTION("expert parallelism on a dense model") {
    CHECK_THROWS_WITH(TrainingModel(llama, layout(2, 1, 1, 1, 2), training(), "s.json"),
                      Catch::Contains("/parallelism/expert") && Catch::Contains("dense"));
  }
  SECTION("expert parallelism that does not divide the experts") {
    CHECK_THROWS_WITH(TrainingModel(builtin_model_preset("mixtral-8x7b"), layout(3, 1, 1, 1, 3), training(), "s.json"),
                      Catch::Contains("8 routed experts"));
  }
  SECTION("context parallelism needs the sequence in 2 x cp chunks") {
    CHECK_THROWS_WITH(TrainingModel(llama, layout(1, 1, 1, 3), training(4096), "s.json"),
                      Catch::Contains("/training/seq_len") && Catch::Contains("multiple of 2 x context = 6"));
  }
  SECTION("interleaved chunks must divide the layers") {
    auto p = layout(1, 1, 4);
    p.pipeline_schedule = PipelineSchedule::INTERLEAVED_1F1B;
    p.virtual_stages = 3;
    CHECK_THROWS_WITH(TrainingModel(llama, p, training(), "s.json"), Catch::Contains("/parallelism/virtual_stages"));
  }
  SECTION("LoRA on a gate projection the model does not have") {
    const JsonDocument doc = parse_json_text(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4,
                                                 "n_positions": 128, "vocab_size": 100})",
                                             "m.json");
    auto t = training(128);
    t.fine_tuning = FineTuning::LORA;
    t.lora.target_modules = {"q_proj", "gate_proj"};
    CHECK_THROWS_WITH(TrainingModel(read_inline_model(doc.root()), layout(1, 1, 1), t, "s.json"),
                      Catch::Contains("/training/fine_tuning/target_modules/1") && Catch::Contains("no gate projection"));
  }
}

TEST_CASE("layers are placed on pipeline stages and model chunks as Megatron places them", "[unit][models]") {
  const auto llama = builtin_model_preset("llama3-8b");
  auto p = layout(1, 1, 4);
  p.pipeline_schedule = PipelineSchedule::INTERLEAVED_1F1B;
  p.virtual_stages = 2;
  const ParallelLayout l(llama, p, training(4096, 1, 8));
  // 32 layers in 4 x 2 = 8 chunks of 4; chunk v of stage s is global chunk v x 4 + s.
  CHECK(l.layers_of(0, 0) == std::vector<std::int64_t>{0, 1, 2, 3});
  CHECK(l.layers_of(0, 1) == std::vector<std::int64_t>{16, 17, 18, 19});
  CHECK(l.layers_of(3, 1) == std::vector<std::int64_t>{28, 29, 30, 31});
  CHECK(l.has_embedding(0, 0));
  CHECK_FALSE(l.has_embedding(0, 1));
  CHECK(l.has_head(3, 1));
  // Uneven split: DeepSeek-V3's 61 layers on 8 stages, 8 chunks of 7 and 5 extra layers to the first.
  const ParallelLayout u(builtin_model_preset("deepseek-v3"), layout(1, 1, 8), training(4096, 1, 8));
  CHECK(u.layers_of(0, 0).size() == 8);
  CHECK(u.layers_of(4, 0).front() == 32);  // 4 x 8
  CHECK(u.layers_of(7, 0).size() == 7);
  CHECK(u.layers_of(7, 0).back() == 60);
}

TEST_CASE("micro-batches in flight follow the pipeline schedule", "[unit][models]") {
  const auto llama = builtin_model_preset("llama3-8b");
  SECTION("1F1B: stage i holds p - i micro-batches of its layers") {
    // 4 stages of 8 layers, 8 micro-batches: stage 0 holds 4 x 8 = 32 layer-micro-batches (= L,
    // Korthikanti Sec. 4.2.3), the last stage 1 x 8.
    const ParallelLayout l(llama, layout(1, 1, 4), training(4096, 1, 8));
    CHECK(l.num_micro_batches() == 8);
    CHECK(l.in_flight_layer_activations(0) == Approx(32));
    CHECK(l.in_flight_layer_activations(3) == Approx(8));
  }
  SECTION("interleaved: stage 0 holds L (1 + (p-1)/(p v))") {
    auto p = layout(1, 1, 4);
    p.pipeline_schedule = PipelineSchedule::INTERLEAVED_1F1B;
    p.virtual_stages = 2;
    const ParallelLayout l(llama, p, training(4096, 1, 8));
    // Warm-up 2 (p-1) + (v-1) p = 6 + 4 = 10, plus the one in progress: 11 chunk passes of 4
    // layers = 44 = 32 x (1 + 3/8).
    CHECK(l.in_flight_layer_activations(0) == Approx(44));
  }
  SECTION("fewer micro-batches than stages cap the count") {
    const ParallelLayout l(llama, layout(1, 1, 4), training(4096, 1, 2));
    CHECK(l.in_flight_layer_activations(0) == Approx(2 * 8));
  }
  SECTION("GPipe keeps every micro-batch") {
    auto p = layout(1, 1, 4);
    p.pipeline_schedule = PipelineSchedule::GPIPE;
    const ParallelLayout l(llama, p, training(4096, 1, 8));
    CHECK(l.in_flight_layer_activations(3) == Approx(8 * 8));
  }
}
