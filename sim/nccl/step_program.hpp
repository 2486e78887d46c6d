#pragma once
// A collective as the transfers NCCL's kernels make, for one representative channel, with the
// dependencies that order them. Both speeds of the model run the same program:
//  * the analytic fast path (evaluate_program) gives each transfer its uncontended rate and walks
//    the program once in order (a longest-path pass, no event queue);
//  * the event simulation (sim/nccl/collective_sim.hpp) starts each transfer as a flow on the
//    shared network when its dependencies are met.
//
// Semantics (times in seconds, sizes in payload bytes):
//   start(i)   = max(t0, arrival(dep) for each dep of i, finish of the previous transfer on the
//                same connection, credit(i))
//   finish(i)  = start(i) + occupancy(hop(i)) + bytes(i) / rate(hop(i))
//   arrival(i) = finish(i) + forward(hop(i)) + latency(hop(i))
//   credit(i)  = consumed(j) + latency(hop(j)) for j the transfer `window` places earlier on the
//                same connection (NCCL_STEPS slots per connection; a Simple slice holds
//                sliceSteps slots); consumed(j) = the latest finish of the transfers that read j
//                (marked `consumes`), or arrival(j) when nothing forwards it
//   total      = t0 + max arrival, with t0 the collective's fixed cost (NCCL base latency)
// Symmetry: a program lists the transfers of the distinct roles only (one rank for a ring inside a
// node; one rank per node position for a ring over nodes; one per tree level and chain position).
// A dependency on "the upstream rank's transfer of the previous step" points at the transfer of the
// role that plays the upstream rank, which by symmetry has the same times.
//
// Rates come from the hops: each hop names the physical resources its flows cross and how many
// flows of the whole collective share one instance of each; a flow's uncontended rate is the
// resource capacity divided in proportion to the wire bytes per cycle of all flows on it
// (steady-state max-min of pipelined streams), capped by the protocol's per-channel limit:
//   cycle(r) = sum over flows f on r of wire_bytes_per_item(f) / capacity(r)
//   rate(f)  = min(channel cap, min over r of bytes_per_item(f) / cycle(r))
// Over NVLink the channels do not reach that minimum's corner: as what they offer nears what the
// link carries, each gets less (measured on H200: a 4-GPU ring all-reduce's per-channel rate falls
// from 24.5 GB/s at 4 channels to 22.0 at 12 and 19.2 at 16, where the hard minimum keeps 24.5
// up to 14 channels; hardware/catalog/gpus.json, source lent-h200-channel-count). With the knee
// exponent p (nccl.nvlink.knee_exponent; none: the hard minimum) a hop's flows over NVLink run at
//   soft(f)  = (cap^-p + (L_f)^-p)^(-1/p),  rate(f) = min(rate(f) above, soft(f))
// L_f the flow's share of its NVLink counted in payload bytes (bytes_per_item(f) / the cycle
// with every wire factor 1): n channels of cap c on a link of capacity L then move together
// ((n c)^-p + L^-p)^(-1/p). The knee is in payload bytes: LL (8 data bytes per 16-byte line) loses
// nothing per channel up to 300 GB/s of wire bytes out of an H200, where Simple and LL128 lose
// 10-20% from 12 channels on. A tree's chain, whose links are charged over time (below), takes
// the knee on its blocks or its link share instead (collective_program.hpp, tree_knee).
// Within one launch the link does not carry L from the start: with many channels a ring's rate
// keeps rising with the size long after its fill has faded, and 300 back-to-back launches run as
// fast as 20, so the rate grows within each launch (H200, 2 GPUs, 24 channels: 270 GB/s busbw at
// 64 MiB, 330 at 1 GiB, 351 at 8 GiB; 8 channels, which offer less than the link carries, 152 to
// 155.5; calibrate/results/lent-2xh200-2026-11-29-long-rings). With the ramp (NvlinkRamp:
// nccl.nvlink.ramp_deficit d, nccl.nvlink.ramp_time tau; a profile's, none without one) a
// transfer whose bytes start t seconds after its launch's t0 sees its hop's NVLink share, in the
// hard and in the soft minimum, as
//   L_f(t) = L_f (1 - d e^(-t / tau))
// (rate_at; held over the transfer, a slice of a few microseconds against a tau of a hundred or
// more). Hops whose links are charged over time (a tree's chain) keep the static share.
//
// Shared resources used unevenly over time (the static share above assumes every flow of a hop is
// always busy, true of a ring's steady state, not of a tree's pipeline filling): a transfer may
// charge up to three resources of the program, each of capacity 1, with a cost in resource seconds
// per payload byte:
//  * its sending thread block (a rank's channel; the tree's up and down thread groups share one):
//    cost = w / C, w the step's loads and stores, C the block's copy rate;
//  * its sender's GPU link (a hop marked link_shared): cost = wire_factor x multiplicity /
//    (capacity x link_share), the representative flow standing for `multiplicity` channels on that link; such a
//    hop leaves its GPU links out of the static share. Over NVLink and PCIe only the analytic pass
//    charges links, the event simulation's network sharing them itself; an SHM hop's GPU link is
//    no link of the topology, and both passes charge it;
//  * the host memory of its sender's CPU socket (a hop marked host_shared: SHM, which stores into
//    and loads from host memory once each per byte): cost = 2 x wire_factor x multiplicity /
//    capacity; such a hop leaves HOST_MEMORY out of the static share (both passes charge it);
//  * the socket proxies of a hop marked proxy_shared: the one resource both ends' proxies stand
//    for (Transfer::link), or, where the program names each rank's, its sender's (Transfer::link);
//    cost = wire_factor x the hop's NIC_OUT load / the proxy's capacity + proxy_message /
//    bytes_per_cycle. Such a hop leaves NIC_OUT and NIC_IN out of the static share (both passes
//    charge them). Where the transfer names its receiver's proxy too (Transfer::peer), the
//    receiver copies the message out of the socket once the sender has copied it in: a second
//    body on the receiver's proxy alone, at the same cost, from the first's finish, after which
//    the forward stage and the latency follow (arrival = that body's finish + forward + latency;
//    the hop's forward stage then holds the kernel's part alone, net_forward_stage).
// Sharing is work-conserving: what the transfers placed before leave, a transfer may use, at a rate
// up to its hop's. Its body lasts until it has moved its bytes:
//   rate_i(t) = min(rate(hop(i)), min over its charges c of (1 - used(c, t)) / cost(c))
//   finish(i) = the time when integral from start(i) + occupancy of rate_i(t) dt reaches bytes(i)
// with used(c, t) the share the transfers placed before it take at t (ShareTimeline). Alone on
// its block a transfer runs at min(rate, C / w); two groups busy together share it, so in steady
// state a rank whose groups need w_up + w_down per byte moves C / (w_up + w_down). Transfers are
// placed in program order (the event simulation: in start order), which decides who gets a
// contested share first; the resource's total use is the same either way.

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "hardware/units.hpp"
#include "sim/nccl/nccl_system.hpp"

