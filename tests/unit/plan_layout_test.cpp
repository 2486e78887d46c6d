#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "models/layout_search.hpp"
#include "models/plan_spec.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

// Llama-3-8B (32 layers, 32 heads, 8 kv heads) on p5 (8 GPUs a node), seq 4096, batch 64.
SearchSpace search(
    const std::string& parallelism, const std::string& nodes = "[1, 2]",
    const std::string& training_extra = R"(, "micro_batch_size": 1, "activation_checkpointing": "selective")",
    int threads = 1) {
  const std::string text = R"({"schema_version": 1, "model": {"preset": "llama3-8b"},
      "training": {"seq_len": 4096, "global_batch_size": 64)" +
                           training_extra + R"(}, "parallelism": )" + parallelism +
                           R"(, "cluster": {"system": "p5.48xlarge", "nodes": )" + nodes +
                           R"(}, "job": {"tokens": 1e9}})";
  const PlanSpec plan = read_plan(parse_json_text(text, "plan.json"), ".");
  LayoutSearchOptions o;
  o.threads = threads;
  return enumerate_layouts(plan, catalog(), o);
}

std::vector<std::string> layouts(const SearchSpace& s) {
  std::vector<std::string> out;
  for (const auto& c : s.candidates) out.push_back(candidate_label(c.scenario));
  return out;
}

}  // namespace

TEST_CASE("auto tensor and pipeline: every power of two that divides the GPUs", "[unit][plan]") {
  const SearchSpace s = search(R"({"framework": "megatron", "tensor": "auto", "pipeline": "auto"})");
  // 8 GPUs: tensor 1, 2, 4, 8 with pipeline up to 8 / tensor: 4 + 3 + 2 + 1 = 10 layouts.
  // 16 GPUs: tensor 1, 2, 4, 8 with pipeline up to 16 / tensor: 5 + 4 + 3 + 2 = 14 layouts.
  CHECK(s.candidates.size() == 24);
  CHECK(s.rejected_count == 0);
  CHECK(s.combinations == 24);
  // Enumeration order: nodes outermost, then tensor, then pipeline; data follows.
  CHECK(layouts(s).front() == "p5.48xlarge x 1, megatron TP1 PP1 DP8 distopt, mb 1, selective recompute");
  CHECK(s.candidates[1].scenario.parallelism.pipeline == 2);
  CHECK(s.candidates[1].scenario.parallelism.data == 4);
  CHECK(layouts(s).back() == "p5.48xlarge x 2, megatron TP8 PP2 DP1 distopt, mb 1, selective recompute");
  // Each candidate is a plain scenario: the world size matches the product of the dimensions.
  for (const auto& c : s.candidates) {
    const auto& p = c.scenario.parallelism;
    CHECK(p.tensor * p.pipeline * p.context * p.data == c.scenario.world_size());
    CHECK(c.fits == (c.memory.peak <= c.memory.usable));
  }
}

TEST_CASE("values a user lists that do not fit are rejected with the reason and counted", "[unit][plan]") {
  // Tensor 3 does not divide 8 GPUs; tensor 1 is one layout on one node.
  SearchSpace s = search(R"({"framework": "megatron", "tensor": [1, 3]})", "1");
  CHECK(s.candidates.size() == 1);
  REQUIRE(s.rejected.size() == 1);
  CHECK(s.rejected[0].count == 1);
  CHECK_THAT(s.rejected[0].reason, Catch::Contains("not divisible by tensor x pipeline x context"));
  CHECK_THAT(s.rejected[0].example, Catch::Contains("tensor=3"));

  // Tensor 6 on 6 x 8 = 48 GPUs divides, but 32 heads are not divisible by 6: the layout check
  // against the model names the key; with nothing valid left, the plan fails with that reason.
  CHECK_THROWS_WITH(search(R"({"framework": "megatron", "tensor": [6]})", "6"),
                    Catch::Contains("no valid layout") && Catch::Contains("num_attention_heads = 32") &&
                        Catch::Contains("/parallelism/tensor"));

  // Data given explicitly: tensor 2 x data 8 = 16 differs from 8 GPUs.
  s = search(R"({"framework": "megatron", "tensor": [1, 2], "data": [8]})", "1");
  CHECK(s.candidates.size() == 1);
  REQUIRE(s.rejected.size() == 1);
  CHECK_THAT(s.rejected[0].reason, Catch::Contains("differs from the GPU count"));
}

