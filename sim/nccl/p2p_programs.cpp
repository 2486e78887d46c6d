// Send/recv and alltoall as NCCL's P2P scheduler runs them (src/enqueue.cc addP2pToPlan,
// scheduleP2pTasksToPlan): a message of at most p2pnChannelsPerPeer x NCCL_P2P_LL_THRESHOLD bytes
// goes through LL, a larger one through Simple; it is split over up to p2pnChannelsPerPeer channels
// in parts of at least stepSize/8 (one node) or stepSize/2 (several), stepSize being LL's buffer
// step or Simple's P2P chunk, and moved in chunks of that step (over the network a chunk is cut to
// a half below 8 steps, a Simple one to a quarter below one step), eight chunks in flight per
// connection. Over the network LL needs NCCL_ALLOC_P2P_NET_LL_BUFFERS=1.
// Alltoall (nccl-tests alltoall_perf: one send and one receive per peer in a group) runs peers in
// rounds; the peers in flight at once share the rank's links.
// A channel's block that sends and receives in one work splits its warps (src/device/sendrecv.h:
// of w = NCCL_MAX_NTHREADS / 32 warps, (w - 1) / 2 receive and one more send, where a send alone
// uses all w - 1 of a balanced pair): with Simple its send moves at that share of the block's rate
// (640 threads: 10 / 19). nccl-tests' sendrecv receives while it sends (measured on 4 x H200:
// ~20 GB/s per channel both at 8 and at 16 channels, calcP2pChannelCount doubling them at 256 MiB);
// the calibration's pair does not. Alltoall receives too, but is left at the full rate: the model
// runs its peers over p2pnChannelsPerPeer channels one at a time, where NCCL spreads peers over
// distinct channels; the two errors cancel on the measured sets and are left for a model of the
// peer schedule.

#include <algorithm>
#include <cmath>

#include "sim/nccl/collective_program.hpp"

namespace clustersim::sim::nccl {

namespace {

long long div_up(long long a, long long b) { return (a + b - 1) / b; }

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

// One stream of `total` bytes from a representative rank over transport t, chunked as NCCL does.
void add_stream(StepProgram& p, const ProgramContext& ctx, const HopTransport& t, double total, int peers,
                int ranks_sending_per_node, double concurrency, bool with_recv) {
  if (total <= 0) return;
  const NcclSystem& sys = ctx.system;
  const long long per_peer = static_cast<long long>(std::ceil(total / std::max(1, peers)));
  const bool net = t.kind == TransportKind::NET;
  // LL up to p2pnChannelsPerPeer x NCCL_P2P_LL_THRESHOLD (addP2pToPlan's thresholdLL), where the
  // connection has LL buffers: over the network only with NCCL_ALLOC_P2P_NET_LL_BUFFERS=1 (init.cc,
  // default 0; net.cc gives the shared p2p connections LL buffers only then).
  const long long max_ch = std::max(1, ctx.plan.p2p_channels_per_peer);
  const long long threshold = ctx.env.p2p_ll_threshold.value_or(ctx.version.device.p2p_ll_threshold).count();
  const bool ll = per_peer <= max_ch * threshold && (!net || ctx.env.p2p_net_ll_buffers);
  const Protocol proto = ll ? Protocol::LL : Protocol::SIMPLE;
  if (!p.p2p_protocol || proto == Protocol::SIMPLE) p.p2p_protocol = proto;
  const ProtocolBuffers buf = protocol_buffers(ctx, proto);
  // The step parts are cut from: LL's buffer step (wire bytes, half of it data), Simple's P2P chunk.
  const Bytes step = ll ? Bytes::of(2 * buf.step_payload.count()) : p2p_chunk_size(ctx, t);
  const int nc = p2p_part_channels(ctx, per_peer, step);
  long long chunk = ll ? buf.step_payload.count() : step.count();
  // Smaller chunks for small messages over the network only (addP2pToPlan).
  if (net && !ll && per_peer < step.count()) chunk /= 4;
  else if (net && per_peer < 8 * step.count()) chunk /= 2;
  chunk = std::max<long long>(chunk, 1);
  const double streams = std::max(1.0, concurrency) * nc;  // channels in flight for this rank
  const int nics = nic_devices_used(sys);
  Hop h = make_hop(ctx, t, 1.0, net ? static_cast<double>(ranks_sending_per_node) / nics : 0);
  h.wire_factor = buf.wire;
  // The rank's channels together: per-channel protocol cap times the channels in flight.
  h.channel_cap = block_rate(ctx, proto) * streams;
  if (with_recv && proto == Protocol::SIMPLE) {
    const int warps = std::max(2, ctx.version.device.max_threads_all / 32);
    const int recv_warps = warps <= 4 ? warps / 2 : (warps - 1) / 2;
    const int send_warps = warps <= 4 ? recv_warps : recv_warps + 1;
    h.channel_cap = h.channel_cap * (static_cast<double>(send_warps) / (send_warps + recv_warps));
  }
  h.latency = hop_latency(ctx, t, Algorithm::RING, proto);
  h.multiplicity = static_cast<int>(streams);
  h.endpoints = {0, 1 % sys.gpus(), net ? 1 : 0};
  const long long chunks = std::max<long long>(1, div_up(static_cast<long long>(total), chunk));
  h.bytes_per_cycle = total / chunks;
  const int hop = p.add_hop(h);
  const int conn = p.add_connection(buf.steps * static_cast<int>(streams) * (net ? 2 : 1));
  for (long long c = 0; c < chunks; ++c) p.add(hop, conn, total / chunks);
  // Peers are served in rounds; each round costs a step of synchronisation.
  const double rounds = std::ceil(static_cast<double>(peers) / std::max(1.0, concurrency));
  p.fixed += h.latency * static_cast<std::int64_t>(std::max(0.0, rounds - 1));
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
    add_stream(p, ctx, sys.transport(s.pair_src, s.pair_dst), static_cast<double>(s.bytes.count()), 1, 1, 1.0,
               false);
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
      const int senders = net ? static_cast<int>(hosts_per_node) : sys.gpus();
      add_stream(p, ctx, t, total, 1, senders, 1.0, true);
    }
    p.channel_payload_bytes = total;
    return p;
  }
  // Alltoall: `bytes` is one rank's buffer of n pieces.
  const double piece = static_cast<double>(s.bytes.count()) / n;
  const int intra_peers = R - 1;
  const int inter_peers = n - R;
  // Peers in flight: the P2P channels divided among the peers' channels (each peer part spans
  // p2pnChannelsPerPeer channels).
  const double concurrency =
      std::max(1.0, static_cast<double>(ctx.plan.p2p_channels) / std::max(1, ctx.plan.p2p_channels_per_peer));
  if (intra_peers > 0) {
    const HopTransport t = sys.transport(0, 1);
    add_stream(p, ctx, t, piece * intra_peers, intra_peers, sys.gpus(), std::min<double>(concurrency, intra_peers),
               false);
  }
  if (inter_peers > 0) {
    const HopTransport t = sys.transport(0, R % n);
    add_stream(p, ctx, t, piece * inter_peers, inter_peers, sys.gpus(), std::min<double>(concurrency, inter_peers),
               false);
  }
  p.channel_payload_bytes = piece * (n - 1);
  return p;
}

}  // namespace clustersim::sim::nccl
