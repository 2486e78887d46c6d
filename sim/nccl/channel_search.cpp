#include "sim/nccl/channel_search.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace clustersim::sim::nccl {

namespace {

// floor(cap / s) with NCCL's rounding of bandwidth bookkeeping (search.cc SUB_ROUND, 1e-3).
int fits(double cap, double s) {
  if (s <= 0) return 0;
  return static_cast<int>(std::floor(cap / s + 1e-6));
}

int pow2_up(int x) {
  int p = 1;
  while (p < x) p *= 2;
  return p;
}

struct SearchResult {
  int n = 0;
  double s = 0;
};

// The speed search of ncclTopoCompute for a pattern whose feasibility is `feasible(s)` channels.
SearchResult speed_search(const std::vector<double>& ladder, double max_bw, double total_bw, int min_channels,
                          int max_channels, const std::function<int(double)>& feasible) {
  std::size_t idx = 0;
  while (idx + 1 < ladder.size() && (ladder[idx] > max_bw || ladder[idx] * min_channels > total_bw)) ++idx;
  SearchResult best;
  for (;;) {
    const double s = ladder[idx];
    const int n = std::min(max_channels, feasible(s));
    if (n >= min_channels && n > 0 && n * s > best.n * best.s + 1e-9) best = {n, s};
    if (best.n == max_channels) break;                       // "perfect"
    if (best.n > 0 && best.n * best.s >= total_bw) break;    // uses all of the GPU's bandwidth
    if (idx + 1 < ladder.size() && (best.n == 0 || ladder[idx + 1] / best.s > 0.49)) {
      ++idx;
      continue;
    }
    break;
  }
  return best;
}

std::size_t ladder_index_at_most(const std::vector<double>& ladder, double s) {
  std::size_t idx = 0;
  while (idx + 1 < ladder.size() && ladder[idx] > s + 1e-9) ++idx;
  return idx;
}

}  // namespace

