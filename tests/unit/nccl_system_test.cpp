// NCCL's view of a node: transports chosen as NCCL chooses them, channels as its search finds
// them, and the tuner's choices.

#include <catch2/catch.hpp>

#include <cmath>

#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "sim/nccl/collective_predictor.hpp"
#include "support/profile_parameters.hpp"

using namespace clustersim;
using namespace clustersim::sim::nccl;

namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

CollectivePredictor predictor(const std::string& system, int nodes, int gpus, std::map<std::string, std::string> env = {},
                              Placement placement = {}, const std::string& version = "2.28",
                              const hardware::CalibrationProfile* profile = nullptr) {
  PredictorConfig cfg;
  cfg.node = hardware::resolve_node(catalog(), system);
  cfg.shape = {nodes, gpus};
  cfg.env = std::move(env);
  cfg.placement = placement;
  cfg.version = version;
  cfg.profile = profile;
  return CollectivePredictor(cfg);
}

}  // namespace

TEST_CASE("transports follow NCCL's P2P, SHM, NET order", "[unit][nccl]") {
  SECTION("NVSwitch H100: P2P write over NVLink through cuMem handles") {
    CHECK(predictor("hgx-h100", 1, 8).intra_transport() == "P2P/CUMEM");
  }
  SECTION("A100 NVLink: P2P read by default (p2p.cc, sm80)") {
    CHECK(predictor("hgx-a100", 1, 8).intra_transport() == "P2P/CUMEM/read");
    CHECK(predictor("hgx-h100", 1, 8, {{"NCCL_P2P_READ_ENABLE", "1"}}).intra_transport() == "P2P/CUMEM/read");
  }
  SECTION("seed 004: p4d, one pod of 4 GPUs -> P2P/CUMEM/read") {
    const auto p = predictor("p4d.24xlarge", 1, 4, {}, {.gpus_per_pod = 4, .host_ipc = true});
    CHECK(p.intra_transport() == "P2P/CUMEM/read");
    CHECK(p.system().nccl_nodes() == 1);
  }
  SECTION("seed 004: p4d, four pods of 1 GPU -> NET/Libfabric/0/GDRDMA") {
    const auto p = predictor("p4d.24xlarge", 1, 4, {}, {.gpus_per_pod = 1, .host_ipc = false});
    CHECK(p.intra_transport() == "NET/Libfabric/0/GDRDMA");
    // Each pod is a host to NCCL: 4 hosts of one rank.
    CHECK(p.system().nccl_nodes() == 4);
    CHECK(p.system().ranks_per_host() == 1);
  }
  SECTION("pods with one NCCL_HOSTID and host IPC are one host again") {
    const auto p = predictor("p4d.24xlarge", 1, 4, {{"NCCL_HOSTID", "node-a"}}, {.gpus_per_pod = 1, .host_ipc = true});
    CHECK(p.intra_transport() == "P2P/CUMEM/read");
  }
  SECTION("NCCL_P2P_DISABLE=1 -> SHM; NCCL_SHM_DISABLE=1 too -> the network") {
    CHECK(predictor("hgx-h100", 1, 8, {{"NCCL_P2P_DISABLE", "1"}}).intra_transport() == "SHM/direct/direct");
    CHECK(predictor("p5.48xlarge", 1, 8, {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}}).intra_transport() ==
          "NET/Libfabric/0/GDRDMA");
  }
  SECTION("no fabric manager: no NVLink; H100 GPUs sit on separate PCIe switches (PHB > PXB) -> SHM") {
    CHECK(predictor("hgx-h100", 1, 8, {}, {.fabric_manager = false}).intra_transport() == "SHM/direct/direct");
  }
  SECTION("a platform without P2P -> SHM") {
    CHECK(predictor("hgx-h100", 1, 8, {}, {.p2p = PlatformP2p::DISABLED}).intra_transport() == "SHM/direct/direct");
  }
  SECTION("between nodes: InfiniBand verbs with GPUDirect RDMA, or sockets without it") {
    CHECK(predictor("dgx-h100", 2, 8).inter_transport() == "NET/IB/0/GDRDMA");
    CHECK(predictor("dgx-h100", 2, 8, {{"NCCL_IB_DISABLE", "1"}}).inter_transport() == "NET/Socket/0");
  }
  SECTION("more GPUs than the node has is bad input") {
    CHECK_THROWS_AS(predictor("hgx-h100", 1, 9), InputError);
    CHECK_THROWS_AS(predictor("hgx-h100", 2, 8), InputError);  // a bare system has no network
  }
}

TEST_CASE("NVLS where NCCL supports it", "[unit][nccl]") {
  CHECK(predictor("hgx-h100", 1, 8).system().nvls_supported());
  CHECK_FALSE(predictor("hgx-a100", 1, 8).system().nvls_supported());
  CHECK_FALSE(predictor("hgx-h100", 1, 8, {{"NCCL_NVLS_ENABLE", "0"}}).system().nvls_supported());
  // NCCL 2.20 disables NVLS on several nodes (nvls.cc: nNodes > 1).
  CHECK_FALSE(predictor("dgx-h100", 2, 8, {}, {}, "2.20.5").system().nvls_supported());
  CHECK(predictor("dgx-h100", 2, 8, {}, {}, "2.28").system().nvls_supported());
}