namespace clustersim::sim::nccl {

// Per-direction resources of one node, by class (all instances of a class are alike).
// HOST_MEMORY: the host memory of one CPU socket, which every SHM transfer of the socket's GPUs
// crosses twice (the sender's store, the receiver's load).
enum class ResourceKind { NVLINK_OUT, NVLINK_IN, PCIE_OUT, PCIE_IN, SHM_OUT, SHM_IN, NIC_OUT, NIC_IN, NVLS, HOST_MEMORY };
inline constexpr int kNumResourceKinds = 10;
std::string_view to_string(ResourceKind k);

struct ResourceLoad {
  ResourceKind kind = ResourceKind::NVLINK_OUT;
  double flows = 1;  // concurrent flows of this hop on one instance of the resource
};

// Where a hop's flows run in a real network (for the event simulation): local GPU indices on the
// representative node(s); a transfer may name its own (builders of multi-position algorithms do).
struct HopEndpoints {
  int src_gpu = 0;
  int dst_gpu = 0;
  int dst_node = 0;        // relative to the source's node
  bool via_nvswitch = false;  // NVLS: GPU -> NVSwitch -> GPU
};

struct Hop {
  std::string label;            // "NVLink P2P", "NET/IB", ...
  HopTransport transport;
  std::vector<ResourceLoad> loads;
  double wire_factor = 1;       // wire bytes per payload byte (LL 2, LL128 16/15)
  Bandwidth channel_cap = Bandwidth::bytes_per_second(std::numeric_limits<double>::infinity());
  double bytes_per_cycle = 0;   // payload bytes one flow moves per pipeline item (for sharing)
  Duration latency;             // per transfer: NCCL step synchronisation (+ wire latency)
  Duration occupancy;           // per transfer: time the sending block spends before its bytes go
                                // (a Simple slice's barrier, fence and flag post); serial on the
                                // connection, unlike the latency
  Duration forward;             // per transfer: time a network step's message takes on the wire
                                // after the sender's kernel has written all of it (the proxy posts
                                // a step only then: store and forward); delays its arrival, not
                                // the connection's next transfer nor the returning credit
  Bandwidth rate;               // assigned by assign_rates: uncontended payload rate of one flow
  Bandwidth link_rate;          // the same from the resources alone, before the channel cap
  // Assigned by assign_rates: the soft minimum over NVLink where it applies (else +inf); the
  // event simulation caps the hop's flows with it, the network sharing the rest.
  Bandwidth soft_cap = Bandwidth::bytes_per_second(std::numeric_limits<double>::infinity());
  // Assigned by assign_rates for the NVLink ramp (rate_at): `rate` before the NVLink terms (the
  // channel cap and the other resources), and the flow's NVLink share in wire and in payload bytes
  // per second (+inf off NVLink).
  double base_rate = std::numeric_limits<double>::infinity();
  double nvlink_link = std::numeric_limits<double>::infinity();
  double nvlink_payload = std::numeric_limits<double>::infinity();
  HopEndpoints endpoints;
  // The sender's GPU links are a shared resource of the program (Transfer::link), not a static
  // share: assign_rates leaves the GPU's NVLink, PCIe and SHM loads out of `rate` and sets
  // link_cost = wire_factor x multiplicity / capacity of the first of them.
  bool link_shared = false;
  double link_cost = 0;         // link seconds per payload byte
  // The sending socket's host memory is a shared resource of the program (Transfer::host), not a
  // static share: assign_rates sets host_cost = 2 x wire_factor x multiplicity / its capacity.
  bool host_shared = false;
  double host_cost = 0;         // host memory seconds per payload byte
  // The socket proxies of NCCL's socket transport over a host's own interface (one proxy thread
  // per rank copies what it sends and what it receives) are a shared resource of the program
  // (Transfer::link: a NET hop has no GPU link charged over time), not a static share: assign_rates
  // leaves NIC_OUT and NIC_IN out of `rate` and sets link_cost = wire_factor x the hop's NIC_OUT
  // load / capacity (tree_programs.cpp: a two-node tree of several ranks a node, one resource for
  // both nodes' proxies; one rank a node, socket_tree, each rank's own).
  bool proxy_shared = false;
  // A socket proxy's own time per message (nccl.net.socket_message_overhead), charged with its
  // bytes on the proxies a transfer names (Transfer::link, Transfer::peer): assign_rates adds
  // proxy_message / bytes_per_cycle to link_cost. Zero where the hop's occupancy stands for it.
  Duration proxy_message;
  // The transfers name the receiver's proxy (Transfer::peer): the receiver's copy out of the
  // socket is its own body, not part of the forward stage.
  bool proxy_per_rank = false;
  // The share of its GPU links' capacity (the NcclRates figure) this hop's flows reach (a tree's
  // chain: nccl.tree.nvlink_share, collective_program.hpp); 1 for the others.
  double link_share = 1;
  int multiplicity = 1;         // identical flows this representative flow stands for (channels)
};

struct Transfer {
  int hop = 0;
  int conn = 0;                  // connection: transfers on one connection are sent in order
  double bytes = 0;              // payload bytes
  // Placement for the event simulation (-1: the hop's endpoints); nodes relative to the group's
  // first node, taken modulo the group's node count.
  std::int16_t src_gpu = -1, dst_gpu = -1;
  std::int32_t src_node = 0, dst_node = -1;
  std::array<int, 3> deps{-1, -1, -1};
  std::array<bool, 3> consumes{false, false, false};  // this transfer reads (and frees) the dep's slot
  int block = -1;                // shared resource: the thread block whose time it takes (-1: none)
  double block_cost = 0;         // block seconds per payload byte (w / C)
  int link = -1;                 // shared resource: the sender's GPU link (hop.link_shared) or socket proxy
  int host = -1;                 // shared resource: the sender's host memory (hop.host_shared)
  // Shared resource: the receiver's socket proxy, which copies the message out after the sender's
  // has copied it in (hop.proxy_per_rank; see the header); never with `host`.
  int peer = -1;
};

// How much of one shared resource is in use over time: piecewise constant, from the transfers
// placed on it so far (see the header).
class ShareTimeline {
 public:
  struct Charge {
    ShareTimeline* line = nullptr;
    double cost = 0;  // resource seconds per payload byte
  };
  // Places a body of `bytes` that may start at `start`, at a rate up to `max_rate` (bytes per
  // second) and what the charged resources have left; reserves their use and returns its finish.
  static double place(double start, double bytes, double max_rate, Charge a, Charge b, Charge c);
  static double place(double start, double bytes, double max_rate, Charge a, Charge b);

