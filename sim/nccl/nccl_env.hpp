#pragma once
// The NCCL_* environment variables the simulator honours, parsed as NCCL parses them, with what
// they change (NCCL 2.28 source, file named per variable):
//
//   NCCL_ALGO, NCCL_PROTO   tuning.cc parseList: "Ring,Tree", "^NVLS", and since 2.24 per function
//                           "allreduce:tree;broadcast:ring". Unknown words are errors (NCCL fails).
//   NCCL_P2P_DISABLE=1      paths.cc ncclGetLevel: P2P level LOC, so no P2P between GPUs.
//   NCCL_P2P_LEVEL          LOC NVL PIX PXB PHB SYS (or old numbers 0-5): farthest P2P path.
//   NCCL_P2P_READ_ENABLE    p2p.cc: force P2P read (1) or write (0); default read on sm80 NVLink.
//   NCCL_SHM_DISABLE=1      shm.cc: no SHM transport; NET between GPUs of a node.
//   NCCL_NET_GDR_LEVEL      paths.cc ncclTopoCheckGdr: farthest GPU-NIC path with GPUDirect RDMA.
//   NCCL_NET_GDR_READ=0     no GPUDirect for sends.
//   NCCL_MIN/MAX_NCHANNELS  connect.cc: clamp the collective channel count.
//   NCCL_BUFFSIZE, NCCL_LL_BUFFSIZE, NCCL_LL128_BUFFSIZE   init.cc computeBuffSizes.
//   NCCL_P2P_NET/NVL/PCI_CHUNKSIZE                         init.cc p2p chunk sizes.
//   NCCL_CROSS_NIC          search.cc: rings may leave through another NIC (0, 1, 2 = try both).
//   NCCL_IB_DISABLE=1       net_ib.cc: no InfiniBand/RoCE verbs; NCCL falls back to sockets.
//   NCCL_NVLS_ENABLE        nvls.cc: 0 off, 1 on, 2 (default) on where supported.
//   NCCL_NVLS_NCHANNELS     nvls.cc: NVLS channel count.
//   NCCL_COLLNET_ENABLE=1   init.cc: CollNet when a CollNet plugin (in-network reduction) is found.
//   NCCL_PAT_ENABLE         tuning.cc ncclPatEnable (2.23+).
//   NCCL_PXN_DISABLE=1      paths.cc: no PCI x NVLink relay to a remote rail's NIC.
//   NCCL_CUMEM_ENABLE=0     p2p.cc: legacy CUDA IPC instead of cuMem handles.
//   NCCL_HOSTID             misc/utils.cc getHostHash: processes with equal host ids are one host.
// aws-ofi-nccl (v1.21.1: include/nccl_ofi_param.h, src/platform-aws.cpp; doc/efa-env-var.md) and
// libfabric's EFA provider read FI_* and OFI_NCCL_* variables; on a fabric NCCL reaches through
// the plugin ("ofi" in the catalog):
//   FI_EFA_USE_DEVICE_RDMA=0   the provider leaves GPU memory to the host: no GPUDirect RDMA, as
//                              NCCL_NET_GDR_LEVEL=LOC (host-staged sends). The plugin refuses this
//                              on instances it requires GPUDirect on (p4d, p4de, p5, ...:
//                              gdr_required) unless OFI_NCCL_DISABLE_GDR_REQUIRED_CHECK=1; said.
//   NCCL_NET_PLUGIN=none       NCCL loads no plugin (src/plugin/net.cc) and EFA has no NCCL
//                              transport of its own: NCCL's socket transport. Other names: no change.
//   FI_PROVIDER                the plugin keeps "efa"; another provider is read, not modelled.
//   OFI_NCCL_PROTOCOL          SENDRECV or RDMA (others an error): the plugin's own protocol, read,
//                              not modelled; likewise the other OFI_NCCL_* names of v1.21.1 and
//                              FI_EFA_FORK_SAFE, FI_EFA_USE_HUGE_PAGE, FI_EFA_ENABLE_SHM_TRANSFER.
// Any other FI_* or OFI_* name is warned about as one neither is known to read. All of these are
// said in `plugin_notes`; without a plugin fabric each is read and changes nothing.
//
// Variables NCCL has that change nothing here (NCCL_DEBUG, NCCL_SOCKET_IFNAME, ...) are kept as
// "ignored"; a name one edit from a listed one is an error (a typo); any other name is "unknown",
// and the prediction says whether the release reads it (NcclVersion::unmodelled_variable_note:
// NCCL_SOCKET_NTHREADS and NCCL_NSOCKS_PERTHREAD, say, change what NCCL's socket transport does,
// which the model does not follow).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hardware/units.hpp"
#include "sim/nccl/nccl_types.hpp"

