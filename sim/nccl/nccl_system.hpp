#pragma once
// NCCL's view of a cluster of identical nodes: what its topology detection (src/graph/topo.cc,
// paths.cc) would find on one node of a catalog system, reduced to what the simulator needs, and
// the transport NCCL chooses for each pair of ranks (src/transport.cc selectTransport tries P2P,
// then SHM, then NET).
//
// Rules, with their source in NCCL 2.28:
//  * Ranks are placed node-major: rank r is local GPU r % G of node r / G (nccl-tests with
//    mpirun -N G). A communicator with G GPUs per node sees only those G GPUs (ncclTopoTrimSystem).
//  * Same host: NCCL's host hash is the hostname plus boot id (misc/utils.cc getHostHash). Each
//    Kubernetes pod has its own hostname, so ranks in different pods are different hosts, unless
//    NCCL_HOSTID gives them one id. P2P and SHM also need the same /dev/shm (peerInfo shmDev):
//    the same pod, or pods that share the host's IPC (placement.host_ipc).
//  * P2P (paths.cc ncclTopoCheckP2p): allowed when the GPU-GPU path type is at most the P2P level
//    (default PXB; NCCL_P2P_LEVEL, NCCL_P2P_DISABLE=1 -> LOC) and the platform reports P2P
//    (placement.p2p != disabled). NVLink through an NVSwitch needs the fabric manager; without
//    it the GPUs only see each other over PCIe.
//  * P2P read (p2p.cc p2pGetInfo): on by default for NVLink between two sm80 GPUs (A100), forced
//    by NCCL_P2P_READ_ENABLE; a platform that only permits reads (placement.p2p == read) reads.
//  * P2P flavour: "direct pointer" between GPUs of one process, "CUMEM" between processes when
//    cuMem is on (default since 2.19; NCCL_CUMEM_ENABLE=0 gives legacy "IPC").
//  * SHM (shm.cc shmCanConnect): same host and /dev/shm, NCCL_SHM_DISABLE unset, and the network
//    is not faster than the GPU-GPU path (paths.cc ncclTopoCheckNet).
//  * GPUs of one host that can use neither P2P nor SHM with each other are PATH_NET apart (paths.cc
//    ncclTopoComputePaths) and fall in different domains (ncclTopoTrimSystem): NCCL counts each
//    as a node of its own ("nNodes 4 localRanks 1" for 4 GPUs of one host with NCCL_P2P_DISABLE=1
//    NCCL_SHM_DISABLE=1, NCCL 2.28.9 on 4 x H200) and builds its graphs and trees across them.
//  * NET otherwise. The NIC device NCCL sees: InfiniBand/RoCE verbs ("IB", one device per port),
//    AWS EFA through aws-ofi-nccl ("Libfabric"; multi-rail: the EFA devices behind one PCIe
//    switch are grouped into one device per GPU group, aws-ofi-nccl commit dbc2dc0 and issue
//    890), or sockets ("Socket", and also IB when NCCL_IB_DISABLE=1). Speed as NCCL reads it:
//    Mb/s / 8000 GB/s. A bare system (no network in the catalog) reaches its own GPUs through
//    NCCL's socket transport over the host's interface: one device whose speed NCCL cannot read
//    (loopback, net_socket.cc: 10 Gbps, the release's socket_default_speed), next to no GPU.
//  * GPUDirect RDMA (paths.cc ncclTopoCheckGdr): NIC and GPU support it and the GPU-NIC path is
//    at most NCCL_NET_GDR_LEVEL (default PXB). PXN (paths.cc) relays through an NVLink peer that
//    sits next to a NIC the GPU is far from.
//  * NVLS (nvls.cc ncclNvlsInit): sm90+, an NVSwitch with its fabric manager, CUDA multicast,
//    more GPUs than the release's minimum, NCCL_NVLS_ENABLE != 0, P2P between the GPUs; 2.20
//    disables it on several nodes.
//  * PAT (tuning.cc ncclPatEnable, 2.23+): one GPU per node, sm60+, NCCL_PAT_ENABLE.
//  * CollNet: NCCL_COLLNET_ENABLE=1 and an in-network reduction plugin; none of the catalog's
//    fabrics declares one, so it is available only on InfiniBand when the variable is set (the
//    user asserts that SHARP is deployed).

#include <string>
#include <vector>

#include "hardware/catalog.hpp"
#include "sim/nccl/nccl_env.hpp"
#include "sim/nccl/nccl_types.hpp"
#include "sim/nccl/nccl_version.hpp"

