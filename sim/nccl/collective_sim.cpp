#include "sim/nccl/collective_sim.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "hardware/errors.hpp"

namespace clustersim::sim::nccl {

namespace {

std::int64_t ps_of(double seconds) { return static_cast<std::int64_t>(std::llround(seconds * 1e12)); }

class CollectiveRun final : public FlowHandler, public EventHandler, public std::enable_shared_from_this<CollectiveRun> {
 public:
  CollectiveRun(Simulation& sim, FlowNetwork& net, const Topology& topo, const CollectivePredictor& predictor,
                const CollectiveSpec& spec, CollectiveCallback done)
      : sim_(sim), net_(net), topo_(topo), pred_(predictor), spec_(spec), done_(std::move(done)) {}

  void start() {
    keep_alive_ = shared_from_this();  // flows report to *this; released when the run ends
    const TunerChoice c = pred_.choice(spec_.op, spec_.size);
    result_.tag = spec_.tag;
    result_.started = sim_.now();
    result_.algorithm = c.algorithm;
    result_.protocol = c.protocol;
    result_.channels = c.channels;
    const NcclSystem& sys = pred_.system();
    if (sys.nranks() == 1 || spec_.size.count() == 0) {
      finish_at(sim_.now());
      return;
    }
    program_ = pred_.program(spec_.op, spec_.size, c);
    prepare_efficiencies();
    lanes_ = lane_count();
    reps_ = replica_count();
    shift_deps_ = c.algorithm == Algorithm::RING || c.algorithm == Algorithm::PAT;
    n_ = static_cast<int>(program_.transfers.size());
    const int copies = lanes_ * reps_;
    const int n = n_ * copies;
    pending_.assign(n, 0);
    origin_ps_ = (sim_.now() + program_.fixed).picoseconds();
    ready_ps_.assign(n, origin_ps_);
    blocks_.assign(static_cast<std::size_t>(copies) * static_cast<std::size_t>(program_.shared), ShareTimeline{});
    conn_next_.assign(n, -1);
    credit_target_.assign(n, -1);
    consumers_left_.assign(n, 0);
    consumed_ps_.assign(n, 0);
    arrival_ps_.assign(n, 0);
    dependents_.assign(n, {});
    // Copy c = (replica, lane): lane l repeats the program on GPUs rotated by l * (G / lanes),
    // carrying 1/lanes of the channels; replica r runs it on the nodes shifted by r.
    for (int c = 0; c < copies; ++c) {
      std::vector<std::vector<int>> per_conn(program_.connections);
      for (int i = 0; i < n_; ++i) {
        const Transfer& t = program_.transfers[i];
        const int k = c * n_ + i;
        for (int d = 0; d < 3; ++d) {
          const int dep = dep_global(k, d);
          if (dep < 0) continue;
          dependents_[dep].push_back(k);
          ++pending_[k];
          if (t.consumes[d]) ++consumers_left_[dep];
        }
        auto& seq = per_conn[t.conn];
        if (!seq.empty()) {
          conn_next_[seq.back()] = k;
          ++pending_[k];
        }
        const int w = program_.window[t.conn];
        if (static_cast<int>(seq.size()) >= w) {
          credit_target_[seq[seq.size() - w]] = k;
          ++pending_[k];
        }
        seq.push_back(k);
      }
    }
    remaining_ = n;
    subflows_left_.assign(n, 0);
    route_latency_ps_.assign(n, 0);
    for (int i = 0; i < n; ++i) {
      if (pending_[i] == 0) schedule_start(i);
    }
  }

  // Engine events: a transfer whose start time has come (tag = index), or the end (kFinishTag).
  void handle_event(Simulation& sim, std::uint64_t tag) override {
    if (tag == kFinishTag) {
      result_.finished = sim.now();
      auto self = std::move(keep_alive_);  // released after the callback
      if (done_) done_(result_);
      return;
    }
    start_transfer(static_cast<int>(tag));
  }

  void on_flow_complete(const FlowCompletion& done) override {
    const int k = static_cast<int>(done.tag);
    if (--subflows_left_[k] > 0) return;
    transfer_done(k, done.finished);
  }

