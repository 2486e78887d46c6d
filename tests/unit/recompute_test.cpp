// Partial activation recompute (models/recompute.hpp): Megatron-Core's recompute_method
// "uniform" and "block" with recompute_num_layers, in the memory model, the FLOP count and the step.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"
#include "models/recompute.hpp"
#include "models/scenario.hpp"
#include "models/step_flops.hpp"
#include "models/step_model.hpp"
#include "models/training_model.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

// GPT with h = 1024, 16 heads, 8 layers, hidden dropout 0.1 (gpt2 defaults): 34 s b h + 4 b a s
// bytes per layer without recompute, 2 s b h with (models_memory_test.cpp derives both).
TransformerConfig gpt8() {
  const JsonDocument doc = parse_json_text(R"({"model_type": "gpt2", "n_embd": 1024, "n_layer": 8, "n_head": 16,
                                               "n_positions": 2048, "vocab_size": 1000})",
                                           "scenario.json");
  return read_inline_model(doc.root());
}

TrainingSpec training(Checkpointing c, RecomputeMethod m = RecomputeMethod::UNIFORM, std::int64_t n = 1) {
  TrainingSpec t;
  t.seq_len = 2048;
  t.micro_batch_size = 1;
  t.global_batch_size = 8;
  t.activation_checkpointing = c;
  t.recompute_method = m;
  t.recompute_num_layers = n;
  t.recompute_given = c == Checkpointing::FULL;
  return t;
}

ParallelismSpec megatron_pp(int pp) {
  ParallelismSpec p;
  p.framework = Framework::MEGATRON;
  p.pipeline = pp;
  return p;
}

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

constexpr double kSbh = 2048.0 * 1024;                 // s b h
constexpr double kNone = 34 * kSbh + 131'072;          // one layer, no recompute
constexpr double kInput = 2 * kSbh;                    // one checkpointed layer's input

}  // namespace

TEST_CASE("which layers Megatron's uniform and block methods replay", "[unit][recompute]") {
  // 10 layers in 4 chunks: 3, 3, 2, 2 layers (layers 0-2, 3-5, 6-7, 8-9).
  auto replayed = [](RecomputeMethod m, std::int64_t n) {
    std::vector<std::int64_t> out;
    for (std::int64_t l = 0; l < 10; ++l) {
      if (layer_recompute(training(Checkpointing::FULL, m, n), l, 10, 4).replayed) out.push_back(l);
    }
    return out;
  };
  // block 2: the first two layers of each chunk.
  CHECK(replayed(RecomputeMethod::BLOCK, 2) == std::vector<std::int64_t>{0, 1, 3, 4, 6, 7, 8, 9});
  // uniform: every layer; groups of 2 start at chunk positions 0 and 2 (a last group of 1 in
  // the 3-layer chunks).
  CHECK(replayed(RecomputeMethod::UNIFORM, 2).size() == 10);
  std::vector<std::pair<std::int64_t, std::int64_t>> starts;
  for (std::int64_t l = 0; l < 10; ++l) {
    const auto r = layer_recompute(training(Checkpointing::FULL, RecomputeMethod::UNIFORM, 2), l, 10, 4);
    if (r.keeps_input) starts.emplace_back(l, r.group_layers);
  }
  CHECK(starts == std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 2}, {2, 1}, {3, 2}, {5, 1}, {6, 2}, {8, 2}});
  // Selective and none replay no whole layer.
  CHECK_FALSE(layer_recompute(training(Checkpointing::SELECTIVE), 0, 10, 4).replayed);
}

TEST_CASE("partial recompute in the activation memory of a pipeline stage", "[unit][recompute]") {
  const auto gpt = gpt8();
  hardware::ParameterSet ps;
  const auto& gpu = catalog().gpu("H100-SXM5-80GB");
  // PP 2, 1F1B, 8 micro-batches: stage 0 holds min(2 - 0, 8) = 2 micro-batches of its 4 layers.
  auto mem = [&](const TrainingSpec& t) { return TrainingModel(gpt, megatron_pp(2), t).memory(0, gpu, ps); };
  SECTION("block 1 of 4: one input and three full layers, twice") {
    const auto m = mem(training(Checkpointing::FULL, RecomputeMethod::BLOCK, 1));
    // 2 x (2 sbh + 3 (34 sbh + 131,072)) = 208 sbh + 786,432 = 436,994,048 bytes.
    CHECK(m.details.at("activations.layers").as_double() == Approx(2 * (kInput + 3 * kNone)));
    CHECK(m.details.at("activations.layers").as_double() == Approx(436'994'048.0));
    // Replaying the one checkpointed layer holds its full set: 34 sbh + 131,072 = 71,434,240.
    CHECK(m.details.at("activations.transient").as_double() == Approx(kNone));
  }
  SECTION("uniform 2: the input of each pair, and a pair's full sets while it is replayed") {
    const auto m = mem(training(Checkpointing::FULL, RecomputeMethod::UNIFORM, 2));
    // 2 micro-batches x 2 groups x 2 sbh = 8 sbh = 16,777,216 bytes.
    CHECK(m.details.at("activations.layers").as_double() == Approx(8 * kSbh));
    // 2 x (34 sbh + 131,072) = 142,868,480 bytes.
    CHECK(m.details.at("activations.transient").as_double() == Approx(2 * kNone));
  }
  SECTION("uniform 1 is full recompute as before; block 4 of 4 is the same") {
    const auto u1 = mem(training(Checkpointing::FULL));
    const auto b4 = mem(training(Checkpointing::FULL, RecomputeMethod::BLOCK, 4));
    // 2 x 4 x 2 sbh = 16 sbh.
    CHECK(u1.details.at("activations.layers").as_double() == Approx(16 * kSbh));
    CHECK(b4.details.at("activations.layers").as_double() == Approx(16 * kSbh));
    CHECK(u1.details.at("activations.transient").as_double() == Approx(kNone));
    // block 0 keeps everything, as "none" does: 8 x (34 sbh + 131,072).
    const auto b0none = mem(training(Checkpointing::NONE));
    CHECK(b0none.details.at("activations.layers").as_double() == Approx(8 * kNone));
  }
}

