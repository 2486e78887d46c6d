#pragma once
// Decomposition of one collective into the step program NCCL's kernels execute
// (sim/nccl/step_program.hpp), per algorithm, with NCCL's chunking (src/enqueue.cc
// calcCollChunking, src/device/prims_*.h, all_reduce.h, all_gather.h, ...):
//
//   protocol  step buffer (NCCL_STEPS = 8 per connection)   payload per step      wire/payload
//   LL        NCCL_LL_BUFFSIZE / 8 = 64 KiB of 16-byte lines   half: 32 KiB           2
//   LL128     NCCL_LL128_BUFFSIZE / 8 = 600 KiB of 128-byte lines   15/16: 562.5 KiB  16/15
//   Simple    NCCL_BUFFSIZE / 8 = 512 KiB                      all                    1
// Ring (Simple): a chunk is chunkSteps (4) steps, sent in slices of sliceSteps (2) steps, so a
// connection holds 8/2 = 4 slices in flight; LL and LL128 move one step per transfer (8 in flight).
// A network connection has NCCL_STEPS slots at each end (the sender's buffer that its proxy sends
// from, and the receiver's), so it holds twice as many transfers in flight.
//
//   Ring all-reduce     per channel and loop (nRanks chunks): 2(n-1) steps; step k of rank r
//                       forwards what it received at step k-1 (reduce-scatter, then all-gather)
//   Ring all-gather /   n-1 steps
//   reduce-scatter
//   Broadcast / reduce  a chain from (to) the root, chunk by chunk (sliceSteps = chunkSteps = 1)
//   Tree all-reduce     chain inside each node, binary tree of node heads; chunks go up
//                       (reduce) then down (broadcast), both pipelined (split thread groups)
//   NVLS                the NVSwitch reduces (multimem.ld_reduce) and multicasts (multimem.st):
//                       one transfer per chunk through the switch
//   NVLS-Tree           NVLS inside the node, tree between nodes on each GPU's share
//   PAT                 one GPU per node: log2(n) rounds doubling (halving) the data exchanged
//   CollNet             reduction in the network: scatter to the NIC heads, network all-reduce,
//                       gather
//   Send/recv, alltoall P2P channels (up to p2pnChannelsPerPeer per peer), chunks of the P2P chunk
//                       size (NVLink 512 KiB, PCI and network 128 KiB unless NCCL_P2P_*_CHUNKSIZE
//                       or the network plugin set them), 8 in flight per connection; inside a node
//                       the receiver copies each Simple step out of its FIFO once it has arrived,
//                       and a block that sends and receives shares its copy rate between the two
//                       (sim/nccl/p2p_programs.cpp gives the schedule and the arithmetic)
//
// Data is spread over the channels NCCL uses as its planner spreads it (sim/nccl/tuner.hpp): every
// channel is modelled as the busiest one (CollectiveShape::channel_bytes), the others finishing no
// later; releases before 2.23 and CollNet split evenly over nMaxChannels.
//
// What one channel's thread block moves depends on the step's memory operations (Simple:
// src/device/prims_simple.h, common_kernel.h reduceCopy; LL and LL128: prims_ll.h, prims_ll128.h:
// every step reads its sources and writes its destinations, the peer's buffer over the link among
// them). Per payload byte a step with L loads and S stores costs
//   w(L, S) = L (1 - f) + S f          (a copy, L = S = 1, costs 1)
// of the block's copy time 1 / C, with the protocol's C and f: Simple nccl.simple.channel_bandwidth
// and nccl.store_fraction, LL nccl.ll.channel_bandwidth and nccl.ll.store_fraction, LL128 likewise
// (LL and LL128 only where their store share is known; else their steps all cost 1). Measured
// with one channel on 2 x H200 (calibrate/results/lent-2xh200-2026-11-21-channel-rate), the copy
// rates and store shares solved from broadcast (1,2) and reduce (2,1) predict the all-reduce,
// all-gather and reduce-scatter within 3-10% for every protocol.
// The steps per payload byte sent (out of place; NCCL 2.28 src/device/all_reduce.h,
// all_gather.h, reduce_scatter.h, broadcast.h, reduce.h):
//   all-reduce      send (1,1), (n-2) recvReduceSend (2,1), recvReduceCopySend (2,2),
//                   (n-2) recvCopySend (1,2), recv (1,1)            per 2(n-1) sends
//   all-gather      copySend (1,2), (n-2) recvCopySend (1,2), recv (1,1)     per n-1 sends
//                   (in place the first step is a send (1,1))
//   reduce-scatter  send (1,1), (n-2) recvReduceSend (2,1), recvReduceCopy (2,1)   per n-1
//   broadcast       copySend (1,2) at the root (send (1,1) in place), recvCopySend (1,2), recv (1,1)
//                   at the end
//   reduce          send (1,1), recvReduceSend (2,1), recvReduceCopy (2,1) at the root
// A ring's block does every step of a loop in turn: its sends are capped at C / (mean w of the
// sending steps), and the loop's final step, which sends nothing (all-reduce and all-gather recv
// (1,1), reduce-scatter recvReduceCopy (2,1)), is a "local copy" transfer at C / w on the block's
// connection: every channel's blocks run in step, so the links idle meanwhile (2 ranks: one send
// and one local step per loop; measured 2-rank all-gather on H200 reaches ~75% of the link rate).
// A chain's ranks each do one kind, so the slowest kind caps it (C / max w).
// Every Simple slice over NVLink also holds a ring's block for nccl.simple.slice_overhead o
// (prims_simple.h genericOp: barrier, system-scope fence, flag store after each slice; the next
// slice waits), while the flag flies at LL's step latency l: a rank's 2 slices per step follow
// one another, so a ring all-gather of a few KiB on n ranks takes about
//   base + 2 n o  (n - 1 sending steps and the final receive, 2 slices each; l < o hides),
// and a large slice of S bytes S / rate + o (set_step_timing). A broadcast's or reduce's chain
// keeps NCCL's step latency and pays o per step too (one slice per step): back to back, a launch
// of k steps per channel lasts about k (o + S / rate), whatever the chain's length, and a reduce's
// steps, which store once (recvReduceSend), pay nccl.simple.reduce_slice_overhead instead. 4 x
// H200 measure it directly (calibrate/results/lent-4xh200-2026-11-22-chain-simple): one channel,
// 128 KiB steps against 512 KiB ones, 2.0 us more per extra step for a broadcast, 1.0 us for a
// reduce; and the chain's length costs nothing (196 us for 4 MiB on 2, 3 and 4 GPUs).
//
// A network step is stored and forwarded at the sender: NCCL's proxy posts a step to the network
// only once the kernel has written all of it (NCCL 2.28 src/transport/net.cc sendProxyProgress:
// isend waits for the kernel's tail past the step, LL and LL128 also for every line's flag;
// src/device/prims_ll128.h GenericOp writes the whole step, then postSend's system fence and tail
// store). The message then crosses the NIC on its own, after the kernel's copy (the transfer's
// bytes / rate), pipelined with the next step (Hop::forward, on the arrival only). A transfer of
// B payload bytes at rate r = min(block cap c, link shares) stands for both stages at the slower
// one's rate; stored and forwarded, the step takes the kernel's stage and then the network's:
//   kernel = B / c,  network = max(B / l, message time),  forward = kernel + network - B / r
// (l: the flow's share of the links alone, Hop::link_rate)
// with the message time of M = B x wire factor wire bytes on the network device:
// The network plugin's multi-rail scheduler (aws-ofi-nccl v1.16.3 src/nccl_ofi_scheduler.cpp,
// fabric nccl_net_min_stripe_size T = 128 KiB) writes a message over
//   k = min(ceil(M / T), rails), lowered to a divisor of rails
// rails of the fused device, each carrying ceil(M / k) rounded up to 128 bytes at one rail's rate
// (the device's nccl.net rate / rails); without striping (NCCL's own transports) the message
// crosses one device: M / device rate. A Tree/LL128 step of 72000 payload bytes (32 MiB on 16
// channels, 4 to 32 p5 nodes) is 76800 wire bytes, under T: one 100 Gb/s rail, 7.0 us at 0.88,
// after the kernel's 5.2 us at its 13.75 GB/s cap.

