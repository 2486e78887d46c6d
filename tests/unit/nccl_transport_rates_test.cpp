// What bounds the transports other than P2P write over NVLink: SHM through host memory, P2P read
// over NVLink, and NCCL's socket transport (nccl_parameters.hpp, collective_program.hpp).

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

CollectivePredictor predictor(const std::string& system, int gpus, std::map<std::string, std::string> env,
                              const hardware::CalibrationProfile* profile) {
  PredictorConfig cfg;
  cfg.node = hardware::resolve_node(catalog(), system);
  cfg.shape = {1, gpus};
  cfg.env = std::move(env);
  cfg.version = "2.28.9";
  cfg.profile = profile;
  return CollectivePredictor(cfg);
}

}  // namespace

TEST_CASE("SHM traffic shares its socket's host memory", "[unit][nccl]") {
  // Per GPU and per channel out of the way (100 GB/s each, no cost per slice), the host memory at
  // 0.6 of the catalog H200 host's 307.2 GB/s per socket: 184.32 GB/s, every SHM byte crossing it
  // twice.
  // The host's cache is left out (nccl.shm.host_cache_speedup 1; see the next test).
  const auto profile = testing::profile_of(
      "shm", {testing::ratio_parameter("nccl.shm.host_memory_efficiency", 0.6),
              testing::ratio_parameter("nccl.shm.host_cache_speedup", 1.0),
              testing::bandwidth_parameter("nccl.shm.bandwidth", 100e9),
              testing::bandwidth_parameter("nccl.shm.channel_bandwidth", 100e9),
              testing::duration_parameter("nccl.simple.slice_overhead", 0.0)});
  const std::map<std::string, std::string> env = {
      {"NCCL_P2P_DISABLE", "1"}, {"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}, {"NCCL_NVLS_ENABLE", "0"}};
  const CollectivePredictor p = predictor("hgx-h200", 4, env, &profile);
  REQUIRE(p.channels().coll_channels == 4);
  // Ring all-reduce: all 4 GPUs (one socket) send on 4 channels, 2 x 4 x 4 = 32 flows on the host
  // memory, 184.32 / 32 = 5.76 GB/s each, 4 x 5.76 = 23.04 GB/s out of each GPU: busbw 23.04 GB/s,
  // less the ring's final local step and the pipeline's fill (under 3% at 1 GiB).
  CHECK(p.predict(CollectiveOp::ALL_REDUCE, Bytes::gib(1)).busbw_GBps == Approx(23.04).epsilon(0.03));
  // Broadcast down a chain of 4: 3 of the 4 GPUs send, 2 x 4 x 4 x 3/4 = 24 flows, 7.68 GB/s each,
  // 30.72 GB/s a link: busbw 30.72 (the fill of a 1 GiB pipeline is below 1%).
  CHECK(p.predict(CollectiveOp::BROADCAST, Bytes::gib(1)).busbw_GBps == Approx(30.72).epsilon(0.01));
}

TEST_CASE("SHM buffers that the host's cache holds are served faster", "[unit][nccl]") {
  // A Simple step of 512 KiB (4 MiB over 8 slots), slices of 2 steps: 4 groups of slots, each
  // holding one slice; a 1 MiB slice fills its group, a 256 KiB one a quarter of it.
  const ProtocolBuffers simple{Bytes::kib(512), 1.0, 8};
  CHECK(shm_fifo_bytes(simple, 2, 1048576.0) == 4.0 * 1048576);
  CHECK(shm_fifo_bytes(simple, 2, 262144.0) == 4.0 * 262144);
  CHECK(shm_fifo_bytes(simple, 2, 8.0 * 1048576) == 4.0 * 1048576);  // at most the buffer
  // LL: 8 slots of 16 KiB payload in 32 KiB of lines, 4 KiB of data per step: 8 x 4 KiB x 2.
  CHECK(shm_fifo_bytes(ProtocolBuffers{Bytes::kib(16), 2.0, 8}, 1, 4096.0) == 65536.0);
  // Host memory 184.32 GB/s from DRAM, a 32 MiB cache twice as fast: buffers of 64 MiB find half
  // their traffic there, 184.32 / (0.5 / 2 + 0.5) = 245.76 GB/s; 16 MiB all of it, 368.64.
  NcclRates r;
  r.host_memory = Bandwidth::bytes_per_second(184.32e9);
  r.host_cache_bytes = 32.0 * 1048576;
  r.host_cache_speedup = 2;
  auto host = [&](double w) {
    return resource_capacities(r, w).per_instance[static_cast<int>(ResourceKind::HOST_MEMORY)].bytes_per_second();
  };
  CHECK(host(64.0 * 1048576) == Approx(245.76e9));
  CHECK(host(16.0 * 1048576) == Approx(368.64e9));
  CHECK(host(0) == Approx(184.32e9));
  // The ring all-reduce of the test above at 1 GiB: chunks of 2 MiB, slices of 1 MiB, every slot
  // full: 4 channels x 4 GPUs x 4 MiB = 64 MiB in use, the host at 245.76 GB/s over 32 flows, 4 of
  // them a GPU's: busbw 30.72 GB/s, less the fill and the ring's final local step, which take a
  // larger share (under 4%) than at the DRAM rate above.
  const auto profile = testing::profile_of(
      "shm-cache", {testing::ratio_parameter("nccl.shm.host_memory_efficiency", 0.6),
                    testing::bytes_parameter("nccl.shm.host_cache_bytes", 32.0 * 1048576),
                    testing::ratio_parameter("nccl.shm.host_cache_speedup", 2.0),
                    testing::bandwidth_parameter("nccl.shm.bandwidth", 100e9),
                    testing::bandwidth_parameter("nccl.shm.channel_bandwidth", 100e9),
                    testing::duration_parameter("nccl.simple.slice_overhead", 0.0)});
  const CollectivePredictor p = predictor(
      "hgx-h200", 4,
      {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}, {"NCCL_NVLS_ENABLE", "0"}}, &profile);
  REQUIRE(p.channels().coll_channels == 4);
  CHECK(p.predict(CollectiveOp::ALL_REDUCE, Bytes::gib(1)).busbw_GBps == Approx(30.72).epsilon(0.04));
}

TEST_CASE("an SHM channel's block moves at its own rate", "[unit][nccl]") {
  // One channel, the host and the GPU out of the way, no cost per slice: a 2-GPU broadcast moves
  // what a block copies, nccl.shm.channel_bandwidth over the chain's step weight (copySend out of
  // place: one load, two stores, w(1, 2) = 1 + f with the catalog H200 store share f = 0.773):
  // 20 / 1.773 = 11.28 GB/s.
  const auto profile = testing::profile_of(
      "shm-channel", {testing::ratio_parameter("nccl.shm.host_memory_efficiency", 1.0),
                      testing::bandwidth_parameter("nccl.shm.bandwidth", 100e9),
                      testing::bandwidth_parameter("nccl.shm.channel_bandwidth", 20e9),
                      testing::duration_parameter("nccl.simple.slice_overhead", 0.0)});
  const std::map<std::string, std::string> env = {{"NCCL_P2P_DISABLE", "1"},    {"NCCL_ALGO", "Ring"},
                                                  {"NCCL_PROTO", "Simple"},      {"NCCL_MIN_NCHANNELS", "1"},
                                                  {"NCCL_MAX_NCHANNELS", "1"},   {"NCCL_NVLS_ENABLE", "0"}};
  const CollectivePredictor p = predictor("hgx-h200", 2, env, &profile);
  CHECK(p.predict(CollectiveOp::BROADCAST, Bytes::gib(1)).busbw_GBps == Approx(11.28).epsilon(0.01));
  // With SHM's own store share (stores into host memory are posted writes), f = 0.25:
  // w(1, 2) = 0.75 + 2 x 0.25 = 1.25, 20 / 1.25 = 16 GB/s.
  const auto cheap = testing::profile_of(
      "shm-stores", {testing::ratio_parameter("nccl.shm.host_memory_efficiency", 1.0),
                     testing::bandwidth_parameter("nccl.shm.bandwidth", 100e9),
                     testing::bandwidth_parameter("nccl.shm.channel_bandwidth", 20e9),
                     testing::ratio_parameter("nccl.shm.store_fraction", 0.25),
                     testing::duration_parameter("nccl.simple.slice_overhead", 0.0)});
  const CollectivePredictor q = predictor("hgx-h200", 2, env, &cheap);
  CHECK(q.predict(CollectiveOp::BROADCAST, Bytes::gib(1)).busbw_GBps == Approx(16.0).epsilon(0.01));
}

TEST_CASE("P2P read over NVLink loses where the GPUs' ports carry data both ways", "[unit][nccl]") {
  // 8 x A100 read by default (p2p.cc, sm80); no NVLink knee for A100 in the catalog. Ring
  // all-reduce with Simple on NCCL's 24 channels: 12 NVLinks x 20 GB/s (NCCL's figure) = 240 GB/s a
  // GPU, 10 GB/s a channel's flow, below its block's rate: the ring is bound by the link, so at half
  // the read efficiency its 14 sends of a loop take twice as long; its final local step (the block
  // at 24 GB/s) does not: (14 / 10 + 1 / 24) / (14 / 5 + 1 / 24) = 0.507 of the busbw.
  const auto half = testing::profile_of("read", {testing::ratio_parameter("nccl.nvlink.read_efficiency", 0.5)});
  const std::map<std::string, std::string> env = {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}};
  const CollectivePredictor base = predictor("hgx-a100", 8, env, nullptr);
  const CollectivePredictor slow = predictor("hgx-a100", 8, env, &half);
  REQUIRE(base.intra_transport() == "P2P/CUMEM/read");
  const double ratio = slow.predict(CollectiveOp::ALL_REDUCE, Bytes::gib(8)).busbw_GBps /
                       base.predict(CollectiveOp::ALL_REDUCE, Bytes::gib(8)).busbw_GBps;
  CHECK(ratio == Approx(0.507).epsilon(0.01));
  // One pair's send: data one way, the requests on the other, idle, direction: no loss.
  CHECK(slow.predict_pair(Bytes::gib(1), 0, 1).time == base.predict_pair(Bytes::gib(1), 0, 1).time);
}