TEST_CASE("partial recompute in the step's FLOPs", "[unit][recompute]") {
  const auto gpt = gpt8();
  // One layer per token: GEMMs 2 (4 h^2 + 2 h f) = 2 (4,194,304 + 8,388,608) = 25,165,824 FLOPs
  // (q, k, v, out; fc1, fc2 with f = 4h); attention 2 s H (d_qk + d_v) = 2 x 2048 x 16 x 128 =
  // 8,388,608.
  CHECK(layer_gemm_flops_per_token(gpt, 0) == Approx(25'165'824.0));
  const double tokens = 8 * 2048.0;
  auto flops = [&](const TrainingSpec& t) { return TrainingModel(gpt, megatron_pp(2), t).step_flops(); };
  const double none = flops(training(Checkpointing::NONE));
  // block 1 with 2 stages replays layers 0 and 4: 2 x (25,165,824 + 8,388,608) x 16,384 tokens = 2^40.
  CHECK(flops(training(Checkpointing::FULL, RecomputeMethod::BLOCK, 1)) - none == Approx(1'099'511'627'776.0));
  // uniform (any group size) replays all 8: 4 x 2^40.
  CHECK(flops(training(Checkpointing::FULL, RecomputeMethod::UNIFORM, 2)) - none == Approx(4 * 1'099'511'627'776.0));
  CHECK(flops(training(Checkpointing::FULL)) - none == Approx(8 * 33'554'432.0 * tokens));
}

TEST_CASE("partial recompute in the simulated step: between none and full", "[unit][recompute]") {
  auto scenario = [](const char* training_extra) {
    const std::string text = std::string(R"({"schema_version": 1, "model": {"preset": "llama3.2-1b"},
      "training": {"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 16)") +
                             training_extra + R"(},
      "parallelism": {"framework": "megatron", "data": 2, "pipeline": 4, "pipeline_schedule": "1f1b"},
      "cluster": {"system": "p5.48xlarge", "nodes": 1, "gpus_per_node": 8}})";
    return read_scenario(parse_json_text(text, "s.json"), ".");
  };
  StepSimulator sim(catalog());
  const auto none = sim.estimate(scenario(""), Fidelity::FAST);
  const auto block = sim.estimate(
      scenario(R"(, "activation_checkpointing": "full", "recompute_method": "block", "recompute_num_layers": 1)"),
      Fidelity::FAST);
  const auto full = sim.estimate(scenario(R"(, "activation_checkpointing": "full")"), Fidelity::FAST);
  // 16 layers on 4 stages: block 1 replays 1 layer of 4 a stage, full all 4.
  CHECK(none.breakdown.compute_s < block.breakdown.compute_s);
  CHECK(block.breakdown.compute_s < full.breakdown.compute_s);
  CHECK(none.memory.activations > block.memory.activations);
  CHECK(block.memory.activations > full.memory.activations);
  // Model FLOPs (for MFU) leave recompute out: the same for all three.
  CHECK(block.model_flops_per_step == Approx(none.model_flops_per_step));
}

TEST_CASE("recompute_method and recompute_num_layers are read as Megatron-Core reads them", "[unit][recompute]") {
  auto read = [](const char* training) {
    const std::string text = std::string(R"({"schema_version": 1, "model": {"preset": "llama3.2-1b"},
      "training": {"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 8, )") +
                             training + R"(},
      "parallelism": {"framework": "megatron", "data": 8},
      "cluster": {"system": "p5.48xlarge", "nodes": 1, "gpus_per_node": 8}})";
    return read_scenario(parse_json_text(text, "s.json"), ".");
  };
  const Scenario s =
      read(R"("activation_checkpointing": "full", "recompute_method": "block", "recompute_num_layers": 3)");
  CHECK(s.training.recompute_method == RecomputeMethod::BLOCK);
  CHECK(s.training.recompute_num_layers == 3);
  CHECK_THROWS_WITH(read(R"("activation_checkpointing": "selective", "recompute_method": "block",
                            "recompute_num_layers": 3)"),
                    Catch::Contains("/training/recompute_method") && Catch::Contains("\"full\" only"));
  CHECK_THROWS_WITH(read(R"("activation_checkpointing": "full", "recompute_method": "block")"),
                    Catch::Contains("needs recompute_num_layers"));
  CHECK_THROWS_WITH(read(R"("activation_checkpointing": "full", "recompute_num_layers": 2)"),
                    Catch::Contains("needs recompute_method"));
  CHECK_THROWS_WITH(read(R"("activation_checkpointing": "full", "recompute_method": "blocks", "recompute_num_layers": 2)"),
                    Catch::Contains("uniform"));
}
