// One rank (NCCL's ncclLaunchOneRank) and one pair (the harness's point-to-point measurement).

#include <catch2/catch.hpp>

#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "sim/nccl/collective_predictor.hpp"
#include "support/profile_parameters.hpp"

using namespace clustersim;
using namespace clustersim::sim::nccl;

namespace {

CollectivePredictor predictor(int gpus, std::map<std::string, std::string> env = {}) {
  static const hardware::Catalog catalog = hardware::Catalog::load();
  PredictorConfig cfg;
  cfg.node = hardware::resolve_node(catalog, "hgx-h200");
  cfg.shape = {1, gpus};
  cfg.env = std::move(env);
  cfg.version = "2.28.9";
  return CollectivePredictor(cfg);
}

}  // namespace

TEST_CASE("one rank copies out of place and does nothing in place", "[unit][nccl]") {
  const CollectivePredictor p = predictor(1);
  NcclTestsMethod out_of_place;
  NcclTestsMethod in_place;
  in_place.in_place = true;
  // Out of place: cudaMemcpyAsync of 256 MiB at the catalog H200 HBM 4.8 TB/s x the compute
  // model's memory efficiency fallback 0.80 / 2 (read and write) = 1.92 TB/s, plus the kernel
  // fixed time fallback 2 us: 2 + 268435456 / 1.92e12 s = 2 + 139.81 = 141.81 us (above the host's 4 us).
  const auto big = p.predict(CollectiveOp::ALL_REDUCE, Bytes::mib(256), out_of_place);
  CHECK(big.time.microseconds() == Approx(141.81).epsilon(1e-3));
  CHECK(big.busbw_GBps == 0);  // nccl-tests' factor for one rank
  // 64 KiB: the copy (2 + 0.03 us) hides behind the call's host time, the 2.28.9 table's 4 us, and
  // the host's side of the loop ends with its closing wait (fallback: an empty call, a tenth of
  // 4 us), once for nccl-tests' default 20 launches: 4 + 0.4 / 20 = 4.02 us.
  CHECK(p.predict(CollectiveOp::ALL_GATHER, Bytes::kib(64), out_of_place).time.microseconds() == Approx(4.02));
  // In place nothing is launched: the empty call's host time, a tenth of 4 us, + 0.4 / 20 = 0.42 us.
  CHECK(p.predict(CollectiveOp::BROADCAST, Bytes::mib(256), in_place).time.microseconds() == Approx(0.42));
  // Over 2,000 launches the wait all but vanishes: 0.4 + 0.4 / 2000 = 0.4002 us.
  NcclTestsMethod long_loop = in_place;
  long_loop.iters = 2000;
  CHECK(p.predict(CollectiveOp::BROADCAST, Bytes::mib(256), long_loop).time.microseconds() == Approx(0.4002));
  // Send/recv to itself in place: the group's end drops the pair. nccl-tests' group start, send
  // and recv cost an empty call each, the group end nccl.host.empty_group_overhead, whose fallback
  // is an empty call: 4 x 0.4 + 0.4 / 20 = 1.62 us.
  CHECK(p.predict(CollectiveOp::SENDRECV, Bytes::mib(256), in_place).time.microseconds() == Approx(1.62));
}

TEST_CASE("a group end that launches nothing has its own host time", "[unit][nccl]") {
  static const hardware::Catalog catalog = hardware::Catalog::load();
  const auto profile =
      testing::profile_of("empty-group", {testing::duration_parameter("nccl.host.empty_call_overhead", 0.3e-6),
                                          testing::duration_parameter("nccl.host.empty_group_overhead", 0.5e-6)});
  PredictorConfig cfg;
  cfg.node = hardware::resolve_node(catalog, "hgx-h200");
  cfg.shape = {1, 1};
  cfg.version = "2.28.9";
  cfg.profile = &profile;
  const CollectivePredictor p(cfg);
  NcclTestsMethod in_place;
  in_place.in_place = true;
  // An in-place collective on one rank is one empty call, 0.3 us, and a twentieth of the loop's
  // closing wait (fallback: an empty call): 0.3 + 0.3 / 20 = 0.315 us.
  CHECK(p.predict(CollectiveOp::ALL_REDUCE, Bytes::mib(1), in_place).time.microseconds() == Approx(0.315));
  // Send/recv to itself in place: three empty calls and the group end, 3 x 0.3 + 0.5 = 1.4 us (what
  // 4 x H200 measure, calibrate/results/lent-4xh200-2026-11-21/results-1gpu.json), + 0.015 us.
  CHECK(p.predict(CollectiveOp::SENDRECV, Bytes::mib(1), in_place).time.microseconds() == Approx(1.415));
}