TEST_CASE("channels as NCCL's search finds them", "[unit][nccl]") {
  SECTION("8 x H100, NCCL 2.28") {
    const auto p = predictor("hgx-h100", 1, 8);
    // NVLink per GPU 18 x 20.6 = 370.8 GB/s. Speeds 60, 50, 40, 30: 6x60 = 360 is the best and stops
    // at 24/60 < 0.49; duplicated (60 >= 50) into 12 x 30; 12 x 40 = 480 does not fit.
    CHECK(p.channels().ring.n_channels == 12);
    CHECK(p.channels().ring.bw_intra == Approx(30.0));
    // Run time: rings and trees doubled, 24 channels.
    CHECK(p.channels().coll_channels == 24);
    // NVLS: (8 + 1) x s <= 370.8 -> s = 40, one channel per GPU; 16 NVLS channels at run time.
    CHECK(p.channels().nvls.n_channels == 8);
    CHECK(p.channels().nvls.bw_intra == Approx(40.0));
    CHECK(p.channels().nvls_channels == 16);
  }
  SECTION("8 x A100, NCCL 2.18.5") {
    const auto p = predictor("hgx-a100", 1, 8, {}, {}, "2.18.5");
    // 12 x 20 = 240 GB/s; 6 x 40 = 240 uses it all; duplicated into 12 x 20; 24 at run time.
    CHECK(p.channels().ring.n_channels == 12);
    CHECK(p.channels().ring.bw_intra == Approx(20.0));
    CHECK(p.channels().coll_channels == 24);
  }
  SECTION("2 x DGX H100 over InfiniBand") {
    const auto p = predictor("dgx-h100", 2, 8);
    // NIC 400 Gb/s = 50 GB/s, PCIe Gen5 x16 48 GB/s: s = 48; 8 NICs, 8 GPUs next to one each,
    // NVLink 370.8 / (48 x 7/8) = 8.8: 8 x 48 = 384 >= 370.8, done; not duplicated (48 < 50, n > 4).
    CHECK(p.channels().ring.n_channels == 8);
    CHECK(p.channels().ring.bw_inter == Approx(48.0));
    CHECK(p.channels().coll_channels == 16);
  }
  SECTION("P2P channels per peer: 2 per NVLink of the pair, 2 where the pair cannot use P2P") {
    // 8 x H100: 24 run-time channels -> p2pnChannels 32; per peer 2 x 18 NVLinks = 36, at most
    // the 32 channels there are.
    CHECK(predictor("hgx-h100", 1, 8).channels().p2p_channels == 32);
    CHECK(predictor("hgx-h100", 1, 8).channels().p2p_channels_per_peer == 32);
    // NCCL_P2P_DISABLE=1: the pair's path goes through the CPU (paths.cc), ncclTopoGetNchannels
    // gives 2; so LL carries p2p messages up to 2 x 16 KiB only.
    CHECK(predictor("hgx-h100", 1, 8, {{"NCCL_P2P_DISABLE", "1"}}).channels().p2p_channels_per_peer == 2);
  }
  SECTION("NCCL_MAX_P2P_NCHANNELS and NCCL_MIN_P2P_NCHANNELS bound the P2P channels") {
    // 4 x H200: 24 run-time channels; paths.cc ncclTopoComputeP2pChannels takes min(24, MAX),
    // then max(that, MIN), then the next power of 2 (per peer too). Unset: 24 -> 32 and 32 per
    // peer (2 x 18 NVLinks = 36, at most 32). MAX 8: 8 and 8. MAX 6: 6 -> 8, and 6 per peer -> 8.
    // MIN 32: 32, as unset (nccl-tests alltoall measured alike with and without it on 4 x H200,
    // calibrate/results/lent-4xh200-2026-11-28-p2p-ramp).
    auto p2p = [](std::map<std::string, std::string> env) {
      const auto c = predictor("hgx-h200", 1, 4, std::move(env)).channels();
      return std::pair{c.p2p_channels, c.p2p_channels_per_peer};
    };
    CHECK(p2p({}) == std::pair{32, 32});
    CHECK(p2p({{"NCCL_MAX_P2P_NCHANNELS", "8"}}) == std::pair{8, 8});
    CHECK(p2p({{"NCCL_MAX_P2P_NCHANNELS", "6"}}) == std::pair{8, 8});
    CHECK(p2p({{"NCCL_MIN_P2P_NCHANNELS", "32"}}) == std::pair{32, 32});
    CHECK(p2p({{"NCCL_MAX_P2P_NCHANNELS", "2"}, {"NCCL_MIN_P2P_NCHANNELS", "4"}}) == std::pair{4, 4});
    CHECK_THROWS_AS(predictor("hgx-h200", 1, 4, {{"NCCL_MAX_P2P_NCHANNELS", "0"}}), InputError);
  }
  SECTION("NCCL_MAX_NCHANNELS and NCCL_MIN_NCHANNELS clamp the run-time count") {
    CHECK(predictor("hgx-h100", 1, 8, {{"NCCL_MAX_NCHANNELS", "4"}}).channels().coll_channels == 4);
    CHECK(predictor("hgx-h100", 1, 8, {{"NCCL_MIN_NCHANNELS", "32"}}).channels().coll_channels == 32);
  }
}