#include <string>

#include "sim/nccl/channel_search.hpp"
#include "sim/nccl/nccl_env.hpp"
#include "sim/nccl/nccl_parameters.hpp"
#include "sim/nccl/nccl_system.hpp"
#include "sim/nccl/nccl_version.hpp"
#include "sim/nccl/step_program.hpp"

namespace clustersim::sim::nccl {

// Programs beyond this many transfers would take seconds and gigabytes; a cluster that large needs
// the tuner's log-depth algorithms anyway (the builders refuse them: RuntimeError, exit 1).
inline constexpr double kMaxTransfers = 3e7;

struct ProgramContext {
  const NcclSystem& system;
  const ChannelPlan& plan;
  const NcclVersion& version;
  const NcclEnv& env;
  const NcclRates& rates;
};

struct CollectiveShape {
  CollectiveOp op = CollectiveOp::ALL_REDUCE;
  Algorithm algorithm = Algorithm::RING;
  Protocol protocol = Protocol::SIMPLE;
  Bytes bytes;        // NCCL's nBytes (all-gather/reduce-scatter: the total; alltoall: one rank's buffer)
  int channels = 1;   // channels this collective uses
  // nBytes on the busiest channel (TunerChoice::channel_bytes); 0: an even split over `channels`.
  long long channel_bytes = 0;
  int root = 0;
  // Send/recv between one pair (src -> dst), the other ranks idle, instead of nccl-tests' ring of
  // pairs (-1: the ring).
  int pair_src = -1, pair_dst = -1;
  // nccl-tests' in-place columns: the all-gather's first step and the broadcast root send straight
  // from the output buffer (all_gather.h / broadcast.h directSend: 1 load, 1 store) instead of
  // copying the input to the output as they send (directCopySend: 1 load, 2 stores).
  bool in_place = false;
  // The block's threads (TunerChoice::threads, with Simple's extra sync warp); 0: NCCL's default.
  int threads = 0;
};

// The payload of the busiest channel.
long long channel_share(const CollectiveShape& s);

// Effective buffer sizes (defaults, the network plugin's NCCL_BUFFSIZE, the user's variables).
struct ProtocolBuffers {
  Bytes step_payload;   // payload bytes of one step of one connection
  double wire = 1;      // wire bytes per payload byte
  int steps = 8;        // slots per connection
};
ProtocolBuffers protocol_buffers(const ProgramContext& ctx, Protocol p);
// The P2P chunk size NCCL uses between these ranks' transport (init.cc computeBuffSizes).
Bytes p2p_chunk_size(const ProgramContext& ctx, const HopTransport& t);

// Resource capacities of one node for the rates above; with `host_bytes`, the SHM buffers a
// socket's connections keep in use (StepProgram::host_bytes), the host memory's rate is raised
// for the share of them its cache holds: h = min(1, C / W), R / (h / s + 1 - h)
// (nccl.shm.host_cache_bytes C, nccl.shm.host_cache_speedup s; nccl_parameters.hpp).
Capacities resource_capacities(const NcclRates& rates, double host_bytes = 0);
// Host memory one SHM connection's buffer keeps in use (src/device/prims_simple.h): its
// NCCL_STEPS slots are taken `slice_steps` at a time, one slice of `slice_payload` bytes in each
// group, so a slice smaller than its group leaves the rest untouched; in wire bytes.
double shm_fifo_bytes(const ProtocolBuffers& buf, int slice_steps, double slice_payload);

// The step program of one collective, with rates assigned.
StepProgram build_program(const ProgramContext& ctx, const CollectiveShape& shape);

// Per-algorithm builders (collective_program.cpp, tree_programs.cpp, p2p_programs.cpp).
StepProgram build_ring(const ProgramContext& ctx, const CollectiveShape& shape);
StepProgram build_chain(const ProgramContext& ctx, const CollectiveShape& shape);
StepProgram build_tree(const ProgramContext& ctx, const CollectiveShape& shape);
StepProgram build_nvls(const ProgramContext& ctx, const CollectiveShape& shape);
StepProgram build_nvls_tree(const ProgramContext& ctx, const CollectiveShape& shape);
StepProgram build_collnet(const ProgramContext& ctx, const CollectiveShape& shape);
StepProgram build_pat(const ProgramContext& ctx, const CollectiveShape& shape);
StepProgram build_p2p(const ProgramContext& ctx, const CollectiveShape& shape);

// Helpers shared by the builders.
HwClass hw_class(const HopTransport& t);
// NCCL's per-step latency for a hop of this transport (hwLat x calibration scale, plus the wire
// latency of the network).
Duration hop_latency(const ProgramContext& ctx, const HopTransport& t, Algorithm a, Protocol p);
// A ring hop's step timing: NCCL's per-step latency, except Simple over NVLink, where the
// latency is LL's (the flag's flight) and each slice occupies the sending block for
// nccl.simple.slice_overhead (prims_simple.h: barrier, system-scope fence, flag store per slice):
// a rank's slices follow one another, so a step of SlicePerChunk slices costs that many.
void set_step_timing(const ProgramContext& ctx, const HopTransport& t, Protocol p, Hop& h);
// The collective's fixed cost (NCCL base latency x scale).
Duration base_latency(const ProgramContext& ctx, Algorithm a, Protocol p);
// The block rate of protocol p on a hop of transport t (over SHM: at most its SHM figure, times
// nccl.shm.two_way_efficiency where the GPU also stores into host memory: `two_way` as make_hop's).
Bandwidth block_rate(const ProgramContext& ctx, Protocol p, const HopTransport& t, bool two_way = true);
// What a ring's block with `s.threads` threads moves over its rate at NCCL's default threads
// (512; 640 with LL128), t = the threads that move data (Simple's ring block has one sync warp
// more): g(t) / g(t_default) with g(t) = t / (t + t_half), t_half the protocol's (Simple over SHM
// its own; nccl_parameters.hpp): a block's loads in flight grow with its threads until the block's
// own limit binds. 1 when s.threads is 0 (NCCL's default) or the algorithm is not a ring (NCCL
// launches Tree with 640 threads whatever NCCL_NTHREADS says).
double thread_factor(const ProgramContext& ctx, const CollectiveShape& s, const HopTransport& t);
// A hop between two ranks with resource loads: flows per GPU link and per NIC as given. Over SHM
// each flow also stores into and loads from its socket's host memory: 2 x flows per GPU x the
// communicator's GPUs on the socket x `sending_share` (the share of them that send on this hop: a
// ring's all, a chain's n - 1 of n). With P2P read over NVLink (Simple: the receiver loads from
// the sender's buffer), each load's request crosses the link against the data; where the GPUs that
// send on the hop also receive on it (`two_way`: a ring, a chain's middle, send/recv, not a single
// pair or a 2-rank chain) their ports carry both, so each flow counts 1 / nccl.nvlink.read_efficiency
// on both directions; over SHM such GPUs store into host memory and load from it at once, and each
// flow counts 1 / nccl.shm.two_way_efficiency on SHM_OUT and SHM_IN.
Hop make_hop(const ProgramContext& ctx, const HopTransport& t, double flows_per_gpu, double flows_per_nic,
             Protocol protocol = Protocol::SIMPLE, double sending_share = 1.0, bool two_way = true);
// Per-flow cap of one channel for the protocol (LL shares its total cap over `channels`).
// LL relays line by line (src/device/prims_ll.h: a thread reads its 16-byte line once its flag is
// set and passes it on), so a rank along a chain or tree forwards each pass of its block
// (max_threads[LL] lines of 8 data bytes) as soon as it has arrived, not the whole step: chains
// and trees move each LL step in that many pieces (at most NCCL_STEPS, with as many more slots
// per connection); 1 for the other protocols.
int relay_pieces(const ProgramContext& ctx, Protocol p, long long chunk, long long per_channel);
// What one block of the protocol's ring thread count copies (nccl.{ll,ll128,simple}.channel_bandwidth):
// a channel's cap before its steps' weights.
Bandwidth block_rate(const ProgramContext& ctx, Protocol p);
// What a step with `loads` loads and `stores` stores per payload byte costs relative to a copy,
// w(L, S) = L (1 - f) + S f, with f a protocol's store share (see the header).
inline double step_cost(double f, int loads, int stores) { return loads * (1 - f) + stores * f; }
// The cost of the op's steps relative to a copy (see the header): sum of w over a ring loop per
// send, or the largest w along a chain; 1 for send/recv, and for LL and LL128 without a store share.
// On a hop of transport `t` (SHM: Simple's own store share, nccl.shm.store_fraction).
double step_weight(const ProgramContext& ctx, CollectiveOp op, Algorithm a, Protocol p, int nranks,
                   bool in_place = false, const HopTransport* t = nullptr);
// A tree's thread block (NCCL 2.28 src/device/all_reduce.h runTreeSplit; enqueue.cc gives Tree
// NCCL_MAX_NTHREADS = 640 threads). Each rank's block on a channel splits into two groups: the
// reduce going up gets nthreads/2 + 64 threads with Simple (384), 70% rounded down to warps with
// LL and LL128 (448); the broadcast coming down the rest (256, 192); the root's whole block
// reduces, copies and sends. Their steps, in loads and stores per byte: a leaf sends (1,1) up; a
// middle rank with k children reduces and sends (1+k, 1) up and copies and sends (1, 1+k) down
// (k = 1 in a chain, 2 at an inner node of the balanced tree); the root (1+k, 1+k).
// Inside a node both groups share the block (step_program.hpp's shared resources): a step costs
// w(L, S) / C block seconds per byte, C the protocol's copy rate (nccl.*.channel_bandwidth), so
// a group alone moves C / w and, once both are busy, a middle rank moves C / (w_up + w_down) =
// C / 3 in a chain whatever f. Measured with one channel on 4 x H200 (calibrate/results/
// lent-4xh200-2026-11-21-tree-rate): LL 3.79 GB/s (11.1 / 3 = 3.70), Simple 13.5 (40.8 / 3 =
// 13.6), LL128 10.0 (34.3 / 3 = 11.4, held to 10.3 by the cap below). The groups' links are
// shared the same way (Hop::link_shared: a middle rank sends one flow each way per channel), at
// nccl.tree.nvlink_share of the NVLink rate with Simple, nccl.tree.ll_nvlink_share with LL,
// nccl.tree.ll128_nvlink_share with LL128 (Hop::link_share; NCCL's tuner assumes 0.92 of the graph's bandwidth for a tree
// all-reduce and 7/9 for LL128 on one node, and 4 x H200 at 24 channels measure 313 GB/s (Simple),
// 311 (LL) and 282 (LL128) wire bytes per second out of a middle rank against the ring's 340):
// with many channels the link, not the blocks, holds a chain to share x nvlink / (2 x wire
// factor) per direction.
// With Simple each step over NVLink also holds its group for nccl.simple.tree_step_overhead (the
// step's barrier and fence; the flag then flies at LL's latency), as a ring's slice does: 4 x H200
// take 2.8-3.1 us more per extra step when the steps are 128 KiB instead of 512 KiB
// (calibrate/results/lent-4xh200-2026-11-22-step-cost). Less that, a 2-rank root's reduce-copy-
// send runs at C / 2.05, its w(2, 2) = 2.
// LL128's groups are also held to their threads' share of a 640-thread ring block, C x threads
// / 640 (up 0.7 C, down 0.3 C: 10.3 GB/s on the H200, 10.0 measured).
// With LL the root's reduce-copy-send costs w x nccl.ll.tree_root_weight: one 640-thread group
// runs it through a primitive of two receive and two send peers (FanSymmetric<
// NCCL_MAX_TREE_ARITY_TOP>), where the ring's steps have one of each. 4 x H200 on one channel
// measure a 2-rank LL tree, whose root binds, at C / 2.32 (5.02 GB/s) against C / w(2,2) = C / 2,
// while the 2-rank ring all-reduce, which runs the same loads and stores per byte, comes within 1%
// of what they alone predict for it. Simple's root measures w(2,2) = 2.05 less its step cost (within the model); LL128's
// 2-rank tree is held by its groups' caps before its root.
// On one node over NVLink a chain's channels meet the link's knee as a ring's do (step_program.hpp),
// with Simple and LL (tree_knee): in steady state they move the soft minimum (D^-p + L^-p)^(-1/p)
// of what the busiest rank's blocks offer, D = n c k, and what its link carries, L (p the NVLink
// knee exponent; n channels of c each, a middle rank's C / 3 or a 2-rank root's C / (2 x root
// weight); k = 2 sends a byte for a middle rank, up and down, 1 with two ranks; L the NVLink rate
// times the tree's share). With x = D / L, up to the corner (x <= 1) the blocks bind and keep
// (1 + x^p)^(-1/p) of C; past it the link binds and keeps (1 + x^-p)^(-1/p) of its share. Each
// slows only what binds: a group alone on its block, filling the pipeline, keeps its slack.
// 2 x H200 (calibrate/results/lent-4xh200-2026-11-22-tree-2rank) measure a 2-rank Simple tree at
// 18.5, 17.9, 17.4, 16.9, 16.1 and 13.0 GB/s a channel with 1, 4, 8, 12, 16 and 24 channels: 0.97,
// 0.94, 0.91, 0.87 and 0.70 of one channel's rate at 72 to 312 GB/s on the link, as the 2-rank
// ring loses (0.98, 0.93, 0.81 at 82 to 271 GB/s), and 4 ranks' middle ranks at the same link
// payload. LL128's tree is left out: it loses per channel from 4 channels on (12.7,
// 12.6, 11.4, 10.4, 10.1, 9.8, 8.9 GB/s at 1, 2, 4, 8, 12, 16, 24 channels, 2 ranks), at 46 GB/s
// on the link where the ring of 2 keeps 98.5% of its rate at 63, which the knee cannot describe.
// Network steps are not charged to the block (the kernel fills the proxy's buffer; the network
// paces the step): each moves at most at its group's threads' share over its step's weight,
// C x threads / ref / w(2,1) up and / w(1,2) down (ref the protocol's ring block: 512 threads
// for Simple and LL, 640 for LL128), which the published p5 and p4de sets fit.
struct TreeBlock {
  Bandwidth copy_rate;          // C
  double store_fraction = 0.5;  // f of w(L, S) (0.5 where the protocol has none: loads and stores alike)
  Bandwidth up_cap, down_cap;   // the groups' threads' shares of C
  double root_weight = 1;       // the root's reduce-copy-send over its w (LL: nccl.ll.tree_root_weight)
  double link_knee_factor = 1;  // what tree_knee left of the chain's NVLink share (1: none)
};
// On the chain's transport `t` where given: over SHM the block loads each step from host memory
// (block_rate by transport) and prices it with SHM's store share (step_store_fraction).
TreeBlock tree_block(const ProgramContext& ctx, Protocol p, const HopTransport* t = nullptr);
// The share of the NVLink rate a one-node chain reaches with protocol p (nccl.tree.*nvlink_share).
double tree_nvlink_share(const ProgramContext& ctx, Protocol p);
// The NVLink knee on a one-node chain of `ranks` ranks over `t` (Simple and LL; see the header):
// below the corner scales the block's copy rate and its groups' caps by s = (1 + x^p)^(-1/p), above
// it the chain's link share by (1 + x^-p)^(-1/p). No-op without a knee exponent or off NVLink.
void tree_knee(const ProgramContext& ctx, const HopTransport& t, Protocol p, int ranks, int channels, TreeBlock& b);
// The store share that prices a protocol's steps (negative: its steps cost alike), on a hop of
// transport `t` where given (SHM: nccl.shm.store_fraction for Simple).
double step_store_fraction(const ProgramContext& ctx, Protocol p, const HopTransport* t = nullptr);
// NIC devices a physical node uses for the communicator (those next to its GPUs, else all).
int nic_devices_used(const NcclSystem& sys);
// The time one network message of `wire_bytes` takes on the network device (the plugin's
// striping over the device's rails; see the header); 0 for a hop that is not a network hop.
Duration net_forward_time(const ProgramContext& ctx, const HopTransport& t, double wire_bytes);
// The store-and-forward stage a network hop's transfer of `bytes` payload bytes adds after its
// finish (Hop::forward; the header's formula); uses the hop's assigned rate and cap.
Duration net_forward_stage(const ProgramContext& ctx, const Hop& h, double bytes);

}  // namespace clustersim::sim::nccl