TEST_CASE("a profile's host costs apply only under the NCCL release it was fitted with", "[unit][nccl]") {
  static const hardware::Catalog catalog = hardware::Catalog::load();
  hardware::ProfileProvenance prov;
  prov.gpu = "NVIDIA H200";
  prov.nccl = "2.28.9";
  const auto profile =
      testing::profile_of("host-2.28", {testing::duration_parameter("nccl.host.call_overhead", 5e-6)}, prov);
  auto at = [&](const char* version) {
    PredictorConfig cfg;
    cfg.node = hardware::resolve_node(catalog, "hgx-h200");
    cfg.shape = {1, 1};
    cfg.version = version;
    cfg.profile = &profile;
    return CollectivePredictor(cfg);
  };
  NcclTestsMethod out_of_place;
  // One rank, 64 KiB out of place: the copy (2 + 0.03 us) hides behind the call's host time and the
  // loop's closing wait (fallback: an empty call, a tenth of the call) over 20 launches.
  // Under 2.28.7 (same release as the fit, 2.28): the profile's 5 us, + 0.5 / 20 = 5.025 us.
  const CollectivePredictor same = at("2.28.7");
  CHECK(same.predict(CollectiveOp::ALL_GATHER, Bytes::kib(64), out_of_place).time.microseconds() == Approx(5.025));
  CHECK(same.parameters().used().at("nccl.host.call_overhead").calibrated);
  // Under 2.20.5 the release's own table, 4 us (+ 0.4 / 20), and the record says why the
  // profile's was left.
  const CollectivePredictor other = at("2.20.5");
  CHECK(other.predict(CollectiveOp::ALL_GATHER, Bytes::kib(64), out_of_place).time.microseconds() == Approx(4.02));
  const auto& used = other.parameters().used().at("nccl.host.call_overhead");
  CHECK_FALSE(used.calibrated);
  CHECK(used.provenance.find("profile host-2.28's value not used: fitted with NCCL 2.28.9") != std::string::npos);
}

TEST_CASE("a pair's send takes its own transport and rejects bad ranks", "[unit][nccl]") {
  const CollectivePredictor p = predictor(4);
  const auto write = p.predict_pair(Bytes::mib(512), 0, 1);
  // Over NVLink a send of 512 MiB takes at least its size over the GPU's NVLink rate at NCCL's
  // efficiency (18 links x 20.6 GB/s = 370.8 GB/s): 536870912 / 370.8e9 s = 1448 us.
  CHECK(write.time.microseconds() >= 1448.0);
  // Through host memory (P2P disabled) it cannot be faster than over NVLink.
  const CollectivePredictor shm = predictor(4, {{"NCCL_P2P_DISABLE", "1"}});
  CHECK(shm.predict_pair(Bytes::mib(512), 0, 1).time > write.time);
  // SHM (NCCL 2.28 shm.cc: the buffer on the receiver's side; the receiver's kernel loads it from
  // host memory over PCIe): the slowest stage is the catalog's rate of an H200's reads of pinned
  // host memory, 35.2 GB/s (nvbandwidth issue 24), below NCCL's PCIe figure 48 GB/s and half a
  // socket's memory bandwidth (307.2 / 2 = 153.6 GB/s): 536870912 B / 35.2e9 B/s = 15252 us. The
  // send runs on 2 channels, 17.6 GB/s each, in chunks of 128 KiB (NCCL_P2P_PCI_CHUNKSIZE), 7.447
  // us a chunk, and each chunk's slice also pays the block's synchronisation (fallback: NCCL
  // 2.28's NVLink ring step latency Simple 3.4 us over LL 0.6 us, per slice of an all-reduce chunk
  // of 2: 1.4 us): 15252 x (7.447 + 1.4) / 7.447 = 18119 us, plus a few steps' latency (under 0.2%).
  CHECK(shm.predict_pair(Bytes::mib(512), 0, 1).time.microseconds() == Approx(18119).epsilon(0.002));
  CHECK_THROWS_AS(p.predict_pair(Bytes::mib(1), 0, 0), InputError);
  CHECK_THROWS_AS(p.predict_pair(Bytes::mib(1), 0, 4), InputError);
}