TEST_CASE("without P2P the channels follow the path through the CPU; without SHM too every GPU is a node",
          "[unit][nccl]") {
  SECTION("SHM: 4 x H200 with NCCL_P2P_DISABLE=1 run 4 channels (NCCL 2.28.9 measured)") {
    const auto p = predictor("hgx-h200", 1, 4, {{"NCCL_P2P_DISABLE", "1"}});
    // The path GPU -> CPU -> GPU is PCIe Gen5 x16, 48 GB/s to NCCL, each GPU's link carrying each
    // ring channel once each way. From 40 (the fastest speed <= 48): 1 x 40; 30/40 > 0.49: 1 x 30;
    // 24: 2 x 24 = 48, the best; 20: 2 x 20; 15: 3 x 15 = 45; 12: 4 x 12 = 48, not more; 11/24 < 0.49
    // stops. 24 < 25 GB/s: not duplicated. Run time 2 x 2 = 4.
    CHECK(p.channels().ring.n_channels == 2);
    CHECK(p.channels().ring.bw_intra == Approx(24.0));
    CHECK(p.channels().coll_channels == 4);
    // p2pnChannels: 4; per peer 2 (a pair without P2P).
    CHECK(p.channels().p2p_channels == 4);
    CHECK(p.channels().p2p_channels_per_peer == 2);
    // The graph's path is through the CPU of one socket (GPUs 0-3 on NUMA node 0): PHB, so NCCL's
    // tuner leaves LL128 out (tuning.cc: LL128 only within PATH_NVB).
    CHECK(p.channels().ring.type_intra == PathType::PHB);
  }
  SECTION("NET: 4 x H200 with P2P and SHM disabled, sockets over the host's interface") {
    const auto p = predictor("hgx-h200", 1, 4, {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}});
    // NCCL logs "nNodes 4 localRanks 1": each GPU a node of its own.
    CHECK(p.system().nccl_nodes() == 4);
    CHECK(p.system().ranks_per_host() == 1);
    CHECK(p.inter_transport() == "NET/Socket/0");
    // One socket device of 10 Gb/s = 1.25 GB/s (NCCL's default where it cannot read a speed): the
    // inter speeds from 1.2 (the fastest <= 1.25), 1 x 1.2; run time 2 (measured: 2 coll channels).
    CHECK(p.channels().ring.n_channels == 1);
    CHECK(p.channels().ring.bw_inter == Approx(1.2));
    CHECK(p.channels().coll_channels == 2);
    // P2P: 2 channels, 2 per peer (NCCL's 2 for a network peer, 2 x 4 ranks <= 2 x 4 kept).
    CHECK(p.channels().p2p_channels_per_peer == 2);
  }
  SECTION("NET: NCCL_NCHANNELS_PER_NET_PEER sets the P2P channels per network peer, within the P2P channels") {
    // 2 x H200 over sockets, NCCL 2.28.9 logged "2 p2p channels, 1 p2p channels per peer" with the
    // variable at 1, and still "2 p2p channels per peer" with it at 4 (at most the 2 P2P channels);
    // 0 or less leaves NCCL's own count (init.cc)
    // (calibrate/results/lent-2xh200-2026-11-29-net-p2p).
    const std::map<std::string, std::string> net = {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}};
    auto per_peer = [&](const char* v) {
      auto env = net;
      env["NCCL_NCHANNELS_PER_NET_PEER"] = v;
      return predictor("hgx-h200", 1, 2, env).channels().p2p_channels_per_peer;
    };
    CHECK(per_peer("1") == 1);
    CHECK(per_peer("4") == 2);
    CHECK(per_peer("0") == 2);
  }
  SECTION("p5 with P2P and SHM disabled: the GPUs meet through their EFA devices") {
    const auto p = predictor("p5.48xlarge", 1, 8, {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}});
    CHECK(p.system().nccl_nodes() == 8);
    CHECK(p.intra_transport() == "NET/Libfabric/0/GDRDMA");
  }
}

