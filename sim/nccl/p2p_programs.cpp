// Send/recv and alltoall as NCCL's P2P scheduler runs them (src/enqueue.cc addP2pToPlan,
// scheduleP2pTasksToPlan): a message of at most p2pnChannelsPerPeer x NCCL_P2P_LL_THRESHOLD bytes
// goes through LL, a larger one through Simple; it is split over up to p2pnChannelsPerPeer channels
// in parts of at least stepSize/8 (one node) or stepSize/2 (several), stepSize being LL's buffer
// step or Simple's P2P chunk, and moved in chunks of that step (over the network a chunk is cut to
// a half below 8 steps, a Simple one to a quarter below one step), eight chunks in flight per
// connection. Over the network LL needs NCCL_ALLOC_P2P_NET_LL_BUFFERS=1.
// Alltoall (nccl-tests alltoall_perf: one send and one receive per peer in a group) runs peers in
// rounds; the peers in flight at once share the rank's links.
//
// Inside a node (NCCL 2.28, P2P write over NVLink on Hopper, buffers not registered):
//  * Channels (enqueue.cc scheduleP2pTasksToPlan, addP2pToPlan): a peer's message goes over
//    nc = min(nChannelsMin, bytes / minPart) channels, doubled while a part exceeds 32 steps;
//    nChannelsMin halves p2pnChannelsPerPeer until nc x nRanks <= p2pnChannels (2 x H200: 16 of
//    32, doubling to 32 above 256 MiB; 4 x H200: 8). Each round of the group (one peer) starts
//    at its own channel base (channel.h ncclP2pChannelBaseForRound: bit-reversed round numbers),
//    so an alltoall's peers run at once on distinct channels; where peers x nc exceeds
//    p2pnChannels, works share a channel's block (sendrecv.h divides its warps among them),
//    which moves their parts at the block's rate as if in turn.
//  * Steps (sendrecv.h runSend/runRecv: ProtoSimple<1,1>, one slice per step of the P2P chunk,
//    512 KiB over NVLink): the sender copies a step into the peer's FIFO and posts its flag
//    (prims_simple.h: barrier, fence, flag: the slice overhead of set_step_timing); only then do
//    the peer's receiving warps copy the step out to the output buffer (1 load, 1 store, local),
//    freeing the slot. LL relays line by line instead (prims_ll.h), so a step passes both at
//    once.
//  * Warps: a work that sends and receives splits its block (sendrecv.h: of w = NCCL_MAX_NTHREADS
//    / 32 = 20 warps, (w - 1) / 2 = 9 receive and 10 send); with Simple one of the send's warps
//    only synchronises (prims_simple.h nworkers), so 9 copy on each side. While both copy they
//    share the block's copy rate C in proportion (Simple 9 : 9, LL 10 : 9, the slower side
//    setting LL's pace). A step that one side of such a block copies alone (a message's first
//    send, its last receive) gets a x C, a = nccl.p2p.alone_share: the other side's warps wait
//    for their flag and lend nothing, so a lies between that side's share (0.5) and 1. One pair's
//    sender and receiver, blocks on different GPUs that do one thing each, copy at C. Measured on
//    4 x H200 (calibrate/results/lent-4xh200-2026-11-28-p2p-ramp, alltoall): with the P2P chunk at
//    128 KiB instead of 512 KiB a 32 MiB alltoall takes 96 us instead of 107, though its steady
//    state costs the same per byte (9.1 us a 128 KiB step, 39.1 a 512 KiB one): the difference is
//    in the fill and the drain, which the smaller step shortens.
//  * Per channel of k steps of B bytes, sending and receiving (send/recv, alltoall):
//      T ~ t0 + [o + B / min(C, link share)] + (k - 1) max(o + B / (C/2), B / (C/2)) + B / C
//    (o: nccl.simple.slice_overhead, t0: NCCL's base latency; the first and the last B / C are
//    B / (a C) where the block also receives). Measured on 4 x H200
//    (calibrate/results/lent-4xh200-2026-11-21, send/recv): in steady state a step costs 25-26 us
//    per channel (512 KiB at ~20 GB/s, C/2) on 2 and 4 ranks, predicted 28 (o + 26.2); one step per
//    channel, 2 ranks 8 MiB over 16 channels, 49.1 us, predicted 45.7; 4 ranks 4 MiB over 8,
//    39.9 us, predicted 35.4 (a side alone copies somewhat slower than C).
//  * One pair (the calibration's point-to-point): the sender's and receiver's kernels are on
//    different GPUs and data flows one way, so back to back the sender runs ahead into its next
//    launch (StepProgram::kernels_run_ahead).
// Over the network the rank's channels are lumped into one flow at the sum of their caps (the
// send's warp share of the block's rate when it also receives), peers in rounds. Over the host's
// socket transport each P2P flow counts 1 / nccl.net.socket_p2p_efficiency on its proxy (a
// send/recv moves less through it than a collective does; nccl_parameters.hpp).

