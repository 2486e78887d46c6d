// Tree, NVLS, NVLS-Tree, CollNet and PAT step programs (see collective_program.hpp).
//
// Trees (connect.cc connectTrees, device/all_reduce.h runTreeSplit): inside a node the ranks form
// a chain whose head talks to the network; between nodes NCCL builds two complementary binary
// trees (each node is inner in one and a leaf in the other) and gives each half of the channels.
// A chunk climbs the chain and the tree (reduce), then comes down (broadcast); up and down run at
// the same time on split thread groups. The program follows one chunk path per tree level and
// chain position: roles (level, position), level 0 the root, depth floor(log2(nodes)).

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "hardware/errors.hpp"
#include "sim/nccl/collective_program.hpp"

namespace clustersim::sim::nccl {

namespace {

int depth_of(int hosts) {
  int d = 0;
  while ((2 << d) <= hosts) ++d;  // floor(log2(hosts))
  return d;
}

int log2_ceil(int n) {
  int d = 0;
  while ((1 << d) < n) ++d;
  return d;
}

// NVLS chunk size (enqueue.cc calcCollChunking, NCCL_ALGO_NVLS and NVLS_TREE). NVLS starts from
// the Simple step capped at the release's NVLS chunk (2.18-2.20 computeColl(ChunkInfo):
// maxChunkSize = 131072; 2.24+: comm->nvlsChunkSize, NCCL_NVLS_CHUNKSIZE, default 128 KiB);
// NVLS-Tree starts from the NVLS chunk where the release has one (2.28: chunkSize =
// comm->nvlsChunkSize), else from the step, and is capped at NCCL_NVLSTREE_MAX_CHUNKSIZE (unset:
// 64 KiB from 4 nodes on, no cap below). The network plugin's values (fabric
// nccl_nvls_chunksize, nccl_nvlstree_max_chunksize: aws-ofi-nccl exports both on p5 and later)
// apply across nodes unless the user sets the variables.
long long nvls_chunk(const ProgramContext& ctx, const CollectiveShape& s, int heads) {
  const long long step = protocol_buffers(ctx, Protocol::SIMPLE).step_payload.count();
  const auto& dev = ctx.version.device;
  const auto* fabric = ctx.system.node().fabric;
  const bool plugin = fabric != nullptr && ctx.system.nccl_nodes() > 1;
  long long chunk = step;
  if (dev.nvls_chunk_size) {
    long long nvls = dev.nvls_chunk_size->count();
    if (dev.nvls_chunk_size_param) {
      if (plugin && fabric->nccl_nvls_chunksize) nvls = fabric->nccl_nvls_chunksize->count();
      if (ctx.env.nvls_chunksize) nvls = ctx.env.nvls_chunksize->count();
    }
    chunk = s.algorithm == Algorithm::NVLS ? std::min(step, nvls) : nvls;
  }
  const long long bytes = s.bytes.count();
  const long long conc = static_cast<long long>(std::max(1, s.channels)) * std::max(1, heads);
  if (s.algorithm == Algorithm::NVLS) {
    if (bytes < 64 * conc * chunk && chunk > 65536) chunk = 65536;
    if (bytes < 8 * conc * chunk && chunk > 32768) chunk = 32768;
    if (bytes < 2 * conc * chunk && chunk > 16384) chunk = 16384;
  } else {
    std::optional<long long> max_chunk;
    if (plugin && fabric->nccl_nvlstree_max_chunksize) max_chunk = fabric->nccl_nvlstree_max_chunksize->count();
    if (ctx.env.nvlstree_max_chunksize) max_chunk = ctx.env.nvlstree_max_chunksize->count();
    if (max_chunk) chunk = std::min(chunk, *max_chunk);
    else if (ctx.system.nccl_nodes() >= 4) chunk = std::min<long long>(chunk, 65536);
    if (bytes < 32 * conc * chunk && chunk > 262144) chunk = 262144;
    if (bytes < 16 * conc * chunk && chunk > 131072) chunk = 131072;
    if (bytes < 4 * conc * chunk && chunk > 65536) chunk = 65536;
    if (bytes < 1 * conc * chunk && chunk > 32768) chunk = 32768;
  }
  return chunk;
}

}  // namespace

TreeBlock tree_block(const ProgramContext& ctx, Protocol p, const HopTransport* t) {
  TreeBlock b;
  b.copy_rate = t != nullptr ? block_rate(ctx, p, *t) : block_rate(ctx, p);
  const double f = step_store_fraction(ctx, p, t);
  b.store_fraction = f < 0 ? 0.5 : f;
  const auto& dev = ctx.version.device;
  const int nthreads = dev.max_threads_all;  // enqueue.cc: Tree always runs NCCL_MAX_NTHREADS
  int up_threads = nthreads * 7 / (10 * kWarpSize) * kWarpSize;
  if (p == Protocol::SIMPLE) {
    up_threads = nthreads / 2;
    if (up_threads >= 256) up_threads += 64;
  }
  const double ref = std::max(1, dev.max_threads[static_cast<int>(p)]);
  b.up_cap = b.copy_rate * (up_threads / ref);
  b.down_cap = b.copy_rate * ((nthreads - up_threads) / ref);
  if (p == Protocol::LL) b.root_weight = ctx.rates.ll_tree_root_weight;
  return b;
}

double tree_nvlink_share(const ProgramContext& ctx, Protocol p) {
  return p == Protocol::LL128 ? ctx.rates.tree_ll128_nvlink_share
         : p == Protocol::LL  ? ctx.rates.tree_ll_nvlink_share
                              : ctx.rates.tree_nvlink_share;
}

void tree_knee(const ProgramContext& ctx, const HopTransport& t, Protocol p, int ranks, int channels, TreeBlock& b) {
  const double knee = ctx.rates.nvlink_knee;
  if (!(knee > 0) || p == Protocol::LL128 || t.kind != TransportKind::P2P || !t.over_nvlink) return;
  const double C = b.copy_rate.bytes_per_second();
  // What the busiest rank's channel moves alone: a middle rank's two groups C / (w_up + w_down) =
  // C / 3; with two ranks the root's reduce-copy-send, C / (w(2,2) x root weight) = C / (2 x
  // root weight). A middle rank sends each byte twice (up and down), a 2-rank chain's ranks once.
  const double per_channel = ranks >= 3 ? C / 3 : C / (2 * b.root_weight);
  const double sends = ranks >= 3 ? 2 : 1;
  const double link = ctx.rates.nvlink.bytes_per_second() * tree_nvlink_share(ctx, p);
  const double x = channels * per_channel * sends / link;
  // The soft minimum of what the blocks offer (D = x L) and what the link carries (L): below the
  // corner the blocks bind and keep s = (1 + x^p)^(-1/p) of C; above it the link binds and keeps
  // (1 + x^-p)^(-1/p) of L. Both give (D^-p + L^-p)^(-1/p) in steady state, and the same at x = 1;
  // each slows only what binds, so that the other keeps its slack in the pipeline's fill.
  if (x <= 1) {
    const double s = std::pow(1.0 + std::pow(x, knee), -1.0 / knee);
    b.copy_rate = Bandwidth::bytes_per_second(C * s);
    b.up_cap = Bandwidth::bytes_per_second(b.up_cap.bytes_per_second() * s);
    b.down_cap = Bandwidth::bytes_per_second(b.down_cap.bytes_per_second() * s);
  } else {
    b.link_knee_factor = std::pow(1.0 + std::pow(x, -knee), -1.0 / knee);
  }
}

namespace {

struct TreeHops {
  int up_intra = -1, down_intra = -1, up_net = -1, down_net = -1;
};

// One rank's place in one of NCCL's two binary trees over `n` nodes (trees.cc ncclGetBtree and
// ncclGetDtree): its parent (-1 at the root) and up to two children (-1 where none).
struct TreeLinks {
  int parent = -1;
  std::array<int, 2> child{-1, -1};
};

// The first tree: node 0 at the root; below it, a node's lowest set bit b gives its parent
// (r ^ b) | 2b (or r ^ b where that is out of range) and its children r - b/2 and r + b/2 (the
// second one halved towards r until it is in range).
TreeLinks btree_links(int n, int r) {
  TreeLinks t;
  int bit = 1;
  while (bit < n && (bit & r) == 0) bit <<= 1;
  if (r == 0) {
    if (n > 1) t.child[1] = bit >> 1;
    return t;
  }
  t.parent = (r ^ bit) | (bit << 1);
  if (t.parent >= n) t.parent = r ^ bit;
  int low = bit >> 1;
  if (low == 0) return t;
  t.child[0] = r - low;
  int second = r + low;
  while (second >= n && low > 0) {
    low >>= 1;
    second = low == 0 ? -1 : r + low;
  }
  t.child[1] = second;
  return t;
}

// Tree 0 is the btree; tree 1 mirrors it (r -> n - 1 - r) where n is even and shifts it by one
// rank where n is odd, so that a node inner in one tree is a leaf in the other.
TreeLinks dtree_links(int n, int r, int tree) {
  if (tree == 0) return btree_links(n, r);
  const bool mirror = n % 2 == 0;
  const auto to = [&](int x) { return x < 0 ? -1 : (mirror ? n - 1 - x : (x + 1) % n); };
  TreeLinks t = btree_links(n, mirror ? n - 1 - r : (r - 1 + n) % n);
  t.parent = to(t.parent);
  t.child = {to(t.child[0]), to(t.child[1])};
  return t;
}

// Every rank its own node, all on one host, talking through NCCL's socket transport (a host
// whose GPUs reach each other by neither P2P nor SHM): each rank's proxy thread copies what the
// rank sends and what it receives, and the two trees load the proxies unevenly (4 nodes: an
// inner node's proxy moves 8 messages a chunk over both trees, a root's 4, where one path per
// level would give every node the mean, 6). The program names every node of both trees instead,
// one path per tree standing for that tree's channels (they run alike). A message's sender's
// proxy copies it into the socket, then its receiver's proxy copies it out (Transfer::link, then
// Transfer::peer, each charged over time: the bytes at the proxy's rate plus the proxy's own time
// per message, Hop::proxy_message), one after the other for a step the socket's buffer holds;
// the forward stage keeps the kernel's part (net_forward_stage). So the few messages of a tree
// that has not filled run at the rate of the proxies they use, and a full pipeline at the rate of
// its busiest proxy (2 x H200, 2 ranks, results-long-rings: 262 us at 512 KiB and 868 at 2 MiB
// measured, 261 and 850 so). Channels split over the trees as NCCL duplicates the channels its
// search found (connect.cc connectTrees: the first half on tree 0, the second on tree 1; an odd
// count leaves tree 0 one more).
void socket_tree(const ProgramContext& ctx, const CollectiveShape& s, StepProgram& p, int up_hop, int down_hop,
                 long long chunks, double bytes, int window, int pieces) {
  const int H = ctx.system.nranks();
  const int G = ctx.system.gpus();
  const int nch = std::max(1, s.channels);
  // The channels of one tree are alike (the same transfers on the same proxies at the same
  // times): one representative channel per tree, its hops standing for the tree's channels
  // (multiplicity, and as many flows and messages on each proxy).
  const std::array<int, 2> weight{(nch + 1) / 2, nch / 2};
  const int ntrees = weight[1] > 0 ? 2 : 1;
  std::array<int, 2> up_of{up_hop, up_hop}, down_of{down_hop, down_hop};
  if (ntrees == 2 && weight[1] != weight[0]) {
    up_of[1] = p.add_hop(p.hops[up_hop]);
    down_of[1] = p.add_hop(p.hops[down_hop]);
  }
  for (int tree = 0; tree < ntrees; ++tree) {
    for (int id : {up_of[static_cast<std::size_t>(tree)], down_of[static_cast<std::size_t>(tree)]}) {
      Hop& h = p.hops[static_cast<std::size_t>(id)];
      const int k = weight[static_cast<std::size_t>(tree)];
      h.proxy_shared = true;
      h.proxy_per_rank = true;
      h.multiplicity = k;
      // k flows on the sender's proxy and k on the receiver's; the proxy's time per message is
      // charged to the proxies, not held on the connection.
      for (ResourceLoad& l : h.loads) {
        if (l.kind == ResourceKind::NIC_OUT || l.kind == ResourceKind::NIC_IN) l.flows = k;
      }
      // A proxy sends a whole step: LL's pieces of one (relay_pieces) share its message's time.
      h.proxy_message = ctx.rates.socket_message_overhead * static_cast<std::int64_t>(k) / std::max(1, pieces);
      h.occupancy = Duration{};
    }
  }
  std::vector<int> proxy(static_cast<std::size_t>(H));
  for (int& x : proxy) x = p.add_shared();
  // Each tree's links, and each node's height (a leaf's 0: the step at which it sends a chunk up)
  // and depth (the root's 0: the step after the root's at which it sends the chunk down).
  struct Tree {
    std::vector<TreeLinks> links;
    std::vector<int> height, depth;
    int root = 0;
  };
  std::array<Tree, 2> trees;
  for (int k = 0; k < ntrees; ++k) {
    Tree& t = trees[static_cast<std::size_t>(k)];
    t.links.resize(static_cast<std::size_t>(H));
    t.height.assign(static_cast<std::size_t>(H), 0);
    t.depth.assign(static_cast<std::size_t>(H), 0);
    for (int r = 0; r < H; ++r) {
      t.links[static_cast<std::size_t>(r)] = dtree_links(H, r, k);
      if (t.links[static_cast<std::size_t>(r)].parent < 0) t.root = r;
    }
    // Breadth-first from the root: depths parents first, then heights children first.
    std::vector<int> order{t.root};
    for (std::size_t i = 0; i < order.size(); ++i) {
      const int r = order[i];
      for (int c : t.links[static_cast<std::size_t>(r)].child) {
        if (c < 0) continue;
        t.depth[static_cast<std::size_t>(c)] = t.depth[static_cast<std::size_t>(r)] + 1;
        order.push_back(c);
      }
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const int parent = t.links[static_cast<std::size_t>(*it)].parent;
      if (parent >= 0) {
        int& h = t.height[static_cast<std::size_t>(parent)];
        h = std::max(h, t.height[static_cast<std::size_t>(*it)] + 1);
      }
    }
  }
  const double transfers = static_cast<double>(chunks) * ntrees * 2.0 * (H - 1);
  if (transfers > kMaxTransfers) {
    throw RuntimeError("the socket tree's step program would hold " + format_significant(transfers, 3) +
                       " transfers (more than " + format_significant(kMaxTransfers, 3) +
                       "); use fewer channels or larger buffers");
  }

  // Connections per tree and node: the one up to its parent and the one down from it.
  std::vector<int> up_conn, down_conn;
  for (int i = 0; i < ntrees * H; ++i) {
    up_conn.push_back(p.add_connection(window));
    down_conn.push_back(p.add_connection(window));
  }
  // The transfer that brought chunk k up from node r (or down to it) on tree c's channels.
  const auto at = [&](long long k, int c, int r) { return static_cast<std::size_t>((k * ntrees + c) * H + r); };
  std::vector<int> up(static_cast<std::size_t>(chunks * ntrees * H), -1), down(up.size(), -1);
  auto sent_up = [&](long long k, int c, int r) { return r < 0 ? -1 : up[at(k, c, r)]; };
  int last_step = 0;
  for (int c = 0; c < ntrees; ++c) {
    const Tree& t = trees[static_cast<std::size_t>(c)];
    const int deepest = *std::max_element(t.depth.begin(), t.depth.end());
    last_step = std::max(last_step, t.height[static_cast<std::size_t>(t.root)] + deepest);
  }
  // Transfers in the order of the step at which they can start (chunk k leaves a node of height h
  // at step k + h, and comes down from a node of depth d at step k + root height + d), so that a
  // proxy's contested time goes to transfers in about the order they start, as the event
  // simulation places them; every dependency is of an earlier step.
  for (long long w = 0; w < chunks + last_step; ++w) {
    for (int c = 0; c < ntrees; ++c) {
      const Tree& t = trees[static_cast<std::size_t>(c)];
      const int up_hop_c = up_of[static_cast<std::size_t>(c)], down_hop_c = down_of[static_cast<std::size_t>(c)];
      const int top = t.height[static_cast<std::size_t>(t.root)];
      for (int r = 0; r < H; ++r) {
        const TreeLinks& l = t.links[static_cast<std::size_t>(r)];
        const long long k = w - t.height[static_cast<std::size_t>(r)];
        if (l.parent < 0 || k < 0 || k >= chunks) continue;
        // Up: a node reduces its children's arrivals into its own data and sends the sum on.
        up[at(k, c, r)] = p.add(up_hop_c, up_conn[static_cast<std::size_t>(c * H + r)], bytes,
                                {sent_up(k, c, l.child[0]), sent_up(k, c, l.child[1])}, true);
        p.place_last(r % G, l.parent % G, r / G, l.parent / G);
        p.charge_proxies_last(proxy[static_cast<std::size_t>(r)], proxy[static_cast<std::size_t>(l.parent)]);
      }
      for (int r = 0; r < H; ++r) {
        const TreeLinks& l = t.links[static_cast<std::size_t>(r)];
        const long long k = w - top - t.depth[static_cast<std::size_t>(r)];
        if (k < 0 || k >= chunks) continue;
        // Down: the root sends the sum once its children's data has arrived; a node passes on
        // what its parent sent.
        for (int child : l.child) {
          if (child < 0) continue;
          if (r == t.root) {
            p.add(down_hop_c, down_conn[static_cast<std::size_t>(c * H + child)], bytes,
                  {sent_up(k, c, l.child[0]), sent_up(k, c, l.child[1])}, false);
          } else {
            p.add(down_hop_c, down_conn[static_cast<std::size_t>(c * H + child)], bytes, {down[at(k, c, r)]}, true);
          }
          down[at(k, c, child)] = static_cast<int>(p.transfers.size()) - 1;
          p.place_last(r % G, child % G, r / G, child / G);
          p.charge_proxies_last(proxy[static_cast<std::size_t>(r)], proxy[static_cast<std::size_t>(child)]);
        }
      }
    }
  }
}

}  // namespace

StepProgram build_tree(const ProgramContext& ctx, const CollectiveShape& s) {
  const NcclSystem& sys = ctx.system;
  const int n = sys.nranks();
  const int R = sys.ranks_per_host();
  const int H = n / R;
  const int D = depth_of(H);
  const int nch = std::max(1, s.channels);
  const ProtocolBuffers buf = protocol_buffers(ctx, s.protocol);
  long long chunk = buf.step_payload.count();
  const long long per_channel = channel_share(s);
  if (s.protocol == Protocol::LL128) {
    // calcCollChunking: smaller LL128 chunks for trees when the data per channel is small.
    const double ppn = R;
    const double nsteps = 1 + log2_ceil(H) + 0.1 * ppn;
    while (per_channel / chunk < nsteps * 64 / ppn && chunk > 131072) chunk /= 2;
    while (per_channel / chunk < nsteps * 16 / ppn && chunk > 32768) chunk /= 2;
  }
  StepProgram p;
  p.fixed = base_latency(ctx, Algorithm::TREE, s.protocol);
  p.channel_payload_bytes = static_cast<double>(per_channel);
  const int nics = nic_devices_used(sys);
  const double hosts_per_node = static_cast<double>(sys.gpus()) / R;
  // Up and down share each rank's block (split tree, tree_block): the transfers charge it.
  const HopTransport chain = R > 1 ? sys.transport(1, 0) : HopTransport{};
  TreeBlock blk = tree_block(ctx, s.protocol, R > 1 ? &chain : nullptr);
  if (R > 1 && H == 1) tree_knee(ctx, chain, s.protocol, R, nch, blk);
  TreeHops hops;
  // A step through the network is not charged to the block (the kernel fills the proxy's buffer and
  // the network paces it): it moves at most at its group's threads' share over its step's weight.
  // So does a step through host memory (SHM), where a group's loads in flight, its threads, set
  // its rate (4 x H200: one channel's Tree/LL all-reduce over SHM reaches 1.2 to 1.6 GB/s busbw
  // on 2 to 4 GPUs, calibrate/results/lent-4xh200-2026-11-28-p2p-ramp, where the ring's LL moves
  // 2.3 GB/s a channel each way, lent-4xh200-2026-11-27-transports). Inside a node LL128's groups
  // keep their threads' share as a cap (see tree_block).
  auto make = [&](const HopTransport& t, double gpu_flows, double nic_flows, int src, int dst, int node, bool up) {
    // R - 1 of a host's R ranks send up the chain, and R - 1 down (for a host's memory, SHM).
    Hop h = make_hop(ctx, t, gpu_flows, nic_flows, s.protocol, R > 1 ? (R - 1.0) / R : 1.0);
    h.link_shared = t.kind != TransportKind::NET;
    // SHM: every step crosses the sending socket's host memory (stored, then loaded), which the
    // chain's hops use unevenly while the pipeline fills: charged over time, as the links are.
    h.host_shared = t.kind == TransportKind::SHM;
    if (t.kind == TransportKind::P2P && t.over_nvlink) {
      h.link_share = tree_nvlink_share(ctx, s.protocol) * blk.link_knee_factor;
    }
    if (!h.link_shared || t.kind == TransportKind::SHM) {
      h.channel_cap = (up ? blk.up_cap : blk.down_cap) / step_cost(blk.store_fraction, up ? 2 : 1, up ? 1 : 2);
    } else if (s.protocol == Protocol::LL128) {
      h.channel_cap = up ? blk.up_cap : blk.down_cap;
    }
    h.wire_factor = buf.wire;
    h.latency = hop_latency(ctx, t, Algorithm::TREE, s.protocol);
    if (s.protocol == Protocol::SIMPLE && hw_class(t) == HwClass::NVLINK) {
      // As a ring's slice (set_step_timing): the flag flies at LL's latency, and each Simple step
      // holds its group for the step's barrier and fence, which nothing overlaps.
      h.latency = hop_latency(ctx, t, Algorithm::TREE, Protocol::LL);
      h.occupancy = ctx.rates.simple_tree_step_overhead;
    }
    h.multiplicity = nch;
    h.endpoints = {src, dst, node};
    // Socket proxies between two nodes of several ranks each (pods of one host): charged over
    // time (Hop::proxy_shared). Each node is the root of one tree and the leaf of the other, so
    // both proxies carry the same at every step: the up step (a send and a receive on each) and
    // the down step share them where they overlap, and with one chunk a channel they never do,
    // where the static share would make each wait for both. With more nodes the loads differ from
    // node to node and from step to step (an inner node's proxy carries two children's), which
    // one representative path does not follow: the static share stays. One rank a node: every
    // node's proxy (socket_tree).
    h.proxy_shared = t.kind == TransportKind::NET && sys.host_sockets() && H == 2;
    return p.add_hop(h);
  };
  if (R > 1) {
    const HopTransport t = sys.transport(1, 0);
    // The busiest GPU's links: a middle rank of the chain sends one flow each way per channel
    // (with two ranks each sends one flow in all).
    const double f = R >= 3 ? nch : nch * (R - 1.0) / R;
    hops.up_intra = make(t, f, 0, 1, 0, 0, true);
    hops.down_intra = make(sys.transport(0, 1), f, 0, 0, 1, 0, false);
  }
  if (H > 1) {
    const HopTransport t = sys.transport(R % n, 0);
    // On average a node sends (H-1)/H chunks up and down per channel (the root does not go up,
    // leaves do not go down), through its NICs.
    const double per_node = nch * hosts_per_node * (H - 1.0) / H;
    const double per_gpu = nch / static_cast<double>(R) * (H - 1.0) / H;
    hops.up_net = make(t, per_gpu, per_node / nics, 0, 0, 1, true);
    hops.down_net = make(sys.transport(0, R % n), per_gpu, per_node / nics, 0, 0, 1, false);
  }
  const int pieces = relay_pieces(ctx, s.protocol, chunk, per_channel);
  const long long chunks = std::max<long long>(1, div_up(per_channel, chunk)) * pieces;
  const double bytes = static_cast<double>(per_channel) / chunks;
  for (Hop& h : p.hops) h.bytes_per_cycle = bytes;
  if (R == 1 && H > 1 && sys.host_sockets() && p.hops[hops.up_net].transport.kind == TransportKind::NET) {
    socket_tree(ctx, s, p, hops.up_net, hops.down_net, chunks, bytes, 2 * buf.steps * pieces, pieces);
    return p;
  }
  if (R > 1 && sys.transport(1, 0).kind == TransportKind::SHM) {
    // R - 1 of a host's R ranks receive up the chain and R - 1 down, one step per slot.
    p.host_bytes = 2.0 * nch * sys.gpus_per_socket() * (R - 1.0) / R * shm_fifo_bytes(buf, 1, bytes * pieces);
  }

  // NCCL's tree graph keeps the BALANCED_TREE pattern (init.cc; search.cc falls back to TREE
  // only when the balanced search fails, which the channel search does not model): the chain's
  // first rank talks to the parent node and to the second network child, its second rank to the
  // first child (connect.cc ncclTopoPreset: parent index 0, child0 index 1, child1 index 0). The
  // root has only a second child (trees.cc ncclGetBtree), so an inner node's first child adds one
  // chain hop between it and the network on the way up and on the way down.
  const bool balanced = R > 1;
  // Connections per role: up (chain or network), down chain, down network.
  const int levels = D + 1;
  auto role = [&](int d, int pos) { return d * R + pos; };
  std::vector<int> up_conn(levels * R), down_conn(levels * R), down_net_conn(levels);
  for (int i = 0; i < levels * R; ++i) {
    // The head's up connection crosses the network (below the root): slots at both ends.
    const bool net_up = i % R == 0 && i / R > 0;
    up_conn[i] = p.add_connection((net_up ? 2 * buf.steps : buf.steps) * pieces);
    down_conn[i] = p.add_connection(buf.steps * pieces);
  }
  for (int d = 0; d < levels; ++d) down_net_conn[d] = p.add_connection(2 * buf.steps * pieces);

  std::vector<int> up(levels * R), net_up(levels), down(levels * R), net_down(levels);
  // One block per rank (role); a step with L loads and S stores per byte costs w(L, S) / C of it.
  std::vector<int> block(levels * R), link(levels * R);
  for (int& b : block) b = p.add_shared();
  for (int& l : link) l = p.add_shared();
  // The socket proxies (Hop::proxy_shared): one resource, both nodes' proxies being alike.
  const bool proxies = H > 1 && p.hops[hops.up_net].proxy_shared;
  const int proxy = proxies ? p.add_shared() : -1;
  auto charge_proxy = [&] {
    if (proxies) p.charge_last(-1, 0, proxy);
  };
  // Host memory per level and CPU socket (charged by SHM hops only, host_shared).
  int sockets = 1;
  for (int g = 0; g < sys.gpus(); ++g) sockets = std::max(sockets, sys.socket_of(g) + 1);
  std::vector<int> host(static_cast<std::size_t>(levels * sockets));
  for (int& h : host) h = p.add_shared();
  auto host_of = [&](int d, int pos) { return host[static_cast<std::size_t>(d * sockets + sys.socket_of(pos % sys.gpus()))]; };
  const double per_C = 1.0 / blk.copy_rate.bytes_per_second();
  auto cost = [&](int loads, int stores) { return step_cost(blk.store_fraction, loads, stores) * per_C; };
  auto inputs_of = [&](int id) {  // the data a step reduces: its children's arrivals
    int k = 0;
    for (int d : p.transfers[id].deps) k += d >= 0 ? 1 : 0;
    return k;
  };
  // A rank's down op (the root's reduce-copy-send, a middle rank's copy-send) sends to its chain
  // child and to its network child together; its whole cost is charged on the chain send. Network
  // sends charge no block: the kernel writes them to the proxy's buffer, and the network paces
  // them (the static share), not the block.
  auto charge_down = [&](int d, int pos) {
    const bool child0_second = balanced && d > 0 && d < D;
    const int net = d < D && ((pos == 0 && !child0_second) || (pos == 1 && child0_second)) ? 1 : 0;
    const int root_children = (R > 1 ? 1 : 0) + (D >= 1 ? 1 : 0);
    const double c = d == 0 && pos == 0 ? cost(1 + root_children, 1 + root_children) * blk.root_weight : cost(1, 2 + net);
    if (p.hops[hops.down_intra].link_shared) p.charge_last(block[role(d, pos)], c, link[role(d, pos)], host_of(d, pos));
  };
  for (long long c = 0; c < chunks; ++c) {
    // Up: deepest level first, chain tail first.
    for (int d = D; d >= 0; --d) {
      int below = -1;  // arrival from the chain below this position
      for (int pos = R - 1; pos >= 1; --pos) {
        // An inner node's first network child lands on the chain's second rank (balanced tree).
        const int child0 = pos == 1 && balanced && d > 0 && d < D ? net_up[d + 1] : -1;
        const int id = p.add(hops.up_intra, up_conn[role(d, pos)], bytes, {below, child0}, true);
        p.place_last(pos, pos - 1, d, d);
        if (p.hops[hops.up_intra].link_shared) {
          p.charge_last(block[role(d, pos)], cost(1 + inputs_of(id), 1), link[role(d, pos)], host_of(d, pos));
        }
        up[role(d, pos)] = id;
        below = id;
      }
      if (d > 0) {
        const int child_net = d < D ? net_up[d + 1] : -1;
        net_up[d] = p.add(hops.up_net, up_conn[role(d, 0)], bytes, {below, child_net}, true);
        p.place_last(0, 0, d, d - 1);
        charge_proxy();
      }
    }
    // The root's reduction is complete when its chain and its network children have arrived.
    const int root_chain = R > 1 ? up[role(0, 1)] : -1;
    const int root_net = D >= 1 ? net_up[1] : -1;
    // Down: root first.
    for (int d = 0; d <= D; ++d) {
      int from_above = d == 0 ? -1 : net_down[d - 1];
      // An inner node's chain head passes the chunk to the second rank, which sends it to the
      // first network child (balanced tree): that send follows the chain's first hop.
      const bool child0_second = balanced && d > 0 && d < D;
      if (d < D && !child0_second) {
        net_down[d] = d == 0 ? p.add(hops.down_net, down_net_conn[d], bytes, {root_chain, root_net}, false)
                             : p.add(hops.down_net, down_net_conn[d], bytes, {from_above}, true);
        p.place_last(0, 0, d, d + 1);
        charge_proxy();
      }
      int prev = -1;
      for (int pos = 0; pos + 1 < R; ++pos) {
        int id;
        if (pos == 0) {
          id = d == 0 ? p.add(hops.down_intra, down_conn[role(d, pos)], bytes, {root_chain, root_net}, false)
                      : p.add(hops.down_intra, down_conn[role(d, pos)], bytes, {from_above}, true);
        } else {
          id = p.add(hops.down_intra, down_conn[role(d, pos)], bytes, {prev}, true);
        }
        p.place_last(pos, pos + 1, d, d);
        charge_down(d, pos);
        down[role(d, pos)] = id;
        prev = id;
        if (pos == 0 && child0_second) {
          net_down[d] = p.add(hops.down_net, down_net_conn[d], bytes, {id}, true);
          p.place_last(1, 0, d, d + 1);
          charge_proxy();
        }
      }
    }
  }
  return p;
}

StepProgram build_nvls(const ProgramContext& ctx, const CollectiveShape& s) {
  // One node: every chunk is reduced by the switch and multicast back (all-reduce), or
  // multicast (all-gather) / reduced (reduce-scatter). NVLS moves C(1 + 1/R) bytes per direction
  // per all-reduce chunk C and C(R-1)/R per all-gather or reduce-scatter chunk; the NVLS rate
  // (nvlink x nccl.nvls.efficiency) is the all-reduce algorithm rate, so the other two count
  // (R-1)/(R+1) of their chunk.
  const NcclSystem& sys = ctx.system;
  const int R = sys.ranks_per_host();
  const int nch = std::max(1, s.channels);
  StepProgram p;
  p.fixed = base_latency(ctx, Algorithm::NVLS, Protocol::SIMPLE);
  const long long per_channel = channel_share(s);
  p.channel_payload_bytes = static_cast<double>(per_channel);
  const long long chunk = nvls_chunk(ctx, s, R);
  const double equiv = s.op == CollectiveOp::ALL_REDUCE ? 1.0 : (R - 1.0) / (R + 1.0);
  Hop h;
  h.transport = sys.transport(0, 1 % sys.nranks());
  h.label = "NVLS (NVSwitch multicast)";
  h.loads = {{ResourceKind::NVLS, static_cast<double>(nch)}};
  h.channel_cap = block_rate(ctx, Protocol::SIMPLE);
  h.latency = hop_latency(ctx, h.transport, Algorithm::RING, Protocol::SIMPLE);
  h.multiplicity = nch;
  h.endpoints = {0, 0, 0, true};
  const long long chunks = std::max<long long>(1, div_up(per_channel, chunk));
  const double bytes = static_cast<double>(per_channel) / chunks * equiv;
  h.bytes_per_cycle = bytes;
  const int hop = p.add_hop(h);
  const int conn = p.add_connection(ctx.version.device.steps);
  for (long long c = 0; c < chunks; ++c) p.add(hop, conn, bytes);
  return p;
}

StepProgram build_nvls_tree(const ProgramContext& ctx, const CollectiveShape& s) {
  // NVLS inside each node (reduce-scatter to the GPUs as heads, all-gather back), a tree between
  // nodes on each head's 1/R share.
  const NcclSystem& sys = ctx.system;
  const int n = sys.nranks();
  const int R = sys.ranks_per_host();
  const int H = n / R;
  const int D = depth_of(H);
  const int nch = std::max(1, s.channels);
  StepProgram p;
  p.fixed = base_latency(ctx, Algorithm::NVLS_TREE, Protocol::SIMPLE);
  const long long per_channel = channel_share(s);
  p.channel_payload_bytes = static_cast<double>(per_channel);
  // Each loop of a channel reduces R chunks, one per head GPU; a head sends its chunk through the
  // tree (enqueue.cc: nchunksPerLoop = nHeads for NVLS and NVLS-Tree).
  const long long chunk = nvls_chunk(ctx, s, R);
  const long long loops = std::max<long long>(1, div_up(per_channel, chunk * R));
  const double c_bytes = static_cast<double>(per_channel) / loops;
  const double share = c_bytes / R;
  const long long chunks = loops;
  const int nics = nic_devices_used(sys);
  const double hosts_per_node = static_cast<double>(sys.gpus()) / R;
  const HopTransport intra = sys.transport(0, 1 % n);
  Hop nv;
  nv.transport = intra;
  nv.label = "NVLS (NVSwitch multicast)";
  nv.loads = {{ResourceKind::NVLS, 2.0 * nch}};  // reduce and broadcast halves in flight together
  nv.channel_cap = block_rate(ctx, Protocol::SIMPLE);
  nv.latency = hop_latency(ctx, intra, Algorithm::RING, Protocol::SIMPLE);
  nv.multiplicity = nch;
  nv.bytes_per_cycle = c_bytes / 2;
  nv.endpoints = {0, 0, 0, true};
  const int nv_hop = p.add_hop(nv);
  const HopTransport net_t = sys.transport(0, R % n);
  // Every GPU is a head: per node R shares go up and down (H-1)/H of the time.
  const double per_node = nch * sys.gpus() * (H - 1.0) / H;
  Hop up = make_hop(ctx, net_t, nch * (H - 1.0) / H, per_node / nics);
  up.channel_cap = block_rate(ctx, Protocol::SIMPLE);
  up.latency = hop_latency(ctx, net_t, Algorithm::NVLS_TREE, Protocol::SIMPLE);
  up.multiplicity = nch;
  up.bytes_per_cycle = share;
  up.endpoints = {0, 0, 1};
  Hop down = up;
  const int up_hop = p.add_hop(up);
  const int down_hop = p.add_hop(down);
  (void)hosts_per_node;
  const int levels = D + 1;
  const int nv_conn = p.add_connection(ctx.version.device.steps);
  const int nv_out_conn = p.add_connection(ctx.version.device.steps);
  std::vector<int> up_conn(levels), down_conn(levels);
  for (int d = 0; d < levels; ++d) {
    up_conn[d] = p.add_connection(2 * ctx.version.device.steps);
    down_conn[d] = p.add_connection(2 * ctx.version.device.steps);
  }
  std::vector<int> net_up(levels, -1), net_down(levels, -1);
  for (long long c = 0; c < chunks; ++c) {
    const int red = p.add(nv_hop, nv_conn, c_bytes / 2);
    for (int d = D; d >= 1; --d) {
      const int child = d < D ? net_up[d + 1] : -1;
      net_up[d] = p.add(up_hop, up_conn[d], share, {red, child}, true);
      p.place_last(0, 0, d, d - 1);
    }
    const int top = D >= 1 ? net_up[1] : red;
    for (int d = 0; d < D; ++d) {
      net_down[d] = d == 0 ? p.add(down_hop, down_conn[d], share, {top, red}, false)
                           : p.add(down_hop, down_conn[d], share, {net_down[d - 1]}, true);
      p.place_last(0, 0, d, d + 1);
    }
    // The deepest level's broadcast waits for the last network hop down (or the reduction on one
    // node); the program follows that longest path.
    const int last = D >= 1 ? net_down[D - 1] : red;
    p.add(nv_hop, nv_out_conn, c_bytes / 2, {last, top}, true);
  }
  return p;
}

StepProgram build_collnet(const ProgramContext& ctx, const CollectiveShape& s) {
  // Scatter to the NIC heads over P2P, all-reduce of each head's share in the network switch,
  // gather back. The network hop costs a round trip to the switch.
  const NcclSystem& sys = ctx.system;
  const int n = sys.nranks();
  const int R = sys.ranks_per_host();
  const int nch = std::max(1, s.channels);
  StepProgram p;
  p.fixed = base_latency(ctx, s.algorithm, Protocol::SIMPLE);
  const long long per_channel = channel_share(s);
  p.channel_payload_bytes = static_cast<double>(per_channel);
  const long long step = protocol_buffers(ctx, Protocol::SIMPLE).step_payload.count();
  const long long chunk = std::min<long long>(step, 256 * 1024);
  const long long chunks = std::max<long long>(1, div_up(per_channel, chunk));
  const double c_bytes = static_cast<double>(per_channel) / chunks;
  const int nics = nic_devices_used(sys);
  const Bandwidth cap = block_rate(ctx, Protocol::SIMPLE);
  int scatter = -1, gather = -1;
  const int conn_s = p.add_connection(ctx.version.device.steps);
  const int conn_g = p.add_connection(ctx.version.device.steps);
  const int conn_n = p.add_connection(2 * ctx.version.device.steps);
  const double intra_bytes = R > 1 ? c_bytes * (R - 1.0) / R : 0;
  if (R > 1) {
    const HopTransport t = sys.transport(1, 0);
    Hop h = make_hop(ctx, t, static_cast<double>(nch), 0);
    h.channel_cap = cap;
    h.latency = hop_latency(ctx, t, s.algorithm, Protocol::SIMPLE);
    h.multiplicity = nch;
    h.bytes_per_cycle = intra_bytes;
    h.endpoints = {1, 0, 0};
    scatter = p.add_hop(h);
    h.endpoints = {0, 1, 0};
    gather = p.add_hop(h);
  }
  const HopTransport net_t = sys.transport(0, R % n);
  Hop h = make_hop(ctx, net_t, static_cast<double>(nch), nch * sys.gpus() / static_cast<double>(nics));
  h.channel_cap = cap;
  // Up to the switch and back down: two network latencies.
  h.latency = hop_latency(ctx, net_t, s.algorithm, Protocol::SIMPLE) + ctx.rates.net_latency;
  h.multiplicity = nch;
  h.bytes_per_cycle = c_bytes / R;
  h.endpoints = {0, 0, 1};
  const int net_hop = p.add_hop(h);
  for (long long c = 0; c < chunks; ++c) {
    const int sc = scatter >= 0 ? p.add(scatter, conn_s, intra_bytes) : -1;
    const int nt = p.add(net_hop, conn_n, c_bytes / R, {sc}, true);
    if (gather >= 0) p.add(gather, conn_g, intra_bytes, {nt}, true);
  }
  return p;
}

StepProgram build_pat(const ProgramContext& ctx, const CollectiveShape& s) {
  // One rank per node. All-gather: round k sends the 2^k pieces gathered so far to the rank 2^k
  // away; reduce-scatter runs the rounds in the opposite order. Rounds depend on each other.
  const NcclSystem& sys = ctx.system;
  const int n = sys.nranks();
  const int nch = std::max(1, s.channels);
  StepProgram p;
  p.fixed = base_latency(ctx, Algorithm::PAT, Protocol::SIMPLE);
  const double piece = static_cast<double>(channel_share(s)) / n;  // one rank's piece on the busiest channel
  p.channel_payload_bytes = piece * (n - 1);
  long long chunk = protocol_buffers(ctx, Protocol::SIMPLE).step_payload.count();
  const long long nbytes = s.bytes.count();
  const int lim = s.op == CollectiveOp::ALL_GATHER ? 32 : 16;
  while (chunk * nch * lim > nbytes && chunk > 65536) chunk /= 2;
  const HopTransport t = sys.transport(0, 1 % n);
  const int nics = nic_devices_used(sys);
  Hop h = make_hop(ctx, t, static_cast<double>(nch), nch * sys.gpus() / static_cast<double>(nics));
  h.channel_cap = block_rate(ctx, Protocol::SIMPLE);
  h.latency = hop_latency(ctx, t, Algorithm::PAT, Protocol::SIMPLE);
  h.multiplicity = nch;
  h.endpoints = {0, 0, 1};
  h.bytes_per_cycle = static_cast<double>(chunk);
  const int hop = p.add_hop(h);
  const int conn = p.add_connection(2 * ctx.version.device.steps);
  const int rounds = log2_ceil(n);
  int prev_round_last = -1;
  for (int k = 0; k < rounds; ++k) {
    const int kk = s.op == CollectiveOp::ALL_GATHER ? k : rounds - 1 - k;
    const double pieces = std::min<double>(1 << kk, n - (1 << kk));
    const double bytes = pieces * piece;
    const long long chunks = std::max<long long>(1, static_cast<long long>(std::ceil(bytes / chunk)));
    int last = prev_round_last;
    for (long long c = 0; c < chunks; ++c) {
      last = p.add(hop, conn, bytes / chunks, {prev_round_last}, c == 0);
      p.place_last(0, 0, 0, 1 << kk);
    }
    prev_round_last = last;
  }
  return p;
}

}  // namespace clustersim::sim::nccl
