// Memory per rank: model states per framework and ZeRO stage, activations (Korthikanti et al.
// 2022 generalised), buffers, and the fit against the GPU's usable memory.

#include <catch2/catch.hpp>

#include "hardware/catalog.hpp"
#include "hardware/json_reader.hpp"
#include "models/training_model.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

TrainingSpec training(std::int64_t seq, std::int64_t micro, std::int64_t global) {
  TrainingSpec t;
  t.seq_len = seq;
  t.micro_batch_size = micro;
  t.global_batch_size = global;
  return t;
}

ParallelismSpec layout(Framework f, int dp, int tp = 1, int pp = 1) {
  ParallelismSpec p;
  p.framework = f;
  p.data = dp;
  p.tensor = tp;
  p.pipeline = pp;
  return p;
}

// A small GPT (Korthikanti's setting): h = 1024, 16 heads, 4 layers, hidden dropout 0.1.
TransformerConfig small_gpt() {
  const JsonDocument doc = parse_json_text(R"({"model_type": "gpt2", "n_embd": 1024, "n_layer": 4, "n_head": 16,
                                               "n_positions": 2048, "vocab_size": 1000})",
                                           "scenario.json");
  return read_inline_model(doc.root());
}

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

constexpr double kLlama8b = 8'030'261'248.0;

}  // namespace