TEST_CASE("auto virtual stages follow Megatron's interleaved-schedule rules", "[unit][plan]") {
  // Pipeline 2 on 8 GPUs: data 4, 64 / (1 x 4) = 16 micro-batches, 16 % 2 == 0. 32 layers:
  // v = 2 (32 % 4 == 0), 4 (32 % 8), 8 (32 % 16) qualify; 3, 5, 6 do not. With v = 1: 4 layouts.
  const SearchSpace s = search(R"({"framework": "megatron", "pipeline": [2], "virtual_stages": "auto"})", "1");
  REQUIRE(s.candidates.size() == 4);
  std::vector<int> vp;
  for (const auto& c : s.candidates) vp.push_back(c.scenario.parallelism.virtual_stages);
  CHECK(vp == std::vector<int>{1, 2, 4, 8});
  CHECK(s.candidates[0].scenario.parallelism.pipeline_schedule == PipelineSchedule::ONE_F_ONE_B);
  CHECK(s.candidates[1].scenario.parallelism.pipeline_schedule == PipelineSchedule::INTERLEAVED_1F1B);
}

TEST_CASE("auto ZeRO stages per framework; micro-batches and recomputation by default", "[unit][plan]") {
  // DeepSpeed with pipeline 2: its pipeline engine takes ZeRO 0 or 1 only.
  SearchSpace s = search(R"({"framework": "deepspeed", "pipeline": [2], "zero_stage": "auto"})", "1");
  std::set<int> stages;
  for (const auto& c : s.candidates) stages.insert(c.scenario.parallelism.zero_stage);
  CHECK(stages == std::set<int>{0, 1});
  // PyTorch without pipeline: 0, 1, 2, 3.
  s = search(R"({"framework": "pytorch", "zero_stage": "auto"})", "1");
  stages.clear();
  for (const auto& c : s.candidates) stages.insert(c.scenario.parallelism.zero_stage);
  CHECK(stages == std::set<int>{0, 1, 2, 3});
  // Micro-batch and recomputation absent: 1, 2, 4, 8 dividing 64 / 8 = 8 (all four) x none,
  // selective, full = 12 layouts.
  s = search(R"({"framework": "pytorch", "zero_stage": 3})", "1", "");
  CHECK(s.candidates.size() == 12);
}

TEST_CASE("memory pruning keeps what does not fit, flagged, without evaluating it", "[unit][plan]") {
  // Llama-3-8B under DDP on one 80 GB GPU: 8.03e9 x 16 B of model state alone is 120 GiB.
  const SearchSpace s = search(R"({"framework": "pytorch", "zero_stage": [0, 3]})", "1");
  REQUIRE(s.candidates.size() == 2);
  CHECK_FALSE(s.candidates[0].fits);
  CHECK(s.candidates[0].memory.peak.as_double() > 8.03e9 * 16);
  CHECK(s.candidates[1].fits);
  CHECK(s.does_not_fit == 1);
}

TEST_CASE("enumeration is the same whatever the thread count", "[unit][plan]") {
  const std::string auto_layout = R"("auto")";
  const SearchSpace a = search(auto_layout, "[1, 2, 4]", "", 1);
  const SearchSpace b = search(auto_layout, "[1, 2, 4]", "", 3);
  CHECK(a.candidates.size() > 100);
  CHECK(layouts(a) == layouts(b));
  CHECK(a.rejected_count == b.rejected_count);
  for (std::size_t i = 0; i < a.candidates.size(); ++i)
    CHECK(a.candidates[i].memory.peak == b.candidates[i].memory.peak);
}

TEST_CASE("the plans in scenarios/plans read and expand", "[unit][plan]") {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(testing::source_dir() / "scenarios" / "plans")) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  CHECK(files.size() >= 3);
  for (const auto& f : files) {
    INFO(f.filename().string());
    const PlanSpec plan = load_plan(f.string());
    const SearchSpace s = enumerate_layouts(plan, catalog());
    CHECK(static_cast<std::int64_t>(s.candidates.size()) > s.does_not_fit);
  }
}
