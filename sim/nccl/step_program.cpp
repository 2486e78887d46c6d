#include "sim/nccl/step_program.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>
#include <tuple>

namespace clustersim::sim::nccl {

std::string_view to_string(ResourceKind k) {
  switch (k) {
    case ResourceKind::NVLINK_OUT: return "nvlink_out";
    case ResourceKind::NVLINK_IN: return "nvlink_in";
    case ResourceKind::PCIE_OUT: return "pcie_out";
    case ResourceKind::PCIE_IN: return "pcie_in";
    case ResourceKind::SHM_OUT: return "shm_out";
    case ResourceKind::SHM_IN: return "shm_in";
    case ResourceKind::NIC_OUT: return "nic_out";
    case ResourceKind::NIC_IN: return "nic_in";
    case ResourceKind::NVLS: return "nvls";
    case ResourceKind::HOST_MEMORY: return "host_memory";
  }
  return "?";
}

int StepProgram::add_hop(Hop h) {
  hops.push_back(std::move(h));
  return static_cast<int>(hops.size()) - 1;
}

int StepProgram::add_connection(int window_transfers) {
  window.push_back(std::max(1, window_transfers));
  return connections++;
}

int StepProgram::add(int hop, int conn, double bytes, std::initializer_list<int> deps, bool consumes_first_dep) {
  Transfer t;
  t.hop = hop;
  t.conn = conn;
  t.bytes = bytes;
  int k = 0;
  for (int d : deps) {
    if (d < 0) continue;
    if (k >= 3) throw std::logic_error("a transfer has at most three dependencies");
    if (d >= static_cast<int>(transfers.size())) throw std::logic_error("dependency on a later transfer");
    t.deps[k] = d;
    t.consumes[k] = consumes_first_dep && k == 0;
    ++k;
  }
  transfers.push_back(t);
  return static_cast<int>(transfers.size()) - 1;
}

void StepProgram::place_last(int src_gpu, int dst_gpu, int src_node, int dst_node) {
  Transfer& t = transfers.back();
  t.src_gpu = static_cast<std::int16_t>(src_gpu);
  t.dst_gpu = static_cast<std::int16_t>(dst_gpu);
  t.src_node = src_node;
  t.dst_node = dst_node;
}

void StepProgram::charge_last(int block, double cost, int link, int host) {
  if (block >= shared || link >= shared || host >= shared) {
    throw std::logic_error("a transfer charges a resource the program does not have");
  }
  transfers.back().block = block;
  transfers.back().block_cost = cost;
  transfers.back().link = link;
  transfers.back().host = host;
}

void StepProgram::charge_proxies_last(int sender, int receiver) {
  if (sender < 0 || receiver < 0 || sender >= shared || receiver >= shared) {
    throw std::logic_error("a transfer charges a proxy the program does not have");
  }
  transfers.back().link = sender;
  transfers.back().peer = receiver;
}

std::size_t ShareTimeline::segment(double t) const {
  const auto it = std::upper_bound(at_.begin(), at_.end(), t);
  return it == at_.begin() ? 0 : static_cast<std::size_t>(it - at_.begin()) - 1;
}

std::size_t ShareTimeline::split(double t) {
  const std::size_t k = segment(t);
  if (at_[k] == t) return k;
  at_.insert(at_.begin() + static_cast<std::ptrdiff_t>(k) + 1, t);
  used_.insert(used_.begin() + static_cast<std::ptrdiff_t>(k) + 1, used_[k]);
  return k + 1;
}

void ShareTimeline::add(double from, double to, double share) {
  if (!(to > from) || share <= 0) return;
  const std::size_t begin = split(from);
  const std::size_t end = split(to);  // after `begin`: splitting there leaves `begin` in place
  for (std::size_t k = begin; k < end; ++k) used_[k] = std::min(1.0, used_[k] + share);
}

double ShareTimeline::place(double start, double bytes, double max_rate, Charge a, Charge b) {
  return place(start, bytes, max_rate, a, b, Charge{nullptr, 0});
}

double ShareTimeline::place(double start, double bytes, double max_rate, Charge a, Charge b, Charge c) {
  if (bytes <= 0) return start;
  const std::array<Charge, 3> charges{a, b, c};
  // The rate over time (what each resource leaves, at most max_rate), piece by piece.
  struct Piece {
    double from, to, rate;
  };
  std::vector<Piece> pieces;
  double t = start, left = bytes;
  for (;;) {
    double rate = max_rate, next = std::numeric_limits<double>::infinity();
    for (const Charge& c : charges) {
      if (c.line == nullptr || c.cost <= 0) continue;
      const std::size_t k = c.line->segment(t);
      rate = std::min(rate, std::max(0.0, 1.0 - c.line->used_[k]) / c.cost);
      if (k + 1 < c.line->at_.size()) next = std::min(next, c.line->at_[k + 1]);
    }
    if (!(rate > 1e-9 * max_rate) && !std::isfinite(next)) throw std::logic_error("a shared resource is full for ever");
    if (rate > 0) {
      const double finish = t + left / rate;
      if (finish <= next) {
        pieces.push_back({t, finish, rate});
        break;
      }
      pieces.push_back({t, next, rate});
      left -= rate * (next - t);
    }
    t = next;
  }
  for (const Charge& c : charges) {
    if (c.line == nullptr || c.cost <= 0) continue;
    for (const Piece& p : pieces) c.line->add(p.from, p.to, p.rate * c.cost);
  }
  return pieces.back().to;
}

namespace {
// The soft minimum of the header between a channel cap and an NVLink payload share.
double soft_minimum(double cap, double payload_link, double knee) {
  return cap * std::pow(1.0 + std::pow(cap / payload_link, knee), -1.0 / knee);
}
}  // namespace

void assign_rates(StepProgram& p, const Capacities& caps) {
  // Seconds per pipeline item that each resource class needs for all its flows (in wire bytes,
  // and in payload bytes for the NVLink knee).
  std::array<double, kNumResourceKinds> cycle{}, payload_cycle{};
  auto gpu_link = [](ResourceKind k) {
    return k != ResourceKind::NIC_OUT && k != ResourceKind::NIC_IN && k != ResourceKind::NVLS &&
           k != ResourceKind::HOST_MEMORY;
  };
  auto nvlink = [](ResourceKind k) { return k == ResourceKind::NVLINK_OUT || k == ResourceKind::NVLINK_IN; };
  auto nic = [](ResourceKind k) { return k == ResourceKind::NIC_OUT || k == ResourceKind::NIC_IN; };
  for (const Hop& h : p.hops) {
    for (const ResourceLoad& l : h.loads) {
      if (h.link_shared && gpu_link(l.kind)) continue;
      if (h.host_shared && l.kind == ResourceKind::HOST_MEMORY) continue;
      if (h.proxy_shared && nic(l.kind)) continue;
      const int k = static_cast<int>(l.kind);
      const double cap = caps.per_instance[k].bytes_per_second();
      const double share = gpu_link(l.kind) ? h.link_share : 1.0;
      if (cap > 0) {
        cycle[k] += l.flows * h.bytes_per_cycle * h.wire_factor / (cap * share);
        payload_cycle[k] += l.flows * h.bytes_per_cycle / (cap * share);
      }
    }
  }
  p.nvlink_knee = caps.nvlink_knee;
  p.ramp = caps.ramp;
  for (Hop& h : p.hops) {
    double link = std::numeric_limits<double>::infinity();
    double other_link = std::numeric_limits<double>::infinity();    // the resources but NVLink
    double nvlink_link = std::numeric_limits<double>::infinity();   // over NVLink, in wire bytes
    double payload_link = std::numeric_limits<double>::infinity();  // over NVLink, in payload bytes
    h.link_cost = 0;
    h.host_cost = 0;
    for (const ResourceLoad& l : h.loads) {
      if (h.host_shared && l.kind == ResourceKind::HOST_MEMORY) {
        const double cap = caps.per_instance[static_cast<int>(l.kind)].bytes_per_second();
        if (cap > 0) h.host_cost = 2 * h.wire_factor * h.multiplicity / cap;
        continue;
      }
      if (h.link_shared && gpu_link(l.kind)) {
        const double cap = caps.per_instance[static_cast<int>(l.kind)].bytes_per_second();
        if (h.link_cost == 0 && cap > 0) h.link_cost = h.wire_factor * h.multiplicity / (cap * h.link_share);
        continue;
      }
      if (h.proxy_shared && nic(l.kind)) {
        const double cap = caps.per_instance[static_cast<int>(l.kind)].bytes_per_second();
        if (l.kind == ResourceKind::NIC_OUT && cap > 0) {
          h.link_cost = h.wire_factor * l.flows / cap;
          if (h.bytes_per_cycle > 0) h.link_cost += h.proxy_message.seconds() / h.bytes_per_cycle;
        }
        continue;
      }
      const double c = cycle[static_cast<int>(l.kind)];
      if (c <= 0 || h.bytes_per_cycle <= 0) continue;
      link = std::min(link, h.bytes_per_cycle / c);
      if (nvlink(l.kind)) {
        nvlink_link = std::min(nvlink_link, h.bytes_per_cycle / c);
        payload_link = std::min(payload_link, h.bytes_per_cycle / payload_cycle[static_cast<int>(l.kind)]);
      } else {
        other_link = std::min(other_link, h.bytes_per_cycle / c);
      }
    }
    h.base_rate = std::min(h.channel_cap.bytes_per_second(), other_link);
    h.nvlink_link = nvlink_link;
    h.nvlink_payload = payload_link;
    double rate = std::min(h.channel_cap.bytes_per_second(), link);
    h.soft_cap = Bandwidth::bytes_per_second(std::numeric_limits<double>::infinity());
    const double cap = h.channel_cap.bytes_per_second();
    if (caps.nvlink_knee > 0 && std::isfinite(payload_link) && std::isfinite(cap) && cap > 0) {
      // The soft minimum over NVLink (see the header), relative to the cap for range.
      const double soft = soft_minimum(cap, payload_link, caps.nvlink_knee);
      h.soft_cap = Bandwidth::bytes_per_second(soft);
      rate = std::min(rate, soft);
    }
    if (!std::isfinite(rate) || rate <= 0) rate = 1e15;  // a hop that crosses nothing (local copy)
    h.rate = Bandwidth::bytes_per_second(rate);
    h.link_rate = Bandwidth::bytes_per_second(std::isfinite(link) && link > 0 ? link : rate);
  }
}

double NvlinkRamp::factor(double elapsed) const {
  if (!active()) return 1.0;
  return 1.0 - deficit * std::exp(-std::max(0.0, elapsed) / time);
}

namespace {
bool ramps(const StepProgram& p, const Hop& h) {
  return p.ramp.active() && !h.link_shared && (std::isfinite(h.nvlink_link) || std::isfinite(h.nvlink_payload));
}
// The hop's NVLink terms with its share scaled by g: the hard share in wire bytes and, with a
// knee, the soft minimum against the channel cap in payload bytes.
double nvlink_terms(const StepProgram& p, const Hop& h, double g) {
  double rate = h.nvlink_link * g;
  const double cap = h.channel_cap.bytes_per_second();
  if (p.nvlink_knee > 0 && std::isfinite(h.nvlink_payload) && std::isfinite(cap) && cap > 0) {
    rate = std::min(rate, soft_minimum(cap, h.nvlink_payload * g, p.nvlink_knee));
  }
  return rate;
}
}  // namespace

double rate_at(const StepProgram& p, const Hop& h, double elapsed) {
  if (!ramps(p, h)) return h.rate.bytes_per_second();
  const double rate = std::min(h.base_rate, nvlink_terms(p, h, p.ramp.factor(elapsed)));
  return std::isfinite(rate) && rate > 0 ? rate : 1e15;
}

double flow_cap_at(const StepProgram& p, const Hop& h, double elapsed) {
  if (!ramps(p, h)) return std::min(h.channel_cap.bytes_per_second(), h.soft_cap.bytes_per_second());
  return std::min(h.channel_cap.bytes_per_second(), nvlink_terms(p, h, p.ramp.factor(elapsed)));
}

ProgramTiming evaluate_program(const StepProgram& p, bool keep) {
  const std::size_t n = p.transfers.size();
  // arrival: NaN until the transfer is settled (its receiver's copy may wait, below).
  std::vector<double> finish(n), arrival(n, std::numeric_limits<double>::quiet_NaN()), consumed(n);
  std::vector<std::vector<int>> conn_seq(p.connections);
  std::vector<double> conn_free(p.connections, 0.0);
  std::vector<ShareTimeline> shared(static_cast<std::size_t>(p.shared));
  const double t0 = p.fixed.seconds();
  double last = t0;
  std::vector<double> conn_first(p.connections, std::numeric_limits<double>::infinity());
  std::vector<double> conn_last(p.connections, 0.0);
  // A transfer's arrival once its body (and, naming a receiver's proxy, that proxy's copy) is done.
  auto settle = [&](std::size_t i, double received) {
    const Transfer& t = p.transfers[i];
    const Hop& h = p.hops[t.hop];
    arrival[i] = received + h.forward.seconds() + h.latency.seconds();
    consumed[i] = std::max(consumed[i], arrival[i]);
    // Back to back, what a network message spends between the kernels is paid once (ProgramTiming).
    const double transit = h.transport.kind == TransportKind::NET ? h.forward.seconds() + h.latency.seconds() : 0.0;
    conn_last[t.conn] = std::max(conn_last[t.conn], arrival[i] - transit);
    last = std::max(last, arrival[i]);
  };
  // Receivers' copies (Transfer::peer) wait here until the transfers placed after them reach
  // their start, so that the proxies' time goes in about the order the copies begin, as in the
  // event simulation: a min-heap of (start: the body's finish, rate, transfer).
  using Pending = std::tuple<double, double, std::size_t>;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> pending;
  auto copies_until = [&](double until) {
    while (!pending.empty() && std::get<0>(pending.top()) <= until) {
      const auto [at, rate, i] = pending.top();
      pending.pop();
      const Transfer& t = p.transfers[i];
      settle(i, ShareTimeline::place(at, t.bytes, rate, {&shared[static_cast<std::size_t>(t.peer)], p.hops[t.hop].link_cost},
                                     {nullptr, 0}));
    }
  };
  auto arrival_of = [&](std::size_t d) {
    if (std::isnan(arrival[d])) copies_until(finish[d]);
    return arrival[d];
  };
  for (std::size_t i = 0; i < n; ++i) {
    const Transfer& t = p.transfers[i];
    const Hop& h = p.hops[t.hop];
    double start = std::max(t0, conn_free[t.conn]);
    for (int k = 0; k < 3; ++k) {
      if (t.deps[k] >= 0) start = std::max(start, arrival_of(static_cast<std::size_t>(t.deps[k])));
    }
    auto& seq = conn_seq[t.conn];
    const int w = p.window[t.conn];
    if (static_cast<int>(seq.size()) >= w) {
      const int j = seq[seq.size() - w];
      arrival_of(static_cast<std::size_t>(j));
      start = std::max(start, consumed[j] + p.hops[p.transfers[j].hop].latency.seconds());
    }
    if (!pending.empty()) copies_until(start + h.occupancy.seconds());  // most programs hold none
    const double rate = rate_at(p, h, start + h.occupancy.seconds() - t0);
    if (t.block >= 0 || t.link >= 0 || t.host >= 0) {
      finish[i] = ShareTimeline::place(start + h.occupancy.seconds(), t.bytes, rate,
                                       {t.block >= 0 ? &shared[t.block] : nullptr, t.block_cost},
                                       {t.link >= 0 ? &shared[t.link] : nullptr, h.link_cost},
                                       {t.host >= 0 ? &shared[t.host] : nullptr, h.host_cost});
    } else {
      finish[i] = start + h.occupancy.seconds() + t.bytes / rate;
    }
    // The receiver's proxy copies the message out once it is in the socket (Transfer::peer).
    if (t.peer >= 0) {
      pending.emplace(finish[i], rate, i);
    } else {
      settle(i, finish[i]);
    }
    for (int k = 0; k < 3; ++k) {
      if (t.deps[k] >= 0 && t.consumes[k]) {
        // The slot of a forwarded transfer is free once its reader is done (finish >= arrival).
        consumed[t.deps[k]] = std::max(consumed[t.deps[k]], finish[i]);
      }
    }
    conn_free[t.conn] = finish[i];
    conn_first[t.conn] = std::min(conn_first[t.conn], start);
    seq.push_back(static_cast<int>(i));
  }
  copies_until(std::numeric_limits<double>::infinity());
  ProgramTiming out;
  out.total = Duration::from_seconds(last);
  out.loop = out.total;
  if (p.kernels_run_ahead) {
    double span = 0;
    for (int c = 0; c < p.connections; ++c) {
      if (conn_last[c] > 0) span = std::max(span, conn_last[c] - conn_first[c]);
    }
    out.loop = std::min(out.total, Duration::from_seconds(t0 + span));
  }
  if (keep) out.finish = std::move(finish);
  return out;
}

}  // namespace clustersim::sim::nccl