ChannelPlan search_channels(const NcclSystem& sys, const NcclVersion& version, const NcclEnv& env) {
  ChannelPlan plan;
  const int R = sys.ranks_per_host();  // GPUs NCCL sees on one host
  const bool inter = sys.nccl_nodes() > 1;
  const int cc = sys.cc();
  const int max_ring_channels = version.device.max_channels / 2;
  const double nvl = sys.nccl_nvlink_bw();
  const double pci = sys.nccl_pci_bw();
  const double gpu_total = std::max(nvl, pci);

  // NICs a host can use: those next to its GPUs (host 0: local GPUs 0..R-1), else all.
  std::vector<NicDevice> nics;
  for (const auto& nic : sys.nics()) {
    bool local = false;
    for (int g : nic.local_gpus) local = local || g < R;
    if (local) nics.push_back(nic);
  }
  if (nics.empty()) nics = sys.nics();
  int gpus_with_nic = 0;
  for (int g = 0; g < R; ++g) {
    bool has = false;
    for (const auto& nic : nics) {
      for (int lg : nic.local_gpus) has = has || lg == g;
    }
    gpus_with_nic += has ? 1 : 0;
  }
  if (gpus_with_nic == 0) gpus_with_nic = R;
  double nic_max = 0, nic_sum = 0;
  for (const auto& nic : nics) {
    nic_max = std::max(nic_max, nic.nccl_bw);
    nic_sum += nic.nccl_bw;
  }

  // Per-GPU link capacity for a channel crossing the host inside: NVLink where the GPUs use P2P
  // over it, else PCIe (P2P over PCIe, or SHM, whose path paths.cc diverts through the CPU).
  const bool intra_nvlink = R < 2 || (sys.transport(0, 1).kind == TransportKind::P2P && sys.transport(0, 1).over_nvlink);
  const double intra_cap = nvl > 0 && intra_nvlink ? nvl : pci;
  const std::vector<double>& ladder = inter ? version.topology.inter_speeds(cc) : version.topology.intra_speeds(cc);

  auto ring_feasible = [&](double s) -> int {
    if (!inter) return R > 1 ? fits(intra_cap, s) : max_ring_channels;
    int by_nic = 0;
    for (const auto& nic : nics) by_nic += fits(nic.nccl_bw, s);
    const int by_pci = gpus_with_nic * fits(pci, s);
    // A channel crosses R-1 NVLinks of a host: the GPU it leaves the node from does not use its
    // NVLink for that channel.
    const int by_nvl = R > 1 ? static_cast<int>(std::floor(intra_cap / (s * (R - 1.0) / R) + 1e-6)) : by_nic;
    return std::min({by_nic, by_pci, by_nvl});
  };

  double max_bw = 0;
  if (!inter) max_bw = R > 1 ? intra_cap : 5000.0;  // LOC_BW for a single GPU
  else max_bw = std::min(nic_max, pci);
  const double total_bw = R > 1 || !inter ? gpu_total : std::max(gpu_total, nic_sum);

  SearchResult ring = speed_search(ladder, max_bw, total_bw, 1, max_ring_channels, ring_feasible);
  if (ring.n == 0) {
    // search.cc: "Could not find a path ... falling back to simple order": 1 channel at 0.1 GB/s.
    ring = {1, 0.1};
    plan.notes.push_back("topology search found no ring; NCCL falls back to one channel");
  }
  // Duplicate fast channels (ncclTopoDupChannels).
  if (ring.s >= 25.0 && !(cc > 80 && ring.s < 50.0 && ring.n > 4)) {
    const int dup = std::min(ring.n * 2, max_ring_channels);
    const int factor = (dup + ring.n - 1) / ring.n;
    ring.s /= factor;
    ring.n = dup;
  }
  // Pass 2: faster channels with the same count.
  for (std::size_t idx = ladder_index_at_most(ladder, ring.s); idx > 0; --idx) {
    const double s = ladder[idx - 1];
    if (s <= ring.s) continue;
    if (ring_feasible(s) >= ring.n) ring.s = s;
    else break;
  }
  plan.ring.n_channels = ring.n;
  plan.ring.bw_intra = plan.ring.bw_inter = ring.s;
  plan.ring.type_intra = sys.min_intra_path();
  if (R >= 2 && sys.transport(0, 1).kind == TransportKind::SHM) {
    // paths.cc diverts the GPUs' path through the CPU: PHB on one socket, SYS across two.
    plan.ring.type_intra = sys.gpus_per_socket() >= R ? PathType::PHB : PathType::SYS;
  }
  plan.ring.type_inter = inter ? sys.gpu_nic_path(0) : PathType::PIX;
  if (plan.ring.type_inter == PathType::DIS) plan.ring.type_inter = PathType::SYS;
  // A graph that leaves the host takes the latency its NIC reports (search.cc ncclTopoSearchRecNet).
  plan.ring.latency_inter_us = inter ? sys.net_reported_latency_us() : 0.0;

  // Tree: as many channels as the ring; intra speed may rise to twice the inter speed.
  plan.tree = plan.ring;
  if (inter && R > 1) {
    double s_intra = plan.ring.bw_intra;
    for (std::size_t idx = ladder_index_at_most(ladder, s_intra); idx > 0; --idx) {
      const double s = ladder[idx - 1];
      if (s > 2 * plan.tree.bw_inter + 1e-9) break;
      if (fits(intra_cap, s) >= plan.tree.n_channels) s_intra = s;
      else break;
    }
    plan.tree.bw_intra = s_intra;
  }

  // NVLS.
  if (sys.nvls_supported() && R >= 2) {
    const std::vector<double>& intra_ladder = version.topology.intra_speeds(cc);
    TopoGraph g;
    g.n_channels = std::min(32, R);
    for (double s : intra_ladder) {
      if ((R + 1) * s <= nvl + 1e-6) {
        g.bw_intra = s;
        break;
      }
    }
    // Pass 2 raises the NVLS inter speed up to twice the intra speed; on one node nothing limits it
    // but the ladder.
    g.bw_inter = std::min(intra_ladder.front(), 2 * g.bw_intra);
    if (inter) {
      double head_net = 0;
      for (const auto& nic : nics) head_net = std::max(head_net, nic.nccl_bw);
      const double cap = std::min({head_net, pci, 2 * g.bw_intra});
      g.bw_inter = 0;
      for (double s : version.topology.inter_speeds(cc)) {
        if (s <= cap + 1e-6) {
          g.bw_inter = s;
          break;
        }
      }
    }
    g.type_intra = PathType::NVL;
    g.type_inter = plan.ring.type_inter;
    g.latency_inter_us = plan.ring.latency_inter_us;
    if (g.bw_intra > 0) plan.nvls = g;
  }
  if (sys.collnet_supported()) plan.collnet = plan.tree;

  // Run-time channel counts (connect.cc ncclTopoPostset).
  const int max_ch = version.device.max_channels;
  int n = std::min(max_ch, 2 * plan.ring.n_channels);
  const std::string& rule = version.topology.hopper_multinode_double;
  const bool fast_ring = plan.ring.bw_intra > 45.0;
  if (inter && fast_ring) {
    if ((rule == "cc_eq_90_when_room" && cc == 90 && 2 * n <= max_ch) ||
        (rule == "cc_eq_90_below_16" && cc == 90 && n < 16) || (rule == "cc_ge_90_below_16" && cc >= 90 && n < 16)) {
      n = std::min(max_ch, 2 * n);
    }
  }
  if (env.max_nchannels) n = std::min(n, *env.max_nchannels);
  if (env.min_nchannels) n = std::max(n, std::min(*env.min_nchannels, max_ch));
  n = std::max(1, n);
  plan.coll_channels = n;

  if (plan.nvls.n_channels > 0) {
    plan.nvls_channels = env.nvls_nchannels.value_or(version.topology.default_nvls_channels(cc));
  }

  // P2P channels (paths.cc ncclTopoComputeP2pChannels): the collective channels bounded by
  // NCCL_MAX_P2P_NCHANNELS and then raised to NCCL_MIN_P2P_NCHANNELS (1 and MAXCHANNELS unset).
  int p2p = std::min(plan.coll_channels, version.device.max_channels);
  if (env.max_p2p_nchannels) p2p = std::min(p2p, *env.max_p2p_nchannels);
  if (env.min_p2p_nchannels) p2p = std::max(p2p, *env.min_p2p_nchannels);
  p2p = std::max(p2p, 1);
  int per_peer = p2p;
  if (R > 1) {
    // ncclTopoGetNchannels: 2 x the NVLinks of the pair on an NVLink path, else 2; a pair that
    // cannot use P2P has its path diverted through the CPU (paths.cc), so SHM pairs get 2.
    const HopTransport t = sys.transport(0, 1);
    if (sys.nvlink_usable() && t.kind == TransportKind::P2P && t.over_nvlink) {
      per_peer = std::min(per_peer, 2 * std::max(1, sys.node().gpu->nvlink.links));
    } else {
      per_peer = std::min(per_peer, 2);
    }
  }
  if (sys.nccl_nodes() > 1) {
    // ncclTopoGetNchannels: a remote peer gets NCCL_NCHANNELS_PER_NET_PEER channels where it is
    // set (then kept as it is), else 2, halved while the peers would not fit the P2P channels.
    int net = 2;
    if (env.nchannels_per_net_peer) {
      net = *env.nchannels_per_net_peer;
    } else {
      while (net * sys.nranks() > pow2_up(p2p) * 4 && net > 1) net /= 2;
    }
    per_peer = std::min(per_peer, net);
  }
  plan.p2p_channels = std::min(pow2_up(p2p), version.device.max_channels);
  plan.p2p_channels_per_peer = std::min(pow2_up(per_peer), plan.p2p_channels);
  return plan;
}

}  // namespace clustersim::sim::nccl