 private:
  std::size_t segment(double t) const;  // the segment holding t
  std::size_t split(double t);          // a segment starting at t (t >= 0)
  void add(double from, double to, double share);
  // used_[k] holds on [at_[k], at_[k + 1]) (the last segment runs on for ever).
  std::vector<double> at_{0.0};
  std::vector<double> used_{0.0};
};

// The NVLink ramp within one kernel launch (see the header): the NVLink share of a hop's flows is
// scaled by factor(t) = 1 - d e^(-t / tau), t the seconds since the launch's transfers could start.
struct NvlinkRamp {
  double deficit = 0;  // d (nccl.nvlink.ramp_deficit); 0: no ramp
  double time = 0;     // tau in seconds (nccl.nvlink.ramp_time)
  bool active() const { return deficit > 0 && time > 0; }
  double factor(double elapsed) const;
};

struct StepProgram {
  std::vector<Hop> hops;
  std::vector<Transfer> transfers;   // in an order where every dependency comes first
  int connections = 0;
  int shared = 0;                    // shared resources the transfers name (blocks, links)
  std::vector<int> window;           // slots per connection (in transfers)
  Duration fixed;                    // t0: the collective's fixed cost
  double channel_payload_bytes = 0;  // payload one channel carries (for reports)
  // Over SHM: the host memory the busiest socket's connections keep in use (collective_program.hpp
  // shm_fifo_bytes over those connections); 0 without SHM.
  double host_bytes = 0;
  // Every connection is the send side of a different rank's kernel, and no rank waits for data
  // from a rank downstream of it (a broadcast's or reduce's chain): back to back, each kernel
  // starts its next launch as soon as it is done (see ProgramTiming::loop).
  bool kernels_run_ahead = false;
  // Send/recv and alltoall: the protocol their messages went through (Simple where any stream
  // needed it, LL where all fitted NCCL's LL threshold); unset for the collectives (the tuner's).
  std::optional<Protocol> p2p_protocol;
  // Set by assign_rates from the capacities: what rate_at needs.
  double nvlink_knee = 0;
  NvlinkRamp ramp;