TEST_CASE("NCCL's socket transport: one proxy per rank carries both directions", "[unit][nccl]") {
  // 4 x H200 with P2P and SHM disabled: 4 NCCL nodes, a socket path each, 2 channels, the proxy
  // 5 GB/s sent plus received, no time per message. A ring all-reduce sends its busbw out of each
  // rank and receives as much at once: busbw = 5 / 2 = 2.5 GB/s, less the pipeline's fill (under
  // 2% at 256 MiB). A 2-rank broadcast moves its bytes one way only: the sender's proxy sends and
  // the receiver's receives, each at the full 5 GB/s, busbw = algbw = 5 GB/s, less the fill.
  const auto profile = testing::profile_of(
      "socket", {testing::bandwidth_parameter("nccl.net.socket_proxy_bandwidth", 5e9),
                 testing::duration_parameter("nccl.net.socket_message_overhead", 1e-12)});
  const std::map<std::string, std::string> env = {{"NCCL_P2P_DISABLE", "1"},
                                                  {"NCCL_SHM_DISABLE", "1"},
                                                  {"NCCL_ALGO", "Ring"},
                                                  {"NCCL_PROTO", "Simple"}};
  const CollectivePredictor p = predictor("hgx-h200", 4, env, &profile);
  CHECK(p.predict(CollectiveOp::ALL_REDUCE, Bytes::mib(256)).busbw_GBps == Approx(2.5).epsilon(0.02));
  const CollectivePredictor pair = predictor("hgx-h200", 2, env, &profile);
  CHECK(pair.predict(CollectiveOp::BROADCAST, Bytes::mib(256)).busbw_GBps == Approx(5.0).epsilon(0.02));
}

