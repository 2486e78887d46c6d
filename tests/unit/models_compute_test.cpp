// Kernel times from the compute model, with catalog-derived defaults and with a profile; the host
// side of offloading; the optimizer step.

#include <catch2/catch.hpp>

#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "models/training_model.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

KernelOp gemm(std::int64_t m, std::int64_t n, std::int64_t k) {
  KernelOp op;
  op.kind = OpKind::GEMM;
  op.gemm = {.m = m, .n = n, .k = k};
  op.flops = FlopCount::of(2.0 * m * n * k);
  op.bytes = Bytes::from_double((1.0 * m * k + 1.0 * k * n + 1.0 * m * n) * 2);
  return op;
}

}  // namespace

TEST_CASE("kernel times with catalog-derived defaults", "[unit][models]") {
  const auto& h100 = catalog().gpu("H100-SXM5-80GB");
  hardware::ParameterSet ps;
  const ComputeModel cm(h100, ps);
  SECTION("a large square GEMM is compute-bound") {
    // 8192^3: 2 x 8192^3 = 1.0995e12 FLOP; a single GEMM has no wave term; efficiency
    // 0.75 / (1 + 180/8192 + 40/8192) = 0.73039, times the sustained ratio 0.96 in a step:
    // 1.0995e12 / (989.4e12 x 0.73039 x 0.96) = 1.58487 ms, + 2 us fixed = 1.58687 ms.
    CHECK(cm.gemm_efficiency(gemm(8192, 8192, 8192).gemm, Precision::BF16) == Approx(0.75 / (1 + 220.0 / 8192)));
    CHECK(cm.time(gemm(8192, 8192, 8192)).seconds() == Approx(1.58687e-3).epsilon(1e-4));
  }
  SECTION("a shallow GEMM loses efficiency in its reduction depth, a narrow one in its output side") {
    // k = 180 = half_k: 0.75 / (1 + 1 + 40/8192).
    const double shallow = cm.gemm_efficiency(gemm(8192, 8192, 180).gemm, Precision::BF16);
    CHECK(shallow == Approx(0.75 / (2 + 40.0 / 8192)));
    // n = 40 = half_mn: 0.75 / (1 + 180/8192 + 1).
    const double narrow = cm.gemm_efficiency(gemm(8192, 40, 8192).gemm, Precision::BF16);
    CHECK(narrow == Approx(0.75 / (2 + 180.0 / 8192)));
  }
  SECTION("strided element-wise kernels are bound by their element rate") {
    // 2^24 elements, 8 B each: HBM 134.2 MB / (3.35 TB/s x 0.8) = 50.1 us; elements
    // 16,777,216 / (66.9e12 / 200) = 50.16 us: the element bound wins, + 2 us = 52.16 us.
    KernelOp op;
    op.path = MemoryPath::STRIDED;
    op.elements = 1 << 24;
    op.bytes = Bytes::of(8LL << 24);
    CHECK(cm.time(op).seconds() == Approx(16777216.0 / (66.9e12 / 200) + 2e-6).epsilon(1e-4));
  }
  SECTION("memory-bound kernels run at the HBM bandwidth times its efficiency") {
    // 1 GiB at 3.35 TB/s x 0.80 = 2.68 TB/s: 400.65 us, + 2 us.
    KernelOp op;
    op.bytes = Bytes::gib(1);
    CHECK(cm.time(op).seconds() == Approx(4.02650e-4).epsilon(1e-5));
  }
  SECTION("flash attention forward") {
    // Llama-3-8B layer at 4096 tokens: 137,438,953,472 FLOP at 989.4e12 x 0.55 / (1 + 256/4096)
    // x 0.96 (sustained ratio) = 491.68 TFLOP/s: 279.53 us + 2 us = 281.53 us.
    const TrainingModel tm(builtin_model_preset("llama3-8b"), ParallelismSpec{}, [] {
      TrainingSpec t;
      t.seq_len = 4096;
      return t;
    }());
    auto ops = tm.layer_ops(0).forward;
    cm.annotate(ops);
    const auto fa = std::find_if(ops.begin(), ops.end(), [](const KernelOp& o) { return o.kind == OpKind::ATTENTION; });
    CHECK(fa->time.seconds() == Approx(2.81533e-4).epsilon(1e-4));
  }
  // Every parameter came from a default and says so.
  CHECK(ps.any_uncalibrated());
  CHECK(ps.used().at("compute.gemm.bf16.max_efficiency").provenance.find("default") != std::string::npos);
}