#include <algorithm>
#include <cmath>

#include "sim/nccl/collective_program.hpp"

namespace clustersim::sim::nccl {

namespace {

// Channels NCCL gives one peer message (enqueue.cc addP2pToPlan).
int p2p_part_channels(const ProgramContext& ctx, long long bytes, Bytes step) {
  const int max_ch = std::max(1, ctx.plan.p2p_channels_per_peer);
  int min_ch = max_ch;
  while (min_ch * ctx.system.nranks() > ctx.plan.p2p_channels && min_ch > 1) min_ch /= 2;
  if (bytes <= 0) return 1;
  const bool multi = ctx.system.nccl_nodes() > 1;
  const long long min_part = multi ? step.count() / 2 : step.count() / 8;
  const long long max_part = multi ? step.count() : step.count() * 32;
  int nc = static_cast<int>(std::min<long long>(min_ch, div_up(bytes, std::max<long long>(1, min_part))));
  nc = std::max(1, nc);
  long long part = std::max(min_part, div_up(bytes, nc));
  while (part > max_part && nc <= max_ch / 2) {
    nc *= 2;
    part = div_up(bytes, nc);
  }
  return nc;
}

// The warps of a channel's block that send and that receive when one work does both
// (src/device/sendrecv.h: of w = NCCL_MAX_NTHREADS / 32 warps, (w - 1) / 2 receive and one more
// send; at most 4 warps split evenly).
struct WarpSplit {
  int send = 1, recv = 1;
  // The send's warps that copy: with Simple a send of 3 warps or more leaves one of them to
  // synchronisation (prims_simple.h: nworkers = nthreads - WARP_SIZE when the primitive sends and
  // nthreads >= NCCL_SIMPLE_EXTRA_GROUP_IF_NTHREADS_GE, 96).
  int copying_send(Protocol p) const { return p == Protocol::SIMPLE && send * 32 >= 96 ? send - 1 : send; }
};
WarpSplit warp_split(const ProgramContext& ctx) {
  const int warps = std::max(2, ctx.version.device.max_threads_all / 32);
  WarpSplit s;
  s.recv = warps <= 4 ? warps / 2 : (warps - 1) / 2;
  s.send = warps <= 4 ? s.recv : s.recv + 1;
  return s;
}

// A peer message's protocol and steps (enqueue.cc addP2pToPlan): LL up to p2pnChannelsPerPeer x
// NCCL_P2P_LL_THRESHOLD (its thresholdLL) where the connection has LL buffers (`ll_buffers`), else
// Simple; the step its parts are cut from (LL's buffer step in wire bytes, half of it data;
// Simple's P2P chunk) and the channels of one part. Records the protocol in the program.
struct P2pSteps {
  bool ll = false;
  Protocol proto = Protocol::SIMPLE;
  ProtocolBuffers buf;
  Bytes step;
  int nc = 1;
};
P2pSteps p2p_steps(StepProgram& p, const ProgramContext& ctx, const HopTransport& t, long long per_peer,
                   bool ll_buffers) {
  P2pSteps s;
  const long long max_ch = std::max(1, ctx.plan.p2p_channels_per_peer);
  const long long threshold = ctx.env.p2p_ll_threshold.value_or(ctx.version.device.p2p_ll_threshold).count();
  s.ll = per_peer <= max_ch * threshold && ll_buffers;
  s.proto = s.ll ? Protocol::LL : Protocol::SIMPLE;
  if (!p.p2p_protocol || s.proto == Protocol::SIMPLE) p.p2p_protocol = s.proto;
  s.buf = protocol_buffers(ctx, s.proto);
  s.step = s.ll ? Bytes::of(2 * s.buf.step_payload.count()) : p2p_chunk_size(ctx, t);
  s.nc = p2p_part_channels(ctx, per_peer, s.step);
  return s;
}

// Over the network: one stream of `total` bytes from a representative rank, the rank's channels
// lumped into one flow, chunked as NCCL does.
// `receives`: the rank also receives over the network meanwhile (send/recv, alltoall), which keeps
// a socket proxy busy both ways (make_hop); `with_recv`: its block's warps are split between the
// two.
void add_net_stream(StepProgram& p, const ProgramContext& ctx, const HopTransport& t, double total, int peers,
                    int ranks_sending_per_node, double concurrency, bool with_recv, bool receives) {
  if (total <= 0) return;
  const NcclSystem& sys = ctx.system;
  const long long per_peer = static_cast<long long>(std::ceil(total / std::max(1, peers)));
  // Over the network the connections have LL buffers only with NCCL_ALLOC_P2P_NET_LL_BUFFERS=1
  // (init.cc, default 0; net.cc gives the shared p2p connections LL buffers only then).
  const P2pSteps st = p2p_steps(p, ctx, t, per_peer, ctx.env.p2p_net_ll_buffers);
  const bool ll = st.ll;
  const Protocol proto = st.proto;
  const ProtocolBuffers& buf = st.buf;
  const Bytes step = st.step;
  const int nc = st.nc;
  long long chunk = ll ? buf.step_payload.count() : step.count();
  // Smaller chunks for small messages over the network (addP2pToPlan).
  if (!ll && per_peer < step.count()) chunk /= 4;
  else if (per_peer < 8 * step.count()) chunk /= 2;
  chunk = std::max<long long>(chunk, 1);
  const double streams = std::max(1.0, concurrency) * nc;  // channels in flight for this rank
  const int nics = nic_devices_used(sys);
  Hop h = make_hop(ctx, t, 1.0, static_cast<double>(ranks_sending_per_node) / nics, proto, 1.0, receives);
  if (sys.host_sockets()) {
    // Over the host's socket transport the P2P path reaches a share of a collective's proxy rate
    // (nccl.net.socket_p2p_efficiency): each flow counts 1 / that share on the proxy.
    for (auto& [kind, flows] : h.loads) {
      if (kind == ResourceKind::NIC_OUT || kind == ResourceKind::NIC_IN) flows /= ctx.rates.socket_p2p_efficiency;
    }
  }
  h.wire_factor = buf.wire;
  // The rank's channels together: per-channel protocol cap times the channels in flight.
  h.channel_cap = block_rate(ctx, proto) * streams;
  if (with_recv && proto == Protocol::SIMPLE) {
    // The send's share of the block's warps (sendrecv.h: 10 of 19 with NCCL_MAX_NTHREADS 640).
    const WarpSplit split = warp_split(ctx);
    h.channel_cap = h.channel_cap * (static_cast<double>(split.send) / (split.send + split.recv));
  }
  h.latency = hop_latency(ctx, t, Algorithm::RING, proto);
  h.multiplicity = static_cast<int>(streams);
  h.endpoints = {0, 1 % sys.gpus(), 1};
  const long long chunks = std::max<long long>(1, div_up(static_cast<long long>(total), chunk));
  h.bytes_per_cycle = total / chunks;
  const int hop = p.add_hop(h);
  const int conn = p.add_connection(buf.steps * static_cast<int>(streams) * 2);
  for (long long c = 0; c < chunks; ++c) p.add(hop, conn, total / chunks);
  // Peers are served in rounds; each round costs a step of synchronisation.
  const double rounds = std::ceil(static_cast<double>(peers) / std::max(1.0, concurrency));
  p.fixed += h.latency * static_cast<std::int64_t>(std::max(0.0, rounds - 1));
}

// Inside a node (P2P or SHM): one representative channel of the rank's P2P work (see the file's
// top comment): its sender moves each chunk into the peer's FIFO; with Simple the peer's receive
// warps copy the whole step out once its flag is posted, freeing the slot; with LL they copy line
// by line as the lines arrive, so a chunk passes both at the slower group's rate.
// `with_recv`: the rank's work also receives (send/recv, alltoall), so its block's warps are split
// between the two; otherwise (one pair) the sender's and the receiver's blocks are whole, on
// different GPUs.
void add_local_stream(StepProgram& p, const ProgramContext& ctx, const HopTransport& t, double total, int peers,
                      bool with_recv) {
  if (total <= 0) return;
  const NcclSystem& sys = ctx.system;
  const long long per_peer = static_cast<long long>(std::ceil(total / std::max(1, peers)));
  const P2pSteps st = p2p_steps(p, ctx, t, per_peer, true);
  const bool ll = st.ll;
  const Protocol proto = st.proto;
  const ProtocolBuffers& buf = st.buf;
  const Bytes step = st.step;
  const int nc = st.nc;
  const long long chunk = std::max<long long>(1, ll ? buf.step_payload.count() : step.count());
  // Every round of the group goes into one launch, each peer's parts on nc channels from the
  // round's base (channel.h ncclP2pChannelBaseForRound: bit-reversed round numbers, so rounds of a
  // node land on distinct channels while peers x nc <= p2pnChannels); beyond that, works share a
  // channel's block (sendrecv.h divides its warps among a batch's works), which moves their
  // parts at the block's rate as if in turn.
  const double streams = std::min<double>(static_cast<double>(peers) * nc, std::max(ctx.plan.p2p_channels, nc));
  // One channel's bytes, in chunks of one step (sendrecv.h runSend/runRecv: ProtoSimple<1,1>, one
  // slice per step; LL: its buffer's step).
  const double per_channel = static_cast<double>(per_peer) * peers / streams;
  const long long chunks = std::max<long long>(1, div_up(static_cast<long long>(std::ceil(per_channel)), chunk));
  const double bytes = per_channel / chunks;

  const Bandwidth block = block_rate(ctx, proto, t, with_recv);
  const WarpSplit split = warp_split(ctx);
  const int send_warps = split.copying_send(proto);
  const double send_share = static_cast<double>(send_warps) / (send_warps + split.recv);
  const double recv_share = static_cast<double>(split.recv) / (send_warps + split.recv);
  // `flows`: the channels' flows on the links; a second hop for the same channels' sends at
  // another time adds none (assign_rates sums every hop's flows on a link).
  auto send_hop = [&](Bandwidth cap, const char* what, double flows) {
    // One pair: one GPU of the socket sends, and it does not also receive.
    Hop h = make_hop(ctx, t, flows, 0, proto, with_recv ? 1.0 : 1.0 / std::max(1, sys.gpus_per_socket()), with_recv);
    h.label = h.label + what;
    h.wire_factor = buf.wire;
    h.channel_cap = cap;
    set_step_timing(ctx, t, proto, h);
    h.multiplicity = static_cast<int>(streams);
    h.endpoints = {0, 1 % sys.gpus(), 0};
    h.bytes_per_cycle = bytes;
    return p.add_hop(h);
  };
  auto recv_hop = [&](Bandwidth cap) {
    Hop h;
    h.label = "P2P receive copy";
    h.transport = HopTransport{};  // crosses nothing: the receiver's own FIFO to its output
    h.channel_cap = cap;
    h.multiplicity = static_cast<int>(streams);
    h.endpoints = {1 % sys.gpus(), 1 % sys.gpus(), 0};
    h.bytes_per_cycle = bytes;
    return p.add_hop(h);
  };
  if (t.kind == TransportKind::SHM) {
    // Each stream receives through its own buffer, a step per slot (one pair: one GPU receives).
    const double receivers = with_recv ? sys.gpus_per_socket() : 1.0;
    p.host_bytes = std::max(p.host_bytes, streams * receivers * shm_fifo_bytes(buf, 1, bytes));
  }
  const int conn = p.add_connection(buf.steps);
  if (ll) {
    // Both groups move every line: the slower one's share of the block.
    const int hop = send_hop(with_recv ? block * std::min(send_share, recv_share) : block, "", streams);
    for (long long c = 0; c < chunks; ++c) p.add(hop, conn, bytes);
  } else {
    // While the block both sends and receives, its copying warps share its copy rate (send_share
    // and recv_share of it). The first step's send runs before anything has arrived, and the
    // last step's receive after every send, each with the block to itself.
    const int send_shared = send_hop(with_recv ? block * send_share : block, "", streams);
    const Bandwidth alone = with_recv ? block * ctx.rates.p2p_alone_share : block;
    const int send_alone = with_recv ? send_hop(alone, " (first step)", 0) : send_shared;
    const int recv_alone = recv_hop(alone);
    const int recv_shared = with_recv ? recv_hop(block * recv_share) : recv_alone;
    // The receiver's warps take the steps in order; its own FIFO reads need no slots.
    const int recv_conn = p.add_connection(static_cast<int>(std::min<long long>(chunks, 1 << 20)));
    for (long long c = 0; c < chunks; ++c) {
      const int s = p.add(c == 0 ? send_alone : send_shared, conn, bytes);
      p.add(c + 1 == chunks ? recv_alone : recv_shared, recv_conn, bytes, {s}, true);
    }
    // One pair: the sender and the receiver are different GPUs' kernels and data only flows
    // from one to the other, so back to back the sender runs ahead into its next launch.
    if (!with_recv) p.kernels_run_ahead = true;
  }
}

}  // namespace

StepProgram build_p2p(const ProgramContext& ctx, const CollectiveShape& s) {
  const NcclSystem& sys = ctx.system;
  const int n = sys.nranks();
  const int R = sys.ranks_per_host();
  StepProgram p;
  p.fixed = base_latency(ctx, Algorithm::RING, Protocol::SIMPLE);
  const double hosts_per_node = static_cast<double>(sys.gpus()) / R;
  if (s.op == CollectiveOp::SENDRECV && s.pair_src >= 0) {
    // One pair: the sender alone on its links (and on the node's NICs or host memory).
    const HopTransport t = sys.transport(s.pair_src, s.pair_dst);
    if (t.kind == TransportKind::NET) {
      add_net_stream(p, ctx, t, static_cast<double>(s.bytes.count()), 1, 1, 1.0, false, false);
    } else {
      add_local_stream(p, ctx, t, static_cast<double>(s.bytes.count()), 1, false);
    }
    p.channel_payload_bytes = static_cast<double>(s.bytes.count());
    return p;
  }
  if (s.op == CollectiveOp::SENDRECV) {
    // Rank r sends the whole buffer to r+1: every hop class of the ring is a role; the slowest
    // decides.
    const double total = static_cast<double>(s.bytes.count());
    if (n == 1) return p;
    bool seen_intra = false, seen_net = false;
    for (int r = 0; r < std::min(n, R + 1); ++r) {
      const HopTransport t = sys.transport(r % n, (r + 1) % n);
      const bool net = t.kind == TransportKind::NET;
      if ((net && seen_net) || (!net && seen_intra)) continue;
      (net ? seen_net : seen_intra) = true;
      if (net) {
        add_net_stream(p, ctx, t, total, 1, static_cast<int>(hosts_per_node), 1.0, true, true);
      } else {
        add_local_stream(p, ctx, t, total, 1, true);
      }
    }
    p.channel_payload_bytes = total;
    return p;
  }
  // Alltoall: `bytes` is one rank's buffer of n pieces.
  const double piece = static_cast<double>(s.bytes.count()) / n;
  const int intra_peers = R - 1;
  const int inter_peers = n - R;
  if (intra_peers > 0) {
    // Each work both sends to a peer and receives from one (one round of the P2P schedule).
    add_local_stream(p, ctx, sys.transport(0, 1), piece * intra_peers, intra_peers, true);
  }
  if (inter_peers > 0) {
    // Peers in flight: the P2P channels divided among the peers' channels (each peer part spans
    // p2pnChannelsPerPeer channels).
    const double concurrency =
        std::max(1.0, static_cast<double>(ctx.plan.p2p_channels) / std::max(1, ctx.plan.p2p_channels_per_peer));
    const HopTransport t = sys.transport(0, R % n);
    add_net_stream(p, ctx, t, piece * inter_peers, inter_peers, sys.gpus(), std::min<double>(concurrency, inter_peers),
                   false, true);
  }
  p.channel_payload_bytes = piece * (n - 1);
  return p;
}

}  // namespace clustersim::sim::nccl
