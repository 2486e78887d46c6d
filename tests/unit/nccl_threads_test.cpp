// A ring channel's block threads: NCCL_NTHREADS and NCCL_LL128_NTHREADS as NCCL's tuner bounds
// them (tuning.cc getNthreads), and what they do to a channel's rate (collective_program.hpp
// thread_factor).

#include <catch2/catch.hpp>

#include "hardware/catalog.hpp"
#include "sim/nccl/collective_predictor.hpp"
#include "support/profile_parameters.hpp"

using namespace clustersim;
using namespace clustersim::sim::nccl;

namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

CollectivePredictor predictor(std::map<std::string, std::string> env, const hardware::CalibrationProfile* profile = nullptr) {
  PredictorConfig cfg;
  cfg.node = hardware::resolve_node(catalog(), "hgx-h200");
  cfg.shape = {1, 4};
  env["NCCL_NVLS_ENABLE"] = "0";
  cfg.env = std::move(env);
  cfg.version = "2.28.9";
  cfg.profile = profile;
  return CollectivePredictor(cfg);
}

}  // namespace

TEST_CASE("NCCL_NTHREADS and NCCL_LL128_NTHREADS are bounded as NCCL bounds them", "[unit][nccl]") {
  // Unset: Simple 512 on NVLink (the ring graph moves more than a PCIe Gen3 x16 link), LL 512,
  // LL128 640.
  const CollectivePredictor def = predictor({});
  CHECK(def.tuner().max_threads(Algorithm::RING, Protocol::SIMPLE) == 512);
  CHECK(def.tuner().max_threads(Algorithm::RING, Protocol::LL) == 512);
  CHECK(def.tuner().max_threads(Algorithm::RING, Protocol::LL128) == 640);
  CHECK(def.tuner().notes().empty());
  // NCCL_NTHREADS=256 sets Simple and LL, not LL128.
  const CollectivePredictor t256 = predictor({{"NCCL_NTHREADS", "256"}});
  CHECK(t256.tuner().max_threads(Algorithm::RING, Protocol::SIMPLE) == 256);
  CHECK(t256.tuner().max_threads(Algorithm::TREE, Protocol::SIMPLE) == 256);
  CHECK(t256.tuner().max_threads(Algorithm::RING, Protocol::LL) == 256);
  CHECK(t256.tuner().max_threads(Algorithm::RING, Protocol::LL128) == 640);
  // Not a multiple of 32: the maximum; below the minimum: the minimum (LL128's is 640 / 4 = 160);
  // each with a note.
  const CollectivePredictor odd = predictor({{"NCCL_NTHREADS", "100"}, {"NCCL_LL128_NTHREADS", "64"}});
  CHECK(odd.tuner().max_threads(Algorithm::RING, Protocol::SIMPLE) == 512);
  CHECK(odd.tuner().max_threads(Algorithm::RING, Protocol::LL128) == 160);
  CHECK(odd.tuner().notes().size() == 2);
  // 0 or less: unset.
  CHECK(predictor({{"NCCL_NTHREADS", "0"}}).tuner().max_threads(Algorithm::RING, Protocol::SIMPLE) == 512);
  // A ring launch adds Simple's sync warp: 256 + 32 = 288 threads a block.
  const std::map<std::string, std::string> ring = {{"NCCL_NTHREADS", "256"}, {"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}};
  CHECK(predictor(ring).choice(CollectiveOp::ALL_REDUCE, Bytes::mib(256)).threads == 288);
}

TEST_CASE("a ring channel's rate follows its threads; a tree's does not", "[unit][nccl]") {
  const std::map<std::string, std::string> one = {
      {"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}, {"NCCL_MIN_NCHANNELS", "1"}, {"NCCL_MAX_NCHANNELS", "1"}};
  auto with = [&](std::map<std::string, std::string> env, const std::string& k, const std::string& v) {
    env[k] = v;
    return env;
  };
  // With t_half = 85 (the fallback: 4 x H200), a block of 256 data threads moves
  // (256 / 341) / (512 / 597) = 0.87536 of a 512-thread block's rate. One channel's 4-rank ring
  // all-reduce is bound by its block, so at 1 GiB (the pipeline's fill well under 1%) its busbw
  // follows within 1%.
  const double full = predictor(one).predict(CollectiveOp::ALL_REDUCE, Bytes::gib(1)).busbw_GBps;
  const double half = predictor(with(one, "NCCL_NTHREADS", "256")).predict(CollectiveOp::ALL_REDUCE, Bytes::gib(1)).busbw_GBps;
  CHECK(half / full == Approx((256.0 / 341.0) / (512.0 / 597.0)).epsilon(0.01));
  // NCCL launches Tree with 640 threads whatever NCCL_NTHREADS says.
  auto tree = with(one, "NCCL_ALGO", "Tree");
  CHECK(predictor(with(tree, "NCCL_NTHREADS", "256")).predict(CollectiveOp::ALL_REDUCE, Bytes::gib(1)).busbw_GBps ==
        Approx(predictor(tree).predict(CollectiveOp::ALL_REDUCE, Bytes::gib(1)).busbw_GBps).epsilon(1e-12));
  // A profile's t_half replaces the fallback: with 512, 256 threads move (256 / 768) / (512 / 1024)
  // = 2/3 (within 2%: with the catalog's other fallbacks NVLink's soft minimum takes a little of
  // the full block's rate).
  const auto profile = testing::profile_of("threads", {testing::ratio_parameter("nccl.simple.half_rate_threads", 512)});
  const double full_p = predictor(one, &profile).predict(CollectiveOp::ALL_REDUCE, Bytes::gib(1)).busbw_GBps;
  const double half_p =
      predictor(with(one, "NCCL_NTHREADS", "256"), &profile).predict(CollectiveOp::ALL_REDUCE, Bytes::gib(1)).busbw_GBps;
  CHECK(half_p / full_p == Approx(2.0 / 3.0).epsilon(0.02));
}