TEST_CASE("the tuner chooses as NCCL's does", "[unit][nccl]") {
  const auto h100 = predictor("hgx-h100", 1, 8);
  SECTION("latency of ring LL on 8 GPUs: 6.6 + 14 steps x 0.6 us = 15.0 us") {
    CHECK(h100.tuner().latency(CollectiveOp::ALL_REDUCE, Algorithm::RING, Protocol::LL) == Approx(15.0));
  }
  SECTION("small all-reduce: Ring LL; large: NVLS") {
    // 1 KiB: Ring LL 15.0 us + tiny, Tree LL 6.8 + 2 x 7 x 0.6 = 15.2 us, NVLS 25 us.
    CHECK(h100.choice(CollectiveOp::ALL_REDUCE, Bytes::kib(1)).algorithm == Algorithm::RING);
    CHECK(h100.choice(CollectiveOp::ALL_REDUCE, Bytes::kib(1)).protocol == Protocol::LL);
    // 8 GiB: NVLS 0.85 x 40 x 7/8 x 2 x 8 ch x 8/14 = 272 GB/s beats Ring Simple 360 x 8/14 = 206 GB/s.
    CHECK(h100.choice(CollectiveOp::ALL_REDUCE, Bytes::gib(8)).algorithm == Algorithm::NVLS);
  }
  SECTION("NCCL_ALGO and NCCL_PROTO restrict the choice") {
    const auto p = predictor("hgx-h100", 1, 8, {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "LL128"}});
    const TunerChoice c = p.choice(CollectiveOp::ALL_REDUCE, Bytes::gib(1));
    CHECK(c.algorithm == Algorithm::RING);
    CHECK(c.protocol == Protocol::LL128);
  }
  SECTION("NVLS asked on A100: NCCL 2.28 would fail; the prediction shows the automatic choice and says so") {
    const TunerChoice c = predictor("hgx-a100", 1, 8, {{"NCCL_ALGO", "NVLS"}}).choice(CollectiveOp::ALL_REDUCE, Bytes::gib(1));
    CHECK(c.fell_back);
    CHECK(c.algorithm == Algorithm::RING);
    REQUIRE_FALSE(c.notes.empty());
    CHECK_THAT(c.notes.front(), Catch::Contains("no algorithm"));
  }
  SECTION("EFA on p4d forces the Simple protocol on several nodes") {
    // aws-ofi-nccl exports NCCL_PROTO=simple where the EFA endpoint refuses 128-byte in-order
    // delivery (p4d/p4de, catalog efa-v1).
    const auto p = predictor("p4d.24xlarge", 2, 8);
    CHECK(p.choice(CollectiveOp::ALL_REDUCE, Bytes::kib(4)).protocol == Protocol::SIMPLE);
    // A protocol the user sets stays (the plugin only sets NCCL_PROTO when it is unset); one that
    // allows LL or LL128 runs them, with the plugin's warning that the endpoint may corrupt data.
    const auto ll128 = predictor("p4d.24xlarge", 2, 8, {{"NCCL_PROTO", "LL128"}});
    CHECK(ll128.choice(CollectiveOp::ALL_REDUCE, Bytes::mib(1)).protocol == Protocol::LL128);
    CHECK_THAT(Catch::Detail::stringify(ll128.notes()), Catch::Contains("may corrupt data"));
    const auto simple = predictor("p4d.24xlarge", 2, 8, {{"NCCL_PROTO", "Simple"}});
    CHECK_THAT(Catch::Detail::stringify(simple.notes()), !Catch::Contains("may corrupt data"));
    // One node never crosses EFA.
    const auto one = predictor("p4d.24xlarge", 1, 8, {{"NCCL_PROTO", "LL128"}});
    CHECK_THAT(Catch::Detail::stringify(one.notes()), !Catch::Contains("may corrupt data"));
  }
  SECTION("EFA on p5 keeps LL and LL128 (in-order RDMA writes, aws-ofi-nccl v1.16.3)") {
    const auto p = predictor("p5.48xlarge", 2, 8);
    CHECK(p.tuner().bandwidth(CollectiveOp::ALL_REDUCE, Algorithm::TREE, Protocol::LL128) > 0);
    CHECK(p.choice(CollectiveOp::ALL_REDUCE, Bytes::kib(4)).protocol != Protocol::SIMPLE);
  }
  SECTION("the latency the network plugin reports enters NCCL's inter-node latency") {
    // tuning.cc: interLat = hwLat[NET][a][p] + latencyInter (twice for Simple); the tree adds
    // 2 x log2(nNodes) x interLat. Two p5 nodes: aws-ofi-nccl reports 75 us.
    const auto p = predictor("p5.48xlarge", 2, 8);
    CHECK(p.channels().ring.latency_inter_us == Approx(75.0));
    CHECK(p.channels().tree.latency_inter_us == Approx(75.0));
    CHECK(p.channels().nvls.latency_inter_us == Approx(75.0));
    // Tree/LL128, 8 ranks per node, NVLink inside: 14.0 (base) + 2 x (7 x 1.25 + 1 x (8.5 + 75))
    // = 14.0 + 2 x (8.75 + 83.5) = 198.5 us.
    CHECK(p.tuner().latency(CollectiveOp::ALL_REDUCE, Algorithm::TREE, Protocol::LL128) == Approx(198.5));
    // Tree/Simple: 8.4 + 2 x (7 x 4.0 + (14 + 2 x 75)) = 8.4 + 2 x (28 + 164) = 392.4 us.
    CHECK(p.tuner().latency(CollectiveOp::ALL_REDUCE, Algorithm::TREE, Protocol::SIMPLE) == Approx(392.4));
    // One node: no graph crosses the network.
    CHECK(predictor("p5.48xlarge", 1, 8).channels().ring.latency_inter_us == 0.0);
    // NCCL's own InfiniBand transport reports 0 (net_ib.cc: props->latency = 0).
    CHECK(predictor("dgx-h100", 2, 8).channels().ring.latency_inter_us == 0.0);
  }
  SECTION("fewer channels for small sizes: ring LL threshold 8 x nRanks bytes per thread") {
    // 64 KiB: nc drops while 65536 < nc x 512 threads x (8 x 8): 65536 / 32768 = 2 channels.
    CHECK(h100.choice(CollectiveOp::ALL_REDUCE, Bytes::kib(64)).channels == 2);
  }
  SECTION("the planner spreads the data in cells over the channels (2.23 and later)") {
    // 4 x H200, 24 channels; measured with NCCL 2.28.9 (NCCL_DEBUG_SUBSYS=TUNING, channel{Lo..Hi}).
    const auto h200 = predictor("hgx-h200", 1, 4);
    // Broadcast 2 MiB, Ring/Simple, nMaxChannels 24, traffic 1 a byte: cells of 16 KiB, 128 of
    // them; budget 2 MiB / 24 = 87,381 bytes = ceil(5.33) = 6 cells a channel: 6 + 20 x 6 + 2
    // cells on 22 channels, the busiest 6 x 16 KiB = 96 KiB.
    const TunerChoice b = h200.choice(CollectiveOp::BROADCAST, Bytes::mib(2));
    CHECK(b.protocol == Protocol::SIMPLE);
    CHECK(b.max_channels == 24);
    CHECK(b.channels == 22);
    CHECK(b.channel_bytes == 96 * 1024);
    // All-gather of 512 KiB in all (128 KiB a rank), Ring/LL: traffic 4 ranks x 4 (LL) = 16 a
    // byte, cells of ceil(16384 / 16) = 1 KiB, 128 of them, 2 MiB of traffic / 24 = 87,381: 6
    // cells a channel again, 22 channels; the busiest moves 6 KiB of each rank's piece, 24 KiB.
    const TunerChoice g = h200.choice(CollectiveOp::ALL_GATHER, Bytes::kib(512));
    CHECK(g.protocol == Protocol::LL);
    CHECK(g.channels == 22);
    CHECK(g.channel_bytes == 24 * 1024);
    // All-reduce 512 KiB, Ring/LL: traffic 2 x 4 = 8, cells of 2 KiB, 256 of them, 4 MiB / 24 =
    // 174,763 bytes: 11 cells a channel, 11 + 22 x 11 + 3 on all 24, the busiest 22 KiB (an even
    // split: 21.3 KiB).
    const TunerChoice a = h200.choice(CollectiveOp::ALL_REDUCE, Bytes::kib(512));
    CHECK(a.channels == 24);
    CHECK(a.channel_bytes == 22 * 1024);
    // 32 MiB: 2,048 cells, 86 a channel, 86 + 22 x 86 + 70 on 24: within 1% of an even split.
    const TunerChoice big = h200.choice(CollectiveOp::BROADCAST, Bytes::mib(32));
    CHECK(big.channels == 24);
    CHECK(big.channel_bytes == 86 * 16 * 1024);
    // Releases before 2.23 split evenly over nMaxChannels.
    const TunerChoice old = predictor("hgx-h200", 1, 4, {}, {}, "2.20").choice(CollectiveOp::BROADCAST, Bytes::mib(2));
    CHECK(old.channels == old.max_channels);
    CHECK(old.channel_bytes == 0);
  }
}