TEST_CASE("with few channels a Simple ring runs at its thread blocks' rate, priced by the steps' loads and stores",
          "[unit][nccl]") {
  const std::map<std::string, std::string> two = {
      {"NCCL_MIN_NCHANNELS", "2"}, {"NCCL_MAX_NCHANNELS", "2"}, {"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}};
  const CollectivePredictor p = predictor(4, two);
  // The store fraction's fallback is the catalog's H200 sm_store_share, 0.773 (clustersim-storeprobe:
  // one 512-thread block, per byte load 4.65 ps, store 15.85 ps: 15.85 / 20.50 = 0.773).
  CHECK(p.rates().store_fraction == Approx(0.773));
  // One block copies at NCCL 2.28's perChMaxTreeBw for Hopper, 38.7 GB/s; a step with L loads and S
  // stores costs L (1 - f) + S f copies: (1 load, 2 stores) 1 + 0.773 = 1.773, (2 loads, 1 store)
  // 2 - 0.773 = 1.227. All-gather on 4 ranks, per 3 sends: copySend (1, 2) 1.773, two recvCopySend
  // 1.773 each, recv (1, 1) 1 = 6.319, so a channel sends at 38.7 x 3 / 6.319 = 18.37 GB/s, busbw
  // 2 x 18.37 = 36.75 GB/s. Each 1 MiB slice (2 MiB chunks in 2 slices) also holds the block for the
  // slice overhead, 1.4 us: a send takes 1 MiB / (38.7 / 1.773) GB/s = 48.04 us + 1.4, the local
  // step 27.09 + 1.4, so per slice index 3 x 49.44 + 28.49 = 176.81 us instead of 171.21: busbw
  // 36.75 x 171.21 / 176.81 = 35.58 GB/s (1 GiB: the pipeline's fill is below 1%).
  CHECK(p.predict(CollectiveOp::ALL_GATHER, Bytes::gib(1)).busbw_GBps == Approx(35.58).epsilon(0.02));
  // In place the first step only sends from the output (1 load, 1 store) = 1: 1 + 2 x 1.773 + 1 =
  // 5.546 per 3 sends, 2 x 38.7 x 3 / 5.546 = 41.87 GB/s without the slice overhead; with it
  // (28.49 + 2 x 49.44 + 28.49) / (27.09 + 2 x 48.04 + 27.09) = 155.87 / 150.27: 40.36 GB/s.
  NcclTestsMethod in_place;
  in_place.in_place = true;
  CHECK(p.predict(CollectiveOp::ALL_GATHER, Bytes::gib(1), in_place).busbw_GBps == Approx(40.36).epsilon(0.02));
  // Reduce runs down a chain whose slowest step is recvReduceSend (2 loads, 1 store) = 1.227:
  // 38.7 / 1.227 = 31.54 GB/s per channel, so a 512 KiB step copies in 16.62 us, and each step
  // also holds the block for the reduce's step overhead (fallback: the slice overhead, 1.4 us):
  // 524288 B / 18.02 us = 29.09 GB/s per channel, busbw 2 x 29.09 = 58.19 GB/s.
  CHECK(p.predict(CollectiveOp::REDUCE, Bytes::gib(1)).busbw_GBps == Approx(58.19).epsilon(0.02));
}

TEST_CASE("the store fraction falls back to the catalog GPU's store share, else to 0.5", "[unit][nccl]") {
  static const hardware::Catalog catalog = hardware::Catalog::load();
  auto fraction = [&](const char* system) {
    PredictorConfig cfg;
    cfg.node = hardware::resolve_node(catalog, system);
    cfg.shape = {1, 4};
    cfg.version = "2.28.9";
    const CollectivePredictor p(cfg);
    return p.rates().store_fraction;
  };
  // H200 and H100 (the same GH100 chip) carry the measured sm_store_share 0.773; the A100 has no
  // such figure, so loads and stores weigh alike: 0.5.
  CHECK(fraction("hgx-h200") == Approx(0.773));
  CHECK(fraction("hgx-h100") == Approx(0.773));
  CHECK(fraction("hgx-a100") == Approx(0.5));
}

TEST_CASE("the wait that closes a timed loop counts once for its launches, where the host is behind",
          "[unit][nccl]") {
  static const hardware::Catalog catalog = hardware::Catalog::load();
  const auto profile =
      testing::profile_of("sync", {testing::duration_parameter("nccl.host.empty_call_overhead", 0.2e-6),
                                   testing::duration_parameter("nccl.host.sync_overhead", 1.6e-6)});
  PredictorConfig cfg;
  cfg.node = hardware::resolve_node(catalog, "hgx-h200");
  cfg.shape = {1, 1};
  cfg.version = "2.28.9";
  cfg.profile = &profile;
  const CollectivePredictor one(cfg);
  NcclTestsMethod in_place;
  in_place.in_place = true;
  // One rank in place launches nothing: 20 empty calls and one wait, (20 x 0.2 + 1.6) / 20 =
  // 0.28 us a call; over 2,000 launches (0.2 x 2000 + 1.6) / 2000 = 0.2008 us.
  CHECK(one.predict(CollectiveOp::ALL_REDUCE, Bytes::kib(64), in_place).time.microseconds() == Approx(0.28));
  in_place.iters = 2000;
  CHECK(one.predict(CollectiveOp::ALL_REDUCE, Bytes::kib(64), in_place).time.microseconds() == Approx(0.2008));
  // Where the GPU is behind, the host waits while the GPU works: the wait adds nothing. Four
  // ranks' 256 MiB all-reduce takes over a millisecond of GPU time a launch, against the host's
  // 4 us call and 1.6 / 20 us of wait.
  cfg.shape = {1, 4};
  const CollectivePredictor four(cfg);
  const auto big = four.predict(CollectiveOp::ALL_REDUCE, Bytes::mib(256));
  CHECK(big.time == big.gpu_time);
}
