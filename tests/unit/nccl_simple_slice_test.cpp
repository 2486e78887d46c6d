// A Simple ring's slices each occupy the sending block (collective_program.hpp set_step_timing;
// NCCL 2.28 src/device/prims_simple.h genericOp: barrier, system-scope fence and flag store per
// slice).

#include <catch2/catch.hpp>

#include "hardware/catalog.hpp"
#include "sim/nccl/collective_predictor.hpp"
#include "support/profile_parameters.hpp"

using namespace clustersim;
using namespace clustersim::sim::nccl;

namespace {

CollectivePredictor ring_simple_predictor(int channels) {
  static const hardware::Catalog catalog = hardware::Catalog::load();
  PredictorConfig cfg;
  cfg.node = hardware::resolve_node(catalog, "hgx-h200");
  cfg.shape = {1, 4};
  cfg.env = {{"NCCL_ALGO", "Ring"},
             {"NCCL_PROTO", "Simple"},
             {"NCCL_NVLS_ENABLE", "0"},
             {"NCCL_MIN_NCHANNELS", std::to_string(channels)},
             {"NCCL_MAX_NCHANNELS", std::to_string(channels)}};
  cfg.version = "2.28.9";
  return CollectivePredictor(cfg);
}

}  // namespace

TEST_CASE("a Simple ring's slices follow one another on the sending block", "[unit][nccl]") {
  const CollectivePredictor p = ring_simple_predictor(1);
  // Fallback: NCCL 2.28's NVLink ring step latency, Simple 3.4 us over LL 0.6 us, per slice of
  // an all-reduce chunk (chunkSteps 4 / sliceSteps 2 = 2 slices): (3.4 - 0.6) / 2 = 1.4 us.
  CHECK(p.rates().simple_slice_overhead.microseconds() == Approx(1.4));
  // All-gather of 4 KiB on 4 ranks, one channel: one loop of 1 KiB chunks, each step in 2 slices
  // of 512 B; every rank runs 3 sending steps and the final receive, 8 slices, one after another
  // on its block (the flag's 0.6 us flight hides behind the block's own 1.4 us): base latency
  // 8.4 us + 8 x 1.4 us = 19.6 us, plus the slices' copies. At 4 KiB NCCL halves the block's
  // threads while the size is below threads x 64 (512 -> 64, and a sync warp: 96), and 64 threads
  // copy at g(64) / g(512) = (64 / 149) / (512 / 597) = 0.5008 of 512's rate (t_half 85): the
  // block's 38.7 GB/s (NCCL's Hopper perChMaxTreeBw) becomes 19.38. The 6 sending slices
  // (copySend, w(1, 2) = 1 + 0.773 with the catalog H200's store share) move at 19.38 / 1.773 =
  // 10.93 GB/s, 6 x 512 B / 10.93 GB/s = 0.281 us, the final receive's 2 at 19.38, 0.053 us:
  // 19.6 + 0.334 = 19.93 us.
  const auto small = p.predict(CollectiveOp::ALL_GATHER, Bytes::kib(4));
  CHECK(p.choice(CollectiveOp::ALL_GATHER, Bytes::kib(4)).threads == 64 + 32);
  CHECK(small.gpu_time.microseconds() == Approx(19.6 + 0.334).margin(0.05));
  // All-reduce: 6 sending steps and the final receive, 14 slices: 8.4 + 14 x 1.4 = 28.0 us; the
  // 12 sending slices at 19.38 / 1.5 = 12.92 GB/s (the mean of w(1,1), 2 w(2,1), w(2,2), 2 w(1,2)
  // is (1 + 2 x 1.227 + 2 + 2 x 1.773) / 6 = 1.5), 0.476 us, the 2 local ones 0.053: 28.53 us.
  CHECK(p.predict(CollectiveOp::ALL_REDUCE, Bytes::kib(4)).gpu_time.microseconds() == Approx(28.0 + 0.529).margin(0.05));
}

TEST_CASE("a Simple chain's steps each pay the block's synchronisation, a reduce's less", "[unit][nccl]") {
  static const hardware::Catalog catalog = hardware::Catalog::load();
  const auto profile =
      testing::profile_of("chain", {testing::duration_parameter("nccl.simple.slice_overhead", 2.0e-6),
                                    testing::duration_parameter("nccl.simple.reduce_slice_overhead", 1.0e-6)});
  auto time_us = [&](CollectiveOp op, const char* buffsize) {
    PredictorConfig cfg;
    cfg.node = hardware::resolve_node(catalog, "hgx-h200");
    cfg.shape = {1, 4};
    cfg.env = {{"NCCL_ALGO", "Ring"},        {"NCCL_PROTO", "Simple"},      {"NCCL_NVLS_ENABLE", "0"},
               {"NCCL_MIN_NCHANNELS", "1"}, {"NCCL_MAX_NCHANNELS", "1"}, {"NCCL_BUFFSIZE", buffsize}};
    cfg.version = "2.28.9";
    cfg.profile = &profile;
    return CollectivePredictor(cfg).predict(op, Bytes::mib(16)).time.microseconds();
  };
  // Back to back, a broadcast or reduce launch lasts as long as its busiest rank's steps: one step
  // per 1/8 of NCCL_BUFFSIZE, each its synchronisation then its copy. 16 MiB in 512 KiB steps (4 MiB
  // buffer) is 32 steps, in 128 KiB steps (1 MiB buffer) 128: the same bytes, 96 more
  // synchronisations, 96 x 2 us = 192 us for a broadcast (4 x H200 measure 196 us,
  // calibrate/results/lent-4xh200-2026-11-22-chain-simple) and 96 x 1 us = 96 us for a reduce
  // (measured 88 us).
  CHECK(time_us(CollectiveOp::BROADCAST, "1048576") - time_us(CollectiveOp::BROADCAST, "4194304") ==
        Approx(192.0).epsilon(0.01));
  CHECK(time_us(CollectiveOp::REDUCE, "1048576") - time_us(CollectiveOp::REDUCE, "4194304") == Approx(96.0).epsilon(0.01));
}