TEST_CASE("fast-path predictions have the right asymptotes", "[unit][nccl]") {
  SECTION("ring all-reduce on 8 H100s approaches NCCL's NVLink figure") {
    const auto p = predictor("hgx-h100", 1, 8, {{"NCCL_ALGO", "Ring"}});
    // The links carry 18 x 25 GB/s x (20.6 / 25) = 370.8 GB/s, 370.8 / 24 = 15.45 GB/s per channel;
    // each channel's loop is 2 x 7 = 14 sends at that rate, then one local copy step (recv, one
    // load and one store) at the block's 38.7 GB/s (perChMaxTreeBw) while its links idle:
    // Each 1 MiB slice (chunk 4 x 512 KiB steps in 2 slices) also holds its block for the Simple
    // slice overhead, 1.4 us: 1 MiB / 15.45 GB/s = 67.87 us + 1.4 per send, 1 MiB / 38.7 GB/s =
    // 27.09 us + 1.4 for the local step: busbw -> 24 x 14 x 1.048576 MB / (14 x 69.27 + 28.49) us
    // = 352.9 GB/s; at 8 GiB within 1%.
    CHECK(p.predict(CollectiveOp::ALL_REDUCE, Bytes::gib(8)).busbw_GBps == Approx(352.9).epsilon(0.01));
  }
  SECTION("NVLS all-reduce reaches 0.85 x the NVLS graph (8 x 40 GB/s) as algorithm bandwidth") {
    const auto p = predictor("hgx-h100", 1, 8);
    // algbw -> 0.85 x 320 = 272 GB/s, busbw = 272 x 2 x 7/8 = 476 GB/s.
    CHECK(p.predict(CollectiveOp::ALL_REDUCE, Bytes::gib(8)).busbw_GBps == Approx(476).epsilon(0.01));
  }
  SECTION("host-bound small sizes with nccl-tests -g 8") {
    const auto p = predictor("hgx-h100", 1, 8);
    // 8 GPUs driven by one thread: 8 x (4 us call + 1.75 us group launch per communicator, the
    // 2.28 table's estimates) = 46 us host time per iteration beats the GPU time (~15 us); the
    // loop's closing wait (fallback: an empty call, 4 / 10 = 0.4 us) adds 0.4 / 20 launches.
    CHECK(p.predict(CollectiveOp::ALL_REDUCE, Bytes::of(8), {.gpus_per_thread = 8}).time.microseconds() ==
          Approx(46.02));
  }
  SECTION("host-bound small sizes with nccl-tests -t 8 and -t 4 -g 2 (threads of one process)") {
    const auto p = predictor("hgx-h200", 1, 8);
    // Fallbacks: call 4 us, group launch 1.75 us a communicator (the 2.28 table), the serial part
    // of a call half a call, 2 us, the closing wait an empty call's 0.4 us over 20 launches.
    // -t 8 -g 1: the eight threads queue on the serial part, the last done after its own call and
    // the other seven's serial parts: 4 + 7 x 2 = 18 us (+ 0.02), above the GPU time.
    CHECK(p.predict(CollectiveOp::ALL_REDUCE, Bytes::of(8), {.threads_per_process = 8}).time.microseconds() ==
          Approx(18.02));
    // -t 4 -g 2: each thread 2 x (4 + 1.75) = 11.5 us alone; the other three threads' two calls
    // hold 3 x 2 x (2 + 1.75) = 22.5 us of it: 34 us (+ 0.02).
    CHECK(p.predict(CollectiveOp::ALL_REDUCE, Bytes::of(8), {.threads_per_process = 4, .gpus_per_thread = 2})
              .time.microseconds() == Approx(34.02));
    // One thread a process (MPI, or the harness's processes): the GPU time, below the threads'.
    CHECK(p.predict(CollectiveOp::ALL_REDUCE, Bytes::of(8)).time.microseconds() < 18.0);
  }
  SECTION("NCCL 2.20.5's measured group launch cost with nccl-tests -g 8") {
    const auto p = predictor("hgx-h200", 1, 8, {}, {}, "2.20.5");
    // versions/2.20.5.json: 0.75 us per communicator (nccl-tests -g 4 on 4 x H200 with NCCL
    // 2.20.5: 19.0 us per iteration / 4 = 4.75 us, less the 4 us call) -> 8 x (4 + 0.75) = 38 us,
    // still above the GPU time of an 8-byte all-reduce, + the closing wait 0.4 us / 20 = 38.02 us.
    CHECK(p.predict(CollectiveOp::ALL_REDUCE, Bytes::of(8), {.gpus_per_thread = 8}).time.microseconds() ==
          Approx(38.02));
  }
  SECTION("NCCL 2.20.5's NVLS chunk is capped at 128 KiB") {
    const auto p = predictor("hgx-h200", 1, 8, {{"NCCL_ALGO", "NVLS"}}, {}, "2.20.5");
    const auto c = p.choice(CollectiveOp::ALL_REDUCE, Bytes::gib(8));
    REQUIRE(c.algorithm == Algorithm::NVLS);
    REQUIRE(c.channels == 16);
    // v2.20.5-1 enqueue.cc computeCollChunkInfo: the 512 KiB Simple step (4 MiB / 8) is capped at
    // maxChunkSize 131072; 8 GiB is not below 64 x (16 channels x 8 heads) x 128 KiB = 1 GiB, so
    // it stays 128 KiB: 8 GiB / 16 channels / 128 KiB = 4096 chunks per channel (512 KiB chunks
    // would give 1024).
    CHECK(p.program(CollectiveOp::ALL_REDUCE, Bytes::gib(8), c).transfers.size() == 4096);
  }
  SECTION("aws-ofi-nccl's NVLS chunk settings on p5 set the NVLS-Tree chunk") {
    // Two p5 nodes, NVLS-Tree, 16 channels, 8 heads; 16 GiB: 1 GiB per channel. The plugin's
    // NCCL_NVLS_CHUNKSIZE = NCCL_NVLSTREE_MAX_CHUNKSIZE = 512 KiB (fabric efa-v2) give a 512 KiB
    // chunk (16 GiB is not below 32 x 128 x 512 KiB = 2 GiB): 1 GiB / (8 x 512 KiB) = 256 loops;
    // NCCL's own 128 KiB gives 1024 loops. A loop on 2 nodes is 4 transfers (the NVLS reduction,
    // one tree hop up, one down, the NVLS broadcast).
    const auto p = predictor("p5.48xlarge", 2, 8, {{"NCCL_ALGO", "NVLSTree"}}, {}, "2.28.7");
    const auto c = p.choice(CollectiveOp::ALL_REDUCE, Bytes::gib(16));
    REQUIRE(c.algorithm == Algorithm::NVLS_TREE);
    REQUIRE(c.channels == 16);
    CHECK(p.program(CollectiveOp::ALL_REDUCE, Bytes::gib(16), c).transfers.size() == 256 * 4);
    const auto q = predictor("p5.48xlarge", 2, 8, {{"NCCL_ALGO", "NVLSTree"}, {"NCCL_NVLS_CHUNKSIZE", "131072"},
                                                   {"NCCL_NVLSTREE_MAX_CHUNKSIZE", "131072"}}, {}, "2.28.7");
    CHECK(q.program(CollectiveOp::ALL_REDUCE, Bytes::gib(16), c).transfers.size() == 1024 * 4);
  }
  SECTION("busbw factors are nccl-tests'") {
    CHECK(busbw_factor(CollectiveOp::ALL_REDUCE, 8) == Approx(1.75));
    CHECK(busbw_factor(CollectiveOp::ALL_GATHER, 8) == Approx(0.875));
    CHECK(busbw_factor(CollectiveOp::BROADCAST, 8) == Approx(1.0));
  }
}

