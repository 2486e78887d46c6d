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

TEST_CASE("a tree's up and down groups: LL128 and Simple at their threads' share, LL sharing the block", "[unit][nccl]") {
  const CollectivePredictor p = tree_predictor();
  const ProgramContext ctx{p.system(), p.channels(), p.version(), p.env(), p.rates()};
  // The H200's catalog figures: LL128 copy rate 34.3 GB/s, store share 0.560; LL 11.1 GB/s, 0.647.
  REQUIRE(p.rates().ll128_channel.gigabytes_per_second() == Approx(34.3));
  REQUIRE(p.rates().ll_store_fraction == Approx(0.647));
  // One node of 4 ranks: a chain 0-1-2-3, ranks 1 and 2 in the middle (one child each).
  // Tree runs 640 threads (NCCL_MAX_NTHREADS). LL128: up 640 x 7 / 10 rounded down to warps =
  // 448, down 192, of a 640-thread ring block; a middle rank's up step recvReduceSend (2,1)
  // costs 2 x 0.44 + 0.56 = 1.44, its down step recvCopySend (1,2) 0.44 + 2 x 0.56 = 1.56:
  // up 34.3 x 0.7 / 1.44 = 16.674, down 34.3 x 0.3 / 1.56 = 6.596 GB/s.
  const TreeSplitCaps ll128 = tree_split_caps(ctx, Protocol::LL128, 4, 1);
  CHECK(ll128.up_threads == 448);
  CHECK(ll128.down_threads == 192);
  CHECK(ll128.up.gigabytes_per_second() == Approx(34.3 * 0.7 / 1.44));
  CHECK(ll128.down.gigabytes_per_second() == Approx(34.3 * 0.3 / 1.56));
  // Simple: up 640 / 2 + 64 = 384, down 256, of a 512-thread ring block, steps alike: 0.75 and
  // 0.5 of perChMaxTreeBw 38.7 GB/s = 29.03 and 19.35 GB/s.
  const TreeSplitCaps simple = tree_split_caps(ctx, Protocol::SIMPLE, 4, 1);
  CHECK(simple.up_threads == 384);
  CHECK(simple.down_threads == 256);
  CHECK(simple.up.gigabytes_per_second() == Approx(38.7 * 0.75));
  CHECK(simple.down.gigabytes_per_second() == Approx(38.7 * 0.5));
  // LL: both groups share the block's 11.1 GB/s; a middle rank's (2,1) + (1,2) = 3 loads and
  // stores' worth per byte (w(2,1) + w(1,2) = 3 whatever f) is the busiest (a leaf's 2, the
  // root's (2,2) = 2): 11.1 / 3 = 3.7 GB/s each way (3.78 measured with one channel).
  const TreeSplitCaps ll = tree_split_caps(ctx, Protocol::LL, 4, 1);
  CHECK(ll.per_byte == Approx(3.0));
  CHECK(ll.up.gigabytes_per_second() == Approx(11.1 / 3));
  CHECK(ll.down.gigabytes_per_second() == Approx(11.1 / 3));
  // Two ranks: a leaf and the root, 2 per byte each: 5.55 GB/s (5.02 measured).
  CHECK(tree_split_caps(ctx, Protocol::LL, 2, 1).up.gigabytes_per_second() == Approx(11.1 / 2));
  // Eight nodes of 8 (depth 3): inner nodes' ranks have two children, (3,1) + (1,3) = 4 per byte.
  CHECK(tree_split_caps(ctx, Protocol::LL, 8, 8).per_byte == Approx(4.0));
}