TEST_CASE("a calibration profile replaces the defaults", "[unit][models]") {
  const auto profile = hardware::CalibrationProfile::parse(R"({
    "schema_version": 1, "name": "lab",
    "provenance": {"machine": "lab", "gpu": "NVIDIA H100", "gpu_count": 8, "date": "2026-11-21"},
    "parameters": {
      "compute.gemm.bf16.max_efficiency": {"value": 0.9, "uncertainty": 0.02, "samples": 40},
      "compute.kernel_overhead": {"value": "5 us", "uncertainty": 0.1, "samples": 40},
      "compute.sustained_ratio": {"value": 0.9, "uncertainty": 0.03, "samples": 1}
    }})",
                                                           "lab.json");
  hardware::ParameterSet ps(&profile);
  const ComputeModel cm(catalog().gpu("H100-SXM5-80GB"), ps);
  // A single product has no wave term: 0.9 / (1 + 180/8192 + 40/8192) = 0.876462.
  CHECK(cm.gemm_efficiency(gemm(8192, 8192, 8192).gemm, Precision::BF16) == Approx(0.876462).epsilon(1e-5));
  CHECK(cm.kernel_overhead() == Duration::us(5));
  // In a step, times the profile's sustained ratio: 1.0995116e12 / (989.4e12 x 0.876462 x 0.9)
  // = 1.408809 ms, + 5 us = 1.413809 ms.
  CHECK(cm.time(gemm(8192, 8192, 8192)).seconds() == Approx(1.413809e-3).epsilon(1e-5));
  CHECK(ps.used().at("compute.gemm.bf16.max_efficiency").calibrated);
}

TEST_CASE("fp8 training needs fp8 tensor cores", "[unit][models][bad-input]") {
  TrainingSpec t;
  t.precision = Precision::FP8;
  CHECK_THROWS_WITH(check_gpu_supports(t, catalog().gpu("A100-SXM4-80GB"), "s.json"),
                    Catch::Contains("/training/precision") && Catch::Contains("FP8"));
  CHECK_NOTHROW(check_gpu_supports(t, catalog().gpu("H100-SXM5-80GB"), "s.json"));
}

TEST_CASE("host copies and CPU Adam for offloading", "[unit][models]") {
  const auto node = hardware::resolve_node(catalog(), "hgx-h100");
  hardware::ParameterSet ps;
  const HostModel host(node, ps);
  // Pinned, one GPU alone: 0.8 x 63 GB/s = 50.4 GB/s; pageable 0.4 x that.
  CHECK(host.copy_bandwidth(true, true).gigabytes_per_second() == Approx(50.4));
  CHECK(host.copy_bandwidth(true, false).gigabytes_per_second() == Approx(20.16));
  // All 8 at once: the least of 8 x 50.4 = 403.2, the 8 switches (one GPU each, 63 GB/s uplinks:
  // 403.2) and host memory 2 x 307.2 x 0.6 = 368.64 GB/s: 368.64 / 8 = 46.08 GB/s each.
  CHECK(host.copy_bandwidth(true, true, 8).gigabytes_per_second() == Approx(46.08));
  // CPU Adam: node limit 368.64 GB/s / 30 B = 1.2288e10 params/s; one rank alone is limited by it
  // (112 cores x 3e8 = 3.36e10), 8 ranks share it: 1.536e9 each.
  CHECK(host.cpu_adam_rate(1) == Approx(1.2288e10));
  CHECK(host.cpu_adam_rate(8) == Approx(1.536e9));
}

