#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"
#include "models/scenario.hpp"
#include "models/step_model.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

// A scenario from a JSON patch on a small default (Llama-3-8B, 4 x H200).
Scenario make(const nlohmann::json& patch) {
  nlohmann::json j = {{"schema_version", 1},
                      {"name", "test"},
                      {"model", {{"preset", "llama3-8b"}}},
                      {"training", {{"seq_len", 4096}, {"micro_batch_size", 1}, {"global_batch_size", 8}}},
                      {"parallelism", {{"framework", "pytorch"}, {"data", 4}, {"zero_stage", 3}}},
                      {"cluster", {{"system", "hgx-h200"}, {"nodes", 1}, {"gpus_per_node", 4}}}};
  if (patch.is_object()) j.merge_patch(patch);
  return read_scenario(parse_json_text(j.dump(), "test.json"), ".");
}

double parts(const StepEstimate& e) {
  const auto& b = e.breakdown;
  return b.compute_s + b.exposed_comm_s + b.pipeline_bubble_s + b.optimizer_s + b.offload_s + b.host_s;
}

}  // namespace

TEST_CASE("the breakdown adds up to the step at both fidelities", "[unit][step][model]") {
  StepSimulator sim(catalog());
  for (const Fidelity f : {Fidelity::FAST, Fidelity::EVENT}) {
    const StepEstimate e = sim.estimate(make({}), f);
    REQUIRE(e.step_time_s > 0);
    CHECK(parts(e) == Approx(e.step_time_s).epsilon(1e-6));
    // 8 sequences of 4096 tokens.
    CHECK(e.tokens_per_step == 32768);
    CHECK(e.tokens_per_s == Approx(32768 / e.step_time_s));
    CHECK(e.low_s < e.step_time_s);
    CHECK(e.high_s > e.step_time_s);
    CHECK(e.memory.fits);
    CHECK(e.mfu > 0.1);
    CHECK(e.mfu < 1.0);
    CHECK_FALSE(e.parameters.empty());
  }
}

TEST_CASE("FAST agrees with EVENT where nothing contends", "[unit][step][model]") {
  StepSimulator sim(catalog());
  // Llama-3-70B, TP 8 x PP 4 on four p5 nodes, no data parallelism: TP collectives stay on each
  // GPU's own NVLink ports, pipeline sends on its own NICs; nothing shares a link.
  const Scenario s = make({{"model", {{"preset", "llama3-70b"}}},
                           {"training", {{"global_batch_size", 16}, {"activation_checkpointing", "selective"}}},
                           {"parallelism",
                            {{"framework", "megatron"},
                             {"data", 1},
                             {"tensor", 8},
                             {"pipeline", 4},
                             {"zero_stage", 0},
                             {"sequence_parallel", true}}},
                           {"cluster", {{"system", "p5.48xlarge"}, {"nodes", 4}, {"gpus_per_node", 8}}}});
  const StepEstimate fast = sim.estimate(s, Fidelity::FAST);
  const StepEstimate event = sim.estimate(s, Fidelity::EVENT);
  // The closed form's pipeline formula (m + (p-1)/v) T is exact for equal stages; the first and
  // last stage carry the embedding and head, which it adds as fill: a few percent.
  CHECK(fast.step_time_s == Approx(event.step_time_s).epsilon(0.03));
  CHECK(fast.breakdown.pipeline_bubble_s == Approx(event.breakdown.pipeline_bubble_s).epsilon(0.15));
}

TEST_CASE("EVENT is no faster than FAST where traffic shares a link", "[unit][step][model]") {
  StepSimulator sim(catalog());
  // FSDP over 4 data-parallel ranks and TP 2 on one node: the TP all-reduces and the FSDP
  // all-gathers and reduce-scatters cross the same NVLink ports, which FAST prices apart.
  const Scenario s = make({{"parallelism", {{"data", 2}, {"tensor", 2}, {"zero_stage", 3}}},
                           {"training", {{"global_batch_size", 4}}}});
  const StepEstimate fast = sim.estimate(s, Fidelity::FAST);
  const StepEstimate event = sim.estimate(s, Fidelity::EVENT);
  CHECK(event.step_time_s >= fast.step_time_s * 0.98);
}