TEST_CASE("NCCL's P2P path reaches a share of the socket proxy's rate", "[unit][nccl]") {
  // 2 x H200 with P2P and SHM disabled, a proxy of 5 GB/s sent plus received and no time per
  // message. A 2-rank send/recv sends and receives at once, so a collective's rate would give
  // 5 / 2 = 2.5 GB/s each way; with nccl.net.socket_p2p_efficiency 0.8 each flow counts 1 / 0.8
  // on the proxy: 0.8 x 2.5 = 2.0 GB/s, less the pipeline's fill (under 2% at 256 MiB). A ring
  // all-gather, not P2P, does not see the share: its time is the same with either profile.
  const std::map<std::string, std::string> env = {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}};
  auto with = [&](double eff) {
    return testing::profile_of("socket", {testing::bandwidth_parameter("nccl.net.socket_proxy_bandwidth", 5e9),
                                          testing::duration_parameter("nccl.net.socket_message_overhead", 1e-12),
                                          testing::ratio_parameter("nccl.net.socket_p2p_efficiency", eff)});
  };
  const auto full = with(1.0);
  const auto share = with(0.8);
  CHECK(predictor("hgx-h200", 2, env, &full).predict(CollectiveOp::SENDRECV, Bytes::mib(256)).busbw_GBps ==
        Approx(2.5).epsilon(0.02));
  CHECK(predictor("hgx-h200", 2, env, &share).predict(CollectiveOp::SENDRECV, Bytes::mib(256)).busbw_GBps ==
        Approx(2.0).epsilon(0.02));
  CHECK(predictor("hgx-h200", 2, env, &share).predict(CollectiveOp::ALL_GATHER, Bytes::mib(256)).time ==
        predictor("hgx-h200", 2, env, &full).predict(CollectiveOp::ALL_GATHER, Bytes::mib(256)).time);
}

