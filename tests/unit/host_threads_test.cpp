// The host side of a step: the CPU threads a rank's OpenMP and PyTorch pools get under each
// launcher and placement, CPU Adam on them, DeepSpeed ZeRO-3's module hooks on the rank's CPU
// thread, and the DeepSpeed settings the model reads but does not follow.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"
#include "models/compute_model.hpp"
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

ClusterSpec p4d(int gpus_per_pod) {
  ClusterSpec c;
  c.system = "p4d.24xlarge";
  c.gpus_per_node = 4;
  c.gpus_per_pod = gpus_per_pod;
  return c;
}

}  // namespace

TEST_CASE("a rank's CPU threads follow the launcher, OMP_NUM_THREADS and the pod's CPU limit", "[unit][host]") {
  const auto node = hardware::resolve_node(catalog(), "p4d.24xlarge");  // 48 cores, 96 vCPUs
  // One pod of 4 processes under torchrun: OMP_NUM_THREADS=1 each (torch/distributed/run.py).
  HostThreads h = host_threads(p4d(4), node);
  CHECK(h.threads == 1);
  CHECK(h.cores == 1);
  CHECK_THAT(h.why, Catch::Contains("torchrun"));
  // Four pods of one process: OpenMP's default, every logical CPU (96); the four share the 48
  // physical cores: min(96, 48 / 1, 48 / 4) = 12 cores each.
  h = host_threads(p4d(1), node);
  CHECK(h.threads == 96);
  CHECK(h.cores == 12);
  // The deepspeed launcher leaves OMP_NUM_THREADS unset: 96 threads, 12 cores each again.
  ClusterSpec ds = p4d(4);
  ds.launcher = Launcher::DEEPSPEED;
  h = host_threads(ds, node);
  CHECK(h.threads == 96);
  CHECK(h.cores == 12);
  // OMP_NUM_THREADS=8 set in the pod: 8 threads on 8 cores (12 would be its share).
  ClusterSpec omp = p4d(4);
  omp.omp_num_threads = 8;
  h = host_threads(omp, node);
  CHECK(h.threads == 8);
  CHECK(h.cores == 8);
  // A CPU limit of 4 cores a pod of one process: OpenMP sees 4 CPUs, min(4, 4, 12) = 4 cores.
  ClusterSpec lim = p4d(1);
  lim.cpus_per_pod = 4;
  h = host_threads(lim, node);
  CHECK(h.threads == 4);
  CHECK(h.cores == 4);
}

TEST_CASE("CPU Adam on the rank's cores and the node's memory", "[unit][host]") {
  const auto node = hardware::resolve_node(catalog(), "p4d.24xlarge");
  hardware::ParameterSet ps;
  const HostModel host(node, ps);
  // One core: 1e9 parameters a second. The node's limit: 2 sockets x 140.8 GB/s x 0.6 / 30 B =
  // 5.632e9 a second, a quarter each for 4 ranks: 1.408e9, below 12 cores x 1e9.
  CHECK(host.cpu_adam_rate(1.0, 4) == Approx(1e9));
  CHECK(host.cpu_adam_rate(12.0, 4) == Approx(1.408e9));
  // Llama-3-8B's 8,030,261,248 parameters over 4 ranks: 2,007,565,312 each, 2.01 s on one core.
  CHECK(host.cpu_adam_time(2'007'565'312, 1.0, 4).seconds() == Approx(2'007'565'312 / 1e9));
  // A PyTorch CPU pass over 6 GB on 12 cores: torch's AdamW loop rate, min(12 x 2e8, 0.30 x 1.408e9)
  // = 4.224e8 parameters a second, times its 75 B each.
  CHECK(host.torch_pass_time(Bytes::from_double(6e9), 12.0, 4).seconds() == Approx(6e9 / (75 * 0.30 * 1.408e9)));
}