 private:
  // Payload per wire byte on the links a hop's flows cross (the topology holds datasheet rates).
  void prepare_efficiencies() {
    const NcclSystem& sys = pred_.system();
    const NcclRates& r = pred_.rates();
    eff_.assign(program_.hops.size(), 1.0);
    for (std::size_t h = 0; h < program_.hops.size(); ++h) {
      const Hop& hop = program_.hops[h];
      double e = 1.0;
      if (hop.endpoints.via_nvswitch) {
        e = r.nvls.bytes_per_second() / sys.nvlink_bandwidth().bytes_per_second();
      } else if (hop.transport.kind == TransportKind::P2P && hop.transport.over_nvlink) {
        e = r.nvlink.bytes_per_second() / sys.nvlink_bandwidth().bytes_per_second();
      } else if (host_path(hop)) {
        e = 1.0;  // the hop's rate caps its flows (start_transfer)
      } else if (hop.transport.kind == TransportKind::NET && !sys.nics().empty()) {
        e = r.nic.bytes_per_second() / sys.nics().front().bandwidth.bytes_per_second();
      } else {
        e = r.pcie.bytes_per_second() / sys.pcie_bandwidth().bytes_per_second();
      }
      // A hop whose flows reach only a share of their GPU links (Hop::link_share).
      if (hop.transport.kind != TransportKind::NET) e *= hop.link_share;
      eff_[h] = e > 0 ? e : 1.0;
    }
  }

  // A network hop crosses the topology's NICs, except NCCL's socket transport over a host's own
  // interface where the topology has none (a bare system): no link of the topology stands for
  // the proxies' copies, so such a hop's flows take the GPUs' own route and keep the hop's rate
  // (its static share of the proxies, or their timelines where they are charged over time).
  bool through_topology_nic(const Hop& hop) const {
    return hop.transport.kind == TransportKind::NET && topo_.cluster().node.nics > 0;
  }
  bool host_interface(const Hop& hop) const {
    return hop.transport.kind == TransportKind::NET && !through_topology_nic(hop);
  }
  // Hops whose rate no link of the topology stands for: NCCL's sockets over a host's own
  // interface, and SHM (its copies into and out of host memory are the hop's SHM loads and host
  // memory, not the route's links). Their flows keep the hop's rate (start_transfer).
  bool host_path(const Hop& hop) const {
    return host_interface(hop) || hop.transport.kind == TransportKind::SHM;
  }

  int group_node(int relative) const {
    const int nodes = pred_.system().nodes();
    return spec_.first_node + ((relative % nodes) + nodes) % nodes;
  }
  VertexId gpu_vertex(int node_rel, int local) const {
    const int G = pred_.system().gpus();
    return topo_.gpu(group_node(node_rel), spec_.first_gpu + ((local % G) + G) % G);
  }

  int dst_node_of(int i) const {
    const Transfer& t = program_.transfers[i];
    return t.dst_node >= 0 ? t.dst_node : t.src_node + program_.hops[t.hop].endpoints.dst_node;
  }

  // The global index of dependency d of transfer k. Rings and PAT are the same seen from every
  // node: data that arrived at node b from a copy comes, for a transfer at node a, from the copy
  // shifted by a - b.
  int dep_global(int k, int d) const {
    const int c = k / n_, i = k % n_;
    const int dep = program_.transfers[i].deps[d];
    if (dep < 0) return -1;
    int rep = c / lanes_;
    if (reps_ > 1 && shift_deps_) {
      const int shift = program_.transfers[i].src_node - dst_node_of(dep);
      rep = ((rep + shift) % reps_ + reps_) % reps_;
    }
    return (rep * lanes_ + c % lanes_) * n_ + dep;
  }

  // Replicas: with spec.all_nodes every node runs its own copy (its links carry its traffic).
  int replica_count() const {
    const Algorithm a = result_.algorithm;
    const bool chain = spec_.op == CollectiveOp::BROADCAST || spec_.op == CollectiveOp::REDUCE;
    if (!spec_.all_nodes || chain || a == Algorithm::NVLS) return 1;
    return pred_.system().nodes();
  }

