// Kernels of a layer: FLOPs forward and backward, parallel splits, recomputation, LoRA, MoE, and
// the SC'21 Eq. 3 step FLOPs.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <tuple>

#include "hardware/json_reader.hpp"
#include "models/scenario.hpp"
#include "models/training_model.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

TrainingSpec training(std::int64_t seq, std::int64_t micro = 1, std::int64_t global = 1) {
  TrainingSpec t;
  t.seq_len = seq;
  t.micro_batch_size = micro;
  t.global_batch_size = global;
  return t;
}

ParallelismSpec layout(Framework f, int dp, int tp, int pp, int cp = 1, int ep = 1) {
  ParallelismSpec p;
  p.framework = f;
  p.data = dp;
  p.tensor = tp;
  p.pipeline = pp;
  p.context = cp;
  p.expert = ep;
  return p;
}

double sum_flops(const std::vector<KernelOp>& ops, OpKind kind, std::optional<Pass> pass = std::nullopt,
                 std::optional<GemmRole> role = std::nullopt) {
  double f = 0;
  for (const auto& o : ops) {
    if (o.kind != kind) continue;
    if (pass && o.pass != *pass) continue;
    if (role && o.role != *role) continue;
    f += o.flops.count();
  }
  return f;
}

TransformerConfig sc21_gpt() {
  // SC'21 Table 1, first row: 24 heads, hidden 2304, 24 layers; vocabulary 51200.
  const JsonDocument doc = parse_json_text(R"({"model_type": "gpt2", "n_embd": 2304, "n_layer": 24, "n_head": 24,
                                               "n_positions": 2048, "vocab_size": 51200})",
                                           "scenario.json");
  return read_inline_model(doc.root());
}

}  // namespace

