#pragma once
// NCCL's own constants for one named NCCL release: the tuner's latency and bandwidth tables, the
// topology search's speed ladders, buffer sizes, step counts and channel limits. These are facts
// read from NCCL's public source at the tag the table names (no hardware figure lives here: the
// bandwidths are NCCL's assumptions, which the simulator uses only to mirror NCCL's choices and as
// documented fallbacks).
//
// Tables are data: sim/nccl/versions/<version>.json, compiled into the binary, chosen by name or
// alias ("2.28" is 2.28.9). Each carries a one-line description and its source. Versions differ in
// constants and in a few formula shapes, named by `bandwidth_model` and `latency_model`:
//   bandwidth_model "2.18": NVLS busBw = nCh * bw, algBw = 5/6 busBw; NVLSTree 0.70*N/(2(N-1)).
//                   "2.20": NVLS bw = min(bwIntra, bwInter) (NVLSTree halves bwInter beyond 2 nodes);
//                           algBw = 5/6 busBw for both, all-gather and reduce-scatter included.
//                   "2.26": as 2.20, but only the ring converts all-gather/reduce-scatter busBw.
//                   "2.28": NVLS intra bw = bwIntra * nvlsEfficiency * (nCh-1)/nCh, doubled for
//                           all-reduce, (ppn-1)/ppn otherwise; NVLSTree capped per channel.
//   latency_model   "2.18": NVLS = base + net; NVLSTree = base + 2(N-1) net; ring inter steps 2N.
//                   "2.20": NVLS = intra (+ inter); NVLSTree = base + intra + 2 log2(N) inter; 2N.
//                   "2.26": as 2.20 with ring inter-node steps 2(N-1) and the tree network latency
//                           when one GPU per node.

#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/units.hpp"
#include "sim/nccl/nccl_types.hpp"

namespace clustersim::sim::nccl {

// GPU generation index of NCCL's per-architecture tables.
enum class GpuArch { VOLTA = 0, AMPERE = 1, HOPPER = 2, BLACKWELL = 3 };
std::string_view to_string(GpuArch a);
// From a compute capability "8.0" / "9.0" / "10.0" (major*10 + minor).
GpuArch arch_from_compute_capability(int cc);

// Rows of a per-architecture table indexed [arch][min(nNodes,3)-1] (N1, N2, N4+), GB/s as NCCL
// writes them. Missing architectures (older releases) read as the Hopper row.
using PerArchTable = std::array<std::array<double, 3>, 4>;
// [algorithm][protocol] in microseconds.
using AlgoProtoTable = std::array<std::array<double, kNumProtocols>, kNumAlgorithms>;

struct VersionDevice {
  int max_channels = 64;                    // MAXCHANNELS
  int steps = 8;                            // NCCL_STEPS: slots of each connection's FIFO
  std::array<Bytes, kNumProtocols> buffsize{};    // default NCCL_LL/LL128/BUFFSIZE
  std::array<int, kNumProtocols> max_threads{};   // per channel (block), per protocol
  int max_threads_all = 640;                      // NCCL_MAX_NTHREADS (Tree, NVLS, PAT use all)
  std::array<int, kNumProtocols> thread_threshold{};  // bytes per thread before adding channels
  std::map<CollectiveOp, int> chunk_steps;  // Simple ring only (collectives.h)
  std::map<CollectiveOp, int> slice_steps;
  std::optional<Bytes> min_traffic_per_channel;  // enqueue.cc cell scheduler (2.26+)
  Bytes p2p_chunk_nvlink, p2p_chunk_pci, p2p_chunk_net;
  Bytes p2p_ll_threshold;
  std::optional<Bytes> nvls_chunk_size;
  // NCCL_NVLS_CHUNKSIZE sets nvls_chunk_size (src/transport/nvls.cc NCCL_PARAM NvlsChunkSize, 2.24+);
  // before, the NVLS cap is a constant of enqueue.cc.
  bool nvls_chunk_size_param = false;
  int work_batch_colls = 21;
};

struct VersionTopology {
  std::map<std::string, Bandwidth, std::less<>> nvlink_bw_per_link;  // "sm80" -> 20 GB/s
  Bandwidth pci_gen3_x16;                                            // PCI_BW
  std::map<std::string, std::vector<double>, std::less<>> speed_intra;  // GB/s ladders
  std::map<std::string, std::vector<double>, std::less<>> speed_inter;
  std::map<std::string, int, std::less<>> nvls_channels;  // default NVLS channels per arch
  int nvls_min_gpus = 2;
  bool nvls_multi_node = true;
  bool pat = true;
  std::string hopper_multinode_double;  // connect.cc rule that doubles channels on Hopper multi-node
  Bandwidth socket_default_speed;       // the socket transport's speed of an interface without one
  std::string socket_default_speed_source;