namespace {

// What 100 us of socket proxy time per message adds to an op of 256 KiB on 4 x H200 through
// NCCL's sockets (P2P and SHM disabled), Ring with Simple on 2 channels, the proxy too fast to
// matter (1 PB/s): its time with that overhead less its time with none.
double socket_message_time_us(CollectiveOp op) {
  const std::map<std::string, std::string> env = {{"NCCL_P2P_DISABLE", "1"},
                                                  {"NCCL_SHM_DISABLE", "1"},
                                                  {"NCCL_ALGO", "Ring"},
                                                  {"NCCL_PROTO", "Simple"},
                                                  {"NCCL_MIN_NCHANNELS", "2"},
                                                  {"NCCL_MAX_NCHANNELS", "2"}};
  auto with = [&](double overhead) {
    const auto profile = testing::profile_of(
        "socket", {testing::bandwidth_parameter("nccl.net.socket_proxy_bandwidth", 1e15),
                   testing::duration_parameter("nccl.net.socket_message_overhead", overhead)});
    return predictor("hgx-h200", 4, env, &profile).predict(op, Bytes::kib(256)).time;
  };
  return (with(100e-6) - with(1e-12)).microseconds();
}

}  // namespace

TEST_CASE("NCCL's socket proxy spends its time per message on every connection it keeps busy", "[unit][nccl]") {
  // The same 4 ranks with a 100 us proxy time per message and a proxy too fast to matter (1 PB/s),
  // at 256 KiB, 2 channels: each message of each channel waits for the proxy's time of the 2 x 2
  // messages (a send and a receive per channel) its rank keeps in flight, 400 us, where its bytes
  // take under 1 us. A message is a slice: all-gather's 256 KiB / 4 ranks / 2 channels = 32 KiB a
  // step, one chunk of CHUNKSTEPS / SLICESTEPS = 4 / 2 = 2 slices. The n - 1 = 3 steps run one after
  // another on each connection: 3 x 2 x 400 = 2,400 us more than with no time per message (5%).
  const double extra_us = socket_message_time_us(CollectiveOp::ALL_GATHER);
  CHECK(extra_us == Approx(2400).epsilon(0.05));
}