TEST_CASE("seed 004: one pod's CPU Adam runs single-threaded, four pods share the host", "[unit][host][step]") {
  StepSimulator sim(catalog());
  const auto dir = testing::source_dir() / "scenarios";
  const StepEstimate a =
      sim.estimate(load_scenario((dir / "seed004-llama3-8b-zero3-offload-p4d-1pod-4gpu.json").string()), Fidelity::FAST);
  const StepEstimate b =
      sim.estimate(load_scenario((dir / "seed004-llama3-8b-zero3-offload-p4d-4pods-1gpu.json").string()),
                   Fidelity::FAST);
  CHECK(a.host.threads_per_rank == 1);
  CHECK(b.host.cores_per_rank == 12);
  // 2,007,565,312 parameters a rank: 2.01 s on one core, 1.43 s at the node's share (1.408e9).
  CHECK(a.host.cpu_adam_s == Approx(2'007'565'312 / 1e9));
  CHECK(b.host.cpu_adam_s == Approx(2'007'565'312 / 1.408e9));
  // Around CPU Adam, PyTorch CPU passes on the same thread: the clip ("gradient_clipping": "auto",
  // 8 B an element) and the cast of the updated partition (6 B), at torch's loop rate of 2e8
  // parameters a second times its 75 B each: 15 GB/s.
  CHECK(a.host.cpu_optimizer_s == Approx(2'007'565'312 / 1e9 + 14.0 * 2'007'565'312 / (75 * 2e8)));
  // The one pod's step is set by the host: PCIe copies and the single-threaded CPU step.
  CHECK_THAT(a.bottleneck, Catch::StartsWith("offload") || Catch::StartsWith("CPU-optimizer"));
  CHECK(a.breakdown.offload_s + a.breakdown.optimizer_s > 0.5 * a.step_time_s);
  // ZeRO-3's hooks: 13 modules a layer and 3 each for the embedding and the head, 338 us a
  // module's forward and 473 us its backward, 4 micro-batches: (32 x 13 + 6) x 811 us x 4 = 1.369 s.
  CHECK(a.host.hooks_s == Approx((32 * 13 + 6) * (338e-6 + 473e-6) * 4));
}

TEST_CASE("ZeRO-3's module hooks bound a step whose kernels are short", "[unit][host][step]") {
  // Llama-3.2-1B, 128 tokens a micro-batch on one H200: a layer's kernels take tens of
  // microseconds, its 13 module hooks 13 x 338 us = 4.4 ms a forward.
  const nlohmann::json j = {
      {"schema_version", 1},
      {"name", "hooks"},
      {"model", {{"preset", "llama3.2-1b"}}},
      {"training", {{"seq_len", 128}, {"micro_batch_size", 1}, {"global_batch_size", 1}}},
      {"parallelism", {{"framework", "deepspeed"}, {"data", 1}, {"zero_stage", 3}}},
      {"cluster", {{"system", "hgx-h200"}, {"nodes", 1}, {"gpus_per_node", 1}}}};
  const Scenario s = read_scenario(parse_json_text(j.dump(), "hooks.json"), ".");
  StepSimulator sim(catalog());
  const StepEstimate fast = sim.estimate(s, Fidelity::FAST);
  const StepEstimate event = sim.estimate(s, Fidelity::EVENT);
  // 16 layers x 13 + 3 + 3 modules, forward and backward: 214 x (338 + 473) us = 173.6 ms of hooks.
  CHECK(fast.host.hooks_s == Approx(214 * (338e-6 + 473e-6)));
  for (const StepEstimate* e : {&fast, &event}) {
    CHECK(e->breakdown.host_s > 0);
    // One thread runs the hooks and issues the kernels, one after the other.
    CHECK(e->step_time_s >= e->host.hooks_s + e->host.dispatch_s);
    CHECK_THAT(e->bottleneck, Catch::StartsWith("host-bound"));
  }
  // Both fidelities run the same recurrence (unit k starts at max(GPU free, host work up to k done)).
  CHECK(event.step_time_s == Approx(fast.step_time_s).epsilon(0.05));
}

TEST_CASE("an eager step whose kernels are short is bound by their issue", "[unit][host][step]") {
  // Llama-3.2-1B, 32 tokens on one H200, Hugging Face modules run eagerly: the GPU runs each kernel
  // in a few microseconds, the CPU issues each in 45 us (forward) or 38 us (backward).
  auto make = [](const std::string& framework, int tp) {
    const nlohmann::json j = {
        {"schema_version", 1},
        {"name", "eager"},
        {"model", {{"preset", "llama3.2-1b"}}},
        {"training", {{"seq_len", 32}, {"micro_batch_size", 1}, {"global_batch_size", 1}, {"implementation", "hf_eager"}}},
        {"parallelism", {{"framework", framework}, {"data", 1}, {"tensor", tp}}},
        {"cluster", {{"system", "hgx-h200"}, {"nodes", 1}, {"gpus_per_node", tp}}}};
    return read_scenario(parse_json_text(j.dump(), "eager.json"), ".");
  };
  StepSimulator sim(catalog());
  for (const Fidelity f : {Fidelity::FAST, Fidelity::EVENT}) {
    const StepEstimate e = sim.estimate(make("pytorch", 1), f);
    REQUIRE(e.host.kernels > 1000);
    CHECK(e.host.dispatch_s >= e.host.kernels * 38e-6);
    CHECK(e.host.dispatch_s <= e.host.kernels * 45e-6);
    CHECK(e.host.dispatch_s > 2 * e.host.kernels_s);
    CHECK(e.step_time_s >= e.host.dispatch_s);
    CHECK(e.breakdown.host_s > 0);
  }
  // Tensor parallelism under PyTorch runs each parallelized linear as a DTensor op: 16 layers x 7
  // (q, k, v, o, gate, up, down) and the LM head, 113 linears, each 413 us more forward and 775 us
  // more backward: 113 x 1,188 us = 134.2 ms over the same kernels without tensor parallelism.
  const StepEstimate dt = sim.estimate(make("pytorch", 2), Fidelity::FAST);
  const StepEstimate one = sim.estimate(make("pytorch", 1), Fidelity::FAST);
  CHECK(dt.host.kernels == one.host.kernels);
  CHECK(dt.host.dispatch_s - one.host.dispatch_s == Approx(113 * (413e-6 + 775e-6)).epsilon(1e-6));
  CHECK_THAT(dt.bottleneck, Catch::StartsWith("host-bound"));
}

TEST_CASE("a DeepSpeed key the model reads but does not follow is named in a warning", "[unit][host][scenario]") {
  const nlohmann::json cfg = {{"bf16", {{"enabled", true}}},
                              {"zero_optimization",
                               {{"stage", 3},
                                {"zero_quantized_weights", true},
                                {"zero_hpz_partition_size", 8},
                                {"zero_quantized_gradients", false}}},
                              {"activation_checkpointing", {{"partition_activations", true}}}};
  ParallelismSpec p;
  TrainingSpec t;
  std::vector<std::string> warnings;
  apply_deepspeed_config(JsonDocument(cfg, "ds.json"), t, 1, p, &warnings);
  // Two ZeRO++ settings and partitioned activations; qgZ off is DeepSpeed's default: no warning.
  REQUIRE(warnings.size() == 3);
  CHECK_THAT(warnings[0], Catch::Contains("ds.json") && Catch::Contains("/zero_optimization/zero_hpz_partition_size"));
  CHECK_THAT(warnings[1], Catch::Contains("zero_quantized_weights"));
  CHECK_THAT(warnings[2], Catch::Contains("partition_activations"));
  // A misspelt key is still an error naming it.
  const nlohmann::json bad = {{"zero_optimization", {{"stage", 3}, {"stage3_prefetch_bucket_sise", 1e6}}}};
  CHECK_THROWS_AS(apply_deepspeed_config(JsonDocument(bad, "bad.json"), t, 1, p, &warnings), InputError);
}

TEST_CASE("placement keys for the host are read strictly", "[unit][host][scenario][bad-input]") {
  nlohmann::json j = {{"schema_version", 1},
                      {"model", {{"preset", "llama3-8b"}}},
                      {"training", {{"seq_len", 512}, {"micro_batch_size", 1}, {"global_batch_size", 4}}},
                      {"parallelism", {{"data", 4}}},
                      {"cluster",
                       {{"system", "p4d.24xlarge"},
                        {"nodes", 1},
                        {"gpus_per_node", 4},
                        {"placement", {{"launcher", "deepspeed"}, {"omp_num_threads", 6}, {"cpus_per_pod", 24}}}}}};
  const Scenario s = read_scenario(parse_json_text(j.dump(), "s.json"), ".");
  CHECK(s.cluster.launcher == Launcher::DEEPSPEED);
  CHECK(s.cluster.omp_num_threads == 6);
  CHECK(s.cluster.cpus_per_pod == 24);
  j["cluster"]["placement"]["launcher"] = "srun";
  CHECK_THROWS_WITH(read_scenario(parse_json_text(j.dump(), "s.json"), "."),
                    Catch::Contains("/cluster/placement/launcher") && Catch::Contains("torchrun"));
}

namespace {

// Llama-3-8B under FSDP2 with CPUOffloadPolicy on 4 x H200 (one pod, torchrun), on the catalog's
// defaults (the H200 profile measured its own CPU Adam).
nlohmann::json fsdp2_offload_8b() {
  return {{"schema_version", 1},
          {"model", {{"preset", "llama3-8b"}}},
          {"training", {{"seq_len", 4096}, {"micro_batch_size", 1}, {"global_batch_size", 4}}},
          {"parallelism",
           {{"framework", "pytorch"}, {"data", 4}, {"zero_stage", 3}, {"offload", {{"optimizer", "cpu"}, {"params", "cpu"}}}}},
          {"cluster", {{"system", "hgx-h200"}, {"nodes", 1}, {"gpus_per_node", 4}}},
          {"calibration", "none"}};
}

}  // namespace

TEST_CASE("FSDP2's CPUOffloadPolicy: shards on the host, AdamW on the CPU", "[unit][host][step]") {
  nlohmann::json j = fsdp2_offload_8b();
  const Scenario s = read_scenario(parse_json_text(j.dump(), "fsdp.json"), ".");
  StepSimulator sim(catalog());
  const StepEstimate e = sim.estimate(s, Fidelity::FAST);
  // No sharded state on the GPU; on the host per node: 8,030,261,248 x (4 + 4 + 8) B.
  CHECK(e.memory.weights.count() == 0);
  CHECK(e.memory.optimizer_state.count() == 0);
  CHECK(e.memory.host_bytes.as_double() == Approx(16.0 * 8'030'261'248).epsilon(1e-6));
  // torch AdamW on one thread (torchrun, 4 processes a pod): 2,007,565,312 / 2e8 a second.
  CHECK(e.host.cpu_adam_s == Approx(2'007'565'312 / 2e8));
  bool copy_in = false;
  for (const auto& c : e.comms) copy_in = copy_in || c.name == "parameter copy-in (CPUOffloadPolicy)";
  CHECK(copy_in);
  // CPUOffloadPolicy moves parameters, gradients and optimizer state together.
  j["parallelism"]["offload"]["params"] = "none";
  CHECK_THROWS_WITH(read_scenario(parse_json_text(j.dump(), "fsdp.json"), "."),
                    Catch::Contains("/parallelism/offload") && Catch::Contains("CPUOffloadPolicy"));
  j["parallelism"]["framework"] = "megatron";
  j["parallelism"]["zero_stage"] = 1;
  CHECK_THROWS_WITH(read_scenario(parse_json_text(j.dump(), "fsdp.json"), "."), Catch::Contains("Megatron"));
}

TEST_CASE("CPUOffloadPolicy's AdamW: torch's CPU loop or fused", "[unit][host][step]") {
  nlohmann::json j = fsdp2_offload_8b();
  j["parallelism"]["fsdp"] = {{"cpu_optimizer", "fused"}};
  StepSimulator sim(catalog());
  const StepEstimate fused = sim.estimate(read_scenario(parse_json_text(j.dump(), "f.json"), "."), Fidelity::FAST);
  // fused=True on one thread a rank: CPU Adam's 1e9 parameters a second, 2,007,565,312 each.
  CHECK(fused.host.cpu_adam_s == Approx(2'007'565'312 / 1e9));
  j["parallelism"]["fsdp"]["cpu_optimizer"] = "fusd";
  CHECK_THROWS_WITH(read_scenario(parse_json_text(j.dump(), "f.json"), "."),
                    Catch::Contains("/parallelism/fsdp/cpu_optimizer") && Catch::Contains("fused"));
}