namespace clustersim::sim::nccl {

// NCCL_ALGO / NCCL_PROTO as an enable matrix per collective (NCCL's functions: Broadcast, Reduce,
// AllGather, ReduceScatter, AllReduce; send/recv and alltoall are not tuned).
struct EnableMatrix {
  // [op][element] with op in {BROADCAST, REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_REDUCE}.
  std::map<CollectiveOp, std::vector<bool>> enabled;
  bool is_set = false;
  bool allows(CollectiveOp op, int element) const;
};

struct NcclEnv {
  std::map<std::string, std::string> raw;  // as given
  EnableMatrix algo;                       // elements indexed by Algorithm
  EnableMatrix proto;                      // elements indexed by Protocol
  std::optional<PathType> p2p_level;       // from NCCL_P2P_DISABLE / NCCL_P2P_LEVEL
  std::optional<bool> p2p_read;            // NCCL_P2P_READ_ENABLE
  bool shm_disable = false;
  std::optional<PathType> net_gdr_level;
  bool net_gdr_read_disable = false;
  std::optional<int> min_nchannels, max_nchannels;
  std::optional<int> min_p2p_nchannels, max_p2p_nchannels;  // NCCL_MIN_P2P_NCHANNELS, NCCL_MAX_P2P_NCHANNELS
  // NCCL_NCHANNELS_PER_NET_PEER: P2P channels per peer over the network (init.cc keeps its own
  // count for a value of 0 or less, which stays unset here).
  std::optional<int> nchannels_per_net_peer;
  // NCCL_NTHREADS and NCCL_LL128_NTHREADS as given (NCCL's tuner bounds them per protocol:
  // Tuner::max_threads).
  std::optional<int> nthreads, ll128_nthreads;
  std::optional<Bytes> buffsize, ll_buffsize, ll128_buffsize;
  std::optional<Bytes> p2p_net_chunksize, p2p_nvl_chunksize, p2p_pci_chunksize;
  std::optional<Bytes> nvls_chunksize, nvlstree_max_chunksize;  // NCCL_NVLS_CHUNKSIZE, NCCL_NVLSTREE_MAX_CHUNKSIZE
  std::optional<Bytes> p2p_ll_threshold;  // NCCL_P2P_LL_THRESHOLD (0: send/recv never use LL)
  bool p2p_net_ll_buffers = false;        // NCCL_ALLOC_P2P_NET_LL_BUFFERS=1: send/recv may use LL over the network
  std::optional<int> cross_nic;
  bool ib_disable = false;
  std::optional<int> nvls_enable;  // 0, 1, 2
  std::optional<int> nvls_nchannels;
  bool collnet_enable = false;
  std::optional<int> pat_enable;
  bool pxn_disable = false;
  std::optional<bool> cumem_enable;
  std::optional<std::string> host_id;
  std::optional<bool> efa_device_rdma;      // FI_EFA_USE_DEVICE_RDMA
  bool gdr_required_check_disabled = false;  // OFI_NCCL_DISABLE_GDR_REQUIRED_CHECK=1
  bool net_plugin_none = false;              // NCCL_NET_PLUGIN=none
  std::vector<std::string> plugin_notes;     // FI_* / OFI_* variables read but not modelled, or unknown
  std::vector<std::string> ignored;  // NCCL variables that change nothing in the model
  std::vector<std::string> unknown;  // other NCCL_* names: unmodelled, or not NCCL's at all

  // Parses `env` (NCCL_*, FI_* and OFI_* keys are looked at; others are ignored). A bad value is an
  // InputError naming the variable and the expected form; `where` prefixes the location
  // ("--env", "/nccl/env").
  static NcclEnv parse(const std::map<std::string, std::string>& env, const std::string& where = "--env");
};

}  // namespace clustersim::sim::nccl