TEST_CASE("a socket chain's rank handles one message per channel at a time", "[unit][nccl]") {
  // The same 4 ranks, 100 us a message, the proxy too fast to matter, a broadcast of 256 KiB on 2
  // channels: 128 KiB a channel, one slice (BROADCAST_SLICESTEPS = CHUNKSTEPS = 1, a 512 KiB step)
  // crossing the 3 hops of the chain one after another. A middle rank receives a channel's slice
  // and then forwards it, so each message waits for the proxy's time of one message per channel,
  // 2 x 100 = 200 us (a ring's rank, sending one slice while it receives the next, waits for 4).
  // Back to back, a chain's kernels run ahead (the root starts its next broadcast while the last
  // rank still receives), so an iteration costs its slowest hop's time: 200 us more than with no
  // time per message, not 3 x 200.
  const double extra_us = socket_message_time_us(CollectiveOp::BROADCAST);
  CHECK(extra_us == Approx(200).epsilon(0.05));
}

TEST_CASE("an SHM GPU that stores and loads at once reaches a share of its rate each way", "[unit][nccl]") {
  // 2 x H200 over SHM, 4 channels, the blocks and the host memory out of the way (100 GB/s a
  // channel over SHM, 1 TB/s over NVLink, the host at the catalog's full 307.2 GB/s), no per-slice
  // cost: a GPU moves nccl.shm.bandwidth = 50 GB/s where it only stores or only loads, half that
  // each way where it does both (nccl.shm.two_way_efficiency 0.5).
  const auto profile =
      testing::profile_of("shm-two-way", {testing::ratio_parameter("nccl.shm.host_memory_efficiency", 1.0),
                                          testing::bandwidth_parameter("nccl.shm.bandwidth", 50e9),
                                          testing::ratio_parameter("nccl.shm.two_way_efficiency", 0.5),
                                          testing::bandwidth_parameter("nccl.shm.channel_bandwidth", 100e9),
                                          testing::bandwidth_parameter("nccl.simple.channel_bandwidth", 1e12),
                                          testing::duration_parameter("nccl.simple.slice_overhead", 0.0)});
  const std::map<std::string, std::string> env = {{"NCCL_P2P_DISABLE", "1"},  {"NCCL_ALGO", "Ring"},
                                                  {"NCCL_PROTO", "Simple"},    {"NCCL_MIN_NCHANNELS", "4"},
                                                  {"NCCL_MAX_NCHANNELS", "4"}, {"NCCL_NVLS_ENABLE", "0"}};
  const CollectivePredictor p = predictor("hgx-h200", 2, env, &profile);
  // The SHM hop of the step program for 1 GiB: its rate per flow (a channel's) and its block cap.
  auto shm_hop = [](const CollectivePredictor& c, CollectiveOp op) {
    const StepProgram prog = c.program(op, Bytes::gib(1), c.choice(op, Bytes::gib(1)));
    for (const Hop& h : prog.hops) {
      if (h.transport.kind == TransportKind::SHM) return h;
    }
    FAIL("no SHM hop");
    return Hop{};
  };
  auto shm_flow_rate = [&](CollectiveOp op) { return shm_hop(p, op).rate.gigabytes_per_second(); };
  // A 2-rank broadcast is one pair one way: GPU 0 only stores, GPU 1 only loads; 4 flows share
  // 50 GB/s, 12.5 GB/s each.
  CHECK(shm_flow_rate(CollectiveOp::BROADCAST) == Approx(12.5));
  // A 2-rank all-reduce: each GPU sends and receives on every channel, each flow counting 1 / 0.5
  // on SHM_OUT and SHM_IN: 8 flow-shares of 50 GB/s, 6.25 GB/s a flow, 25 GB/s out of each GPU.
  CHECK(shm_flow_rate(CollectiveOp::ALL_REDUCE) == Approx(6.25));
  // The broadcast's busbw is the 4 flows' 50 GB/s (the pipeline's fill under 1% at 1 GiB).
  CHECK(p.predict(CollectiveOp::BROADCAST, Bytes::gib(1)).busbw_GBps == Approx(50.0).epsilon(0.01));
  // A channel's block loads from host memory behind its GPU's stores too: where every GPU does both
  // (the all-reduce) its cap is 0.5 of what it is at an efficiency of 1, where none does (the
  // 2-rank broadcast) the same.
  const auto whole = testing::profile_of(
      "shm-one-rate", {testing::ratio_parameter("nccl.shm.host_memory_efficiency", 1.0),
                       testing::bandwidth_parameter("nccl.shm.bandwidth", 50e9),
                       testing::ratio_parameter("nccl.shm.two_way_efficiency", 1.0),
                       testing::bandwidth_parameter("nccl.shm.channel_bandwidth", 100e9),
                       testing::bandwidth_parameter("nccl.simple.channel_bandwidth", 1e12),
                       testing::duration_parameter("nccl.simple.slice_overhead", 0.0)});
  const CollectivePredictor q = predictor("hgx-h200", 2, env, &whole);
  auto shm_channel_cap = [&](const CollectivePredictor& c, CollectiveOp op) {
    return shm_hop(c, op).channel_cap.bytes_per_second();
  };
  CHECK(shm_channel_cap(p, CollectiveOp::ALL_REDUCE) / shm_channel_cap(q, CollectiveOp::ALL_REDUCE) == Approx(0.5));
  CHECK(shm_channel_cap(p, CollectiveOp::BROADCAST) == Approx(shm_channel_cap(q, CollectiveOp::BROADCAST)));
}