  // The routes of transfer k (one per sub-flow).
  std::vector<Route> routes_for(int k) {
    const Transfer& t = program_.transfers[k % n_];
    const Hop& hop = program_.hops[t.hop];
    const NcclSystem& sys = pred_.system();
    const int G = sys.gpus();
    const int c = k / n_;
    const int rot = (c % lanes_) * (G / lanes_);
    const int rep = c / lanes_;
    const int src_gpu = (t.src_gpu >= 0 ? t.src_gpu : hop.endpoints.src_gpu) + rot;
    const int dst_gpu = (t.dst_gpu >= 0 ? t.dst_gpu : hop.endpoints.dst_gpu) + rot;
    const int src_node = t.src_node + rep;
    const int dst_node = dst_node_of(k % n_) + rep;
    std::vector<Route> out;
    if (hop.endpoints.via_nvswitch) {
      const VertexId g = gpu_vertex(src_node, src_gpu);
      const VertexId nvs = topo_.nvswitch(group_node(src_node));
      Route r;
      r.push_back(*topo_.find_link(g, nvs));
      r.push_back(*topo_.find_link(nvs, g));
      out.push_back(r);
      return out;
    }
    const VertexId a = gpu_vertex(src_node, src_gpu);
    const VertexId b = gpu_vertex(dst_node, dst_gpu);
    if (hop.transport.kind == TransportKind::SHM && group_node(src_node) == group_node(dst_node)) {
      // NCCL's SHM buffer lies in host memory (the receiving GPU's socket's here): the sender
      // stores into it over PCIe and the receiver loads from it, so the flow crosses both GPUs'
      // PCIe paths and the socket's memory, where other host traffic (offload) meets it.
      const auto& layout = topo_.cluster();
      const VertexId mem = topo_.host_memory(layout.node_of(b), layout.node.gpu_socket.at(layout.local_of(b)));
      Route r = net_.route(a, mem);
      r.append(net_.route(mem, b));
      out.push_back(r);
      return out;
    }
    if (!through_topology_nic(hop)) {
      out.push_back(net_.route(a, b));
      return out;
    }
    // A network device NCCL sees may stand for several NICs (aws-ofi-nccl multi-rail): one
    // sub-flow per NIC.
    const int phys = sys.nics().empty() ? 1 : sys.nics().front().physical_nics;
    for (int q = 0; q < phys; ++q) {
      if (group_node(src_node) == group_node(dst_node)) out.push_back(through_nic(a, b, q));
      else out.push_back(net_.route(a, b, static_cast<std::uint32_t>(q)));
    }
    return out;
  }

  // Lanes: rings and trees that leave the node spread their channels over the node's NIC devices
  // (each channel's ring or tree starts and ends at a GPU next to its NIC); the program is run
  // once per lane with the GPUs rotated. One-GPU streams (send/recv, alltoall, NVLS heads, PAT)
  // and rings inside one node need one lane.
  int lane_count() const {
    const Algorithm a = result_.algorithm;
    const NcclSystem& sys = pred_.system();
    const bool lanes = spec_.op != CollectiveOp::ALLTOALL && spec_.op != CollectiveOp::SENDRECV &&
                       (a == Algorithm::RING || a == Algorithm::TREE) && sys.nccl_nodes() > 1 && sys.gpus() > 1;
    if (!lanes) return 1;
    int want = spec_.lanes > 0 ? spec_.lanes : std::min(8, nic_devices_used(sys));
    want = std::min({want, sys.gpus(), std::max(1, result_.channels)});
    while (want > 1 && sys.gpus() % want != 0) --want;
    return std::max(1, want);
  }

  // Two ranks of one node that NCCL connects through the network (separate pods): out through a
  // NIC near the source, through its leaf switch, back in through a NIC near the destination.
  Route through_nic(VertexId a, VertexId b, int q) {
    const auto& layout = topo_.cluster();
    const int node = layout.node_of(a);
    const auto& near_a = layout.node.near_nics.at(layout.local_of(a));
    const auto& near_b = layout.node.near_nics.at(layout.local_of(b));
    const int na = near_a.empty() ? 0 : near_a[static_cast<std::size_t>(q) % near_a.size()];
    const int nb = near_b.empty() ? 0 : near_b[static_cast<std::size_t>(q) % near_b.size()];
    Route r = net_.route(a, topo_.nic(node, na));
    r.push_back(layout.nic_uplink(node, na));
    r.push_back(layout.nic_downlink(node, nb));
    r.append(net_.route(topo_.nic(node, nb), b));
    return r;
  }

  void schedule_start(int k) {
    const std::int64_t now = sim_.now().picoseconds();
    // The block's own time before the bytes go (StepProgram Hop::occupancy).
    ready_ps_[k] += program_.hops[program_.transfers[k % n_].hop].occupancy.picoseconds();
    if (ready_ps_[k] <= now) {
      start_transfer(k);
    } else {
      sim_.schedule_at(TimePoint::from_picoseconds(ready_ps_[k]), *this, static_cast<std::uint64_t>(k));
    }
  }