TEST_CASE("activations per layer follow Korthikanti et al. with flash attention", "[unit][models]") {
  const auto gpt = small_gpt();
  const double sbh = 2048.0 * 1 * 1024;  // s b h for one sequence of 2048
  auto bytes = [&](int tp, bool sp, Checkpointing c) {
    auto p = layout(Framework::MEGATRON, 1, tp);
    p.sequence_parallel = sp;
    const ParallelLayout l(gpt, p, training(2048, 1, 1));
    return layer_activation_bytes(gpt, l, training(2048, 1, 1), 0, c).as_double();
  };
  // No parallelism: 34 s b h (Korthikanti Eq. 1 without the 5 a s^2 b of stored scores, which
  // flash attention does not keep) + the fp32 log-sum-exp 4 b a s = 4 x 16 x 2048 = 131,072.
  CHECK(bytes(1, false, Checkpointing::NONE) == Approx(34 * sbh + 131'072));
  // TP 4 with sequence parallelism: everything / 4 (Eq. 4 without the score term).
  CHECK(bytes(4, true, Checkpointing::NONE) == Approx(34 * sbh / 4 + 131'072 / 4));
  // TP 4 without: s b h (10 + 24/4) (Eq. 2): the norm inputs, projection inputs and dropout masks stay whole.
  CHECK(bytes(4, false, Checkpointing::NONE) == Approx(16 * sbh + 131'072 / 4));
  // Selective recomputation drops what the attention core keeps (here the log-sum-exp).
  CHECK(bytes(1, false, Checkpointing::SELECTIVE) == Approx(34 * sbh));
  // Full recomputation keeps the layer input: 2 s b h, sharded by SP.
  CHECK(bytes(1, false, Checkpointing::FULL) == Approx(2 * sbh));
  CHECK(bytes(4, true, Checkpointing::FULL) == Approx(2 * sbh / 4));
}

TEST_CASE("Megatron's distributed optimizer: 6 + 12/d bytes per parameter", "[unit][models]") {
  const TrainingModel tm(builtin_model_preset("llama3-8b"), layout(Framework::MEGATRON, 8), training(4096, 1, 8));
  hardware::ParameterSet ps;
  const auto m = tm.memory(0, catalog().gpu("H100-SXM5-80GB"), ps);
  // bf16 weights 2 W, fp32 main gradients 4 W, fp32 master + Adam moments 12 W / 8, W = 8,030,261,248.
  CHECK(m.weights.as_double() == Approx(2 * kLlama8b));
  CHECK(m.gradients.as_double() == Approx(4 * kLlama8b));
  CHECK(m.optimizer_state.as_double() == Approx(12 * kLlama8b / 8));
  // Without the distributed optimizer: 18 bytes per parameter in total.
  auto p = layout(Framework::MEGATRON, 8);
  p.megatron.distributed_optimizer = false;
  const auto m2 = TrainingModel(builtin_model_preset("llama3-8b"), p, training(4096, 1, 8))
                      .memory(0, catalog().gpu("H100-SXM5-80GB"), ps);
  CHECK((m2.weights + m2.gradients + m2.optimizer_state).as_double() == Approx(18 * kLlama8b));
}

TEST_CASE("ZeRO stages and FSDP shard what they shard", "[unit][models]") {
  const auto llama = builtin_model_preset("llama3-8b");
  const auto& gpu = catalog().gpu("H200-SXM-141GB");
  hardware::ParameterSet ps;
  auto ds = [&](int stage) {
    auto p = layout(Framework::DEEPSPEED, 8);
    p.zero_stage = stage;
    return TrainingModel(llama, p, training(2048, 1, 8)).memory(0, gpu, ps);
  };
  // Stage 1: 2 W weights, 2 W gradients + the reduced 2 W / 8 partition, 12 W / 8 optimizer.
  const auto s1 = ds(1);
  CHECK(s1.weights.as_double() == Approx(2 * kLlama8b));
  CHECK(s1.gradients.as_double() == Approx(2 * kLlama8b + 2 * kLlama8b / 8));
  CHECK(s1.optimizer_state.as_double() == Approx(12 * kLlama8b / 8));
  // Stage 2: gradients partitioned too.
  CHECK(ds(2).gradients.as_double() == Approx(2 * kLlama8b / 8));
  // Stage 3: weights partitioned, except the persistent small tensors (below the default threshold
  // of 1e5 elements: the 65 RMSNorm weights of 4096), whole on every rank:
  // 2 W / 8 + 2 x 266,240 x 7/8.
  const auto s3 = ds(3);
  CHECK(s3.weights.as_double() == Approx(2 * kLlama8b / 8 + 2 * 266'240.0 * 7 / 8));
  CHECK(s3.details.at("buffers.zero3_reduce_bucket").as_double() == Approx(2 * 5e8));
  // PyTorch DDP with AMP: fp32 weights and gradients, Adam moments, and a bucket copy of the gradients.
  const auto ddp = TrainingModel(llama, layout(Framework::PYTORCH, 8), training(2048, 1, 8)).memory(0, gpu, ps);
  CHECK(ddp.weights.as_double() == Approx(4 * kLlama8b));
  CHECK(ddp.gradients.as_double() == Approx(4 * kLlama8b));
  CHECK(ddp.optimizer_state.as_double() == Approx(8 * kLlama8b));
  CHECK(ddp.details.at("buffers.ddp_buckets").as_double() == Approx(4 * kLlama8b));
  // FSDP2 (zero_stage 3): all sharded; two decoder layers unsharded in bf16 (the current and one
  // prefetched): q, o 4096^2 each, k, v 4096 x 1024 each, gate, up, down 4096 x 14336 each, two
  // norms of 4096: 33,554,432 + 8,388,608 + 176,160,768 + 8192 = 218,112,000 parameters.
  auto fp = layout(Framework::PYTORCH, 8);
  fp.zero_stage = 3;
  const auto fsdp = TrainingModel(llama, fp, training(2048, 1, 8)).memory(0, gpu, ps);
  CHECK(fsdp.weights.as_double() == Approx(4 * kLlama8b / 8));
  CHECK(fsdp.details.at("buffers.fsdp_unsharded_params").as_double() == Approx(2 * 2 * 218'112'000.0));
  // The root module (embedding, final norm, LM head) stays unsharded after its forward:
  // 2 x 128256 x 4096 + 4096 = 1,050,677,248 parameters in bf16.
  CHECK(fsdp.details.at("buffers.fsdp_root_unsharded").as_double() == Approx(2 * 1'050'677'248.0));
}

TEST_CASE("DeepSpeed auto knobs resolve as the Hugging Face trainer fills them", "[unit][models]") {
  ZeroKnobs k;
  k.reduce_bucket_size.is_auto = true;
  k.stage3_prefetch_bucket_size.is_auto = true;
  k.stage3_param_persistence_threshold.is_auto = true;
  const auto r = resolve_zero_knobs(k, 4096);
  CHECK(r.reduce_bucket_size == 16'777'216);          // h^2
  CHECK(r.prefetch_bucket_size == 15'099'494);        // floor(0.9 h^2) = floor(15,099,494.4)
  CHECK(r.param_persistence_threshold == 40'960);     // 10 h
  const auto d = resolve_zero_knobs(ZeroKnobs{}, 4096);  // absent: DeepSpeed's defaults
  CHECK(d.reduce_bucket_size == 5e8);
  CHECK(d.prefetch_bucket_size == 5e7);
  CHECK(d.param_persistence_threshold == 1e5);
}

TEST_CASE("the seed's Llama-3-8B ZeRO-3 with optimizer and parameter offload on 4 A100-40GB", "[unit][models]") {
  // Seed 004: stage 3, offload_optimizer and offload_param to pinned CPU memory, "auto" buckets,
  // 4 GPUs, micro-batch 4, no gradient checkpointing. The seed does not give the sequence length;
  // 1024 tokens here.
  auto p = layout(Framework::DEEPSPEED, 4);
  p.zero_stage = 3;
  p.offload_optimizer = OffloadTarget::CPU;
  p.offload_params = OffloadTarget::CPU;
  p.zero.reduce_bucket_size.is_auto = true;
  p.zero.stage3_prefetch_bucket_size.is_auto = true;
  p.zero.stage3_param_persistence_threshold.is_auto = true;
  p.zero.stage3_max_live_parameters.value = 1e9;
  const auto llama = builtin_model_preset("llama3-8b");
  const TrainingModel tm(llama, p, training(1024, 4, 64));
  const auto& gpu = catalog().gpu("A100-SXM4-40GB");
  hardware::ParameterSet ps;
  const auto m = tm.memory(0, gpu, ps);
  // On the GPU only the persistent tensors (below 10 h = 40,960 elements: 65 norms of 4096) in bf16.
  CHECK(m.weights.count() == 2 * 65 * 4096);
  CHECK(m.gradients.count() == 0);
  CHECK(m.optimizer_state.count() == 0);
  // On the host: fp32 master + moments 12 W / 4, fp32 gradients 4 W / 4, bf16 weights 2 W / 4.
  CHECK(m.host_optimizer_state.as_double() == Approx(12 * kLlama8b / 4));
  CHECK(m.host_gradients.as_double() == Approx(4 * kLlama8b / 4));
  CHECK(m.host_weights.as_double() == Approx(2 * kLlama8b / 4));
  // Gathered: the largest unit (LM head + final norm, 525,340,672) + the 0.9 h^2 prefetch bucket
  // (15,099,494) in bf16 = 1,080,880,332; reduce bucket h^2 in bf16 = 33,554,432.
  CHECK(m.details.at("buffers.zero3_gathered_params").count() == 1'080'880'332);
  CHECK(m.details.at("buffers.zero3_reduce_bucket").count() == 33'554'432);
  // Activations per layer, T = 4 x 1024 = 4096 tokens, h = 4096, bf16: norm and projection inputs
  // 4 x T h x 2 = 134,217,728; q, k, v T x 6144 x 2 = 50,331,648; attention output 33,554,432;
  // log-sum-exp 4 x 4 x 32 x 1024 = 524,288; MLP gate, up, product 3 x T x 14336 x 2 = 352,321,536:
  // 570,949,632 x 32 layers = 18,270,388,224.
  CHECK(m.details.at("activations.layers").count() == 18'270'388'224);
  // Head (Hugging Face loss): final-norm and head inputs 2 x T h x 2 = 67,108,864 and logits in bf16,
  // fp32 and fp32 log-softmax 10 x T x 128256 = 5,253,365,760.
  CHECK(m.details.at("activations.head").count() == 5'320'474'624);
  // NCCL: one data-parallel communicator x 16 channels x 2 connections x 9,633,792 B.
  CHECK(m.details.at("buffers.nccl").count() == 308'281'344);
  CHECK(m.peak == m.weights + m.gradients + m.optimizer_state + m.activations + m.buffers);
  CHECK(m.usable == Bytes::mib(40960));
  CHECK(m.fits);
  CHECK(m.shortfall == Bytes());
  // At 4096 tokens per sequence the activations quadruple and the rank misses by peak - usable.
  const auto big = TrainingModel(llama, p, training(4096, 4, 64)).memory(0, gpu, ps);
  CHECK_FALSE(big.fits);
  CHECK(big.shortfall == big.peak - big.usable);
  // Every default the estimate used is recorded as uncalibrated.
  CHECK_FALSE(ps.used().at("memory.cuda_context").calibrated);
}

TEST_CASE("LoRA keeps states for the adapters only and activations for every layer", "[unit][models]") {
  auto t = training(2048, 1, 8);
  t.fine_tuning = FineTuning::LORA;
  t.lora.rank = 32;  // NeMo seed: adapter_dim 32 on q, k, v, o
  const auto llama = builtin_model_preset("llama3-8b");
  const auto& gpu = catalog().gpu("H100-SXM5-80GB");
  hardware::ParameterSet ps;
  const auto lora = TrainingModel(llama, layout(Framework::MEGATRON, 8), t).memory(0, gpu, ps);
  // Adapters: 32 layers x 32 x (8192 + 5120 + 5120 + 8192) = 27,262,976 trainable elements.
  const double n = 27'262'976;
  CHECK(lora.weights.as_double() == Approx(2 * (kLlama8b + n)));
  CHECK(lora.gradients.as_double() == Approx(4 * n));
  CHECK(lora.optimizer_state.as_double() == Approx(12 * n / 8));
  const auto full = TrainingModel(llama, layout(Framework::MEGATRON, 8), training(2048, 1, 8)).memory(0, gpu, ps);
  // Activations: the full model's plus each adapter's T x r intermediate (4 x 2048 x 32 x 2 per layer).
  CHECK(lora.details.at("activations.layers").as_double() ==
        Approx(full.details.at("activations.layers").as_double() + 32 * 4 * 2048.0 * 32 * 2));
}

TEST_CASE("pipeline stages hold their in-flight micro-batches", "[unit][models]") {
  const auto gpt = small_gpt();
  // 4 stages of one layer, 8 micro-batches, 1F1B: stage 0 holds 4 micro-batches of its layer.
  const TrainingModel tm(gpt, layout(Framework::MEGATRON, 1, 1, 4), training(2048, 1, 8));
  hardware::ParameterSet ps;
  const auto& gpu = catalog().gpu("H100-SXM5-80GB");
  const double per_layer = 34.0 * 2048 * 1024 + 131'072;  // as in the Korthikanti test
  CHECK(tm.memory(0, gpu, ps).details.at("activations.layers").as_double() == Approx(4 * per_layer));
  CHECK(tm.memory(3, gpu, ps).details.at("activations.layers").as_double() == Approx(per_layer));
}
