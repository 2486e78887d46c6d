#include "sim/nccl/collective_program.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "hardware/errors.hpp"

namespace clustersim::sim::nccl {

namespace {

int ai(Algorithm a) { return static_cast<int>(a); }
int pi(Protocol p) { return static_cast<int>(p); }

}  // namespace

int nic_devices_used(const NcclSystem& sys) {
  // A socket path per NCCL host (nccl_system.hpp): as many as the node has hosts.
  if (sys.host_sockets()) return std::max(1, sys.gpus() / sys.ranks_per_host());
  int local = 0;
  for (const auto& nic : sys.nics()) {
    bool any = false;
    for (int g : nic.local_gpus) any = any || g < sys.gpus();
    local += any ? 1 : 0;
  }
  return std::max(1, local > 0 ? local : static_cast<int>(sys.nics().size()));
}

Duration net_forward_time(const ProgramContext& ctx, const HopTransport& t, double wire_bytes) {
  if (t.kind != TransportKind::NET || wire_bytes <= 0 || ctx.system.nics().empty()) return Duration{};
  const NicDevice& dev = ctx.system.nics().front();
  const auto* fabric = ctx.system.node().fabric;
  const int rails = std::max(1, dev.physical_nics);
  // Without striping the message crosses the whole device at its rate.
  double per_rail = wire_bytes;
  double rate = ctx.rates.nic.bytes_per_second();
  if (fabric != nullptr && fabric->nccl_net_min_stripe_size && rails > 1) {
    // aws-ofi-nccl nccl_ofi_scheduler.cpp get_num_stripes / set_schedule_by_threshold.
    const double stripe = static_cast<double>(fabric->nccl_net_min_stripe_size->value.count());
    int k = static_cast<int>(std::clamp(std::ceil(wire_bytes / stripe), 1.0, static_cast<double>(rails)));
    while (k > 1 && rails % k != 0) --k;
    constexpr double kAlign = 128;  // stripes aligned to LL128 lines
    per_rail = std::ceil(wire_bytes / k / kAlign) * kAlign;
    rate /= rails;
  }
  if (rate <= 0) return Duration{};
  return Duration::from_seconds(per_rail / rate);
}

Duration net_forward_stage(const ProgramContext& ctx, const Hop& h, double bytes) {
  const Duration wire = net_forward_time(ctx, h.transport, bytes * h.wire_factor);
  if (wire <= Duration{} || bytes <= 0) return Duration{};
  const double rate = h.rate.bytes_per_second();
  const double cap = h.channel_cap.bytes_per_second();
  // Both proxies' copies are bodies of their own (Hop::proxy_per_rank): the kernel's part stays.
  if (h.proxy_per_rank) return Duration::from_seconds(std::isfinite(cap) && cap > 0 ? bytes / cap : 0.0);
  const double link = h.link_rate.bytes_per_second();
  if (!(rate > 0) || !std::isfinite(rate) || !(link > 0)) return Duration{};
  const double merged = bytes / rate;
  const double kernel = std::isfinite(cap) && cap > 0 ? bytes / cap : 0.0;
  const double network = std::max(bytes / link, wire.seconds());
  return Duration::from_seconds(std::max(0.0, kernel + network - merged));
}

ProtocolBuffers protocol_buffers(const ProgramContext& ctx, Protocol p) {
  const auto& dev = ctx.version.device;
  ProtocolBuffers b;
  b.steps = dev.steps;
  Bytes buff = dev.buffsize[pi(p)];
  if (p == Protocol::SIMPLE) {
    // aws-ofi-nccl sets NCCL_BUFFSIZE when the user has not (fabric nccl_buffsize).
    const auto* fabric = ctx.system.node().fabric;
    if (fabric != nullptr && fabric->nccl_buffsize && ctx.system.nccl_nodes() > 1) buff = *fabric->nccl_buffsize;
    if (ctx.env.buffsize) buff = *ctx.env.buffsize;
  }
  if (p == Protocol::LL && ctx.env.ll_buffsize) buff = *ctx.env.ll_buffsize;
  if (p == Protocol::LL128 && ctx.env.ll128_buffsize) buff = *ctx.env.ll128_buffsize;
  const long long step = buff.count() / b.steps;
  switch (p) {
    case Protocol::LL:
      b.step_payload = Bytes::of(step / 2);  // 8 data bytes per 16-byte line
      b.wire = 2.0;
      break;
    case Protocol::LL128:
      b.step_payload = Bytes::of(step / 16 * 15);  // 120 of 128 bytes (NCCL_LL128_DATAELEMS)
      b.wire = 16.0 / 15.0;
      break;
    case Protocol::SIMPLE:
      b.step_payload = Bytes::of(step);
      b.wire = 1.0;
      break;
  }
  return b;
}

Bytes p2p_chunk_size(const ProgramContext& ctx, const HopTransport& t) {
  const auto& dev = ctx.version.device;
  Bytes chunk;
  if (ctx.system.nccl_nodes() > 1) {
    chunk = dev.p2p_chunk_net;
    const auto* fabric = ctx.system.node().fabric;
    if (fabric != nullptr && fabric->nccl_p2p_net_chunksize) chunk = *fabric->nccl_p2p_net_chunksize;
    if (ctx.env.p2p_net_chunksize) chunk = *ctx.env.p2p_net_chunksize;
  } else if (t.over_nvlink) {
    chunk = ctx.env.p2p_nvl_chunksize.value_or(dev.p2p_chunk_nvlink);
  } else {
    chunk = ctx.env.p2p_pci_chunksize.value_or(dev.p2p_chunk_pci);
  }
  // init.cc: the P2P chunk is at most the Simple buffer over NCCL_STEPS.
  const Bytes simple_step = Bytes::of(protocol_buffers(ctx, Protocol::SIMPLE).step_payload.count());
  return std::min(chunk, simple_step);
}

double shm_fifo_bytes(const ProtocolBuffers& buf, int slice_steps, double slice_payload) {
  const int per_slice = std::clamp(slice_steps, 1, std::max(1, buf.steps));
  const double group = static_cast<double>(per_slice) * static_cast<double>(buf.step_payload.count());
  return (buf.steps / per_slice) * std::min(group, std::max(0.0, slice_payload)) * buf.wire;
}

Capacities resource_capacities(const NcclRates& r, double host_bytes) {
  Capacities c;
  auto set = [&](ResourceKind k, Bandwidth b) { c.per_instance[static_cast<int>(k)] = b; };
  set(ResourceKind::NVLINK_OUT, r.nvlink);
  set(ResourceKind::NVLINK_IN, r.nvlink);
  set(ResourceKind::PCIE_OUT, r.pcie);
  set(ResourceKind::PCIE_IN, r.pcie);
  set(ResourceKind::SHM_OUT, r.shm);
  set(ResourceKind::SHM_IN, r.shm);
  set(ResourceKind::NIC_OUT, r.nic);
  set(ResourceKind::NIC_IN, r.nic);
  set(ResourceKind::NVLS, r.nvls);
  double host = r.host_memory.bytes_per_second();
  if (host_bytes > 0 && r.host_cache_bytes > 0 && r.host_cache_speedup > 0) {
    const double h = std::min(1.0, r.host_cache_bytes / host_bytes);
    host /= h / r.host_cache_speedup + (1 - h);
  }
  set(ResourceKind::HOST_MEMORY, Bandwidth::bytes_per_second(host));
  c.nvlink_knee = r.nvlink_knee;
  c.ramp = NvlinkRamp{r.nvlink_ramp_deficit, r.nvlink_ramp_time.seconds()};
  return c;
}

HwClass hw_class(const HopTransport& t) {
  if (t.kind == TransportKind::NET) return HwClass::NET;
  if (t.kind == TransportKind::P2P && t.over_nvlink) return HwClass::NVLINK;
  return HwClass::PCI;
}

Duration hop_latency(const ProgramContext& ctx, const HopTransport& t, Algorithm a, Protocol p) {
  const HwClass c = hw_class(t);
  double us = ctx.version.tuner.hw_latency_us[static_cast<int>(c)][ai(a)][pi(p)];
  if (us <= 0) us = ctx.version.tuner.hw_latency_us[static_cast<int>(c)][ai(Algorithm::RING)][pi(p)];
  const double scale = c == HwClass::NVLINK ? ctx.rates.nvlink_scale : c == HwClass::PCI ? ctx.rates.pcie_scale
                                                                                         : ctx.rates.net_scale;
  Duration d = Duration::from_seconds(us * scale * 1e-6);
  if (c == HwClass::NET) d += ctx.rates.net_latency;
  return d;
}

Duration base_latency(const ProgramContext& ctx, Algorithm a, Protocol p) {
  double us = ctx.version.tuner.base_latency_us[ai(a)][pi(p)];
  // NVLS's cost sits in its NVLink latency in 2.20+ (tuning.cc sets lat = intraLat).
  if ((a == Algorithm::NVLS || a == Algorithm::NVLS_TREE) && us <= 0) {
    us = ctx.version.tuner.hw_latency_us[static_cast<int>(HwClass::NVLINK)][ai(a)][pi(p)];
  }
  return Duration::from_seconds(us * ctx.rates.base_scale * 1e-6);
}

Bandwidth block_rate(const ProgramContext& ctx, Protocol p) {
  switch (p) {
    case Protocol::LL: return ctx.rates.ll_channel;
    case Protocol::LL128: return ctx.rates.ll128_channel;
    case Protocol::SIMPLE: return ctx.rates.simple_channel;
  }
  return ctx.rates.simple_channel;
}

Bandwidth block_rate(const ProgramContext& ctx, Protocol p, const HopTransport& t, bool two_way) {
  const Bandwidth b = block_rate(ctx, p);
  if (t.kind != TransportKind::SHM) return b;
  // Over SHM the block loads each step from host memory (nccl_parameters.hpp); where its GPU also
  // stores into host memory, those loads wait behind the stores (nccl.shm.two_way_efficiency).
  Bandwidth shm = p == Protocol::LL ? ctx.rates.shm_ll_channel : ctx.rates.shm_simple_channel;
  if (two_way) shm = shm * ctx.rates.shm_two_way_efficiency;
  return shm.bytes_per_second() > 0 ? std::min(b, shm) : b;
}

double thread_factor(const ProgramContext& ctx, const CollectiveShape& s, const HopTransport& t) {
  if (s.threads <= 0 || s.algorithm != Algorithm::RING) return 1.0;
  const auto& dev = ctx.version.device;
  const int data = s.protocol == Protocol::SIMPLE ? s.threads - kWarpSize : s.threads;  // less the sync warp
  const int def = dev.max_threads[static_cast<int>(s.protocol)];
  const double half = s.protocol == Protocol::LL      ? ctx.rates.ll_half_threads
                      : s.protocol == Protocol::LL128 ? ctx.rates.ll128_half_threads
                      : t.kind == TransportKind::SHM  ? ctx.rates.shm_half_threads
                                                      : ctx.rates.simple_half_threads;
  if (data <= 0 || def <= 0 || !(half > 0) || data == def) return 1.0;
  auto g = [half](double n) { return n / (n + half); };
  return g(data) / g(def);
}

int relay_pieces(const ProgramContext& ctx, Protocol p, long long chunk, long long per_channel) {
  if (p != Protocol::LL) return 1;
  const long long pass = std::max<long long>(1, ctx.version.device.max_threads[pi(Protocol::LL)] * 8LL);
  const long long steps = std::max(1, protocol_buffers(ctx, p).steps);
  return static_cast<int>(std::clamp<long long>(div_up(std::min(chunk, per_channel), pass), 1, steps));
}

double step_store_fraction(const ProgramContext& ctx, Protocol p, const HopTransport* t) {
  if (t != nullptr && t->kind == TransportKind::SHM && p == Protocol::SIMPLE && ctx.rates.shm_store_fraction >= 0) {
    return ctx.rates.shm_store_fraction;
  }
  switch (p) {
    case Protocol::LL: return ctx.rates.ll_store_fraction;
    case Protocol::LL128: return ctx.rates.ll128_store_fraction;
    case Protocol::SIMPLE: return ctx.rates.store_fraction;
  }
  return ctx.rates.store_fraction;
}

double step_weight(const ProgramContext& ctx, CollectiveOp op, Algorithm a, Protocol p, int n, bool in_place,
                   const HopTransport* t) {
  const double f = step_store_fraction(ctx, p, t);
  if (f < 0 || n < 2) return 1.0;
  auto w = [f](int loads, int stores) { return step_cost(f, loads, stores); };
  const double m = n - 2;  // middle steps of a ring loop
  if (a == Algorithm::RING) {
    // The steps that send (the final local step is ring_local_step_weight's).
    switch (op) {
      case CollectiveOp::ALL_REDUCE: return (w(1, 1) + m * w(2, 1) + w(2, 2) + m * w(1, 2)) / (2.0 * (n - 1));
      case CollectiveOp::ALL_GATHER: return in_place ? (w(1, 1) + m * w(1, 2)) / (n - 1.0) : w(1, 2);
      case CollectiveOp::REDUCE_SCATTER: return (w(1, 1) + m * w(2, 1)) / (n - 1.0);
      case CollectiveOp::BROADCAST: return in_place && n == 2 ? w(1, 1) : w(1, 2);
      case CollectiveOp::REDUCE: return w(2, 1);
      default: return 1.0;
    }
  }
  return 1.0;
}

double ring_local_step_weight(const ProgramContext& ctx, CollectiveOp op, Protocol p, int n) {
  const double f = step_store_fraction(ctx, p);
  if (f < 0 || n < 2) return 0.0;
  switch (op) {
    case CollectiveOp::ALL_REDUCE:
    case CollectiveOp::ALL_GATHER: return 1.0;                           // recv (1, 1)
    case CollectiveOp::REDUCE_SCATTER: return step_cost(f, 2, 1);        // recvReduceCopy (2, 1)
    default: return 0.0;
  }
}

void set_step_timing(const ProgramContext& ctx, const HopTransport& t, Protocol p, Hop& h) {
  h.latency = hop_latency(ctx, t, Algorithm::RING, p);
  if (p == Protocol::SIMPLE && hw_class(t) == HwClass::NVLINK) {
    // NCCL's Simple step latency is LL's flag latency plus the block's own synchronisation of each
    // slice (nccl.simple.slice_overhead), which delays the block's next slice.
    h.latency = hop_latency(ctx, t, Algorithm::RING, Protocol::LL);
    h.occupancy = ctx.rates.simple_slice_overhead;
  } else if (p == Protocol::SIMPLE && t.kind == TransportKind::SHM) {
    // The same synchronisation per slice, its fence system-wide (the flags sit in host memory).
    h.occupancy = ctx.rates.simple_slice_overhead;
  }
}

Hop make_hop(const ProgramContext& ctx, const HopTransport& t, double flows_per_gpu, double flows_per_nic,
             Protocol protocol, double sending_share, bool two_way) {
  Hop h;
  h.transport = t;
  h.label = t.describe();
  switch (t.kind) {
    case TransportKind::P2P:
      if (t.over_nvlink) {
        const bool requests = t.read && two_way && protocol == Protocol::SIMPLE;
        const double f = requests ? flows_per_gpu / ctx.rates.nvlink_read_efficiency : flows_per_gpu;
        h.loads = {{ResourceKind::NVLINK_OUT, f}, {ResourceKind::NVLINK_IN, f}};
      } else {
        h.loads = {{ResourceKind::PCIE_OUT, flows_per_gpu}, {ResourceKind::PCIE_IN, flows_per_gpu}};
      }
      break;
    case TransportKind::SHM: {
      // A GPU that stores into host memory and loads from it at once reaches a share of its rate
      // each way (nccl.shm.two_way_efficiency): each flow counts 1 / that share.
      const double f = two_way ? flows_per_gpu / ctx.rates.shm_two_way_efficiency : flows_per_gpu;
      h.loads = {{ResourceKind::SHM_OUT, f},
                 {ResourceKind::SHM_IN, f},
                 {ResourceKind::HOST_MEMORY, 2 * flows_per_gpu * ctx.system.gpus_per_socket() * sending_share}};
      break;
    }
    case TransportKind::NET: {
      // NCCL's socket transport over the host's own interface: one proxy thread per rank copies
      // what the rank sends and what it receives, one message after another. A rank that sends
      // and receives at once counts each flow twice on its proxy (nccl.net.socket_proxy_bandwidth
      // is both directions together), and each message waits for the proxy's own time of every
      // message the rank keeps in flight (nccl.net.socket_message_overhead).
      const bool proxy = ctx.system.host_sockets();
      const double per_proxy = proxy && two_way ? 2 * flows_per_nic : flows_per_nic;
      h.loads = {{ResourceKind::NIC_OUT, per_proxy}, {ResourceKind::NIC_IN, per_proxy}};
      if (proxy) h.occupancy = Duration::from_seconds(ctx.rates.socket_message_overhead.seconds() * std::max(1.0, per_proxy));
      // GPUDirect RDMA moves the data over the GPU's PCIe link; without it the data is staged
      // through host memory (the GPU's PCIe link and the host's memory on each side).
      h.loads.push_back({ResourceKind::PCIE_OUT, flows_per_gpu});
      h.loads.push_back({ResourceKind::PCIE_IN, flows_per_gpu});
      if (!t.gdr) {
        h.loads.push_back({ResourceKind::SHM_OUT, flows_per_gpu});
        h.loads.push_back({ResourceKind::SHM_IN, flows_per_gpu});
      }
      break;
    }
  }
  (void)protocol;
  return h;
}

long long channel_share(const CollectiveShape& s) {
  return s.channel_bytes > 0 ? s.channel_bytes : div_up(s.bytes.count(), std::max(1, s.channels));
}

StepProgram build_ring(const ProgramContext& ctx, const CollectiveShape& s) {
  const NcclSystem& sys = ctx.system;
  const int n = sys.nranks();
  const int R = sys.ranks_per_host();
  const int H = n / R;
  const int nch = std::max(1, s.channels);
  const ProtocolBuffers buf = protocol_buffers(ctx, s.protocol);
  const bool simple = s.protocol == Protocol::SIMPLE;
  const int chunk_steps = simple ? ctx.version.device.chunk_steps.at(s.op) : 1;
  const int slice_steps = simple ? ctx.version.device.slice_steps.at(s.op) : 1;
  const int slices_per_chunk = std::max(1, chunk_steps / slice_steps);
  const long long chunk = buf.step_payload.count() * chunk_steps;
  const int window = std::max(1, buf.steps / slice_steps);
  const int steps = s.op == CollectiveOp::ALL_REDUCE ? 2 * (n - 1) : n - 1;

  StepProgram p;
  p.fixed = base_latency(ctx, Algorithm::RING, s.protocol);
  // Roles: one rank when every hop of the ring is alike (one host), else one per host position.
  const int roles = H == 1 ? 1 : R;
  const int nics = nic_devices_used(sys);
  std::vector<int> hop_of_role(roles);
  for (int r = 0; r < roles; ++r) {
    const int from = r;
    const int to = (H == 1) ? (r + 1) % n : r + 1;  // r = R-1 leaves for the next host
    const HopTransport t = sys.transport(from, to % n);
    const bool net = t.kind == TransportKind::NET;
    // Flows per resource instance that this role's hop adds. Every channel crosses each GPU once;
    // with several roles each role stands for 1/R of the GPUs' sends (the channels' rings are
    // rotated so that every GPU takes every position); NET hops spread over the NICs of a
    // physical node (all hosts of the node send through them).
    const double hosts_per_node = static_cast<double>(sys.gpus()) / R;
    const double gpu_flows = roles == 1 ? nch : nch / static_cast<double>(R);
    const double nic_flows = net ? nch * hosts_per_node / nics : 0;
    Hop h = make_hop(ctx, t, gpu_flows, nic_flows, s.protocol);
    h.wire_factor = buf.wire;
    h.channel_cap = block_rate(ctx, s.protocol, t) * thread_factor(ctx, s, t) /
                    step_weight(ctx, s.op, Algorithm::RING, s.protocol, n, s.in_place, &t);
    set_step_timing(ctx, t, s.protocol, h);
    h.multiplicity = nch;
    h.endpoints = {from % sys.gpus(), to % sys.gpus(), (to / sys.gpus()) > (from / sys.gpus()) ? 1 : 0};
    hop_of_role[r] = p.add_hop(h);
  }
  // The final step of a ring loop only copies (or reduces) out of the rank's own buffer: no link,
  // the block's copy rate; the block does it between its sends (one block per channel runs every
  // step of the loop in turn), so while every channel copies the links idle.
  const double local_w = ring_local_step_weight(ctx, s.op, s.protocol, n);
  std::vector<int> local_hop_of_role(roles, -1);
  if (local_w > 0) {
    for (int r = 0; r < roles; ++r) {
      Hop h;
      h.label = "local copy";
      h.transport = HopTransport{};  // crosses nothing (the event simulation routes it nowhere)
      const HopTransport& ht = p.hops[hop_of_role[r]].transport;
      h.channel_cap = block_rate(ctx, s.protocol, ht) * thread_factor(ctx, s, ht) / local_w;
      // The block's own time per slice; a socket proxy's time per message stays with the NET hop.
      if (ht.kind != TransportKind::NET) h.occupancy = p.hops[hop_of_role[r]].occupancy;
      h.multiplicity = nch;
      h.endpoints = {r % sys.gpus(), r % sys.gpus(), 0};
      local_hop_of_role[r] = p.add_hop(h);
    }
  }
  std::vector<int> conn(roles);
  for (int r = 0; r < roles; ++r) {
    const bool net = p.hops[hop_of_role[r]].transport.kind == TransportKind::NET;
    conn[r] = p.add_connection(net ? 2 * window : window);
  }

  // Per channel: an even share of the data; loops of n chunks.
  const long long per_channel = channel_share(s);
  const double expected = static_cast<double>(std::max<long long>(1, div_up(per_channel, chunk * n))) * steps *
                          slices_per_chunk * roles;
  if (expected > kMaxTransfers) {
    throw RuntimeError("the ring's step program would hold " + format_significant(expected, 3) +
                       " transfers (more than " + format_significant(kMaxTransfers, 3) + "); use fewer ranks");
  }
  p.channel_payload_bytes = static_cast<double>(per_channel);
  // all-reduce moves the whole buffer through each rank in nRanks pieces; all-gather and
  // reduce-scatter move the total (nBytes is the total) likewise.
  long long remaining = per_channel;
  double bytes_per_cycle = 0;
  std::vector<int> prev_step(static_cast<std::size_t>(roles) * slices_per_chunk, -1);
  while (remaining > 0) {
    const long long loop_chunk = std::min(chunk, div_up(remaining, n));
    const double slice = static_cast<double>(loop_chunk) / slices_per_chunk;
    bytes_per_cycle = std::max(bytes_per_cycle, slice);
    std::fill(prev_step.begin(), prev_step.end(), -1);
    for (int k = 0; k < steps; ++k) {
      std::vector<int> this_step(prev_step.size(), -1);
      for (int x = 0; x < slices_per_chunk; ++x) {
        for (int r = 0; r < roles; ++r) {
          const int up = (r - 1 + roles) % roles;
          const int dep = k > 0 ? prev_step[static_cast<std::size_t>(up) * slices_per_chunk + x] : -1;
          const int id = p.add(hop_of_role[r], conn[r], slice, {dep}, true);
          this_step[static_cast<std::size_t>(r) * slices_per_chunk + x] = id;
        }
      }
      prev_step = std::move(this_step);
    }
    if (local_w > 0) {
      // Each rank's final step on what its upstream sent last, in the block's order (its
      // connection), freeing the slot it reads.
      for (int x = 0; x < slices_per_chunk; ++x) {
        for (int r = 0; r < roles; ++r) {
          const int up = (r - 1 + roles) % roles;
          const int dep = prev_step[static_cast<std::size_t>(up) * slices_per_chunk + x];
          p.add(local_hop_of_role[r], conn[r], slice, {dep}, true);
        }
      }
    }
    remaining -= loop_chunk * n;
  }
  for (Hop& h : p.hops) h.bytes_per_cycle = bytes_per_cycle;
  // Every rank of a socket receives each channel's ring through its own buffer.
  if (sys.transport(0, 1 % n).kind == TransportKind::SHM) {
    p.host_bytes = static_cast<double>(nch) * sys.gpus_per_socket() * shm_fifo_bytes(buf, slice_steps, bytes_per_cycle);
  }
  return p;
}

StepProgram build_chain(const ProgramContext& ctx, const CollectiveShape& s) {
  // Broadcast: root -> root+1 -> ... ; reduce: ... -> root. Ring pipeline, one step per chunk.
  const NcclSystem& sys = ctx.system;
  const int n = sys.nranks();
  const int nch = std::max(1, s.channels);
  const ProtocolBuffers buf = protocol_buffers(ctx, s.protocol);
  const long long chunk = buf.step_payload.count();
  StepProgram p;
  p.fixed = base_latency(ctx, Algorithm::RING, s.protocol);
  // One connection per chain position, each a different rank's sends; data only flows down.
  p.kernels_run_ahead = true;
  const int nics = nic_devices_used(sys);
  const int R = sys.ranks_per_host();
  const double hosts_per_node = static_cast<double>(sys.gpus()) / R;
  // Hops along the chain; distinct transports share one hop description.
  std::vector<int> hop_of_pos(n - 1);
  std::vector<int> conn_of_pos(n - 1);
  int net_hop = -1, intra_hop = -1;
  for (int pos = 0; pos + 1 < n; ++pos) {
    const int from = s.op == CollectiveOp::BROADCAST ? (s.root + pos) % n : (s.root + 1 + pos) % n;
    const int to = (from + 1) % n;
    const HopTransport t = sys.transport(from, to);
    const bool net = t.kind == TransportKind::NET;
    int& slot = net ? net_hop : intra_hop;
    if (slot < 0) {
      // n - 1 of the n ranks send (for a host's memory, SHM); with more than two, the middle
      // ones also receive.
      const double nic_flows = net ? nch * hosts_per_node / nics : 0;
      Hop h = make_hop(ctx, t, net ? nch * hosts_per_node / sys.gpus() : nch, nic_flows, s.protocol, (n - 1.0) / n, n > 2);
      if (net && sys.host_sockets()) {
        // A middle rank's socket proxy copies each byte twice (make_hop), but a chain hands it one
        // message per channel at a time: it receives a slice and then forwards that slice, where a
        // ring's rank receives its next slice while it sends one. Each message waits for the
        // proxy's time of one message per channel (lent-4xh200-2026-11-28-socket-chain: a 4-GPU
        // broadcast at 256 KiB to 1 MiB takes as long with 128 KiB steps as with 2 MiB ones).
        h.occupancy = Duration::from_seconds(ctx.rates.socket_message_overhead.seconds() * std::max(1.0, nic_flows));
      }
      h.wire_factor = buf.wire;
      h.channel_cap =
          block_rate(ctx, s.protocol, t, n > 2) * thread_factor(ctx, s, t) /
          step_weight(ctx, s.op, Algorithm::RING, s.protocol, n, s.in_place, &t);
      h.latency = hop_latency(ctx, t, Algorithm::RING, s.protocol);
      if (s.protocol == Protocol::SIMPLE && (hw_class(t) == HwClass::NVLINK || t.kind == TransportKind::SHM)) {
        // Each Simple step (one slice: BROADCAST/REDUCE_SLICESTEPS = CHUNKSTEPS = 1) ends with the
        // block's barrier and fence, which nothing overlaps (set_step_timing); a reduce's, storing
        // once, costs less.
        h.occupancy = s.op == CollectiveOp::REDUCE ? ctx.rates.simple_reduce_slice_overhead : ctx.rates.simple_slice_overhead;
      }
      h.multiplicity = nch;
      h.endpoints = {from % sys.gpus(), to % sys.gpus(), (to / sys.gpus()) != (from / sys.gpus()) ? 1 : 0};
      slot = p.add_hop(h);
    }
    hop_of_pos[pos] = slot;
  }
  const long long per_channel = channel_share(s);
  const int pieces = relay_pieces(ctx, s.protocol, chunk, per_channel);
  for (int pos = 0; pos + 1 < n; ++pos) {
    const bool net = p.hops[hop_of_pos[pos]].transport.kind == TransportKind::NET;
    conn_of_pos[pos] = p.add_connection((net ? 2 * buf.steps : buf.steps) * pieces);
  }
  p.channel_payload_bytes = static_cast<double>(per_channel);
  const long long chunks = std::max<long long>(1, div_up(per_channel, chunk)) * pieces;
  if (static_cast<double>(chunks) * (n - 1) > kMaxTransfers) {
    throw RuntimeError("the chain's step program would hold " + format_significant(static_cast<double>(chunks) * (n - 1), 3) +
                       " transfers (more than " + format_significant(kMaxTransfers, 3) + "); use fewer ranks");
  }
  const double bytes = static_cast<double>(per_channel) / chunks;
  for (Hop& h : p.hops) h.bytes_per_cycle = bytes;
  if (intra_hop >= 0 && p.hops[intra_hop].transport.kind == TransportKind::SHM) {
    // n - 1 of the n ranks receive through a buffer, one step (of `pieces` transfers) per slot.
    p.host_bytes = nch * sys.gpus_per_socket() * (n - 1.0) / n * shm_fifo_bytes(buf, 1, bytes * pieces);
  }
  const int G = sys.gpus();
  for (long long c = 0; c < chunks; ++c) {
    int upstream = -1;
    for (int pos = 0; pos + 1 < n; ++pos) {
      const int from = s.op == CollectiveOp::BROADCAST ? (s.root + pos) % n : (s.root + 1 + pos) % n;
      const int to = (from + 1) % n;
      upstream = p.add(hop_of_pos[pos], conn_of_pos[pos], bytes, {upstream}, true);
      p.place_last(from % G, to % G, from / G, to / G);
    }
  }
  return p;
}

StepProgram build_program(const ProgramContext& ctx, const CollectiveShape& s) {
  StepProgram p;
  if (s.op == CollectiveOp::ALLTOALL || s.op == CollectiveOp::SENDRECV) {
    p = build_p2p(ctx, s);
  } else if (s.op == CollectiveOp::BROADCAST || s.op == CollectiveOp::REDUCE) {
    p = build_chain(ctx, s);
  } else {
    switch (s.algorithm) {
      case Algorithm::RING: p = build_ring(ctx, s); break;
      case Algorithm::TREE: p = build_tree(ctx, s); break;
      case Algorithm::NVLS: p = build_nvls(ctx, s); break;
      case Algorithm::NVLS_TREE: p = build_nvls_tree(ctx, s); break;
      case Algorithm::COLLNET_DIRECT:
      case Algorithm::COLLNET_CHAIN: p = build_collnet(ctx, s); break;
      case Algorithm::PAT: p = build_pat(ctx, s); break;
    }
  }
  assign_rates(p, resource_capacities(ctx.rates, p.host_bytes));
  // Every network hop's step is stored and forwarded (see the header); a hop's transfers carry
  // bytes_per_cycle payload bytes each.
  for (Hop& h : p.hops) h.forward = net_forward_stage(ctx, h, h.bytes_per_cycle);
  return p;
}

}  // namespace clustersim::sim::nccl
