// LL and LL128 steps costed by their loads and stores (collective_program.hpp), with the H200's
// measured channel figures (catalog nccl_ll_channel, nccl_ll128_channel).

#include <catch2/catch.hpp>

#include "hardware/catalog.hpp"
#include "sim/nccl/collective_predictor.hpp"

using namespace clustersim;
using namespace clustersim::sim::nccl;

namespace {

CollectivePredictor predictor(const char* system, int gpus, std::map<std::string, std::string> env) {
  static const hardware::Catalog catalog = hardware::Catalog::load();
  PredictorConfig cfg;
  cfg.node = hardware::resolve_node(catalog, system);
  cfg.shape = {1, gpus};
  cfg.env = std::move(env);
  cfg.version = "2.28.9";
  return CollectivePredictor(cfg);
}

}  // namespace

TEST_CASE("LL and LL128 ring steps cost their loads and stores", "[unit][nccl]") {
  const CollectivePredictor p = predictor("hgx-h200", 4, {});
  const ProgramContext ctx{p.system(), p.channels(), p.version(), p.env(), p.rates()};
  // Catalog H200: LL store share 0.647, LL128 0.560.
  REQUIRE(p.rates().ll_store_fraction == Approx(0.647));
  REQUIRE(p.rates().ll128_store_fraction == Approx(0.560));
  // Broadcast's busiest step copies and sends: w(1,2) = 0.353 + 2 x 0.647 = 1.647; reduce's
  // reduces and sends: w(2,1) = 2 x 0.353 + 0.647 = 1.353.
  CHECK(step_weight(ctx, CollectiveOp::BROADCAST, Algorithm::RING, Protocol::LL, 4) == Approx(1.647));
  CHECK(step_weight(ctx, CollectiveOp::REDUCE, Algorithm::RING, Protocol::LL, 4) == Approx(1.353));
  // A 4-rank all-reduce's six sends: (1,1), 2 x (2,1), (2,2), 2 x (1,2): (1 + 2 x 1.44 + 2 +
  // 2 x 1.56) / 6 = 9 / 6 = 1.5 with LL128 (any f: each (2,1) pairs with a (1,2)).
  CHECK(step_weight(ctx, CollectiveOp::ALL_REDUCE, Algorithm::RING, Protocol::LL128, 4) == Approx(1.5));
  // All-gather out of place: every send copies and sends, w(1,2) = 0.44 + 2 x 0.56 = 1.56.
  CHECK(step_weight(ctx, CollectiveOp::ALL_GATHER, Algorithm::RING, Protocol::LL128, 4) == Approx(1.56));

  // The A100 has no measured LL figures: its LL steps all cost a copy.
  const CollectivePredictor a = predictor("hgx-a100", 8, {});
  const ProgramContext actx{a.system(), a.channels(), a.version(), a.env(), a.rates()};
  CHECK(a.rates().ll_store_fraction < 0);
  CHECK(step_weight(actx, CollectiveOp::BROADCAST, Algorithm::RING, Protocol::LL, 8) == 1.0);
}

TEST_CASE("a 2-rank ring all-reduce with LL on one channel moves half the copy rate", "[unit][nccl]") {
  const CollectivePredictor p = predictor(
      "hgx-h200", 2,
      {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "LL"}, {"NCCL_MIN_NCHANNELS", "1"}, {"NCCL_MAX_NCHANNELS", "1"}});
  // Per loop a rank sends one 32 KiB LL step with send (1,1) and one with recvReduceCopySend
  // (2,2), then receives one into its output (1,1): at C = 11.1 GB/s, 32768 x (1 + 2) / C +
  // 32768 / C = 11.81 us of block time for the loop's 64 KiB (C / 2 = 5.55 GB/s), and the block
  // waits for the peer's step before each of the last two, an NVLink LL step latency of 0.6 us
  // (NCCL 2.28 hwLat) each: 65536 B / 13.01 us = 5.037 GB/s of bus bandwidth (= algorithm
  // bandwidth for 2 ranks; 5.30 measured: calibrate/results/lent-2xh200-2026-11-21-channel-rate).
  const Bytes size = Bytes::of(1LL << 30);
  const CollectivePrediction r = p.predict(CollectiveOp::ALL_REDUCE, size, NcclTestsMethod{});
  const double busbw = static_cast<double>(size.count()) / r.time.seconds() / 1e9;
  CHECK(busbw == Approx(65536 / (32768 * 4 / 11.1e9 + 2 * 0.6e-6) / 1e9).epsilon(0.002));
}
