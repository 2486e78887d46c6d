// A tree's thread blocks (collective_program.hpp tree_block; NCCL 2.28 src/device/all_reduce.h
// runTreeSplit) and the work-conserving shared resources of a step program (step_program.hpp
// ShareTimeline).

#include <catch2/catch.hpp>

#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"
#include "sim/nccl/collective_predictor.hpp"
#include "support/profile_parameters.hpp"

using namespace clustersim;
using namespace clustersim::sim::nccl;

namespace {

CollectivePredictor tree_predictor(std::map<std::string, std::string> env = {}) {
  static const hardware::Catalog catalog = hardware::Catalog::load();
  PredictorConfig cfg;
  cfg.node = hardware::resolve_node(catalog, "hgx-h200");
  cfg.shape = {1, 4};
  env["NCCL_ALGO"] = "Tree";
  cfg.env = env;
  cfg.version = "2.28.9";
  return CollectivePredictor(cfg);
}

// The steady rate (GB/s) of a tree all-reduce on one channel of hgx-h200: 128 MiB over the GPU time
// of 256 MiB less that of 128 MiB, which leaves the fixed cost and the pipeline's fill out.
// `extra`: more NCCL variables.
double steady_tree_rate(int gpus, const char* proto, const hardware::CalibrationProfile* profile,
                        std::map<std::string, std::string> extra = {}) {
  static const hardware::Catalog catalog = hardware::Catalog::load();
  PredictorConfig cfg;
  cfg.node = hardware::resolve_node(catalog, "hgx-h200");
  cfg.shape = {1, gpus};
  cfg.env = std::move(extra);
  cfg.env.insert({{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", proto}, {"NCCL_MIN_NCHANNELS", "1"}, {"NCCL_MAX_NCHANNELS", "1"}});
  cfg.version = "2.28.9";
  cfg.profile = profile;
  const CollectivePredictor q(cfg);
  const double t1 = q.predict(CollectiveOp::ALL_REDUCE, Bytes::mib(256)).gpu_time.seconds();
  const double t0 = q.predict(CollectiveOp::ALL_REDUCE, Bytes::mib(128)).gpu_time.seconds();
  return Bytes::mib(128).count() / (t1 - t0) / 1e9;
}

}  // namespace

TEST_CASE("a shared resource: alone at full rate, shared while busy together, work-conserving", "[unit][nccl]") {
  ShareTimeline block;
  // Alone: 10 bytes at 0.1 block seconds per byte use the whole block for 1 s (its rate is
  // 1 / 0.1 = 10 B/s, under the hop's 1e9).
  CHECK(ShareTimeline::place(0.0, 10, 1e9, {&block, 0.1}, {nullptr, 0}) == Approx(1.0));
  // A second body from 0 finds the block full until 1 s, then has it alone: 1 s to 2 s.
  CHECK(ShareTimeline::place(0.0, 10, 1e9, {&block, 0.1}, {nullptr, 0}) == Approx(2.0));

  ShareTimeline shared;
  // Held to 5 B/s by its hop, a body uses half the block: 10 bytes take 2 s.
  CHECK(ShareTimeline::place(0.0, 10, 5, {&shared, 0.1}, {nullptr, 0}) == Approx(2.0));
  // Another from 0 gets the other half (5 B/s) while the first runs: done at 2 s as well.
  CHECK(ShareTimeline::place(0.0, 10, 1e9, {&shared, 0.1}, {nullptr, 0}) == Approx(2.0));
  // A third from 1 s finds the block full until 2 s, then has all of it: 10 bytes in 1 s more.
  CHECK(ShareTimeline::place(1.0, 10, 1e9, {&shared, 0.1}, {nullptr, 0}) == Approx(3.0));

  ShareTimeline a, b;
  // Two charges: the tighter one sets the rate. Block 0.1 s/B (10 B/s), link 0.05 s/B (20 B/s):
  // 10 bytes in 1 s, using all of the block and half of the link.
  CHECK(ShareTimeline::place(0.0, 10, 1e9, {&a, 0.1}, {&b, 0.05}) == Approx(1.0));
  // On the link alone a body from 0 has the half left (10 B/s): 10 bytes in 1 s.
  CHECK(ShareTimeline::place(0.0, 10, 1e9, {&b, 0.05}, {nullptr, 0}) == Approx(1.0));

  ShareTimeline x, y, host;
  // Three charges (block, link, host memory): 10, 20 and 5 B/s alone; the host memory's 5 B/s
  // binds, 10 bytes in 2 s, using all of it.
  CHECK(ShareTimeline::place(0.0, 10, 1e9, {&x, 0.1}, {&y, 0.05}, {&host, 0.2}) == Approx(2.0));
  // Another body on the host memory alone from 0 waits for it: 2 s, then 10 bytes at 5 B/s.
  CHECK(ShareTimeline::place(0.0, 10, 1e9, {nullptr, 0}, {nullptr, 0}, {&host, 0.2}) == Approx(4.0));
}

TEST_CASE("a tree over SHM shares its socket's host memory over time, not as a steady share", "[unit][nccl]") {
  // Host memory binds (1% of the catalog's socket bandwidth, its cache left out); the GPUs' SHM
  // links and an SHM channel's block are left wide open.
  const auto profile = testing::profile_of(
      "host-bound", {testing::ratio_parameter("nccl.shm.host_memory_efficiency", 0.01),
                     testing::ratio_parameter("nccl.shm.host_cache_speedup", 1.0),
                     testing::bandwidth_parameter("nccl.shm.bandwidth", 1e12),
                     testing::bandwidth_parameter("nccl.shm.channel_bandwidth", 1e12)});
  static const hardware::Catalog catalog = hardware::Catalog::load();
  PredictorConfig cfg;
  cfg.node = hardware::resolve_node(catalog, "hgx-h200");
  cfg.shape = {1, 4};
  cfg.env = {{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "Simple"}, {"NCCL_P2P_DISABLE", "1"},
             {"NCCL_MIN_NCHANNELS", "1"}, {"NCCL_MAX_NCHANNELS", "1"}};
  cfg.version = "2.28.9";
  cfg.profile = &profile;
  const CollectivePredictor p(cfg);
  REQUIRE(p.intra_transport().rfind("SHM", 0) == 0);
  const double H = p.rates().host_memory.bytes_per_second();
  // One channel, one chunk (a Simple step holds 512 KiB): the chunk climbs the chain 3-2-1-0 and
  // comes down 0-1-2-3, one hop after the other, each alone on the socket's host memory, which it
  // crosses twice per byte (stored, then loaded): H / 2 per hop. 256 KiB more in the chunk adds
  // 6 x 262144 x 2 / H; the fixed cost and the steps' latencies are the same for both sizes.
  const double t512 = p.predict(CollectiveOp::ALL_REDUCE, Bytes::kib(512)).gpu_time.seconds();
  const double t256 = p.predict(CollectiveOp::ALL_REDUCE, Bytes::kib(256)).gpu_time.seconds();
  CHECK(t512 - t256 == Approx(6 * 262144.0 * 2 / H).epsilon(0.001));
  // A steady share would have given each hop H / 12 all along (3 ranks sending up and 3 down,
  // each crossing twice): 6 times as long.
}

TEST_CASE("a tree's block: the copy rate, the store share and the groups' threads", "[unit][nccl]") {
  const CollectivePredictor p = tree_predictor();
  const ProgramContext ctx{p.system(), p.channels(), p.version(), p.env(), p.rates()};
  // The H200's catalog figures: LL128 copy rate 34.3 GB/s, store share 0.560; LL 11.1 GB/s,
  // 0.647; Simple NCCL's perChMaxTreeBw 38.7 GB/s and the GPU's sm_store_share 0.773.
  const TreeBlock ll128 = tree_block(ctx, Protocol::LL128);
  CHECK(ll128.copy_rate.gigabytes_per_second() == Approx(34.3));
  CHECK(ll128.store_fraction == Approx(0.560));
  // Tree runs 640 threads (NCCL_MAX_NTHREADS); LL128 gives the reduce going up 640 x 7 / 10
  // rounded down to warps = 448 and the broadcast 192, shares of a 640-thread ring block.
  CHECK(ll128.up_cap.gigabytes_per_second() == Approx(34.3 * 448 / 640));
  CHECK(ll128.down_cap.gigabytes_per_second() == Approx(34.3 * 192 / 640));
  // Simple: 640 / 2 + 64 = 384 up and 256 down, of a 512-thread ring block.
  const TreeBlock simple = tree_block(ctx, Protocol::SIMPLE);
  CHECK(simple.copy_rate.gigabytes_per_second() == Approx(38.7));
  CHECK(simple.store_fraction == Approx(0.773));
  CHECK(simple.up_cap.gigabytes_per_second() == Approx(38.7 * 384 / 512));
  CHECK(simple.down_cap.gigabytes_per_second() == Approx(38.7 * 256 / 512));
}

TEST_CASE("a 4-rank tree on one channel moves C / 3 in steady state", "[unit][nccl]") {
  const auto profile = testing::profile_of("no-step", {testing::duration_parameter("nccl.simple.tree_step_overhead", 0)});
  const std::map<std::string, std::string> one = {
      {"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "Simple"}, {"NCCL_MIN_NCHANNELS", "1"}, {"NCCL_MAX_NCHANNELS", "1"}};
  auto steady_rate = [](const hardware::CalibrationProfile* prof) { return steady_tree_rate(4, "Simple", prof); };
  // The chain 0-1-2-3: the middle ranks' blocks reduce and send up (2 loads, 1 store per byte)
  // and copy and send down (1, 2); w(2,1) + w(1,2) = 3 whatever the store share, so once both
  // groups are busy each moves C / 3. Simple on the H200 without the steps' synchronisation:
  // 38.7 / 3 = 12.9 GB/s.
  CHECK(steady_rate(&profile) == Approx(38.7 / 3).epsilon(0.01));
  // Each 512 KiB step also holds its group 3.4 us (nccl.simple.tree_step_overhead's fallback),
  // while the other group may use the block: a middle rank's two steps of a chunk take between
  // 3 x 524288 / 38.7e9 = 40.64 us and 40.64 + 2 x 3.4 = 47.44 us, 11.05 to 12.9 GB/s (13.5
  // measured, calibrate/results/lent-4xh200-2026-11-21-tree-rate).
  const double with_steps = steady_rate(nullptr);
  CHECK(with_steps < 38.7 / 3);
  CHECK(with_steps > 524288 / 47.44e-6 / 1e9);
  const CollectivePredictor p = tree_predictor(one);
  // Filling the pipeline, a group has its block alone (C / w, not C / 3). One 512 KiB chunk climbs
  // the chain and comes down, each hop at C / w of its sender's step (f = 0.773):
  //   up:   leaf (1,1) 524288 / 38.7e9 = 13.55 us, two middles (2,1) x 1.227 = 2 x 16.62 us;
  //   down: root (2,2) x 2 = 27.10 us, two middles (1,2) x 1.773 = 2 x 24.02 us;
  // together 121.93 us, plus NCCL 2.28's base latency for Tree/Simple (8.4 us) and six steps of
  // its NVLink Tree/Simple latency (4 us: each step's synchronisation, 3.4 us, then the flag's
  // flight at LL's 0.6 us): 154.33 us. At C / 3 throughout the data alone would
  // take 6 x 524288 / 12.9e9 = 243.9 us.
  const CollectivePrediction one_chunk = p.predict(CollectiveOp::ALL_REDUCE, Bytes::kib(512));
  CHECK(one_chunk.gpu_time.microseconds() == Approx(8.4 + 6 * 4 + 121.93).epsilon(0.001));
}

TEST_CASE("a 4-rank tree's chain reaches nccl.tree.nvlink_share of the NVLink rate", "[unit][nccl]") {
  static const hardware::Catalog catalog = hardware::Catalog::load();
  auto predictor = [&](int gpus, const hardware::CalibrationProfile* profile) {
    PredictorConfig cfg;
    cfg.node = hardware::resolve_node(catalog, "hgx-h200");
    cfg.shape = {1, gpus};
    cfg.env = {{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "Simple"}, {"NCCL_MIN_NCHANNELS", "24"},
               {"NCCL_MAX_NCHANNELS", "24"}};
    cfg.version = "2.28.9";
    cfg.profile = profile;
    return CollectivePredictor(cfg);
  };
  // The GPU time of 1 GiB less that of 512 MiB: the fixed cost and the pipeline's fill cancel.
  auto rate = [](const CollectivePredictor& p) {
    const double t1 = p.predict(CollectiveOp::ALL_REDUCE, Bytes::gib(1)).gpu_time.seconds();
    const double t0 = p.predict(CollectiveOp::ALL_REDUCE, Bytes::mib(512)).gpu_time.seconds();
    return Bytes::mib(512).count() / (t1 - t0);
  };
  // Without a profile the share is NCCL 2.28's own figure for a tree all-reduce (tuning.cc:
  // busBw x .92).
  // Each Simple step's synchronisation is left out (nccl.simple.tree_step_overhead = 0), so that
  // the link's share alone sets the rate.
  // The NVLink knee is turned off too (exponent 0: the hard minimum), so that the link binds alone
  // (the knee's own test is below).
  const auto no_step = testing::duration_parameter("nccl.simple.tree_step_overhead", 0);
  const auto no_knee = testing::ratio_parameter("nccl.nvlink.knee_exponent", 0);
  const auto steps_off = testing::profile_of("no-step", {no_step, no_knee});
  const CollectivePredictor fallback = predictor(4, &steps_off);
  CHECK(fallback.rates().tree_nvlink_share == Approx(0.92));
  const auto profile =
      testing::profile_of("full-share", {testing::ratio_parameter("nccl.tree.nvlink_share", 1.0), no_step, no_knee});
  const CollectivePredictor whole = predictor(4, &profile);
  CHECK(whole.rates().tree_nvlink_share == 1.0);
  // A middle rank of the chain sends every byte up and every byte down (Simple: a wire byte per
  // payload byte): with 24 channels its links, not its blocks (24 x C / 3 = 24 x 38.7 / 3 = 309.6
  // GB/s), hold the chain, so its rate follows the share: 0.92 of what the whole link gives, and
  // within a few percent of share x nvlink / 2 (the difference of two sizes keeps part of the
  // pipeline's fill and drain, when one group has the link alone).
  CHECK(rate(fallback) / rate(whole) == Approx(0.92).epsilon(0.01));
  CHECK(rate(fallback) == Approx(0.92 * fallback.rates().nvlink.bytes_per_second() / 2).epsilon(0.03));
  // LL falls back to the same figure; LL128 on one node to NCCL's 7/9 of the graph's payload
  // bandwidth (tuning.cc), in wire bytes 7/9 x 16/15 = 0.830. The profile's Simple share leaves
  // the others alone.
  CHECK(fallback.rates().tree_ll_nvlink_share == Approx(0.92));
  CHECK(fallback.rates().tree_ll128_nvlink_share == Approx(7.0 / 9.0 * 16.0 / 15.0));
  CHECK(whole.rates().tree_ll_nvlink_share == Approx(0.92));
  // With two ranks each GPU sends one flow: the shares are not looked up.
  CHECK(predictor(2, nullptr).rates().tree_nvlink_share == 1.0);
  CHECK(predictor(2, nullptr).rates().tree_ll_nvlink_share == 1.0);
  CHECK(predictor(2, nullptr).rates().tree_ll128_nvlink_share == 1.0);
}

TEST_CASE("a tree's Simple steps each pay the step's synchronisation", "[unit][nccl]") {
  static const hardware::Catalog catalog = hardware::Catalog::load();
  const auto profile = testing::profile_of("tree-step", {testing::duration_parameter("nccl.simple.tree_step_overhead", 3e-6)});
  auto time_us = [&](const char* buffsize, const hardware::CalibrationProfile* prof) {
    PredictorConfig cfg;
    cfg.node = hardware::resolve_node(catalog, "hgx-h200");
    cfg.shape = {1, 2};
    cfg.env = {{"NCCL_ALGO", "Tree"},        {"NCCL_PROTO", "Simple"},      {"NCCL_NVLS_ENABLE", "0"},
               {"NCCL_MIN_NCHANNELS", "1"}, {"NCCL_MAX_NCHANNELS", "1"}, {"NCCL_BUFFSIZE", buffsize}};
    cfg.version = "2.28.9";
    cfg.profile = prof;
    return CollectivePredictor(cfg).predict(CollectiveOp::ALL_REDUCE, Bytes::mib(16)).time.microseconds();
  };
  // Fallback: NCCL 2.28's NVLink tree step latency, Simple 4.0 us over LL 0.6 us = 3.4 us.
  CHECK(tree_predictor().rates().simple_tree_step_overhead.microseconds() == Approx(3.4));
  // Two ranks: the root reduces, copies and sends each chunk (one Simple step of 1/8 of
  // NCCL_BUFFSIZE) and is the busiest block. 16 MiB is 32 steps of 512 KiB with NCCL's 4 MiB
  // buffer and 128 of 128 KiB with a 1 MiB one: the same bytes and 96 more synchronisations,
  // 96 x 3 us = 288 us, less what the smaller first step saves before the root can start: its
  // climb from the leaf, 3 us and a copy (w(1,1) = 1) at 38.7 GB/s, takes 3 + 13.55 = 16.55 us
  // for 512 KiB and 3 + 3.39 = 6.39 us for 128 KiB: 288 - 10.16 = 277.84 us (4 x H200 measure
  // 285 us, 2.97 us a step: calibrate/results/lent-4xh200-2026-11-22-step-cost).
  CHECK(time_us("1048576", &profile) - time_us("4194304", &profile) == Approx(277.84).epsilon(0.005));
}

TEST_CASE("a 2-rank LL tree's root costs its loads and stores x nccl.ll.tree_root_weight", "[unit][nccl]") {
  auto steady_rate = [](const hardware::CalibrationProfile* prof) { return steady_tree_rate(2, "LL", prof); };
  // The root (rank 0) reduces its child's data with its own, writes the output and sends it down:
  // 2 loads and 2 stores per byte, w(2,2) = 2 whatever the store share; the leaf only sends up and
  // receives (w(1,1) = 1 charged). With LL's catalog copy rate on the H200, 11.1 GB/s, the root
  // moves 11.1 / 2 = 5.55 GB/s.
  CHECK(steady_rate(nullptr) == Approx(11.1 / 2).epsilon(0.01));
  // Weighted 1.16 (4 x H200 measure C / 2.32): 11.1 / (2 x 1.16) = 4.78 GB/s.
  const auto weighted = testing::profile_of("root", {testing::ratio_parameter("nccl.ll.tree_root_weight", 1.16)});
  CHECK(steady_rate(&weighted) == Approx(11.1 / 2.32).epsilon(0.01));
}

TEST_CASE("a one-node Simple tree meets the NVLink knee: its blocks below the corner, its link above",
          "[unit][nccl]") {
  static const hardware::Catalog catalog = hardware::Catalog::load();
  auto context_of = [&](int gpus, int channels) {
    PredictorConfig cfg;
    cfg.node = hardware::resolve_node(catalog, "hgx-h200");
    cfg.shape = {1, gpus};
    cfg.env = {{"NCCL_ALGO", "Tree"}, {"NCCL_MIN_NCHANNELS", std::to_string(channels)},
               {"NCCL_MAX_NCHANNELS", std::to_string(channels)}};
    cfg.version = "2.28.9";
    return CollectivePredictor(cfg);
  };
  // What the H200's catalog gives without a profile: NVLink 18 x 25 GB/s x 0.824 = 370.8 GB/s,
  // knee exponent p = 3.2, Simple copy rate C = 38.7 GB/s, the tree's Simple share 0.92 (4 ranks;
  // with two each GPU sends one flow, share 1). x is what the busiest rank's channels offer over
  // what its link carries: up to 1 a block keeps s = (1 + x^p)^(-1/p) of C, past it the link keeps
  // (1 + x^-p)^(-1/p) of its share.
  auto knee_of = [](const CollectivePredictor& p, Protocol proto, int ranks, int channels) {
    const ProgramContext ctx{p.system(), p.channels(), p.version(), p.env(), p.rates()};
    TreeBlock b = tree_block(ctx, proto);
    const double before = b.copy_rate.gigabytes_per_second();
    tree_knee(ctx, p.system().transport(1, 0), proto, ranks, channels, b);
    return std::pair{before, b};
  };
  {
    // 2 ranks, 16 channels: the root moves C / w(2,2) = 19.35 GB/s a channel and sends each byte
    // once: x = 16 x 19.35 / 370.8 = 0.8350, x^3.2 = 0.5615, s = 1.5615^(-1/3.2) = 0.8700.
    const auto [c, b] = knee_of(context_of(2, 16), Protocol::SIMPLE, 2, 16);
    CHECK(c == Approx(38.7));
    CHECK(b.copy_rate.gigabytes_per_second() == Approx(38.7 * 0.8700).epsilon(0.001));
    CHECK(b.up_cap.gigabytes_per_second() == Approx(38.7 * 384 / 512 * 0.8700).epsilon(0.001));
    CHECK(b.link_knee_factor == 1.0);
  }
  {
    // 4 ranks, 24 channels: a middle rank moves C / 3 = 12.9 GB/s a channel and sends each byte
    // up and down, on 0.92 of the link: x = 24 x 12.9 x 2 / 341.1 = 1.815, past the corner, so
    // the link binds and keeps (1 + x^-3.2)^(-1/3.2) = 1.1484^(-1/3.2) = 0.9577 of its share;
    // the blocks keep C.
    const auto [c, b] = knee_of(context_of(4, 24), Protocol::SIMPLE, 4, 24);
    CHECK(b.copy_rate.gigabytes_per_second() == c);
    CHECK(c == Approx(38.7));
    CHECK(b.link_knee_factor == Approx(0.9577).epsilon(0.001));
  }
  {
    // One channel offers 19.35 / 370.8 of the link: s = 1 - 8e-5.
    const auto [c, b] = knee_of(context_of(2, 1), Protocol::SIMPLE, 2, 1);
    CHECK(b.copy_rate.gigabytes_per_second() / c == Approx(1.0).epsilon(1e-4));
    CHECK(b.copy_rate.gigabytes_per_second() < c);
  }
  {
    // LL128 is left alone: its tree loses rate per channel from 4 channels on, where the link is
    // far from its knee (see collective_program.hpp).
    const auto [c, b] = knee_of(context_of(2, 16), Protocol::LL128, 2, 16);
    CHECK(b.copy_rate.gigabytes_per_second() == c);
    CHECK(b.link_knee_factor == 1.0);
  }
}

TEST_CASE("over SHM a tree's groups move at their threads' share of the block", "[unit][nccl]") {
  // 2 x H200 without a profile, NCCL_P2P_DISABLE=1: the chain's hop goes through host memory. An
  // LL tree splits its 640 threads 448 up and 192 down (all_reduce.h runTreeSplit: 70% reduce);
  // each group's channel moves at most its threads' share of LL's SHM block rate C_SHM (the ring's
  // whole 512 threads: min(nccl.ll.channel_bandwidth, nccl.shm.ll_channel_bandwidth)) over its
  // step's weight: down, one load and two stores (w(1,2) = 1 + f with store share f); up, two
  // loads and one store (w(2,1) = 2 - f). With one channel the down group binds:
  // C_SHM x 192 / 512 / (1 + f).
  const double rate = steady_tree_rate(2, "LL", nullptr, {{"NCCL_P2P_DISABLE", "1"}});
  const CollectivePredictor q = tree_predictor({{"NCCL_P2P_DISABLE", "1"}});
  const double c = std::min(q.rates().ll_channel, q.rates().shm_ll_channel).bytes_per_second() / 1e9;
  const double f = q.rates().ll_store_fraction;
  REQUIRE(f > 0);
  CHECK(rate == Approx(c * 192 / 512 / (1 + f)).epsilon(0.01));
}

TEST_CASE("a tree over sockets, one rank a node, runs at its busiest proxy's rate", "[unit][nccl]") {
  // hgx-h200 with P2P and SHM off: NCCL makes each GPU a node of its own and connects them through
  // the socket transport, each rank's proxy copying what it sends and what it receives at P
  // (nccl.net.socket_proxy_bandwidth, both ways together) plus o (nccl.net.socket_message_overhead)
  // a message. Two channels (the search's one, doubled), tree 0 on one and tree 1 on the other,
  // Simple chunks of c = 512 KiB (4 MiB buffers / 8 steps), S bytes: each channel carries S / 2,
  // and a proxy moves, per chunk of its channel, one message each way per tree link it has.
  // NCCL's double binary trees (trees.cc): 2 nodes: 0 -> 1 and its mirror 1 -> 0, 2 links each
  // (4 messages a chunk pair); 3 nodes: 0 <- 2 <- 1 and, shifted, 1 <- 0 <- 2, node 0 and node 2
  // inner in one and a leaf in the other (2 + 1 links: 6 messages); 4 nodes: 0 <- 2 <- {1, 3} and
  // its mirror 3 <- 1 <- {2, 0}, nodes 1 and 2 with 3 + 1 links (8 messages). In steady state the
  // busiest proxy sets the time:
  //   dT / dS = m / 2 x (1 / P + o / c),  m = 4, 6, 8.
  // (A path per level, each node at the mean load, gave 4, 5.33 and 6.)
  static const hardware::Catalog catalog = hardware::Catalog::load();
  const auto profile = hardware::CalibrationProfile::builtin("hgx-h200-4gpu-2026-11");
  // dT / dS between 128 and 256 MiB (the fill and the fixed cost left out); channels 0: NCCL's.
  auto slope = [&](int gpus, int channels) {
    PredictorConfig cfg;
    cfg.node = hardware::resolve_node(catalog, "hgx-h200");
    cfg.shape = {1, gpus};
    cfg.env = {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}, {"NCCL_PROTO", "Simple"}, {"NCCL_ALGO", "Tree"}};
    if (channels > 0) {
      cfg.env["NCCL_MIN_NCHANNELS"] = std::to_string(channels);
      cfg.env["NCCL_MAX_NCHANNELS"] = std::to_string(channels);
    }
    cfg.version = "2.28.9";
    cfg.profile = &profile;
    const CollectivePredictor q(cfg);
    const CollectivePrediction big = q.predict(CollectiveOp::ALL_REDUCE, Bytes::mib(256));
    REQUIRE(big.channels == (channels > 0 ? channels : 2));
    return (big.gpu_time.seconds() - q.predict(CollectiveOp::ALL_REDUCE, Bytes::mib(128)).gpu_time.seconds()) /
           static_cast<double>(Bytes::mib(128).count());
  };
  const auto* p = profile.find("nccl.net.socket_proxy_bandwidth");
  const auto* o = profile.find("nccl.net.socket_message_overhead");
  REQUIRE(p != nullptr);
  REQUIRE(o != nullptr);
  const double per_byte = 1.0 / p->value + o->value / (512.0 * 1024);
  for (auto [gpus, messages] : {std::pair{2, 4}, std::pair{3, 6}, std::pair{4, 8}}) {
    INFO(gpus << " GPUs");
    CHECK(slope(gpus, 0) == Approx(messages / 2.0 * per_byte).epsilon(0.01));
  }
  // With c channels NCCL puts k0 = ceil(c / 2) on tree 0 and k1 = floor(c / 2) on tree 1, each
  // carrying S / c. On 4 nodes a node inner in tree 0 and a leaf in tree 1 has 3 links in one and 1
  // in the other (the mirror node the reverse, a root 1 + 1): its proxy moves 2 (3 k0 + k1) S / c,
  // the busiest max(3 k0 + k1, k0 + 3 k1). Against c = 2 (4 S): c = 1 moves 6 S (1.5x), c = 3
  // 2 x 7 / 3 S (7/6), c = 4 and c = 8 4 S (1x: a tree's channels run alike).
  const double two = slope(4, 2);
  CHECK(slope(4, 1) / two == Approx(1.5).epsilon(0.01));
  CHECK(slope(4, 3) / two == Approx(7.0 / 6.0).epsilon(0.01));
  CHECK(slope(4, 4) / two == Approx(1.0).epsilon(0.01));
  CHECK(slope(4, 8) / two == Approx(1.0).epsilon(0.01));
}