TEST_CASE("placement decides transports: seed 004 on p4d, one pod against four", "[unit][step][model]") {
  StepSimulator sim(catalog());
  const auto dir = testing::source_dir() / "scenarios";
  const Scenario one = load_scenario((dir / "seed004-llama3-8b-zero3-offload-p4d-1pod-4gpu.json").string());
  const Scenario four = load_scenario((dir / "seed004-llama3-8b-zero3-offload-p4d-4pods-1gpu.json").string());
  const StepEstimate a = sim.estimate(one, Fidelity::EVENT);
  const StepEstimate b = sim.estimate(four, Fidelity::EVENT);
  auto transport = [](const StepEstimate& e) {
    for (const auto& c : e.comms) {
      if (c.name == "ZeRO-3 all-gather") return c.transport;
    }
    return std::string();
  };
  // As the seed's NCCL logs say: P2P/CUMEM/read in one pod, NET/Libfabric with GPUDirect RDMA across pods.
  CHECK(transport(a) == "P2P/CUMEM/read");
  CHECK_THAT(transport(b), Catch::StartsWith("NET/Libfabric") && Catch::Contains("GDRDMA"));
  // 100 Gb/s EFA against NVLink: the four-pod step is longer, by less than the links alone say:
  // one pod of 4 processes under torchrun runs CPU Adam on one thread a rank (host_threads_test).
  CHECK(b.step_time_s > a.step_time_s);
  CHECK(a.breakdown.optimizer_s > b.breakdown.optimizer_s);
  // Both offload parameters and optimizer: CPU Adam and PCIe copies appear.
  CHECK(a.breakdown.optimizer_s > 0);
  CHECK(a.memory.host_bytes.count() > 0);
}

