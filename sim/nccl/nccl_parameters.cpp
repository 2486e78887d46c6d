#include "sim/nccl/nccl_parameters.hpp"

#include <algorithm>
#include <cmath>

namespace clustersim::sim::nccl {

namespace {
// NCCL 2.28 src/graph/tuning.cc ncclTopoTuneModel: "if (a == NCCL_ALGO_TREE && coll ==
// ncclFuncAllReduce) busBw = std::min(busBw*.92, ...)" (also in sim/nccl/tuner.cpp).
constexpr double kTreeAllReduceFactor = 0.92;
// The same, Tree LL128: "busBw * (nNodes == 1 ? 7.0/9.0 : 120.0/128.0)" of the graph's payload
// bandwidth; LL128 puts 16 wire bytes on the link per 15 payload bytes, so on the link that is
// 7/9 x 16/15 = 0.83 on one node (and 120/128 x 16/15 = 1 across nodes).
constexpr double kTreeLl128OneNodeFactor = 7.0 / 9.0;
}  // namespace

NcclRates resolve_rates(hardware::ParameterSet& params, const NcclSystem& sys, const ChannelPlan& channels,
                        const NcclVersion& version) {
  NcclRates r;
  const auto& node = sys.node();
  const auto* gpu = node.gpu;
  const int arch = static_cast<int>(sys.arch());
  const int N = sys.nccl_nodes();
  const int index2 = N <= 2 ? N - 1 : 2;
  const std::string v = "NCCL " + version.name;

  if (sys.nvlink_usable()) {
    const double nccl_link = version.topology.nvlink_per_link(sys.cc()).gigabytes_per_second();
    const double sheet_link = gpu->nvlink.link_bandwidth.value.gigabytes_per_second();
    const double eff = params.ratio("nccl.nvlink.efficiency", nccl_link / sheet_link,
                                    v + " per-link NVLink figure " + format_significant(nccl_link, 4) +
                                        " GB/s over the datasheet " + format_significant(sheet_link, 4) + " GB/s");
    r.nvlink = sys.nvlink_bandwidth() * eff;
    if (sys.ranks_per_host() >= 2 && sys.transport(0, 1).kind == TransportKind::P2P && sys.transport(0, 1).read) {
      r.nvlink_read_efficiency =
          params.ratio("nccl.nvlink.read_efficiency", 1.0, "P2P read as P2P write (no measurement)");
    }
    // The knee where the catalog measured one (or a profile sets it); else a hard minimum.
    if (const auto& knee = gpu->nvlink.knee_exponent) {
      r.nvlink_knee = params.ratio("nccl.nvlink.knee_exponent", knee->value,
                                   "catalog " + gpu->name + " nvlink knee_exponent " +
                                       format_significant(knee->value, 3) + " (" + knee->source + ")");
    } else if (params.has("nccl.nvlink.knee_exponent")) {
      r.nvlink_knee = params.ratio("nccl.nvlink.knee_exponent", 0.0, "a hard minimum (no knee measured)");
    }
    // The ramp within a launch: only where a profile fitted one (no fallback: none).
    if (params.has("nccl.nvlink.ramp_deficit")) {
      r.nvlink_ramp_deficit = params.ratio("nccl.nvlink.ramp_deficit", 0.0, "no ramp (none measured)");
      r.nvlink_ramp_time = params.duration("nccl.nvlink.ramp_time", Duration::from_seconds(1e-3),
                                           "1 ms (no ramp measured)");
    }
    if (sys.ranks_per_host() >= 3) {
      const std::string tree_source = v + " tuning.cc: a tree all-reduce's bus bandwidth is " +
                                      format_significant(kTreeAllReduceFactor, 3) + " of its graph's";
      r.tree_nvlink_share = params.ratio("nccl.tree.nvlink_share", kTreeAllReduceFactor, tree_source);
      r.tree_ll_nvlink_share = params.ratio("nccl.tree.ll_nvlink_share", kTreeAllReduceFactor, tree_source);
      const double ll128 = N == 1 ? kTreeLl128OneNodeFactor * 16.0 / 15.0 : 1.0;
      r.tree_ll128_nvlink_share =
          params.ratio("nccl.tree.ll128_nvlink_share", ll128,
                       v + " tuning.cc: Tree LL128 bus bandwidth " + (N == 1 ? "7/9" : "120/128") +
                           " of the graph's payload bandwidth, x 16/15 wire bytes per payload byte");
    }
  }
  {
    const double sheet = sys.pcie_bandwidth().gigabytes_per_second();
    const double eff = params.ratio("nccl.pcie.efficiency", sys.nccl_pci_bw() / sheet,
                                    v + " PCIe figure " + format_significant(sys.nccl_pci_bw(), 4) +
                                        " GB/s over the datasheet " + format_significant(sheet, 4) + " GB/s");
    r.pcie = sys.pcie_bandwidth() * eff;
  }
  {
    // The receiver's kernel loads each step from host memory (shm.cc: receiver-side buffers by
    // default), so where the catalog has the GPU's rate for such reads it caps the transport.
    const Bandwidth mem = node.host().memory_bandwidth_per_socket.value / 2.0;
    Bandwidth fallback = std::min(r.pcie, mem);
    std::string why = "min(GPU PCIe rate at NCCL's efficiency, host memory bandwidth per socket / 2";
    if (const auto& rd = gpu->pcie.host_read_bandwidth) {
      fallback = std::min(fallback, rd->value);
      why += ", catalog GPU reads of pinned host memory " + format_significant(rd->value.gigabytes_per_second(), 3) +
             " GB/s (" + rd->source + ")";
    }
    r.shm = params.bandwidth("nccl.shm.bandwidth", fallback, why + ")");
    if (sys.ranks_per_host() >= 2 && sys.transport(0, 1).kind == TransportKind::SHM) {
      r.shm_two_way_efficiency = params.ratio("nccl.shm.two_way_efficiency", 1.0,
                                              "a GPU's SHM rate the same whether it also loads (no measurement)");
    }
  }
  if (!sys.nics().empty() && node.fabric == nullptr) {
    // The socket transport over the host's own interface (a bare system, nccl_system.hpp): no
    // GPUDirect, each byte staged through host memory on both sides and carried by the rank's proxy
    // thread through the kernel's TCP stack, which sets the rate, not a line rate.
    const NicDevice& d = sys.nics().front();
    r.nic = params.bandwidth("nccl.net.socket_proxy_bandwidth", d.bandwidth * 2.0,
                             v + " socket speed of an interface it cannot read, " + format_bandwidth_bits(d.bandwidth) +
                                 " each way (" + version.topology.socket_default_speed_source +
                                 "), both ways together");
    r.socket_message_overhead = params.duration("nccl.net.socket_message_overhead", Duration::from_seconds(1e-6),
                                                "1 us, the order of a system call (no measurement)");
    r.socket_p2p_efficiency = params.ratio("nccl.net.socket_p2p_efficiency", 1.0,
                                           "a collective's proxy rate (no measurement)");
    r.net_latency = params.duration("nccl.net.latency", Duration::zero(),
                                    "no figure for the host's own interface: NCCL's step latency alone");
  } else if (!sys.nics().empty()) {
    // The fabric's own figure where the catalog has one (EFA through aws-ofi-nccl reaches less
    // than InfiniBand verbs), else the NCCL maintainers' rule of thumb.
    const auto& fab_eff = node.fabric->nccl_net_efficiency;
    const double eff =
        fab_eff ? params.ratio("nccl.net.efficiency", fab_eff->value,
                               "catalog " + node.fabric->name + " nccl_net_efficiency (" + fab_eff->source + ")")
                : params.ratio("nccl.net.efficiency", 12.0 / 12.5,
                               "NCCL maintainers' rule of thumb: about 12 GB/s per 100 Gb/s NIC");
    r.nic = sys.nics().front().bandwidth * eff;
    Duration lat = node.fabric->nic_latency.value;
    const auto& topo = node.instance->network.topology;
    // Beyond one leaf, the hops of a ring that cross to another leaf (one per leaf) add two
    // switches (leaf to spine to leaf); spread over the ring's hops.
    if (topo.kind != hardware::NetworkTopologyKind::SINGLE_SWITCH && sys.nodes() > topo.nodes_per_leaf) {
      const double leaves = std::ceil(static_cast<double>(sys.nodes()) / topo.nodes_per_leaf);
      lat += Duration::from_seconds(node.fabric->switch_latency.value.seconds() * 2 * leaves / sys.nodes());
    }
    r.net_latency = params.duration("nccl.net.latency", lat,
                                    "catalog " + node.fabric->name +
                                        " nic_latency (+2 switch hops per leaf crossing, averaged over the nodes)");
  }
  if (channels.nvls.n_channels > 0 && sys.nccl_nvlink_bw() > 0) {
    double eff28 = 0;
    if (version.tuner.nvls_efficiency) {
      eff28 = (*version.tuner.nvls_efficiency)[arch];
    } else {
      eff28 = (*NcclVersion::builtin("2.28").tuner.nvls_efficiency)[arch];
    }
    const double graph = channels.nvls.n_channels * channels.nvls.bw_intra;
    r.nvls_efficiency = params.ratio("nccl.nvls.efficiency", eff28 * graph / sys.nccl_nvlink_bw(),
                                     "NCCL 2.28 nvlsEfficiency " + format_significant(eff28, 3) + " x NVLS graph " +
                                         format_significant(graph, 4) + " GB/s over NCCL's NVLink figure " +
                                         format_significant(sys.nccl_nvlink_bw(), 4) + " GB/s");
    r.nvls = Bandwidth::gigabytes_per_second(sys.nccl_nvlink_bw()) * r.nvls_efficiency;
  }
  // One channel's LL and LL128 blocks: the catalog's measured copy engine where the GPU has one
  // (steps then cost their loads and stores, collective_program.hpp), else NCCL's per-channel
  // figures. LL's: NCCL's ring estimate per channel, the graph's per-channel bandwidth x the
  // all-reduce factor (tuning.cc: LL ring busBw = nChannels x bwIntra x 1/4, 1/3 for
  // all-gather-like ops on one node; the lower figure for every op).
  auto copy_rate = [&](const std::optional<hardware::ChannelCopySpec>& c, const char* name, const char* key,
                       Bandwidth nccl_figure, const std::string& nccl_why) {
    if (!c) return params.bandwidth(name, nccl_figure, nccl_why);
    return params.bandwidth(name, c->copy_rate.value,
                            "catalog " + gpu->name + " " + key + " copy_rate " + format_bandwidth(c->copy_rate.value) +
                                " (" + c->copy_rate.source + ")");
  };
  // A store share from the catalog's figure `share` (absent: none measured). Without one, Simple's
  // loads and stores count alike (0.5); LL's and LL128's steps all cost a copy (-1), unless a
  // profile sets the share.
  auto store_share = [&](const hardware::Figure<double>* share, const char* name, const std::string& key,
                         bool steps_alike) {
    if (share) {
      return params.ratio(name, share->value,
                          "catalog " + gpu->name + " " + key + " " + format_significant(share->value, 3) + " (" +
                              share->source + ")");
    }
    if (steps_alike && !params.has(name)) return -1.0;
    return params.ratio(name, 0.5, "loads and stores alike");
  };
  auto channel_share = [](const std::optional<hardware::ChannelCopySpec>& c) {
    return c ? &c->store_share : nullptr;
  };
  r.ll_channel = copy_rate(
      gpu->nccl_ll_channel, "nccl.ll.channel_bandwidth", "nccl_ll_channel",
      Bandwidth::gigabytes_per_second(channels.ring.bw_intra * version.tuner.ring_ll_factor_allreduce),
      v + " ring bwIntra " + format_significant(channels.ring.bw_intra, 4) + " GB/s x LL factor " +
          format_significant(version.tuner.ring_ll_factor_allreduce, 3));
  r.ll128_channel = copy_rate(gpu->nccl_ll128_channel, "nccl.ll128.channel_bandwidth", "nccl_ll128_channel",
                              Bandwidth::gigabytes_per_second(version.tuner.per_ch_max_ring_ll128_bw[arch][index2]),
                              v + " perChMaxRingLL128Bw");
  r.ll_store_fraction = store_share(channel_share(gpu->nccl_ll_channel), "nccl.ll.store_fraction",
                                    "nccl_ll_channel store_share", true);
  r.ll128_store_fraction = store_share(channel_share(gpu->nccl_ll128_channel), "nccl.ll128.store_fraction",
                                       "nccl_ll128_channel store_share", true);
  r.ll_tree_root_weight =
      params.ratio("nccl.ll.tree_root_weight", 1.0, "the root's step costs its loads and stores, as every step");
  r.p2p_alone_share = params.ratio("nccl.p2p.alone_share", 1.0, "a side alone has the whole block");
  r.simple_channel = params.bandwidth("nccl.simple.channel_bandwidth",
                                      Bandwidth::gigabytes_per_second(version.tuner.per_ch_max_tree_bw[arch][index2]),
                                      v + " perChMaxTreeBw");
  // How a ring channel's rate follows its block's threads (NCCL_NTHREADS, NCCL_LL128_NTHREADS).
  // Measured on 4 x H200 with one channel (calibrate/results/lent-4xh200-2026-11-28-threads): the
  // all-reduce's busbw at 128, 256 and 512 threads is 0.68, 0.90 and 1 of 512's with Simple over
  // NVLink (t / (t + 85)), 0.30, 0.56 and 1 with LL (t_half 1850: nearly in proportion), 0.34,
  // 0.57 and 1 with Simple over SHM (940); with LL128 at 160, 320, 480 and 640 threads 0.43, 0.72,
  // 0.96 and 1 (400 keeps each within 8%). These are the fallbacks; the built-in H200 profile fits
  // all four with those runs (Simple 103, LL 1928, LL128 572, SHM 1528). Other GPUs take H200's.
  const std::string threads_source = "4 x H200, one channel (calibrate/results/lent-4xh200-2026-11-28-threads)";
  r.simple_half_threads = params.ratio("nccl.simple.half_rate_threads", 85, threads_source);
  r.ll_half_threads = params.ratio("nccl.ll.half_rate_threads", 1850, threads_source);
  r.ll128_half_threads = params.ratio("nccl.ll128.half_rate_threads", 400, threads_source);
  r.shm_half_threads = params.ratio("nccl.shm.half_rate_threads", 940, threads_source);
  // The catalog's measured share of a block's stores (clustersim-storeprobe: one 512-thread block,
  // outputs in the GPU's own memory) where it has one; otherwise loads and stores alike.
  r.store_fraction = store_share(gpu->sm_store_share ? &*gpu->sm_store_share : nullptr, "nccl.store_fraction",
                                 "sm_store_share", false);
  // NCCL's NVLink step latency of an algorithm, Simple over LL (us): the Simple step's own
  // synchronisation, which the fallbacks of the step costs below take.
  auto simple_over_ll_us = [&](Algorithm a) {
    const auto& lat = version.tuner.hw_latency_us[static_cast<int>(HwClass::NVLINK)][static_cast<int>(a)];
    return lat[static_cast<int>(Protocol::SIMPLE)] - lat[static_cast<int>(Protocol::LL)];
  };
  {
    const double extra_us = simple_over_ll_us(Algorithm::RING);
    const int slices = std::max(1, version.device.chunk_steps.at(CollectiveOp::ALL_REDUCE) /
                                       std::max(1, version.device.slice_steps.at(CollectiveOp::ALL_REDUCE)));
    r.simple_slice_overhead = params.duration(
        "nccl.simple.slice_overhead", Duration::from_seconds(std::max(0.0, extra_us) / slices * 1e-6),
        v + " NVLink ring step latency, Simple over LL (" + format_significant(extra_us, 3) + " us), per slice of an all-reduce chunk (" +
            std::to_string(slices) + ")");
  }
  r.simple_reduce_slice_overhead =
      params.duration("nccl.simple.reduce_slice_overhead", r.simple_slice_overhead,
                      "nccl.simple.slice_overhead (a reduce chain's step synchronises as a broadcast's does)");
  {
    const double extra_us = simple_over_ll_us(Algorithm::TREE);
    r.simple_tree_step_overhead = params.duration(
        "nccl.simple.tree_step_overhead", Duration::from_seconds(std::max(0.0, extra_us) * 1e-6),
        v + " NVLink tree step latency, Simple over LL (" + format_significant(extra_us, 3) + " us; one slice per step)");
  }
  r.base_scale = params.ratio("nccl.latency.base_scale", 1.0, v + " base latencies as they are");
  r.nvlink_scale = params.ratio("nccl.latency.nvlink_scale", 1.0, v + " NVLink step latencies as they are");
  r.pcie_scale = params.ratio("nccl.latency.pcie_scale", 1.0, v + " PCI step latencies as they are");
  r.net_scale = params.ratio("nccl.latency.net_scale", 1.0, v + " network step latencies as they are");
  if (sys.ranks_per_host() >= 2 && sys.transport(0, 1).kind == TransportKind::SHM) {
    // SHM traffic crosses the host memory twice (store, load) per byte, every GPU of a socket's
    // together; and a channel's block, which loads each step from host memory over PCIe, moves
    // less than over NVLink (per protocol; fallback: the block's rate, no further limit).
    // What STREAM sustains of the DDR wire rate (TI SPRAD45A: copy and triad 74-78%): the DRAM
    // share's fallback, and its inverse the cache's (which loses none of it).
    constexpr double kStreamShare = 0.75;
    const double eff = params.ratio("nccl.shm.host_memory_efficiency", kStreamShare,
                                    "the share of a socket's DDR wire rate STREAM sustains, about three quarters "
                                    "(TI SPRAD45A: copy and triad 74-78%)");
    r.host_memory = node.host().memory_bandwidth_per_socket.value * eff;
    const auto& io_cache = node.host().io_cache_per_socket;
    r.host_cache_bytes = static_cast<double>(
        params
            .bytes("nccl.shm.host_cache_bytes", io_cache ? io_cache->value : Bytes::of(0),
                   io_cache ? "the catalog's io_cache_per_socket (" + io_cache->source + ")"
                            : std::string("none: the catalog names no cache PCIe writes allocate into"))
            .count());
    r.host_cache_speedup = params.ratio("nccl.shm.host_cache_speedup", 1.0 / kStreamShare,
                                        "the DDR wire rate over what STREAM sustains of it (TI SPRAD45A: 74-78%)");
    // Fallbacks: a GPU's SHM rate over the 2 channels NCCL gives a pair without P2P
    // (ncclTopoGetNchannels); LL at the share of Simple's rate its block reaches over NVLink.
    r.shm_simple_channel = params.bandwidth("nccl.shm.channel_bandwidth", r.shm / 2.0,
                                            "nccl.shm.bandwidth over the 2 channels of a pair without P2P");
    r.shm_store_fraction = params.ratio("nccl.shm.store_fraction", r.store_fraction,
                                        "nccl.store_fraction (stores into host memory priced as over NVLink)");
    r.shm_ll_channel = params.bandwidth(
        "nccl.shm.ll_channel_bandwidth", r.shm_simple_channel * (r.ll_channel / r.simple_channel),
        "nccl.shm.channel_bandwidth x nccl.ll.channel_bandwidth / nccl.simple.channel_bandwidth");
  }
  // Host costs belong to the NCCL release as much as to the machine: group.cc and enqueue.cc's
  // launch path change between releases (one thread driving 4 x H200 paid 4.75 us per
  // communicator with 2.20.5 and 5.43 us with 2.28.9, same host; versions/2.20.5.json). A
  // profile's are therefore used only under the release (major.minor) it was fitted with.
  if (const hardware::CalibrationProfile* prof = params.profile(); prof != nullptr) {
    const int fitted = NcclVersion::major_minor_of(prof->provenance().nccl);
    if (fitted != 0 && fitted != version.major_minor()) {
      params.set_profile_excluded("nccl.host.", "fitted with NCCL " + prof->provenance().nccl +
                                                    ", and host costs belong to the release; this is " + v);
    }
  }
  r.host_call = params.duration("nccl.host.call_overhead", version.host.call_overhead, version.host.source);
  r.host_group_comm = params.duration("nccl.host.group_comm_overhead", version.host.group_comm_overhead,
                                      version.host.group_source);
  r.host_empty_call = params.duration("nccl.host.empty_call_overhead", r.host_call / 10,
                                      "a tenth of nccl.host.call_overhead (the call returns before any launch)");
  r.host_empty_group = params.duration("nccl.host.empty_group_overhead", r.host_empty_call,
                                       "nccl.host.empty_call_overhead (a group end that launches nothing)");
  r.host_sync = params.duration("nccl.host.sync_overhead", r.host_empty_call,
                                "nccl.host.empty_call_overhead (a wait on an idle stream is one query)");
  r.host_process_serial =
      params.duration("nccl.host.process_serial_overhead", r.host_call / 2,
                      "half of nccl.host.call_overhead (the launch's share of a call, taken in turn by a process's threads)");
  {
    // The compute model's memory parameters and fallbacks (models/compute_parameters.hpp).
    const double mem_eff = params.ratio("compute.memory.efficiency", 0.80, "compute model default (memory-bound kernels)");
    r.local_copy = gpu->hbm_bandwidth.value * mem_eff / 2.0;
    r.local_copy_overhead =
        params.duration("compute.kernel_overhead", Duration::from_seconds(2e-6), "compute model default (kernel fixed time)");
  }
  r.any_uncalibrated = params.any_uncalibrated();
  return r;
}

}  // namespace clustersim::sim::nccl