  // NCCL's assumed NVLink bandwidth per link for a compute capability (topo.h ncclTopoNVLinkBw).
  Bandwidth nvlink_per_link(int cc) const;
  const std::vector<double>& intra_speeds(int cc) const;
  const std::vector<double>& inter_speeds(int cc) const;
  int default_nvls_channels(int cc) const;
};

struct VersionTuner {
  AlgoProtoTable base_latency_us{};
  std::array<AlgoProtoTable, 3> hw_latency_us{};  // [HwClass]
  PerArchTable ll_max_bw{};
  PerArchTable per_ch_max_ring_ll128_bw{};
  PerArchTable per_ch_max_tree_ll128_bw{};
  PerArchTable per_ch_max_tree_bw{};
  std::optional<PerArchTable> per_ch_max_nvls_tree_bw;
  std::optional<std::array<double, 4>> nvls_efficiency;
  std::array<std::array<double, 23>, kNumProtocols> tree_correction{};
  double ring_ll_factor_allreduce = 0.5;  // all-reduce, reduce, or several nodes
  double ring_ll_factor_other = 0.5;
  double ring_ll128_factor = 0.92;
  double ring_ll128_factor_ppn1 = 0.92;
  bool tree_allreduce_only = true;
  bool ppn1_uses_tree_net_latency = true;
  std::string bandwidth_model;  // "2.18" | "2.20" | "2.26" | "2.28"
  std::string latency_model;    // "2.18" | "2.20" | "2.26"
  double ring_plateau_before_sm80 = 1.9;
  double ring_plateau_sm80 = 1.4;
  double net_overhead_intel_us = 1.0, net_overhead_amd_us = 2.0, net_overhead_other_us = 1.0;
  double net_overhead_simple_factor = 3;  // tuning.cc: the Simple protocol's proxy works 3x per step
  double collnet_arity_latency_us = 0.4;
  double pat_per_rank_latency_us = 2.8;
  double pat_bandwidth_factor = 0.75;
  // What NCCL does when NCCL_ALGO leaves no usable algorithm: "ring" (2.20: the ring's bandwidth
  // is kept as a backup) or "none" (NCCL fails: "no algorithm/protocol available").
  std::string no_algorithm_fallback = "none";
  // 2.18/2.20: NCCL_ALGO naming only CollNet without CollNet support is ignored (Ring, Tree on).
  bool collnet_request_fallback = false;
};

// Host-side cost of NCCL calls (an estimate kept beside the release it was seen with).
struct VersionHost {
  Duration call_overhead;
  std::string source;
  Duration group_comm_overhead;  // per communicator, when one thread's group spans several
  std::string group_source;
};

struct NcclVersion {
  std::string name;
  std::vector<std::string> aliases;
  std::string description;
  std::string source;
  VersionDevice device;
  VersionTopology topology;
  VersionHost host;
  VersionTuner tuner;
  // The NCCL_* variables the release reads (its sources' names, the table's "variables" with their
  // source; empty where the table lists none). Used to say what an unmodelled variable is, not to
  // model it.
  std::vector<std::string> variables;

  // Parses one table (InputError naming the file and key on bad data).
  static NcclVersion parse(std::string_view text, const std::string& file);
  // A built-in table by name or alias, parsed afresh (callers keep it); InputError listing the
  // known names otherwise.
  static NcclVersion builtin(std::string_view name);
  // "name: description" of every built-in table, sorted by name.
  static std::vector<std::pair<std::string, std::string>> builtin_list();

  // What a prediction says of an NCCL_* variable this model neither follows nor knows to change
  // nothing (NcclEnv::unknown): that this release reads it and the prediction is as if it were
  // unset, or that the release does not read it; without a list, that the model does not know it.
  std::string unmodelled_variable_note(const std::string& var) const;

  int major_minor() const { return major_minor_of(name); }  // 228 for "2.28.9"
  // The same for a release written out ("2.28.9", "2.20"); 0 when it is not one.
  static int major_minor_of(std::string_view release);
};

}  // namespace clustersim::sim::nccl