  void start_transfer(int k) {
    const Transfer& t = program_.transfers[k % n_];
    const Hop& hop = program_.hops[t.hop];
    const std::int64_t now = sim_.now().picoseconds();
    // The connection's next step may go once this one is serialised: at the hop's rate, or where
    // the transfer charges its thread block, once it has had its share of the block (placed in
    // start order; the network shares the links itself, so no link is charged here).
    // Seconds into the launch, for the NVLink ramp (StepProgram::ramp).
    const double elapsed = static_cast<double>(now - origin_ps_) * 1e-12;
    const double rate = rate_at(program_, hop, elapsed);
    double serial = t.bytes / rate;
    // Socket proxies are no link of the topology, nor are SHM's copies through host memory (the
    // route below is the GPUs' own): charged here as the analytic pass charges them
    // (Hop::proxy_shared; an SHM hop's link_shared and host_shared), on the same launch's
    // timelines as the blocks.
    const bool shm = hop.transport.kind == TransportKind::SHM;
    const bool proxy = hop.proxy_shared && t.link >= 0 && hop.link_cost > 0;
    const bool shm_link = shm && hop.link_shared && t.link >= 0 && hop.link_cost > 0;
    const bool shm_host = shm && hop.host_shared && t.host >= 0 && hop.host_cost > 0;
    const bool charged = (t.block >= 0 && t.block_cost > 0) || proxy || shm_link || shm_host;
    if (charged) {
      const std::size_t base = static_cast<std::size_t>(k / n_) * static_cast<std::size_t>(program_.shared);
      ShareTimeline::Charge block{nullptr, 0}, link{nullptr, 0}, host{nullptr, 0};
      if (t.block >= 0 && t.block_cost > 0) block = {&blocks_[base + static_cast<std::size_t>(t.block)], t.block_cost};
      if (proxy || shm_link) link = {&blocks_[base + static_cast<std::size_t>(t.link)], hop.link_cost};
      if (shm_host) host = {&blocks_[base + static_cast<std::size_t>(t.host)], hop.host_cost};
      const double start_s = static_cast<double>(now) * 1e-12;
      serial = ShareTimeline::place(start_s, t.bytes, rate, block, link, host) - start_s;
    }
    if (conn_next_[k] >= 0) satisfy(conn_next_[k], now + ps_of(serial));
    const std::vector<Route> routes = routes_for(k);
    const double share = static_cast<double>(hop.multiplicity) / lanes_ / static_cast<double>(routes.size());
    const double wire = t.bytes * share * hop.wire_factor / eff_[t.hop];
    FlowOptions opt;
    double cap = flow_cap_at(program_, hop, elapsed);
    if (host_path(hop)) cap = std::min(cap, rate);
    if (charged && serial > 0) cap = std::min(cap, t.bytes / serial);
    if (std::isfinite(cap) && cap < 1e14) {
      opt.rate_cap = Bandwidth::bytes_per_second(cap * share * hop.wire_factor / eff_[t.hop]);
    }
    opt.tag = static_cast<std::uint64_t>(k);
    subflows_left_[k] = static_cast<int>(routes.size());
    std::int64_t lat = 0;
    for (const Route& r : routes) lat = std::max(lat, net_.router().latency(r).picoseconds());
    route_latency_ps_[k] = lat;
    for (const Route& r : routes) {
      net_.transfer(r, Bytes::from_double(wire), *this, opt);
      ++result_.flows;
    }
  }

  void transfer_done(int i, TimePoint finished) {
    const Transfer& t = program_.transfers[i % n_];
    const Hop& hop = program_.hops[t.hop];
    std::int64_t fin = finished.picoseconds();
    if (t.peer >= 0 && hop.proxy_shared && hop.link_cost > 0) {
      // The receiver's proxy copies the message out once it is in the socket (Transfer::peer).
      const std::size_t base = static_cast<std::size_t>(i / n_) * static_cast<std::size_t>(program_.shared);
      const double fin_s = static_cast<double>(fin) * 1e-12;
      const double rate = rate_at(program_, hop, static_cast<double>(fin - origin_ps_) * 1e-12);
      fin = ps_of(ShareTimeline::place(fin_s, t.bytes, rate,
                                       {&blocks_[base + static_cast<std::size_t>(t.peer)], hop.link_cost}, {nullptr, 0}));
    }
    // The hop's latency counts the network's wire latency, which the flow already paid on its
    // route before its bytes moved; the rest is NCCL's step synchronisation. A network step's
    // store-and-forward stage (Hop::forward) follows the sender's last byte.
    const std::int64_t arrival =
        fin + hop.forward.picoseconds() + std::max<std::int64_t>(0, hop.latency.picoseconds() - route_latency_ps_[i]);
    // The sender has read its input once its bytes are on the wire: the route's latency after
    // that is the network's, not the sender's (this frees the slot it read from).
    const std::int64_t read_done = finished.picoseconds() - route_latency_ps_[i];
    arrival_ps_[i] = arrival;
    last_arrival_ps_ = std::max(last_arrival_ps_, arrival);
    for (int j : dependents_[i]) satisfy(j, arrival);
    for (int k = 0; k < 3; ++k) {
      if (t.deps[k] >= 0 && t.consumes[k]) {
        const int d = dep_global(i, k);
        consumed_ps_[d] = std::max(consumed_ps_[d], read_done);
        if (--consumers_left_[d] == 0) slot_free(d, consumed_ps_[d]);
      }
    }
    if (consumers_left_[i] == 0) slot_free(i, arrival);
    if (--remaining_ == 0) finish_at(TimePoint::from_picoseconds(last_arrival_ps_));
  }

