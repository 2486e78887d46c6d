// A tree's split thread groups (collective_program.hpp tree_split_caps; NCCL 2.28
// src/device/all_reduce.h runTreeSplit).

#include <catch2/catch.hpp>

#include "hardware/catalog.hpp"
#include "sim/nccl/collective_predictor.hpp"

using namespace clustersim;
using namespace clustersim::sim::nccl;

namespace {

CollectivePredictor tree_predictor() {
  static const hardware::Catalog catalog = hardware::Catalog::load();
  PredictorConfig cfg;
  cfg.node = hardware::resolve_node(catalog, "hgx-h200");
  cfg.shape = {1, 4};
  cfg.env = {{"NCCL_ALGO", "Tree"}};
  cfg.version = "2.28.9";
  return CollectivePredictor(cfg);
}

}  // namespace

TEST_CASE("a tree's up and down groups move at their share of the block's threads", "[unit][nccl]") {
  const CollectivePredictor p = tree_predictor();
  const ProgramContext ctx{p.system(), p.channels(), p.version(), p.env(), p.rates()};
  const NcclRates& r = p.rates();
  // Tree runs 640 threads (NCCL_MAX_NTHREADS). LL128: up 640 x 7 / 10 rounded down to warps =
  // 448, down 192; the LL128 figure is a 640-thread ring block's, so up = 448 / 640 = 0.7 and
  // down = 192 / 640 = 0.3 of it (fallback 36.7 GB/s: 25.69 and 11.01 GB/s).
  const TreeSplitCaps ll128 = tree_split_caps(ctx, Protocol::LL128, 24);
  CHECK(ll128.up_threads == 448);
  CHECK(ll128.down_threads == 192);
  CHECK(ll128.up.gigabytes_per_second() == Approx(r.ll128_channel.gigabytes_per_second() * 0.7));
  CHECK(ll128.down.gigabytes_per_second() == Approx(r.ll128_channel.gigabytes_per_second() * 0.3));
  CHECK(ll128.down.gigabytes_per_second() == Approx(36.7 * 0.3));
  // Simple: up 640 / 2 + 64 = 384, down 256, of a 512-thread ring block: 0.75 and 0.5 of
  // perChMaxTreeBw 38.7 GB/s = 29.03 and 19.35 GB/s.
  const TreeSplitCaps simple = tree_split_caps(ctx, Protocol::SIMPLE, 24);
  CHECK(simple.up_threads == 384);
  CHECK(simple.down_threads == 256);
  CHECK(simple.up.gigabytes_per_second() == Approx(38.7 * 0.75));
  CHECK(simple.down.gigabytes_per_second() == Approx(38.7 * 0.5));
  // LL: 448 / 512 and 192 / 512 of the LL block figure, each at most the GPU's LL limit shared
  // by both groups of the 24 channels, nccl.ll.bandwidth / 48.
  const TreeSplitCaps ll = tree_split_caps(ctx, Protocol::LL, 24);
  const double share = r.ll_total.gigabytes_per_second() / 48.0;
  CHECK(ll.up.gigabytes_per_second() == Approx(std::min(r.ll_channel.gigabytes_per_second() * 448 / 512, share)));
  CHECK(ll.down.gigabytes_per_second() == Approx(std::min(r.ll_channel.gigabytes_per_second() * 192 / 512, share)));
}
