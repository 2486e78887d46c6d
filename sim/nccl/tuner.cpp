#include "sim/nccl/tuner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "hardware/errors.hpp"

namespace clustersim::sim::nccl {

namespace {

constexpr std::array<CollectiveOp, 5> kFunctions = {CollectiveOp::BROADCAST, CollectiveOp::REDUCE,
                                                    CollectiveOp::ALL_GATHER, CollectiveOp::REDUCE_SCATTER,
                                                    CollectiveOp::ALL_REDUCE};

int log2i(long long n) {
  int l = 0;
  while (n >>= 1) ++l;
  return l;
}

int ai(Algorithm a) { return static_cast<int>(a); }
int pi(Protocol p) { return static_cast<int>(p); }

struct ChannelSplit {
  int channels = 1;
  long long busiest = 0;  // bytes of the task's count on its busiest channel
};

// NCCL 2.23+ scheduleCollTasksToPlan for one collective alone in its plan (see tuner.hpp):
// `bytes` = count x elemSize, `traffic` per byte (LL's x 4 included), `nmax` the tuner's
// nMaxChannels, `kind_channels` the communicator's channels of the collective's kind.
ChannelSplit split_channels(long long bytes, long long traffic, int nmax, int kind_channels) {
  constexpr long long kMinTraffic = 16 << 10;
  ChannelSplit out;
  if (bytes <= 0) return out;
  const long long total = std::max(kMinTraffic, bytes * traffic);
  const long long budget = std::max(kMinTraffic, total / std::max(1, std::min(nmax, kind_channels)));
  const long long cell = div_up(div_up(kMinTraffic, traffic), 16) * 16;
  const long long cells = div_up(bytes, cell);
  long long per = std::min(cells, div_up(budget, cell * traffic));
  const long long lo = kind_channels == 1 ? cells : per;  // the first channel: a full one, or all of it
  long long mid = (cells - lo) / per;
  long long hi = (cells - lo) % per;
  if (kind_channels < (lo != 0 ? 1 : 0) + mid + (hi != 0 ? 1 : 0)) {  // more than the communicator has
    mid = kind_channels - 2;
    per = (cells - lo) / (mid + 1);
    hi = per + (cells - lo) % (mid + 1);
  }
  if (hi == 0 && mid != 0) {
    hi = per;
    mid -= 1;
  }
  long long lo_bytes = lo * cell;
  long long hi_bytes = hi * cell;
  (hi_bytes != 0 ? hi_bytes : lo_bytes) -= cells * cell - bytes;
  out.channels = static_cast<int>((lo_bytes != 0 ? 1 : 0) + mid + (hi != 0 ? 1 : 0));
  out.busiest = std::max({lo_bytes, hi_bytes, mid != 0 ? per * cell : 0LL});
  return out;
}

}  // namespace

const TopoGraph& graph_for(const ChannelPlan& plan, Algorithm a) {
  switch (a) {
    case Algorithm::TREE: return plan.tree;
    case Algorithm::RING: return plan.ring;
    case Algorithm::COLLNET_DIRECT:
    case Algorithm::COLLNET_CHAIN: return plan.collnet;
    case Algorithm::NVLS:
    case Algorithm::NVLS_TREE: return plan.nvls;
    case Algorithm::PAT: return plan.ring;
  }
  return plan.ring;
}

int Tuner::fn(CollectiveOp op) {
  for (std::size_t i = 0; i < kFunctions.size(); ++i) {
    if (kFunctions[i] == op) return static_cast<int>(i);
  }
  return -1;
}

Tuner::Tuner(const NcclSystem& system, const ChannelPlan& channels, const NcclVersion& version, const NcclEnv& env)
    : sys_(&system), ch_(&channels), ver_(&version), env_(&env) {
  nnodes_ = system.nccl_nodes();
  nranks_ = system.nranks();
  // Threads per channel (tuning.cc ncclTopoTuneModel): Ring and Tree take NCCL_NTHREADS with
  // Simple (default 512, or 256 for a ring whose graph moves no more than a PCIe Gen3 x16 link)
  // and LL, NCCL_LL128_NTHREADS with LL128; a value that is not a whole number of warps becomes
  // the maximum, one out of range its nearest bound (getNthreads), a value <= 0 is unset.
  const auto& d = version.device;
  const int simple_ring =
      channels.ring.bw_intra * channels.ring.n_channels <= version.topology.pci_gen3_x16.gigabytes_per_second() ? 256
                                                                                                                 : d.max_threads[2];
  auto threads = [](std::optional<int> set, int lo, int hi, int def) {
    if (!set || *set <= 0) return def;
    return *set % kWarpSize != 0 ? hi : std::clamp(*set, lo, hi);
  };
  constexpr int kMinThreads = 2 * kWarpSize;  // Simple and LL
  const int nt_ring_simple = threads(env.nthreads, kMinThreads, d.max_threads[2], simple_ring);
  const int nt_tree_simple = threads(env.nthreads, kMinThreads, d.max_threads[2], d.max_threads[2]);
  const int nt_ll = threads(env.nthreads, kMinThreads, d.max_threads[0], d.max_threads[0]);
  const int nt_ll128 = threads(env.ll128_nthreads, d.max_threads[1] / 4, d.max_threads[1], d.max_threads[1]);
  auto note_bound = [&](const char* name, std::optional<int> set, int used, int lo, int hi) {
    if (!set || *set <= 0 || *set == used) return;
    notes_.push_back(std::string(name) + "=" + std::to_string(*set) + " is not a multiple of " + std::to_string(kWarpSize) + " from " +
                     std::to_string(lo) + " to " + std::to_string(hi) + "; NCCL runs " + std::to_string(used) +
                     " threads");
  };
  note_bound("NCCL_NTHREADS", env.nthreads, nt_tree_simple, kMinThreads, d.max_threads[2]);
  note_bound("NCCL_LL128_NTHREADS", env.ll128_nthreads, nt_ll128, d.max_threads[1] / 4, d.max_threads[1]);
  for (Algorithm a : kAllAlgorithms) {
    for (Protocol p : kAllProtocols) {
      int nt = d.max_threads_all;
      if (a == Algorithm::RING || a == Algorithm::TREE) {
        nt = p == Protocol::LL ? nt_ll : p == Protocol::LL128 ? nt_ll128
                                      : (a == Algorithm::RING ? nt_ring_simple : nt_tree_simple);
      }
      max_threads_[ai(a)][pi(p)] = nt;
      thread_threshold_[ai(a)][pi(p)] = d.thread_threshold[pi(p)];
    }
  }
  thread_threshold_[ai(Algorithm::RING)][pi(Protocol::LL)] *= nranks_;
  thread_threshold_[ai(Algorithm::COLLNET_DIRECT)][pi(Protocol::SIMPLE)] = 512;
  thread_threshold_[ai(Algorithm::COLLNET_CHAIN)][pi(Protocol::SIMPLE)] = 512;
  build_tables();
  apply_enables();
}

void Tuner::build_tables() {
  const VersionTuner& t = ver_->tuner;
  const int cc = sys_->cc();
  const int arch = static_cast<int>(sys_->arch());
  const int N = nnodes_;
  const int n = nranks_;
  const double ppn = static_cast<double>(n) / N;
  const int index2 = N <= 2 ? N - 1 : 2;
  // LL: for one node NCCL looks at the GPU type, for several at the CPU vendor (row 1 = AMD).
  const int index1 = N == 1 ? arch : (sys_->cpu_vendor() == CpuVendor::AMD ? 1 : 0);
  const double ll_max = t.ll_max_bw[index1][index2];
  const double per_ch_tree = t.per_ch_max_tree_bw[arch][index2];
  const double per_ch_ring_ll128 = t.per_ch_max_ring_ll128_bw[arch][index2];
  const double per_ch_tree_ll128 = t.per_ch_max_tree_ll128_bw[arch][index2];
  const double per_ch_nvls_tree = t.per_ch_max_nvls_tree_bw ? (*t.per_ch_max_nvls_tree_bw)[arch][index2] : 0.0;
  const std::string& bm = t.bandwidth_model;
  const std::string& lm = t.latency_model;

  for (int f = 0; f < 5; ++f) {
    const CollectiveOp coll = kFunctions[f];
    const bool ar = coll == CollectiveOp::ALL_REDUCE;
    const bool agrs = coll == CollectiveOp::ALL_GATHER || coll == CollectiveOp::REDUCE_SCATTER;
    const bool bcast_reduce = coll == CollectiveOp::BROADCAST || coll == CollectiveOp::REDUCE;
    const int nsteps = ar ? 2 * (n - 1) : agrs ? n - 1 : n;
    int n_inter_steps;
    if (lm == "2.26") {
      n_inter_steps = N == 1 ? 0 : ar ? 2 * (N - 1) : N - 1;
    } else {
      n_inter_steps = ar ? (N > 1 ? 2 * N : 0) : agrs ? N - 1 : N;
    }
    for (Algorithm a : kAllAlgorithms) {
      if (bcast_reduce && a != Algorithm::RING) continue;
      if (agrs) {
        if (bm == "2.18" && a != Algorithm::RING) continue;
        if (a != Algorithm::RING && a != Algorithm::NVLS && a != Algorithm::COLLNET_DIRECT && a != Algorithm::PAT) continue;
      }
      if (ar && a == Algorithm::PAT) continue;
      const TopoGraph& g = graph_for(*ch_, a);
      const bool collnet = a == Algorithm::COLLNET_DIRECT || a == Algorithm::COLLNET_CHAIN;
      const bool nvls = a == Algorithm::NVLS || a == Algorithm::NVLS_TREE;
      const int intra_hw = g.type_intra == PathType::NVL ? 0 : 1;
      for (Protocol p : kAllProtocols) {
        if (nvls && p != Protocol::SIMPLE) continue;
        if (a == Algorithm::PAT && (p != Protocol::SIMPLE || !agrs || !sys_->pat_supported())) continue;
        double bw = (N <= 2 || collnet) ? g.bw_intra : g.bw_inter;
        bool skip = false;
        if (nvls) {
          if (bm == "2.20" || bm == "2.26") {
            bw = a == Algorithm::NVLS ? std::min(g.bw_intra, g.bw_inter)
                                      : std::min(g.bw_intra, N <= 2 ? g.bw_inter : g.bw_inter / 2);
          } else if (bm == "2.28") {
            if (g.n_channels < 2) skip = true;
            double intra = g.bw_intra * (*t.nvls_efficiency)[arch] * (g.n_channels - 1) / std::max(1, g.n_channels);
            intra *= ar ? 2.0 : (ppn - 1) / ppn;
            const double inter = g.bw_inter * ((N <= 2 && a == Algorithm::NVLS_TREE) ? 2 : 1);
            bw = std::min({intra, inter,
                           a == Algorithm::NVLS_TREE ? per_ch_nvls_tree : std::numeric_limits<double>::max()});
          }
        }
        double bus = skip ? 0.0 : g.n_channels * bw;
        if (a == Algorithm::RING && p == Protocol::LL) {
          const double f = (N > 1 || ar || coll == CollectiveOp::REDUCE) ? t.ring_ll_factor_allreduce : t.ring_ll_factor_other;
          bus = std::min(ll_max, bus * f);
        }
        if (a == Algorithm::RING && p == Protocol::LL128) {
          bus = std::min(bus * (ppn < 2 ? t.ring_ll128_factor_ppn1 : t.ring_ll128_factor), g.n_channels * per_ch_ring_ll128);
        }
        if (a == Algorithm::TREE && (ar || !t.tree_allreduce_only)) bus = std::min(bus * .92, g.n_channels * per_ch_tree);
        if (a == Algorithm::TREE && p == Protocol::LL) bus = std::min(bus / 3.8, ll_max);
        if (a == Algorithm::TREE && p == Protocol::LL128) {
          bus = std::min(bus * (N == 1 ? 7.0 / 9.0 : 120.0 / 128.0), g.n_channels * per_ch_tree_ll128);
        }
        if (a == Algorithm::TREE && g.simple_tree) bus *= .85;
        if (a == Algorithm::PAT) bus *= t.pat_bandwidth_factor;
        if (collnet && p != Protocol::SIMPLE) bus = 0;
        if (a == Algorithm::COLLNET_DIRECT && p == Protocol::SIMPLE) {
          if (agrs) {
            bus = 0;  // needs a CollNet plugin with in-network all-gather/reduce-scatter
          } else {
            double factor = ppn / std::max(1, g.n_channels);
            factor -= (factor - 1) / 2;
            bus /= factor;
            if (cc >= 90) bus *= .85;
          }
        }
        if ((a == Algorithm::NVLS || a == Algorithm::COLLNET_DIRECT) && agrs && N > 1) bus = 0;
        // Bus bandwidth to algorithm bandwidth.
        double ratio = 1.0;
        if (bm == "2.18") {
          ratio = a == Algorithm::RING ? static_cast<double>(n) / nsteps
                  : a == Algorithm::NVLS ? 5.0 / 6.0
                  : a == Algorithm::NVLS_TREE ? (N > 1 ? .70 * N / (2.0 * (N - 1)) : 0.0)
                  : .5;
        } else if (bm == "2.20") {
          if (!(a == Algorithm::COLLNET_DIRECT && agrs)) {
            ratio = a == Algorithm::RING ? static_cast<double>(n) / nsteps : nvls ? 5.0 / 6.0 : .5;
          }
        } else if (bm == "2.26") {
          if (!(a != Algorithm::RING && agrs)) {
            ratio = a == Algorithm::RING ? static_cast<double>(n) / nsteps : nvls ? 5.0 / 6.0 : .5;
          }
        } else {
          if (!(a != Algorithm::RING && agrs)) {
            ratio = (a == Algorithm::RING || nvls) ? static_cast<double>(n) / nsteps : .5;
          }
        }
        bus *= ratio;
        bw_[f][ai(a)][pi(p)] = bus;
        if (a == Algorithm::RING) ring_backup_[f][pi(p)] = bus;

        // Latency.
        double lat = t.base_latency_us[ai(a)][pi(p)];
        double intra_lat = t.hw_latency_us[intra_hw][ai(a)][pi(p)];
        double inter_lat = (t.ppn1_uses_tree_net_latency && ppn == 1)
                               ? t.hw_latency_us[2][ai(Algorithm::TREE)][pi(p)]
                               : t.hw_latency_us[2][ai(a)][pi(p)];
        inter_lat += g.latency_inter_us;
        if (p == Protocol::SIMPLE) inter_lat += g.latency_inter_us;
        if (a == Algorithm::RING) {
          const int hw = N == 1 ? intra_hw : 2;
          double step_lat = t.hw_latency_us[hw][ai(a)][pi(p)];
          if (bcast_reduce) {
            if (g.same_channels) {
              lat += step_lat;
            } else {
              if (p == Protocol::SIMPLE) step_lat = t.hw_latency_us[hw][ai(Algorithm::TREE)][pi(p)];
              lat += nsteps * step_lat;
            }
          } else {
            double net_overhead = 0;
            if (N > 1) {
              net_overhead = sys_->cpu_vendor() == CpuVendor::INTEL ? t.net_overhead_intel_us
                             : sys_->cpu_vendor() == CpuVendor::AMD ? t.net_overhead_amd_us
                                                                     : t.net_overhead_other_us;
              if (p == Protocol::SIMPLE) net_overhead *= t.net_overhead_simple_factor;
            }
            intra_lat = std::max(intra_lat, net_overhead);
            lat += (nsteps - n_inter_steps) * intra_lat + n_inter_steps * inter_lat;
          }
        } else if (a == Algorithm::TREE) {
          if (ar) lat += 2 * ((n / N - 1) * intra_lat + log2i(N) * inter_lat);
        } else if (a == Algorithm::COLLNET_DIRECT) {
          lat += 2 * (std::min(1, n / N - 1) * intra_lat + (n / N - 1) * t.collnet_arity_latency_us) + inter_lat;
        } else if (a == Algorithm::COLLNET_CHAIN) {
          lat += 2 * (n / N - 1) * intra_lat + inter_lat;
        } else if (a == Algorithm::NVLS) {
          if (lm == "2.18") {
            if (N > 1) lat += t.hw_latency_us[2][ai(a)][pi(p)];
          } else {
            lat = intra_lat;
            if (N > 1) lat += inter_lat;
          }
        } else if (a == Algorithm::NVLS_TREE) {
          if (lm == "2.18") lat += 2 * (N - 1) * t.hw_latency_us[2][ai(a)][pi(p)];
          else lat += intra_lat + 2 * log2i(N) * inter_lat;
        } else if (a == Algorithm::PAT) {
          if (agrs) lat += log2i(N) * (inter_lat / 3.5) + n * t.pat_per_rank_latency_us;
        }
        lat_[f][ai(a)][pi(p)] = lat;
      }
    }
  }
}

void Tuner::apply_enables() {
  const VersionTuner& t = ver_->tuner;
  const int cc = sys_->cc();
  const int N = nnodes_;
  // aws-ofi-nccl exports NCCL_PROTO=simple on several hosts, unless the user chose protocols, where
  // the EFA endpoint refuses 128-byte aligned in-order delivery (v1.16.3 platform-aws.cpp: p4d/p4de;
  // p5/p5e accept it for RDMA writes, p5en skips the check): the fabric's forces_simple_protocol.
  const bool unordered_net = sys_->net_forces_simple() && N > 1;
  const bool force_simple = unordered_net && !env_->proto.is_set;
  if (force_simple) notes_.push_back("aws-ofi-nccl forces the Simple protocol (no byte delivery ordering on EFA)");
  if (unordered_net && env_->proto.is_set) {
    // The plugin leaves a protocol the user set, and warns when it is not "simple" (v1.16.3
    // configure_nccl_proto): LL and LL128 rely on 128-byte stores arriving in order.
    bool unordered = false;
    for (CollectiveOp op : kFunctions) {
      unordered = unordered || env_->proto.allows(op, pi(Protocol::LL)) || env_->proto.allows(op, pi(Protocol::LL128));
    }
    if (unordered) {
      notes_.push_back("NCCL_PROTO allows LL or LL128 over EFA without byte delivery ordering: aws-ofi-nccl keeps it "
                       "and warns that the endpoint may corrupt data");
    }
  }
  const bool collnet_only_requested = [&] {
    if (!env_->algo.is_set) return false;
    auto it = env_->algo.enabled.find(CollectiveOp::ALL_REDUCE);
    if (it == env_->algo.enabled.end()) return false;
    const auto& row = it->second;
    return !row[ai(Algorithm::RING)] && !row[ai(Algorithm::TREE)] && !row[ai(Algorithm::NVLS)] &&
           !row[ai(Algorithm::NVLS_TREE)] && (row[ai(Algorithm::COLLNET_DIRECT)] || row[ai(Algorithm::COLLNET_CHAIN)]);
  }();
  for (int f = 0; f < 5; ++f) {
    const CollectiveOp coll = kFunctions[f];
    bool any_requested_available = false;
    bool any_requested = false;
    for (Algorithm a : kAllAlgorithms) {
      bool algo_on = env_->algo.allows(coll, ai(a));
      if (t.collnet_request_fallback && collnet_only_requested && !sys_->collnet_supported() &&
          (a == Algorithm::RING || a == Algorithm::TREE)) {
        algo_on = true;  // NCCL ignores NCCL_ALGO=CollNet without CollNet
      }
      if (N == 1 && a == Algorithm::NVLS_TREE) algo_on = false;
      if (!sys_->collnet_supported() &&
          (a == Algorithm::COLLNET_DIRECT || a == Algorithm::COLLNET_CHAIN || (a == Algorithm::NVLS && N > 1))) {
        algo_on = false;
      }
      if (!sys_->nvswitch() && a == Algorithm::COLLNET_DIRECT) algo_on = false;
      if ((a == Algorithm::NVLS || a == Algorithm::NVLS_TREE) && ch_->nvls.n_channels == 0) algo_on = false;
      for (Protocol p : kAllProtocols) {
        bool proto_on = env_->proto.allows(coll, pi(p));
        if (force_simple && p != Protocol::SIMPLE) proto_on = false;
        if (p == Protocol::LL128 && !env_->proto.is_set) {
          // LL128 only where NCCL trusts it: NVLink inside (NVB or closer), PXB (PXN on sm90+)
          // to the NIC, and sm70 or newer.
          const TopoGraph& g = graph_for(*ch_, a);
          bool ok = cc >= 90 ? g.type_inter <= PathType::PXN : g.type_inter <= PathType::PXB;
          ok = ok && g.type_intra <= PathType::NVB;
          ok = ok && cc >= 70;
          proto_on = proto_on && ok;
        }
        const bool requested = env_->algo.allows(coll, ai(a)) && env_->proto.allows(coll, pi(p));
        if (requested && (env_->algo.is_set || env_->proto.is_set)) {
          any_requested = true;
          if (algo_on && proto_on && bw_[f][ai(a)][pi(p)] > 0) any_requested_available = true;
        }
        if (!proto_on || !algo_on) bw_[f][ai(a)][pi(p)] = 0;
      }
    }
    bool any = false;
    for (Algorithm a : kAllAlgorithms) {
      for (Protocol p : kAllProtocols) any = any || bw_[f][ai(a)][pi(p)] > 0;
    }
    requested_unavailable_[f] = any_requested && !any_requested_available;
    if (!any) {
      // Either NCCL keeps the ring as a backup (2.20) or it fails; in both cases the prediction
      // runs what NCCL's automatic choice would run and says so.
      for (Protocol p : kAllProtocols) {
        if (force_simple && p != Protocol::SIMPLE) continue;
        bw_[f][ai(Algorithm::RING)][pi(p)] = ring_backup_[f][pi(p)];
      }
    }
  }
}

double Tuner::bandwidth(CollectiveOp op, Algorithm a, Protocol p) const {
  const int f = fn(op);
  return f < 0 ? 0.0 : bw_[f][ai(a)][pi(p)];
}

double Tuner::latency(CollectiveOp op, Algorithm a, Protocol p) const {
  const int f = fn(op);
  return f < 0 ? 0.0 : lat_[f][ai(a)][pi(p)];
}

std::optional<double> Tuner::algo_time_us(CollectiveOp op, Algorithm a, Protocol p, Bytes bytes) const {
  const int f = fn(op);
  if (f < 0) return std::nullopt;
  double bw = bw_[f][ai(a)][pi(p)];
  double lat = lat_[f][ai(a)][pi(p)];
  if (bw <= 0) return std::nullopt;
  const long long nbytes = bytes.count();
  const int log_size = log2i(nbytes >> 6);
  const bool tree_ar = a == Algorithm::TREE && (op == CollectiveOp::ALL_REDUCE || !ver_->tuner.tree_allreduce_only);
  if (tree_ar && (nbytes >> 6) > 0 && log_size >= 0 && log_size < 23) bw *= ver_->tuner.tree_correction[pi(p)][log_size];
  if (a == Algorithm::RING && p == Protocol::SIMPLE && nnodes_ > 1 && op == CollectiveOp::ALL_REDUCE &&
      nbytes / (static_cast<long long>(ch_->coll_channels) * nranks_) >= 64) {
    lat *= sys_->cc() < 80 ? ver_->tuner.ring_plateau_before_sm80 : ver_->tuner.ring_plateau_sm80;
  }
  return lat + static_cast<double>(nbytes) / (1000.0 * bw);
}

TunerChoice Tuner::choose(CollectiveOp op, Bytes bytes, Reduction r) const {
  TunerChoice c;
  const int f = fn(op);
  const int mm = ver_->major_minor();
  if (is_fp8(r.type)) {
    if (mm < 224) {
      throw InputError("", "datatype", std::string(to_string(r.type)) + " needs NCCL 2.24 or later (ncclFloat8e4m3/e5m2); NCCL " +
                                           ver_->name + " has no fp8 types");
    }
    if (sys_->cc() < 90) {
      throw InputError("", "datatype", std::string(to_string(r.type)) +
                                           ": NCCL reduces fp8 only on sm90 and later GPUs (\"FP8 reduction support "
                                           "begins with sm90 capable devices\")");
    }
  }
  if (f < 0) {
    // Send/recv and alltoall: no tuning; P2P channels, Simple (LL below the P2P LL threshold).
    c.algorithm = Algorithm::RING;
    c.protocol = Protocol::SIMPLE;
    c.channels = ch_->p2p_channels_per_peer;
    return c;
  }
  double best = std::numeric_limits<double>::max();
  bool found = false;
  // The element type and op (see the header).
  const bool nvls_ok = nvls_supported(r);
  const bool ag = op == CollectiveOp::ALL_GATHER;
  const DevRedOp dev = device_op(r);
  for (Algorithm a : kAllAlgorithms) {
    if (a == Algorithm::NVLS && !nvls_ok && !(ag && (mm == 219 || mm >= 222))) continue;
    if (a == Algorithm::NVLS_TREE && !nvls_ok && !(ag && mm >= 222)) continue;
    if (a == Algorithm::PAT && op == CollectiveOp::REDUCE_SCATTER &&
        (dev == DevRedOp::PRE_MUL_SUM || dev == DevRedOp::SUM_POST_DIV)) {
      continue;
    }
    for (Protocol p : kAllProtocols) {
      auto t = algo_time_us(op, a, p, bytes);
      if (t && is_fp8(r.type) && a == Algorithm::RING && nranks_ > 8) *t *= 1024.0;
      if (t && *t < best) {
        best = *t;
        c.algorithm = a;
        c.protocol = p;
        found = true;
      }
    }
  }
  if (!found) {
    c.algorithm = Algorithm::RING;
    c.protocol = Protocol::SIMPLE;
    best = 0;
  }
  c.estimated_us = best;
  if (requested_unavailable_[f]) {
    c.fell_back = true;
    const std::string req = env_->raw.count("NCCL_ALGO") ? "NCCL_ALGO=" + env_->raw.at("NCCL_ALGO") : "";
    const std::string preq = env_->raw.count("NCCL_PROTO") ? "NCCL_PROTO=" + env_->raw.at("NCCL_PROTO") : "";
    std::string what = req + (req.empty() || preq.empty() ? "" : " ") + preq;
    if (ver_->tuner.no_algorithm_fallback == "ring") {
      c.notes.push_back(what + " leaves no algorithm this system can run; NCCL " + ver_->name +
                        " falls back to Ring");
    } else {
      c.notes.push_back(what + " leaves no algorithm this system can run; NCCL " + ver_->name +
                        " would fail (\"no algorithm/protocol available\"); showing what its automatic choice runs");
    }
  }

  // Channels and threads for this size (enqueue.cc topoGetAlgoInfo).
  const long long nbytes = bytes.count();
  int nc = ch_->coll_channels;
  int nt = max_threads_[ai(c.algorithm)][pi(c.protocol)];
  const int thr = thread_threshold_[ai(c.algorithm)][pi(c.protocol)];
  const bool new_scheduler = ver_->major_minor() >= 226;
  if (c.algorithm == Algorithm::NVLS || c.algorithm == Algorithm::NVLS_TREE) {
    nc = (nnodes_ > 1 && c.algorithm == Algorithm::NVLS && new_scheduler) ? std::min(ch_->nvls_channels, ch_->coll_channels)
                                                                           : ch_->nvls_channels;
  } else if (c.algorithm == Algorithm::COLLNET_DIRECT) {
    // Channel tuning with the number of heads (one per NIC-attached GPU).
    const int heads = std::max(1, static_cast<int>(sys_->nics().size()));
    int threshold = thr;
    int nc_switch = 16;
    bool flag = true;
    while (nc_switch >= 1 && flag) {
      while ((flag = nbytes < static_cast<long long>(nc) * nt * heads * threshold) && nc > nc_switch) {
        if (nc == nc_switch + nc_switch / 2) threshold /= 2;
        --nc;
      }
      nc_switch /= 2;
    }
  } else {
    while (nbytes < static_cast<long long>(nc) * nt * thr) {
      if (nc >= 2) --nc;
      else if (!new_scheduler && nt % 128 == 0) nt /= 2;
      else break;
    }
  }
  if (new_scheduler && c.algorithm != Algorithm::NVLS && c.algorithm != Algorithm::NVLS_TREE &&
      c.algorithm != Algorithm::COLLNET_DIRECT) {
    while (nbytes < static_cast<long long>(nc) * nt * thr && nt % 128 == 0) nt /= 2;
  }
  if (c.protocol == Protocol::SIMPLE) {
    if (c.algorithm == Algorithm::RING) nt += kWarpSize;
    if (c.algorithm == Algorithm::TREE) nt += 4 * kWarpSize;
  }
  nt = nt / kWarpSize < 3 ? 3 * kWarpSize : nt;
  if (new_scheduler && (c.algorithm == Algorithm::TREE || c.algorithm == Algorithm::PAT)) nt = ver_->device.max_threads_all;
  c.channels = std::max(1, nc);
  c.max_channels = c.channels;
  c.threads = nt;
  const bool collnet_kind = c.algorithm == Algorithm::COLLNET_DIRECT || c.algorithm == Algorithm::COLLNET_CHAIN ||
                            (c.algorithm == Algorithm::NVLS && nnodes_ > 1);
  if (ver_->major_minor() >= 223 && !collnet_kind && nbytes > 0) {
    const bool per_rank = op == CollectiveOp::ALL_GATHER || op == CollectiveOp::REDUCE_SCATTER;
    const long long task_bytes = per_rank ? nbytes / nranks_ : nbytes;
    long long traffic = op == CollectiveOp::ALL_REDUCE ? 2 : per_rank ? nranks_ : 1;
    if (c.protocol == Protocol::LL) traffic *= 4;
    const bool nvls = c.algorithm == Algorithm::NVLS || c.algorithm == Algorithm::NVLS_TREE;
    const int kind_channels = nvls ? ch_->nvls_channels : ch_->coll_channels;
    const ChannelSplit split = split_channels(task_bytes, traffic, c.channels, kind_channels);
    c.channels = split.channels;
    c.channel_bytes = split.busiest * (per_rank ? nranks_ : 1);
  }
  return c;
}

std::string Tuner::table_text() const {
  std::ostringstream out;
  char buf[64];
  for (int f = 0; f < 5; ++f) {
    out << to_string(kFunctions[f]) << ":";
    for (Algorithm a : kAllAlgorithms) {
      for (Protocol p : kAllProtocols) {
        if (bw_[f][ai(a)][pi(p)] <= 0) continue;
        std::snprintf(buf, sizeof buf, " %s/%s %.1f us %.1f GB/s;", std::string(nccl_name(a)).c_str(),
                      std::string(nccl_name(p)).c_str(), lat_[f][ai(a)][pi(p)], bw_[f][ai(a)][pi(p)]);
        out << buf;
      }
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace clustersim::sim::nccl
