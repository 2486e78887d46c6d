// Speed of the training-step model: one EVENT step (task graph on the event simulation with the
// flow network) at small, medium and large scale, and FAST evaluations per second with a warm
// simulator (the planner's sweeps). The large case is the Llama 3 405B scale: 16,384 GPUs on 2,048
// p5.48xlarge, TP 8 x PP 16 x DP 128, interleaved 1F1B (target: at most 2 s and 2 GiB). The host-heavy
// case: Llama-3-70B under DeepSpeed ZeRO-3 with optimizer and parameter offload on 16 p4d.24xlarge
// (module hooks on the CPU thread, per-unit host copies, CPU Adam).
// peak_rss_MiB is the process's high-water mark (getrusage) after the benchmark's iterations.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <string>

#include <nlohmann/json.hpp>

#include "hardware/catalog.hpp"
#include "hardware/json_reader.hpp"
#include "models/scenario.hpp"
#include "models/step_model.hpp"

namespace {

using namespace clustersim;

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

struct Case {
  const char* model;
  int nodes, gpus_per_node, dp, tp, pp, vp, zero;
  std::int64_t seq, gbs;
  const char* system;
  const char* framework;
  const char* ckpt;
  bool offload = false;
};

models::Scenario scenario(const Case& c) {
  nlohmann::json par = {{"framework", c.framework}, {"data", c.dp},     {"tensor", c.tp},
                        {"pipeline", c.pp},        {"zero_stage", c.zero}, {"sequence_parallel", c.tp > 1},
                        {"pipeline_schedule", c.vp > 1 ? "interleaved_1f1b" : "1f1b"}, {"virtual_stages", c.vp}};
  if (c.offload) par["offload"] = {{"optimizer", "cpu"}, {"params", "cpu"}};
  if (std::string(c.framework) == "megatron") {
    par["uneven_pipeline"] = true;
    par["megatron"] = {{"distributed_optimizer", true}, {"overlap_grad_reduce", true},
                       {"overlap_param_gather", true}, {"tp_comm_overlap", true}};
  }
  const nlohmann::json j = {
      {"schema_version", 1},
      {"name", "bench"},
      {"model", {{"preset", c.model}}},
      {"training",
       {{"seq_len", c.seq}, {"micro_batch_size", 1}, {"global_batch_size", c.gbs}, {"activation_checkpointing", c.ckpt}}},
      {"parallelism", par},
      {"cluster", {{"system", c.system}, {"nodes", c.nodes}, {"gpus_per_node", c.gpus_per_node}}}};
  return models::read_scenario(parse_json_text(j.dump(), "bench.json"), ".");
}

// small: Llama-3-8B FSDP on 4 x H200; medium: Llama-3-70B TP8 PP4 DP16 on 64 p5; large: 405B.
const Case kCases[] = {
    {"llama3-8b", 1, 4, 4, 1, 1, 1, 3, 4096, 16, "hgx-h200", "pytorch", "none"},
    {"llama3-70b", 64, 8, 16, 8, 4, 5, 0, 8192, 512, "p5.48xlarge", "megatron", "selective"},
    {"llama3.1-405b", 2048, 8, 128, 8, 16, 2, 0, 8192, 2048, "p5.48xlarge", "megatron", "full"},
    {"llama3-70b", 16, 8, 128, 1, 1, 1, 3, 4096, 512, "p4d.24xlarge", "deepspeed", "full", true},
};

void BM_StepEvent(benchmark::State& state) {
  const hardware::Catalog catalog = hardware::Catalog::load();
  const models::Scenario s = scenario(kCases[state.range(0)]);
  double step = 0;
  for (auto _ : state) {
    // A fresh simulator each time: the whole cost of one `clustersim simulate`.
    models::StepSimulator sim(catalog);
    const models::StepEstimate e = sim.estimate(s, models::Fidelity::EVENT);
    // (No DoNotOptimize on a double here: GCC 12 miscompiles benchmark 1.7's "+m,r" constraint on
    // a double lvalue; the estimate has side effects the compiler cannot drop anyway.)
    step = e.step_time_s;
  }
  state.counters["gpus"] = s.world_size();
  state.counters["step_s"] = step;
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}
BENCHMARK(BM_StepEvent)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

void BM_StepFast(benchmark::State& state) {
  const hardware::Catalog catalog = hardware::Catalog::load();
  const models::Scenario s = scenario(kCases[state.range(0)]);
  models::StepSimulator sim(catalog);
  (void)sim.estimate(s, models::Fidelity::FAST);  // warm the predictor cache, as a planner sweep does
  for (auto _ : state) {
    const models::StepEstimate e = sim.estimate(s, models::Fidelity::FAST);
    benchmark::DoNotOptimize(e.comms.data());
  }
  state.SetItemsProcessed(state.iterations());  // items/s = FAST evaluations per second
  state.counters["gpus"] = s.world_size();
}
BENCHMARK(BM_StepFast)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

}  // namespace