TEST_CASE("a linear's backward is twice its forward, flash attention's 2.5x", "[unit][models]") {
  const TrainingModel tm(builtin_model_preset("llama3-8b"), layout(Framework::MEGATRON, 1, 1, 1), training(4096));
  const LayerOps ops = tm.layer_ops(0);
  // Forward GEMMs: 2 FLOP x 4096 tokens x 218,103,808 weight elements of a layer
  // (41,943,040 attention + 176,160,768 MLP) = 1,786,706,395,136.
  const double fwd = sum_flops(ops.forward, OpKind::GEMM);
  CHECK(fwd == Approx(1'786'706'395'136.0));
  // dgrad and wgrad each repeat the forward's 2 m n k.
  CHECK(sum_flops(ops.backward, OpKind::GEMM, Pass::BACKWARD, GemmRole::DGRAD) == Approx(fwd));
  CHECK(sum_flops(ops.backward, OpKind::GEMM, Pass::BACKWARD, GemmRole::WGRAD) == Approx(fwd));
  // Causal flash attention forward: 2 x (b H s^2 / 2) x (d_qk + d_v) = 2 x 32 x 4096^2 / 2 x 256
  // = 137,438,953,472; backward 2.5x that (FlashAttention-2 accounting).
  CHECK(sum_flops(ops.forward, OpKind::ATTENTION) == Approx(137'438'953'472.0));
  CHECK(sum_flops(ops.backward, OpKind::ATTENTION) == Approx(2.5 * 137'438'953'472.0));
  // Megatron fuses QKV (n = 4096 + 2 x 1024) and gate/up (n = 2 x 14336).
  auto find = [&](const std::string& name) {
    return std::find_if(ops.forward.begin(), ops.forward.end(), [&](const KernelOp& o) { return o.name == name; });
  };
  REQUIRE(find("qkv") != ops.forward.end());
  CHECK(find("qkv")->gemm.n == 6144);
  CHECK(find("mlp_gate_up")->gemm.n == 28672);
  // Bytes of the QKV GEMM: (4096 x 4096 + 4096 x 6144) inputs + 4096 x 6144 output, 2 bytes each
  // = 134,217,728.
  CHECK(find("qkv")->bytes.count() == 134'217'728);
}

TEST_CASE("tensor and context parallelism split a layer's work", "[unit][models]") {
  const auto llama = builtin_model_preset("llama3-8b");
  const TrainingModel one(llama, layout(Framework::MEGATRON, 1, 1, 1), training(4096));
  const TrainingModel tp4(llama, layout(Framework::MEGATRON, 1, 4, 1), training(4096));
  const TrainingModel cp2(llama, layout(Framework::MEGATRON, 1, 1, 1, 2), training(4096));
  const auto base = one.layer_ops(3);
  // Every Llama projection is split across TP (heads, MLP columns): a quarter of the GEMM and
  // attention work per rank.
  CHECK(sum_flops(tp4.layer_ops(3).forward, OpKind::GEMM) == Approx(sum_flops(base.forward, OpKind::GEMM) / 4));
  CHECK(sum_flops(tp4.layer_ops(3).forward, OpKind::ATTENTION) ==
        Approx(sum_flops(base.forward, OpKind::ATTENTION) / 4));
  // CP halves the tokens of each rank; with load-balanced causal chunks the attention halves too.
  CHECK(sum_flops(cp2.layer_ops(3).forward, OpKind::GEMM) == Approx(sum_flops(base.forward, OpKind::GEMM) / 2));
  CHECK(sum_flops(cp2.layer_ops(3).forward, OpKind::ATTENTION) ==
        Approx(sum_flops(base.forward, OpKind::ATTENTION) / 2));
  // Sequence parallelism splits the norms' bytes across TP; without it they are replicated.
  auto p = layout(Framework::MEGATRON, 1, 4, 1);
  p.sequence_parallel = true;
  const TrainingModel sp(llama, p, training(4096));
  auto norm_bytes = [](const LayerOps& ops) {
    for (const auto& o : ops.forward) {
      if (o.name == "input_norm") return o.bytes.as_double();
    }
    return 0.0;
  };
  // 4096 tokens x 4096 x 2 bytes read and written = 67,108,864; a quarter with SP.
  CHECK(norm_bytes(tp4.layer_ops(0)) == Approx(67'108'864.0));
  CHECK(norm_bytes(sp.layer_ops(0)) == Approx(67'108'864.0 / 4));
}

TEST_CASE("activation checkpointing adds the recomputation to the backward", "[unit][models]") {
  const auto llama = builtin_model_preset("llama3-8b");
  auto full_t = training(2048);
  full_t.activation_checkpointing = Checkpointing::FULL;
  const TrainingModel full(llama, layout(Framework::MEGATRON, 1, 1, 1), full_t);
  const auto ops = full.layer_ops(0);
  // The whole forward is replayed first.
  REQUIRE(ops.backward.size() > ops.forward.size());
  CHECK(ops.backward.front().pass == Pass::RECOMPUTE);
  CHECK(sum_flops(ops.backward, OpKind::GEMM, Pass::RECOMPUTE) == Approx(sum_flops(ops.forward, OpKind::GEMM)));
  auto sel_t = training(2048);
  sel_t.activation_checkpointing = Checkpointing::SELECTIVE;
  const auto sel = TrainingModel(llama, layout(Framework::MEGATRON, 1, 1, 1), sel_t).layer_ops(0);
  // Selective: only the attention core, right before its backward.
  int recomputed = 0;
  for (std::size_t i = 0; i < sel.backward.size(); ++i) {
    if (sel.backward[i].pass != Pass::RECOMPUTE) continue;
    ++recomputed;
    CHECK(sel.backward[i].name == "flash_attn");
    CHECK(sel.backward[i + 1].name == "flash_attn");
    CHECK(sel.backward[i + 1].pass == Pass::BACKWARD);
  }
  CHECK(recomputed == 1);
}

TEST_CASE("LoRA adds adapter GEMMs and drops the frozen weights' gradients", "[unit][models]") {
  auto t = training(1024);
  t.fine_tuning = FineTuning::LORA;
  t.lora.rank = 16;
  t.lora.target_modules = {"q_proj", "k_proj", "v_proj", "o_proj"};
  const TrainingModel tm(builtin_model_preset("llama3-8b"), layout(Framework::PYTORCH, 1, 1, 1), t);
  const auto ops = tm.layer_ops(0);
  int wgrads = 0;
  for (const auto& o : ops.backward) {
    if (o.role != GemmRole::WGRAD) continue;
    ++wgrads;
    CHECK(o.name.rfind("lora.", 0) == 0);  // only adapters get weight gradients
  }
  CHECK(wgrads == 8);  // A and B of 4 adapters
  // Adapter forward FLOPs: 2 x 1024 tokens x 16 x (in + out) for q (4096 + 4096), k and v
  // (4096 + 1024 each) and o (4096 + 4096): 2 x 1024 x 16 x 26624 = 872,415,232.
  double adapters = 0;
  for (const auto& o : ops.forward) {
    if (o.kind == OpKind::GEMM && o.name.rfind("lora.", 0) == 0) adapters += o.flops.count();
  }
  CHECK(adapters == Approx(872'415'232.0));
  // Frozen GEMMs still propagate gradients (dgrad) to the adapters of earlier layers.
  CHECK(sum_flops(ops.backward, OpKind::GEMM, Pass::BACKWARD, GemmRole::DGRAD) ==
        Approx(sum_flops(ops.forward, OpKind::GEMM)));
  // Only the adapters carry trainable parameters: 32 layers x 16 x 26624 = 13,631,488.
  CHECK(tm.stage_params(0).trainable() == Approx(13'631'488.0));
}

TEST_CASE("MoE layers route T k tokens over the local experts", "[unit][models]") {
  const TrainingModel tm(builtin_model_preset("mixtral-8x7b"), layout(Framework::MEGATRON, 2, 1, 1, 1, 2),
                         training(4096, 1, 2));
  const auto ops = tm.layer_ops(0);
  const auto it = std::find_if(ops.forward.begin(), ops.forward.end(),
                               [](const KernelOp& o) { return o.name == "expert_gate_up"; });
  REQUIRE(it != ops.forward.end());
  // 8 experts over 2 EP ranks: 4 local experts; 4096 tokens x top-2 = 8192 routed tokens, 2048 each.
  CHECK(it->gemm.batch == 4);
  CHECK(it->gemm.m == 2048);
  CHECK(it->gemm.n == 2 * 14336);
  // Expert forward FLOPs: 8192 routed tokens x 3 x 2 x 4096 x 14336 = 2,886,218,022,912.
  double experts = 0;
  for (const auto& o : ops.forward) {
    if (o.name.rfind("expert_", 0) == 0 && o.kind == OpKind::GEMM) experts += o.flops.count();
  }
  CHECK(experts == Approx(2'886'218'022'912.0));
  // The dispatch all-to-all carries 4096 tokens x 2 copies x 4096 x 2 bytes = 67,108,864.
  CHECK(tm.layer_comm(0).ep_alltoall.count() == 67'108'864);
}

TEST_CASE("step FLOPs follow SC'21 Eq. 3 for GPT with full recomputation", "[unit][models][validation-prep]") {
  auto t = training(2048, 1, 512);
  t.activation_checkpointing = Checkpointing::FULL;
  const auto gpt = sc21_gpt();
  // Eq. 3 with B = 512, s = 2048, l = 24, h = 2304, V = 51200:
  // 96 x 512 x 2048 x 24 x 2304^2 x (1 + 2048/13824 + 51200/884736) = 6.1025e18... computed both
  // ways: the generalised count (projections 12 h^2 per token and layer, attention over the
  // whole square, 4 passes with recomputation, LM head 6 h V) must equal the printed formula.
  const double eq3 = megatron_eq3_flops(512, 2048, 24, 2304, 51200);
  CHECK(step_flops(gpt, t) == Approx(eq3).epsilon(1e-12));
  // Per rank on the table's 32 GPUs: F / 32.
  const TrainingModel tm(gpt, layout(Framework::MEGATRON, 32, 1, 1), t);
  CHECK(tm.step_flops_per_rank() == Approx(eq3 / 32).epsilon(1e-12));
  // Without recomputation ("model FLOPs" for MFU): 72 B s l h^2 (1 + s/(6h)) + 6 B s h V.
  StepFlopsOptions model_flops;
  model_flops.include_recompute = false;
  const double s = 2048, h = 2304, l = 24, B = 512, V = 51200;
  CHECK(step_flops(gpt, t, model_flops) ==
        Approx(72 * B * s * l * h * h * (1 + s / (6 * h)) + 6 * B * s * h * V).epsilon(1e-12));
}

TEST_CASE("the kernels of all ranks add up to Eq. 3's GEMM work", "[unit][models][validation-prep]") {
  // One micro-batch of one sequence on TP 2 x PP 2, full recomputation: the GEMMs of every rank
  // together are Eq. 3's 96 s l h^2 + 6 s h V (B = 1); the flash-attention kernels count the
  // causal half with a 2.5x backward (FlashAttention-2), i.e. (2 + 2 + 5)/16 of Eq. 3's 16 s^2 l h.
  auto t = training(2048, 1, 1);
  t.activation_checkpointing = Checkpointing::FULL;
  const auto gpt = sc21_gpt();
  const TrainingModel tm(gpt, layout(Framework::MEGATRON, 1, 2, 2), t);
  double gemm = 0, attention = 0;
  for (int stage = 0; stage < 2; ++stage) {
    const RankPosition pos{.pipeline_stage = stage};
    std::vector<LayerOps> all;
    for (std::int64_t layer : tm.layers(pos)) all.push_back(tm.layer_ops(layer));
    if (auto e = tm.embedding_ops(pos)) all.push_back(*e);
    if (auto hd = tm.head_ops(pos)) all.push_back(*hd);
    for (const auto& ops : all) {
      gemm += sum_flops(ops.forward, OpKind::GEMM) + sum_flops(ops.backward, OpKind::GEMM);
      attention += sum_flops(ops.forward, OpKind::ATTENTION) + sum_flops(ops.backward, OpKind::ATTENTION);
    }
  }
  const double s = 2048, h = 2304, l = 24, V = 51200;
  CHECK(2 * gemm == Approx(96 * s * l * h * h + 6 * s * h * V).epsilon(1e-12));  // x TP 2
  CHECK(2 * attention == Approx(9.0 / 16.0 * 16 * s * s * l * h).epsilon(1e-12));
}

TEST_CASE("collective sizes around a layer", "[unit][models]") {
  const auto llama = builtin_model_preset("llama3-8b");
  auto p = layout(Framework::MEGATRON, 2, 4, 2, 2);
  p.sequence_parallel = true;
  const TrainingModel tm(llama, p, training(8192, 1, 2));
  const auto c = tm.layer_comm(0);
  // T = 1 x 8192 / cp 2 = 4096 tokens; a TP collective moves the full 4096 x 4096 x 2 B = 33,554,432 B;
  // with SP: 2 all-gathers and 2 reduce-scatters forward, as many backward.
  CHECK(c.tp_activation.count() == 33'554'432);
  CHECK(c.tp_collectives_forward == 4);
  // Layer parameters on a rank: 218,103,808 / 4 split + 8,192 norm elements whole = 54,534,144, in bf16.
  CHECK(c.dense_params.count() == 2 * 54'534'144);
  // Gradients in fp32 (grad_reduce_dtype): 4 x 54,534,144.
  CHECK(c.dense_grads.count() == 4 * 54'534'144);
  // Ring attention block: b x s/cp x kv_heads/tp x (d_qk + d_v) x 2 B = 4096 x 2 x 256 x 2 = 4,194,304.
  CHECK(c.cp_kv_block.count() == 4'194'304);
  CHECK(c.cp_ring_steps == 1);
  // Pipeline send: the SP-sharded activation 4096 / 4 x 4096 x 2 B = 8,388,608.
  CHECK(tm.stage_comm().pp_activation.count() == 8'388'608);
  // Megatron-Core DDP bucket: max(4e7, 1e6 x dp x cp = 4e6) elements of fp32 = 160,000,000 B.
  CHECK(tm.gradient_bucket().count() == 160'000'000);
}

TEST_CASE("every row of the Megatron weak-scaling tables is expressible", "[unit][models][validation-prep]") {
  // The model shapes and layouts of SC'21 Table 1 (A100, vocabulary 51200, sequence 2048) and of
  // the Megatron-Core H100 table (vocabulary 131072, sequence 4096), as inline GPT fields: each
  // layout must be valid and its per-rank Eq. 3 FLOPs defined. (Shapes only; the measurements stay
  // with the validation data.)
  struct Row {
    int heads, hidden, layers, tp, pp, gpus, batch, vocab, seq;
  };
  const Row rows[] = {
      {24, 2304, 24, 1, 1, 32, 512, 51200, 2048},        {32, 3072, 30, 2, 1, 64, 512, 51200, 2048},
      {32, 4096, 36, 4, 1, 128, 512, 51200, 2048},       {48, 6144, 40, 8, 1, 256, 1024, 51200, 2048},
      {64, 8192, 48, 8, 2, 512, 1536, 51200, 2048},      {80, 10240, 60, 8, 4, 1024, 1792, 51200, 2048},
      {96, 12288, 80, 8, 8, 1536, 2304, 51200, 2048},    {128, 16384, 96, 8, 16, 1920, 2160, 51200, 2048},
      {128, 20480, 105, 8, 35, 2520, 2520, 51200, 2048}, {160, 25600, 128, 8, 64, 3072, 3072, 51200, 2048},
      {16, 2048, 24, 1, 1, 48, 192, 131072, 4096},       {32, 4096, 30, 2, 1, 96, 192, 131072, 4096},
      {48, 6144, 32, 4, 1, 192, 192, 131072, 4096},      {56, 7168, 48, 8, 1, 384, 192, 131072, 4096},
      {64, 8192, 84, 8, 2, 768, 384, 131072, 4096},      {80, 10240, 92, 8, 4, 1536, 768, 131072, 4096},
      {96, 12288, 96, 8, 6, 2304, 1152, 131072, 4096},   {128, 16384, 96, 8, 8, 3072, 1536, 131072, 4096},
      {144, 18432, 112, 8, 16, 6144, 3072, 131072, 4096}};
  for (const Row& r : rows) {
    INFO("hidden " << r.hidden << " layers " << r.layers);
    nlohmann::json fields = {{"model_type", "gpt2"}, {"n_embd", r.hidden}, {"n_layer", r.layers},
                             {"n_head", r.heads},    {"n_positions", r.seq}, {"vocab_size", r.vocab}};
    const TransformerConfig m = read_inline_model(ValueReader(fields, "scenario.json", "/model"));
    auto t = training(r.seq, 1, r.batch);
    t.activation_checkpointing = Checkpointing::FULL;
    const int dp = r.gpus / (r.tp * r.pp);
    auto p = layout(Framework::MEGATRON, dp, r.tp, r.pp);
    p.sequence_parallel = r.tp > 1;
    const TrainingModel tm(m, p, t, "scenario.json");
    // Eq. 3 over the whole machine, divided by its GPUs.
    const double eq3 = megatron_eq3_flops(r.batch, r.seq, r.layers, r.hidden, r.vocab);
    CHECK(tm.step_flops_per_rank() == Approx(eq3 / r.gpus).epsilon(1e-12));
  }
}

TEST_CASE("eager and compiled layers launch the kernels profiled", "[unit][models][impl]") {
  // Llama-3.2-1B, one layer, 1 x 2048 tokens under plain PyTorch. Profiled per layer
  // (calibrate/results/lent-1xh100-2026-12-07-impl/impl-kernels.json): eager 16 element-wise
  // kernels forward (2 norms, 10 rotary, SiLU and the product, 2 residual adds) and 24 backward
  // (2 x 2 norm + 3 gradient sums, 12 rotary, 3 SwiGLU, 2 residual) plus SDPA's 4 extra backward
  // kernels; compiled 5 forward (2 add+norm, 2 rotary, 1 SwiGLU) and 9 backward (2 x 3 norm,
  // 2 rotary, 1 SwiGLU) plus the same 4. GEMMs: q, k, v, o, gate, up, down; 14 backward.
  auto count = [](const std::vector<KernelOp>& ops, OpKind kind) {
    std::int64_t n = 0;
    for (const auto& o : ops) n += o.kind == kind ? o.kernels : 0;
    return n;
  };
  TrainingSpec t = training(2048);
  for (const auto& [impl, fwd, bwd] : {std::tuple{Implementation::EAGER, 16, 24 + 4},
                                       std::tuple{Implementation::COMPILED, 5, 9 + 4}}) {
    t.implementation = impl;
    const TrainingModel tm(builtin_model_preset("llama3.2-1b"), layout(Framework::PYTORCH, 1, 1, 1), t);
    const LayerOps ops = tm.layer_ops(0);
    CHECK(count(ops.forward, OpKind::MEMORY) == fwd);
    CHECK(count(ops.backward, OpKind::MEMORY) == bwd);
    CHECK(count(ops.forward, OpKind::GEMM) == 7);
    CHECK(count(ops.backward, OpKind::GEMM) == 14);
    CHECK(count(ops.forward, OpKind::ATTENTION) == 1);
  }
}

TEST_CASE("the implementation defaults to the framework's own", "[unit][models][impl][scenario]") {
  auto make = [](const std::string& framework, const std::string& impl) {
    nlohmann::json j = {{"schema_version", 1},
                        {"model", {{"preset", "llama3.2-1b"}}},
                        {"training", {{"seq_len", 2048}, {"micro_batch_size", 1}, {"global_batch_size", 8}}},
                        {"parallelism", {{"framework", framework}, {"data", 8}}},
                        {"cluster", {{"system", "hgx-h100"}, {"nodes", 1}, {"gpus_per_node", 8}}}};
    if (!impl.empty()) j["training"]["implementation"] = impl;
    return read_scenario(parse_json_text(j.dump(), "s.json"), ".");
  };
  CHECK(make("pytorch", "").training.implementation == Implementation::EAGER);
  CHECK(make("deepspeed", "").training.implementation == Implementation::EAGER);
  CHECK(make("megatron", "").training.implementation == Implementation::FUSED);
  CHECK_FALSE(make("pytorch", "").training.implementation_given);
  CHECK(make("pytorch", "compiled").training.implementation == Implementation::COMPILED);
  CHECK(make("pytorch", "hf_eager").training.implementation == Implementation::HF_EAGER);
  CHECK(make("megatron", "eager").training.implementation == Implementation::EAGER);
  CHECK(to_string(Implementation::COMPILED) == "compiled");
  CHECK_THROWS(make("pytorch", "inductor"));
}