namespace clustersim::sim::nccl {

// What the platform lets processes do with GPU peer-to-peer (scenario cluster.p2p).
enum class PlatformP2p { WRITE, READ, DISABLED };

struct Placement {
  int gpus_per_pod = 0;   // GPUs (ranks) per Kubernetes pod; 0: all of a node's ranks share one
  bool host_ipc = true;   // pods share the host's IPC namespace and /dev/shm
  PlatformP2p p2p = PlatformP2p::WRITE;
  bool fabric_manager = true;  // NVSwitch fabric manager running
  int ranks_per_process = 1;   // GPUs driven by one process (nccl-tests -g): P2P/direct pointer
};

struct CommShape {
  int nodes = 1;
  int gpus_per_node = 8;
  int nranks() const { return nodes * gpus_per_node; }
};

enum class CpuVendor { INTEL, AMD, OTHER };

// How data crosses one hop between two ranks.
struct HopTransport {
  TransportKind kind = TransportKind::P2P;
  P2pVariant p2p_variant = P2pVariant::CUMEM;
  bool read = false;        // P2P read (receiver pulls)
  bool gdr = false;         // NET with GPUDirect RDMA
  bool pxn = false;         // NET through an NVLink peer's NIC
  bool over_nvlink = false; // P2P over NVLink (else PCIe)
  PathType path = PathType::NVL;
  std::string net_name;     // "IB", "Libfabric", "Socket"
  // As NCCL logs it: "P2P/CUMEM/read", "SHM/direct/direct", "NET/IB/0/GDRDMA".
  std::string describe() const;
};

struct NicDevice {
  int pcie_switch = 0;          // -1: the host's own interface (sockets), behind the CPU
  std::vector<int> local_gpus;  // local GPU indices on the same PCIe switch (comm GPUs only)
  int physical_nics = 1;        // EFA devices fused into this one (aws-ofi-nccl multi-rail)
  Bandwidth bandwidth;          // per direction, catalog (line rate of all fused NICs)
  double nccl_bw = 0;           // GB/s as NCCL reads the speed
  // The host's socket path: every NCCL host of the node has one of its own (its ranks' proxy
  // threads), so the node has as many as it has NCCL hosts.
  bool per_host = false;
};

class NcclSystem {
 public:
  // Builds NCCL's view; InputError when the shape does not fit the node (more GPUs than it has,
  // several nodes without a network).
  static NcclSystem build(const hardware::NodeSpec& node, CommShape shape, const Placement& placement,
                          const NcclEnv& env, const NcclVersion& version);

  const hardware::NodeSpec& node() const { return node_; }
  const CommShape& shape() const { return shape_; }
  const Placement& placement() const { return placement_; }
  int gpus() const { return shape_.gpus_per_node; }
  int nodes() const { return shape_.nodes; }
  int nranks() const { return shape_.nranks(); }
  int cc() const { return cc_; }  // compute capability, major*10 + minor
  GpuArch arch() const { return arch_from_compute_capability(cc_); }
  CpuVendor cpu_vendor() const { return cpu_vendor_; }

  bool nvswitch() const { return nvswitch_; }
  bool nvlink_usable() const { return nvlink_usable_; }
  // NCCL's assumed NVLink bandwidth per GPU (links x per-link figure), GB/s; 0 without NVLink.
  double nccl_nvlink_bw() const { return nccl_nvlink_bw_; }
  // NCCL's PCIe figure of a GPU's link (width x speed / 80), GB/s.
  double nccl_pci_bw() const { return nccl_pci_bw_; }
  // Datasheet per-direction rates (catalog).
  Bandwidth nvlink_bandwidth() const { return nvlink_bw_; }
  Bandwidth pcie_bandwidth() const { return pcie_bw_; }
  // Path type between two local GPUs of the communicator, as NCCL classifies it.
  PathType gpu_path(int a, int b) const;
  PathType min_intra_path() const { return min_intra_path_; }
  // The most GPUs of the communicator on one CPU socket of a node (NUMA node of their PCIe switch).
  int gpus_per_socket() const;
  // The CPU socket (NUMA node of its PCIe switch) of local GPU g.
  int socket_of(int g) const;
  PathType max_intra_path() const { return max_intra_path_; }

  const std::vector<NicDevice>& nics() const { return nics_; }
  // The network is NCCL's socket transport over the host's own interface (NicDevice::per_host).
  bool host_sockets() const { return !nics_.empty() && nics_.front().per_host; }
  // Best path type from local GPU g to any NIC (PIX/PXB when one sits on its switch).
  PathType gpu_nic_path(int g) const;
  bool net_gdr() const { return net_gdr_; }
  const std::string& net_name() const { return net_name_; }
  bool net_forces_simple() const { return net_forces_simple_; }
  // The latency the network plugin reports to NCCL (us): graphs that cross the network carry it
  // (search.cc ncclTopoSearchRecNet: graph->latencyInter = net latency) and the tuner adds it.
  double net_reported_latency_us() const { return net_reported_latency_us_; }

  bool nvls_supported() const { return nvls_supported_; }
  bool collnet_supported() const { return collnet_supported_; }
  bool pat_supported() const { return pat_supported_; }

  // Transport between global ranks a -> b (a != b).
  HopTransport transport(int a, int b) const;
  // True when the two ranks are one host to NCCL (host hash and /dev/shm), whatever the node.
  bool same_host(int a, int b) const;
  // Ranks per host as NCCL counts them: NCCL's nNodes is nranks / ranks_per_host when pods split
  // a node into several hosts.
  int ranks_per_host() const { return ranks_per_host_; }
  int nccl_nodes() const { return nranks() / ranks_per_host_; }

  // Decisions worth stating in the output ("NVLS: not supported on sm80").
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  hardware::NodeSpec node_;
  CommShape shape_;
  Placement placement_;
  NcclEnv env_;
  int cc_ = 90;
  CpuVendor cpu_vendor_ = CpuVendor::INTEL;
  bool nvswitch_ = false;
  bool nvlink_usable_ = false;
  double nccl_nvlink_bw_ = 0;
  double nccl_pci_bw_ = 0;
  Bandwidth nvlink_bw_;
  Bandwidth pcie_bw_;
  std::vector<int> gpu_switch_;  // PCIe switch of each local comm GPU
  std::vector<int> switch_numa_;
  PathType min_intra_path_ = PathType::NVL;
  PathType max_intra_path_ = PathType::NVL;
  std::vector<NicDevice> nics_;
  bool net_gdr_ = false;
  std::string net_name_;
  bool net_forces_simple_ = false;
  double net_reported_latency_us_ = 0;
  bool nvls_supported_ = false;
  bool collnet_supported_ = false;
  bool pat_supported_ = false;
  int ranks_per_host_ = 1;
  std::vector<std::string> notes_;
};

std::string_view to_string(PlatformP2p p);

}  // namespace clustersim::sim::nccl