TEST_CASE("send/recv leaves LL at p2pnChannelsPerPeer x NCCL_P2P_LL_THRESHOLD", "[unit][nccl]") {
  // 2 x H200: 32 channels per peer (2 x 18 NVLinks, at most the 32 P2P channels), so LL carries a
  // message up to 32 x 16 KiB = 512 KiB by default and up to 32 x 4 KiB = 128 KiB at 4096
  // (enqueue.cc addP2pToPlan thresholdLL); 0 turns it off. Measured on 2 x H200
  // (calibrate/results/lent-2xh200-2026-11-21-p2p-ll): 128 KiB 10.9 us at 4096 (LL) against
  // 13.4 us with LL off; 256 KiB 13.5 us at 4096 and off alike (Simple).
  const auto at = [](const std::map<std::string, std::string>& env, Bytes size) {
    return predictor("hgx-h200", 1, 2, env).predict(CollectiveOp::SENDRECV, size).time.seconds();
  };
  const std::map<std::string, std::string> off{{"NCCL_P2P_LL_THRESHOLD", "0"}};
  const std::map<std::string, std::string> small{{"NCCL_P2P_LL_THRESHOLD", "4096"}};
  CHECK(at(small, Bytes::kib(128)) == Approx(at({}, Bytes::kib(128))));
  CHECK(at(small, Bytes::kib(128)) < at(off, Bytes::kib(128)));
  CHECK(at(small, Bytes::kib(256)) == Approx(at(off, Bytes::kib(256))));
  CHECK(at({}, Bytes::kib(256)) < at(off, Bytes::kib(256)));
  CHECK_THROWS_AS(predictor("hgx-h200", 1, 2, {{"NCCL_P2P_LL_THRESHOLD", "-1"}}), InputError);
}