  int add_hop(Hop h);
  int add_connection(int window_transfers);
  int add_shared() { return shared++; }
  // Makes the last transfer added take `cost` seconds per payload byte of resource `block`, and
  // (>= 0) its hop's link cost of resource `link` and its host memory cost of resource `host`.
  void charge_last(int block, double cost, int link = -1, int host = -1);
  // Makes the last transfer added charge the sender's and the receiver's socket proxies (its
  // hop's link cost on each).
  void charge_proxies_last(int sender, int receiver);
  int add(int hop, int conn, double bytes, std::initializer_list<int> deps = {}, bool consumes_first_dep = false);
  // Sets the placement of the last transfer added.
  void place_last(int src_gpu, int dst_gpu, int src_node, int dst_node);
};

struct Capacities {
  std::array<Bandwidth, kNumResourceKinds> per_instance{};
  double nvlink_knee = 0;  // p of the NVLink soft minimum (0: the hard minimum)
  NvlinkRamp ramp;         // the NVLink ramp within a launch (none by default)
};

// Gives every hop its uncontended per-flow rate from the resource capacities.
void assign_rates(StepProgram& program, const Capacities& caps);

// A hop's uncontended per-flow rate for a transfer whose bytes start `elapsed` seconds into its
// launch: Hop::rate with its NVLink terms scaled by the ramp (Hop::rate itself without a ramp or
// off NVLink; Hop::rate at the ramp's end).
double rate_at(const StepProgram& program, const Hop& hop, double elapsed);
// The cap the event simulation puts on the hop's flows at that time (min of the channel cap and
// the soft minimum, and with a ramp the ramped NVLink share, which the network's static links
// cannot lower); +inf where none applies.
double flow_cap_at(const StepProgram& program, const Hop& hop, double elapsed);

// Back to back (nccl-tests times `iters` launches in a row and averages): where the program's
// kernels run ahead (StepProgram::kernels_run_ahead), the ranks upstream start the next launch
// while those downstream finish this one, and the connections keep their slots across launches, so
// a launch costs, in steady state, its slowest rank's part:
//   loop = t0 + max over connections c of (last arrival(c) - transit(c) - first start(c))
// (start = finish - bytes / rate, arrival = finish + forward + latency). transit, what a message
// spends between the kernels, is paid once for the whole loop, not per launch: the sender's next
// launch does not wait for it, and the receiver's finds its data already there. Over the network
// (HopTransport::kind NET) that is the hop's forward stage and its whole latency: the sender's
// kernel hands each step to its proxy and goes on, the wire and both proxies take the rest. Over
// P2P and SHM the kernels spend the latency on the step's flags themselves, so it stays in every
// launch (transit 0). (2 x H200
// over NCCL's socket transport, lent-2xh200-2026-11-29-long-rings: a 2-rank broadcast of 2 to
// 32 KiB takes 9 to 19 us an iteration, where a send/recv of the same sizes, whose every launch
// waits for the peer's message, takes 31 to 45 us.)
// Otherwise launches cannot overlap and loop = total.
struct ProgramTiming {
  Duration total;              // t0 + last arrival
  Duration loop;               // time per launch back to back (above)
  std::vector<double> finish;  // per transfer, seconds from the start
};

// The analytic pass (uses hop.rate as assigned).
ProgramTiming evaluate_program(const StepProgram& program, bool keep_per_transfer = false);

}  // namespace clustersim::sim::nccl