TEST_CASE("ZeRO-3 gathers again what its reuse rule releases", "[unit][step][model][deepspeed]") {
  StepSimulator sim(catalog());
  // Llama-3-8B under DeepSpeed ZeRO-3, full recomputation, 2 micro-batches a step. Non-persistent
  // elements (everything but the norms, below the 1e5 threshold): a layer's q, o 4096^2 =
  // 16,777,216; k, v 4096 x 1024 = 4,194,304; gate, up, down 4096 x 14336 = 58,720,256; in all
  // 218,103,808; embedding and lm_head 128256 x 4096 = 525,336,576 each. N = 32 layers + both =
  // 8,029,995,008.
  //   Forward: everything, N.
  //   Backward, stage3_max_reuse_distance 1e9: lm_head is used again at once (kept); every layer
  //   is gathered for its recomputed forward (the walk from its forward passes the head twice,
  //   1.05e9), then kept for its backward (q, the farthest, sees 2 x 201,326,592 in between);
  //   the embedding is gathered again. N - 525,336,576 = 7,504,658,432.
  //   Per micro-batch 15,534,653,440 elements, 2 B each, 2 micro-batches: 62,138,613,760 B.
  //   With 1e8: after the recompute every module but down_proj (nothing in between) is released
  //   and gathered again for its backward: 32 x (218,103,808 - 58,720,256) = 5,100,273,664 more,
  //   a step of 2 x 2 x (15,534,653,440 + 5,100,273,664) = 82,539,708,416 B.
  auto gathered = [&](const nlohmann::json& deepspeed) {
    const Scenario s = make({{"training", {{"activation_checkpointing", "full"}}},
                             {"parallelism", {{"framework", "deepspeed"}, {"deepspeed", deepspeed}}}});
    const StepEstimate e = sim.estimate(s, Fidelity::FAST);
    double bytes = 0;
    for (const auto& c : e.comms) {
      if (c.name == "ZeRO-3 all-gather") bytes += c.bytes.as_double();
    }
    return bytes;
  };
  CHECK(gathered(nlohmann::json::object()) == Approx(62'138'613'760.0).epsilon(1e-6));
  CHECK(gathered({{"stage3_max_reuse_distance", 1e8}}) == Approx(82'539'708'416.0).epsilon(1e-6));
}

TEST_CASE("scenarios that cannot run are input errors naming the key", "[unit][step][model]") {
  StepSimulator sim(catalog());
  auto fails = [&](const nlohmann::json& patch, const std::string& key) {
    CHECK_THROWS_WITH(sim.estimate(make(patch), Fidelity::FAST), Catch::Contains("test.json") && Catch::Contains(key));
  };
  // Llama-3-8B has 32 heads and 8 KV heads: TP 3 divides neither.
  fails({{"parallelism", {{"data", 1}, {"tensor", 3}}}, {"cluster", {{"gpus_per_node", 3}}}}, "/parallelism/tensor");
  // 6 sequences over 4 data-parallel ranks of 1.
  fails({{"training", {{"global_batch_size", 6}}}}, "/training/global_batch_size");
  // 32 layers on 64 stages.
  fails({{"parallelism", {{"data", 1}, {"pipeline", 64}, {"zero_stage", 0}}},
         {"cluster", {{"system", "p5.48xlarge"}, {"nodes", 8}, {"gpus_per_node", 8}}}},
        "/parallelism/pipeline");
  fails({{"model", {{"preset", "llama9-8b"}}}}, "/model");
  fails({{"cluster", {{"system", "hgx-h999"}}}}, "/cluster/system");
  fails({{"parallelism", {{"data", 16}}}, {"training", {{"global_batch_size", 16}}}, {"cluster", {{"gpus_per_node", 16}}}},
        "/cluster/gpus_per_node");
  // Interleaving needs micro-batches a multiple of the stages: 6 / (1 x 2) = 3 micro-batches on 2 stages.
  fails({{"training", {{"global_batch_size", 6}}},
         {"parallelism",
          {{"framework", "megatron"},
           {"data", 2},
           {"pipeline", 2},
           {"zero_stage", 0},
           {"pipeline_schedule", "interleaved_1f1b"},
           {"virtual_stages", 2}}}},
        "/training/global_batch_size");
}

TEST_CASE("a layout that does not fit still runs and says by how much", "[unit][step][model]") {
  StepSimulator sim(catalog());
  // Llama-3-70B with plain DDP on 4 x H200: 70e9 x 16 bytes of model state per GPU.
  const StepEstimate e = sim.estimate(make({{"model", {{"preset", "llama3-70b"}}},
                                            {"parallelism", {{"zero_stage", 0}}},
                                            {"training", {{"global_batch_size", 4}}}}),
                                      Fidelity::FAST);
  CHECK_FALSE(e.memory.fits);
  CHECK(e.memory.shortfall.count() > 0);
  CHECK(e.memory.peak.count() == e.memory.usable.count() + e.memory.shortfall.count());
  bool warned = false;
  for (const auto& w : e.warnings) warned = warned || w.find("does not fit") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("calibration none prices the step from catalog defaults only", "[unit][step][model]") {
  StepSimulator sim(catalog());
  // hgx-h200 names a built-in profile: by default some parameters come from it, with "none" none.
  const StepEstimate with = sim.estimate(make({}), Fidelity::FAST);
  const StepEstimate without = sim.estimate(make({{"calibration", "none"}}), Fidelity::FAST);
  const auto calibrated = [](const StepEstimate& e) {
    int n = 0;
    for (const auto& p : e.parameters) n += p.calibrated ? 1 : 0;
    return n;
  };
  CHECK(calibrated(with) > 0);
  CHECK(calibrated(without) == 0);
  bool warned = false;
  for (const auto& w : without.warnings) warned = warned || w.find("calibration: none") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("the planner's evaluator reuses predictors across layouts", "[unit][step][model]") {
  StepSimulator sim(catalog());
  const StepEvaluator eval = sim.evaluator();
  const StepEstimate a = eval(make({}), Fidelity::FAST);
  const std::size_t cached = sim.cached_predictors();
  const StepEstimate b = eval(make({{"training", {{"global_batch_size", 16}}}}), Fidelity::FAST);
  CHECK(sim.cached_predictors() == cached);
  // Twice the micro-batches on the same ranks: about twice the step.
  CHECK(b.step_time_s == Approx(2 * a.step_time_s).epsilon(0.05));
}

TEST_CASE("every scenario in scenarios/ runs", "[unit][step][scenarios]") {
  StepSimulator sim(catalog());
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(testing::source_dir() / "scenarios")) {
    const auto& p = entry.path();
    if (p.extension() != ".json") continue;
    const JsonDocument doc = load_json_file(p.string());
    if (!doc.json().contains("schema_version")) continue;  // a DeepSpeed config beside the scenarios
    INFO(p.filename().string());
    const Scenario s = load_scenario(p.string());
    const StepEstimate e = sim.estimate(s, Fidelity::EVENT);
    CHECK(e.step_time_s > 0);
    CHECK(parts(e) == Approx(e.step_time_s).epsilon(1e-6));
    ++count;
  }
  CHECK(count >= 12);
}