TEST_CASE("send/recv inside a node: the sender's and the receiver's warps share the block", "[unit][nccl]") {
  // 2 x H200 (no profile): 32 P2P channels, nChannelsMin 16 (enqueue.cc: halved while
  // 32 x 2 ranks > 32), a part doubled only past 32 steps of 512 KiB (16 MiB).
  const CollectivePredictor p = predictor("hgx-h200", 1, 2);
  const auto at = [&](Bytes size) { return p.predict(CollectiveOp::SENDRECV, size).time.microseconds(); };
  const double c = p.rates().simple_channel.bytes_per_second();
  const double o = p.rates().simple_slice_overhead.seconds() * 1e6;
  // Simple, 128 MiB and 256 MiB over 16 channels: 8 MiB and 16 MiB a channel, 16 and 32 steps of
  // 524288 bytes. In steady state every step is sent beside the previous one's receive: each side
  // has 9 copying warps (sendrecv.h 10 send + 9 receive, one send warp synchronising), C / 2 each;
  // the sender also pays its slice overhead o, so it sets the pace: 16 more steps cost
  // 16 x (o + 524288 / r), r = C / 2 less the NVLink knee: the 16 sends offer 16 x C / 2 against
  // the link's L, so each runs at r = (C / 2) (1 + (C / 2 / (L / 16))^p)^(-1/p) (step_program.hpp;
  // fallbacks C = 38.7, L = 370.8 GB/s, p = 3.2: 16.83 GB/s).
  const double half = c / 2;
  const double share = p.rates().nvlink.bytes_per_second() / 16;
  const double knee = p.rates().nvlink_knee;
  REQUIRE(knee == Approx(3.2));
  const double r = half * std::pow(1 + std::pow(half / share, knee), -1 / knee);
  CHECK(r / 1e9 == Approx(16.83).epsilon(0.001));
  CHECK(at(Bytes::mib(256)) - at(Bytes::mib(128)) == Approx(16 * (o + 524288 / r * 1e6)).epsilon(1e-6));
  // LL (up to 32 x 16 KiB = 512 KiB): 256 KiB and 512 KiB over 16 channels are one and two steps
  // of 16 KiB a channel; both sides copy every line at once, at the receive's share of LL's block
  // rate (9 of 19 warps): the second step adds 16384 / (C_LL x 9 / 19), less the knee, which
  // far from the link costs little: (1 + (5.26 / 23.2)^3.2)^(-1/3.2) = 0.997.
  const double ll_block = p.rates().ll_channel.bytes_per_second() * 9 / 19;
  const double ll = ll_block * std::pow(1 + std::pow(ll_block / share, knee), -1 / knee);
  CHECK(ll / ll_block == Approx(0.997).epsilon(0.001));
  CHECK(at(Bytes::kib(512)) - at(Bytes::kib(256)) == Approx(16384 / ll * 1e6).epsilon(1e-6));
}