  void slot_free(int d, std::int64_t when) {
    const int target = credit_target_[d];
    if (target < 0) return;
    credit_target_[d] = -1;
    satisfy(target, when + program_.hops[program_.transfers[d % n_].hop].latency.picoseconds());
  }

  void satisfy(int j, std::int64_t when) {
    ready_ps_[j] = std::max(ready_ps_[j], when);
    if (--pending_[j] == 0) schedule_start(j);
  }

  void finish_at(TimePoint t) { sim_.schedule_at(std::max(t, sim_.now()), *this, kFinishTag); }

  static constexpr std::uint64_t kFinishTag = ~std::uint64_t{0};

  Simulation& sim_;
  FlowNetwork& net_;
  const Topology& topo_;
  const CollectivePredictor& pred_;
  CollectiveSpec spec_;
  CollectiveCallback done_;
  CollectiveResult result_;
  StepProgram program_;
  std::vector<double> eff_;
  std::vector<int> pending_;
  std::vector<std::int64_t> ready_ps_;
  std::vector<int> conn_next_;
  std::vector<int> credit_target_;
  std::vector<int> consumers_left_;
  std::vector<std::int64_t> consumed_ps_;
  std::vector<std::int64_t> arrival_ps_;
  std::vector<std::vector<int>> dependents_;
  std::vector<int> subflows_left_;
  std::vector<std::int64_t> route_latency_ps_;
  std::vector<ShareTimeline> blocks_;  // per copy, the program's shared resources
  std::shared_ptr<CollectiveRun> keep_alive_;
  int n_ = 0;      // transfers of the program
  std::int64_t origin_ps_ = 0;  // t0 of the launch: its start plus the program's fixed cost
  int lanes_ = 1;
  int reps_ = 1;
  bool shift_deps_ = false;
  int remaining_ = 0;
  std::int64_t last_arrival_ps_ = 0;
};

}  // namespace

void start_collective(Simulation& sim, FlowNetwork& net, const Topology& topology, const CollectivePredictor& predictor,
                      const CollectiveSpec& spec, CollectiveCallback done) {
  const NcclSystem& sys = predictor.system();
  if (!topology.has_cluster()) throw std::logic_error("start_collective needs a topology built from a cluster");
  if (spec.first_node < 0 || spec.first_node + sys.nodes() > topology.nodes()) {
    throw InputError("", "collective", "the group's nodes " + std::to_string(spec.first_node) + ".." +
                                           std::to_string(spec.first_node + sys.nodes() - 1) +
                                           " are not all in the topology (" + std::to_string(topology.nodes()) +
                                           " nodes)");
  }
  if (spec.first_gpu < 0 || spec.first_gpu + sys.gpus() > topology.cluster().gpus_in_use) {
    throw InputError("", "collective", "the group's GPUs do not fit the topology's GPUs per node");
  }
  auto run = std::make_shared<CollectiveRun>(sim, net, topology, predictor, spec, std::move(done));
  run->start();
}

CollectiveResult simulate_collective(const Topology& topology, const CollectivePredictor& predictor,
                                     const CollectiveSpec& spec) {
  Simulation sim;
  auto& net = sim.emplace_model<FlowNetwork>(sim, topology);
  CollectiveResult out;
  start_collective(sim, net, topology, predictor, spec, [&](const CollectiveResult& r) { out = r; });
  sim.run();
  sim.check_all_handled();
  return out;
}

}  // namespace clustersim::sim::nccl
