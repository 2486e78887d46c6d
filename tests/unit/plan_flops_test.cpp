#include "models/plan_flops.hpp"

#include <catch2/catch.hpp>

#include "models/step_flops.hpp"
#include "models/transformer_config.hpp"

using namespace clustersim;
using namespace clustersim::models;

TEST_CASE("plan MFU counts the GEMMs a method runs: LoRA's frozen weights have no weight gradient",
          "[unit][plan]") {
  const auto model = builtin_model_preset("llama3-8b");
  TrainingSpec t;
  t.seq_len = 4096;
  t.global_batch_size = 64;
  const double tokens = 64.0 * 4096;  // 262,144 per step
  // Llama-3-8B per layer: q 4096 x 4096 = 16,777,216, k and v 4096 x 1024 = 4,194,304 each,
  // o 16,777,216, gate/up/down 3 x 4096 x 14,336 = 176,160,768: 218,103,808; x 32 layers
  // N = 6,979,321,856. Attention forward per token 2 s H (d_qk + d_v) = 2 x 4096 x 32 x 256
  // = 67,108,864 per layer, x 32 = 2,147,483,648. LM head 2 h V = 2 x 4096 x 128,256 = 1,050,673,152.
  SECTION("full training: 6N + 3a + 6hV, recomputation not counted") {
    // 6 x 6,979,321,856 + 3 x 2,147,483,648 + 3 x 1,050,673,152 = 51,470,401,536 per token.
    CHECK(method_model_flops(model, t) == Approx(tokens * 51'470'401'536.0));
    // Full recomputation adds a forward to the hardware FLOPs, not to the model FLOPs.
    t.activation_checkpointing = Checkpointing::FULL;
    CHECK(method_model_flops(model, t) == Approx(tokens * 51'470'401'536.0));
    CHECK(step_flops(model, t) > method_model_flops(model, t));
  }
  SECTION("LoRA r16 on q, k, v, o: 4 N_base + 6 N_adapters + 3a + 4hV") {
    t.fine_tuning = FineTuning::LORA;
    t.lora.rank = 16;
    // Adapters per layer: q 4096 x 16 + 16 x 4096 = 131,072; k and v 4096 x 16 + 16 x 1024 = 81,920
    // each; o 131,072: 425,984; x 32 = 13,631,488.
    // Counted as full training (6N for everything, the step model's count):
    //   6 x (6,979,321,856 + 13,631,488) + 6,442,450,944 + 3,152,019,456 = 51,552,190,464
    // As run: 4 x 6,979,321,856 + 6 x 13,631,488 + 3 x 2,147,483,648 + 2 x 1,050,673,152
    //   = 27,917,287,424 + 81,788,928 + 6,442,450,944 + 2,101,346,304 = 36,542,873,600 per token,
    //   0.708852 of the full count.
    CHECK(method_model_flops(model, t) == Approx(tokens * 36'542'873'600.0));
    CHECK(step_flops(model, t, {.include_recompute = false}) == Approx(tokens * 51'552'190'464.0));
    // An estimate's MFU is rescaled by that ratio: the LoRA plan's 82.6% becomes
    // 82.6% x 0.708852 = 58.6%.
    StepEstimate e;
    e.model_flops_per_step = step_flops(model, t, {.include_recompute = false});
    e.mfu = 0.826;
    count_method_flops(e, model, t);
    CHECK(e.mfu == Approx(0.826 * 36'542'873'600.0 / 51'552'190'464.0));
    CHECK(e.mfu == Approx(0.5855).epsilon(1e-3));
    CHECK(e.model_flops_per_step == Approx(tokens * 36'542'873'600.0));
  }
  SECTION("an estimate that counted no FLOPs is left as it is") {
    StepEstimate e;
    e.mfu = 0.5;
    count_method_flops(e, model, t);
    CHECK(e.mfu == 0.5);
  }
}