TEST_CASE("a P2P side copying alone reaches nccl.p2p.alone_share of its block", "[unit][nccl]") {
  // 2 x H200 send/recv (rank r sends to r + 1 and receives from r - 1), Simple: 128 MiB and 256 MiB
  // are 16 and 32 steps of 524288 bytes on each of 16 channels. A message's first step is sent
  // before anything has arrived and its last is received after every send: those two copies have
  // the block's warps of one side only, at share a: a x C instead of C (C = 38.7 GB/s, the H200's
  // Simple copy rate without a profile). The last receive is a local copy: a = 0.5 adds
  // 524288 / (0.5 C) - 524288 / C = 13.55 us. The first send crosses NVLink beside the other 15
  // channels' and meets the knee (see the test above: r(x) = x (1 + (x / (L / 16))^p)^(-1/p),
  // L = 370.8 GB/s, p = 3.2): r(C) = 21.93 and r(C / 2) = 16.84 GB/s, 7.22 us more. Together
  // 20.77 us more a message, whatever its number of steps.
  auto at = [](const hardware::CalibrationProfile* profile, Bytes size) {
    return predictor("hgx-h200", 1, 2, {}, {}, "2.28", profile).predict(CollectiveOp::SENDRECV, size).time.microseconds();
  };
  const auto half = testing::profile_of("alone", {testing::ratio_parameter("nccl.p2p.alone_share", 0.5)});
  const CollectivePredictor p = predictor("hgx-h200", 1, 2);
  const double c = p.rates().simple_channel.bytes_per_second();
  const double share = p.rates().nvlink.bytes_per_second() / 16;
  const double knee = p.rates().nvlink_knee;
  REQUIRE(c / 1e9 == Approx(38.7));
  auto r = [&](double x) { return x * std::pow(1 + std::pow(x / share, knee), -1 / knee); };
  CHECK(r(c) / 1e9 == Approx(21.93).epsilon(0.001));
  CHECK(r(c / 2) / 1e9 == Approx(16.84).epsilon(0.001));
  const double extra = (524288 / (c / 2) - 524288 / c + 524288 / r(c / 2) - 524288 / r(c)) * 1e6;
  CHECK(extra == Approx(20.77).epsilon(0.001));
  CHECK(at(&half, Bytes::mib(128)) - at(nullptr, Bytes::mib(128)) == Approx(extra).epsilon(0.005));
  CHECK(at(&half, Bytes::mib(256)) - at(nullptr, Bytes::mib(256)) == Approx(extra).epsilon(0.005));
}

TEST_CASE("send/recv over the network uses LL only where NCCL allocates LL buffers for it", "[unit][nccl]") {
  // init.cc NCCL_ALLOC_P2P_NET_LL_BUFFERS (default 0): net.cc gives the shared p2p connections LL
  // buffers only when it is 1, and addP2pToPlan uses LL only where the connection has them.
  // 2 x p5: 2 channels per network peer, LL up to 2 x 16 KiB = 32 KiB.
  const auto proto = [](const std::map<std::string, std::string>& env, Bytes size) {
    return predictor("p5.48xlarge", 2, 8, env).predict(CollectiveOp::SENDRECV, size).protocol;
  };
  CHECK(proto({}, Bytes::kib(8)) == Protocol::SIMPLE);
  CHECK(proto({{"NCCL_ALLOC_P2P_NET_LL_BUFFERS", "1"}}, Bytes::kib(8)) == Protocol::LL);
  CHECK(proto({{"NCCL_ALLOC_P2P_NET_LL_BUFFERS", "1"}}, Bytes::kib(128)) == Protocol::SIMPLE);
}