TEST_CASE("NVLS reduces in the switch at NCCL's figure, not at the measured P2P NVLink rate", "[unit][nccl]") {
  // 8 x H100 (sm90): the NVLS resource is NCCL's NVLink figure for the GPU (18 links x 20.6 GB/s =
  // 370.8 GB/s) x nccl.nvls.efficiency, whatever a profile makes of the P2P NVLink efficiency: a
  // profile that raises it from 20.6 / 25 = 0.824 to 0.95 moves the P2P rate (450 x 0.95 = 427.5
  // GB/s) and leaves the NVLS resource and an NVLS all-reduce as they were.
  const auto fast_p2p = testing::profile_of("p2p", {testing::ratio_parameter("nccl.nvlink.efficiency", 0.95)});
  const std::map<std::string, std::string> env = {{"NCCL_ALGO", "NVLS"}};
  const CollectivePredictor base = predictor("hgx-h100", 8, env, nullptr);
  const CollectivePredictor raised = predictor("hgx-h100", 8, env, &fast_p2p);
  CHECK(raised.rates().nvlink.gigabytes_per_second() == Approx(427.5));
  CHECK(base.rates().nvls.gigabytes_per_second() ==
        Approx(370.8 * base.rates().nvls_efficiency).epsilon(1e-6));
  CHECK(raised.rates().nvls.gigabytes_per_second() == Approx(base.rates().nvls.gigabytes_per_second()));
  const CollectivePrediction a = base.predict(CollectiveOp::ALL_REDUCE, Bytes::gib(1));
  const CollectivePrediction b = raised.predict(CollectiveOp::ALL_REDUCE, Bytes::gib(1));
  REQUIRE(a.algorithm == Algorithm::NVLS);
  CHECK(b.time.seconds() == Approx(a.time.seconds()).epsilon(1e-9));
}