TEST_CASE("the optimizer step on the GPU and offloaded", "[unit][models]") {
  const auto node = hardware::resolve_node(catalog(), "hgx-h100");
  hardware::ParameterSet ps;
  const ComputeModel cm(*node.gpu, ps);
  const HostModel host(node, ps);
  TrainingSpec t;
  t.seq_len = 2048;
  t.global_batch_size = 8;
  ParallelismSpec p;
  p.framework = Framework::MEGATRON;
  p.data = 8;
  const TrainingModel tm(builtin_model_preset("llama3-8b"), p, t);
  const auto step = tm.optimizer_step(0, cm, nullptr, 8);
  // Distributed optimizer: W / 8 = 1,003,782,656 elements; per element read master, m, v (12) and
  // the fp32 gradient (4), write 12, the bf16 copy (2) and a norm pass over the gradient (4):
  // 34 B -> 34,128,610,304 B at 2.68 TB/s = 12.734 ms + 2 kernels x 2 us.
  // Megatron's gradient buffer holds all 8,030,261,248 elements in fp32: zeroed (4 B), scaled by
  // 1/8 (8 B) and normed for the NaN check (4 B) before each of the ceil(8,030,261,248 x 4 /
  // (4e7 x 4)) = 201 buckets: 16 B per element at 2.68 TB/s = 47.942 ms + (1 + 2 x 201) x 2 us.
  CHECK(step.params == 1'003'782'656);
  CHECK(step.gpu_time.seconds() ==
        Approx(34.0 * 1'003'782'656 / 2.68e12 + 4e-6 + 16.0 * 8'030'261'248 / 2.68e12 + 403 * 2e-6).epsilon(1e-6));
  // DeepSpeed ZeRO-3 with CPU Adam on 8 ranks of the node: 1.536e9 params/s each.
  ParallelismSpec d;
  d.framework = Framework::DEEPSPEED;
  d.data = 8;
  d.zero_stage = 3;
  d.offload_optimizer = OffloadTarget::CPU;
  const auto off = TrainingModel(builtin_model_preset("llama3-8b"), d, t).optimizer_step(0, cm, &host, 8);
  CHECK(off.gpu_time == Duration());
  CHECK(off.cpu_adam_time.seconds() == Approx(1'003'782'656.0 / 1.536e9).epsilon(1e-6));
  // Around it, PyTorch's CPU scale and cast (14 B an element) on 112 / 8 = 14 cores at torch's
  // AdamW-loop rate, min(14 x 2e8, 0.30 x 1.2288e10 / 8) = 4.608e8 a second, times its 75 B.
  CHECK(off.cpu_time.seconds() ==
        Approx(1'003'782'656.0 / 1.536e9 + 14.0 * 1'003'782'656 / (75 * 4.608e8)).epsilon(1e-6));
  // fp32 gradients down (4 B, pinned: 46.08 GB/s) and bf16 parameters up (2 B) from the pageable
  // temporary the CPU cast writes: 0.4 x 50.4 = 20.16 GB/s, below the 46.08 share.
  CHECK(off.d2h_bytes.as_double() == Approx(4.0 * 1'003'782'656));
  CHECK(off.h2d_time.seconds() == Approx(2.0 * 1'003'782'656 / 20.16e9).epsilon(1e-6));
}

TEST_CASE("a profile efficiency outside (0, 1] is a bad profile", "[unit][models][bad-input]") {
  const auto profile = hardware::CalibrationProfile::parse(R"({
    "schema_version": 1, "name": "bad",
    "provenance": {"machine": "lab", "gpu": "NVIDIA H100", "gpu_count": 8, "date": "2026-11-21"},
    "parameters": {"compute.memory.efficiency": {"value": 1.7}}})",
                                                           "bad.json");
  hardware::ParameterSet ps(&profile);
  CHECK_THROWS_WITH(ComputeModel(catalog().gpu("H100-SXM5-80GB"), ps),
                    Catch::Contains("bad.json") && Catch::Contains("/parameters/compute.memory.efficiency"));
}
