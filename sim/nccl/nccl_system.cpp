#include "sim/nccl/nccl_system.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "hardware/errors.hpp"

namespace clustersim::sim::nccl {

std::string_view to_string(PlatformP2p p) {
  switch (p) {
    case PlatformP2p::WRITE: return "write";
    case PlatformP2p::READ: return "read";
    case PlatformP2p::DISABLED: return "disabled";
  }
  return "?";
}

std::string HopTransport::describe() const {
  switch (kind) {
    case TransportKind::P2P: {
      std::string s = "P2P/";
      s += p2p_variant == P2pVariant::DIRECT ? "direct pointer" : p2p_variant == P2pVariant::CUMEM ? "CUMEM" : "IPC";
      if (read) s += "/read";
      return s;
    }
    case TransportKind::SHM: return "SHM/direct/direct";
    case TransportKind::NET: {
      std::string s = "NET/" + net_name + "/0";
      if (gdr) s += "/GDRDMA";
      if (pxn) s += "(PXN)";
      return s;
    }
  }
  return "?";
}

namespace {

int parse_cc(const std::string& text) {
  int major = 0, minor = 0;
  if (std::sscanf(text.c_str(), "%d.%d", &major, &minor) < 1) return 90;
  return major * 10 + minor;
}

CpuVendor vendor_of(const std::string& cpu) {
  if (cpu.find("AMD") != std::string::npos || cpu.find("EPYC") != std::string::npos) return CpuVendor::AMD;
  if (cpu.find("Intel") != std::string::npos || cpu.find("Xeon") != std::string::npos) return CpuVendor::INTEL;
  return CpuVendor::OTHER;
}

// NCCL's PCIe figure: x16 Gen3 = PCI_BW (12 GB/s), doubling per generation (topo.h; Gen4 x16 = 24,
// Gen5 x16 = 48 as NCCL computes width x speed / 80).
double nccl_pci(const NcclVersion& v, int generation, int lanes) {
  const double gen3 = v.topology.pci_gen3_x16.gigabytes_per_second();
  return gen3 * std::pow(2.0, std::max(0, generation - 3)) * lanes / 16.0;
}

}  // namespace

NcclSystem NcclSystem::build(const hardware::NodeSpec& node, CommShape shape, const Placement& placement,
                             const NcclEnv& env, const NcclVersion& version) {
  NcclSystem s;
  s.node_ = node;
  s.shape_ = shape;
  s.placement_ = placement;
  s.env_ = env;
  const int G = shape.gpus_per_node;
  if (shape.nodes < 1) throw InputError("", "--nodes", "expected at least 1 node, got " + std::to_string(shape.nodes));
  if (G < 1 || G > node.gpus()) {
    throw InputError("", "--gpus", "expected 1 to " + std::to_string(node.gpus()) + " GPUs per node (" + node.name +
                                       " has " + std::to_string(node.gpus()) + "), got " + std::to_string(G));
  }
  if (shape.nodes > 1 && node.fabric == nullptr) {
    throw InputError("", "--nodes", "'" + node.name + "' is a bare system without a network; several nodes need an "
                                    "instance or cluster node with one (e.g. p5.48xlarge, dgx-h100)");
  }
  if (placement.gpus_per_pod < 0 || (placement.gpus_per_pod > 0 && G % placement.gpus_per_pod != 0)) {
    throw InputError("", "/cluster/placement/gpus_per_pod",
                     "expected a divisor of the GPUs per node (" + std::to_string(G) + "), got " +
                         std::to_string(placement.gpus_per_pod));
  }
  s.cc_ = parse_cc(node.gpu->compute_capability);
  s.cpu_vendor_ = vendor_of(node.host().cpu);

  // Hosts as NCCL sees them: pods are hosts of their own unless NCCL_HOSTID joins them.
  const int pod = placement.gpus_per_pod == 0 ? G : placement.gpus_per_pod;
  s.ranks_per_host_ = (pod < G && !env.host_id) ? pod : G;
  if (s.ranks_per_host_ < G) {
    s.notes_.push_back("pods of " + std::to_string(pod) + " GPU(s) have their own hostnames: NCCL sees " +
                       std::to_string(shape.nodes * G / s.ranks_per_host_) + " hosts of " +
                       std::to_string(s.ranks_per_host_) + " rank(s) and reaches the others through the NIC");
  }

  // NVLink: usable only through a running fabric manager when the board has NVSwitches.
  const auto& ic = node.system->interconnect;
  s.nvswitch_ = ic.kind == hardware::GpuFabric::NVSWITCH;
  const bool has_nvlink = ic.kind != hardware::GpuFabric::PCIE_ONLY && node.gpu->nvlink.links > 0;
  s.nvlink_usable_ = has_nvlink && (!ic.fabric_manager_required || placement.fabric_manager);
  if (has_nvlink && !s.nvlink_usable_) {
    s.notes_.push_back("NVSwitch fabric manager not running: no NVLink between GPUs; P2P only over PCIe");
  }
  if (s.nvlink_usable_) {
    s.nccl_nvlink_bw_ = version.topology.nvlink_per_link(s.cc_).gigabytes_per_second() * node.gpu->nvlink.links;
    s.nvlink_bw_ = node.gpu->nvlink.per_direction();
  }
  s.pcie_bw_ = node.gpu->pcie.bandwidth.value;
  s.nccl_pci_bw_ = nccl_pci(version, node.gpu->pcie.generation, node.gpu->pcie.lanes);

  // PCIe switches of the communicator's GPUs (local GPUs 0..G-1).
  const auto& switches = node.pcie_switches;
  s.gpu_switch_.assign(G, 0);
  for (std::size_t sw = 0; sw < switches.size(); ++sw) {
    s.switch_numa_.push_back(switches[sw].numa_node);
    for (int g : switches[sw].gpus) {
      if (g < G) s.gpu_switch_[g] = static_cast<int>(sw);
    }
  }
  if (s.switch_numa_.empty()) s.switch_numa_.push_back(0);
  s.min_intra_path_ = PathType::DIS;
  s.max_intra_path_ = PathType::LOC;
  for (int a = 0; a < G; ++a) {
    for (int b = 0; b < G; ++b) {
      if (a == b) continue;
      const PathType t = s.gpu_path(a, b);
      s.min_intra_path_ = std::min(s.min_intra_path_, t);
      s.max_intra_path_ = std::max(s.max_intra_path_, t);
    }
  }
  if (G == 1) s.min_intra_path_ = s.max_intra_path_ = PathType::LOC;

  // NIC devices as NCCL sees them.
  if (node.fabric != nullptr && node.instance != nullptr) {
    const auto& net = node.instance->network;
    // NCCL_NET_PLUGIN=none: no aws-ofi-nccl, and NCCL has no EFA transport of its own (nccl_env.hpp).
    const bool ofi = node.fabric->nccl_net == "ofi" && !env.net_plugin_none;
    s.net_name_ = node.fabric->nccl_net == "ib" ? (env.ib_disable ? "Socket" : "IB") : ofi ? "Libfabric" : "Socket";
    if (env.net_plugin_none && node.fabric->nccl_net == "ofi") {
      s.notes_.push_back("NCCL_NET_PLUGIN=none: aws-ofi-nccl not loaded, NCCL uses its socket transport");
    }
    s.net_forces_simple_ = node.fabric->forces_simple_protocol;
    if (node.fabric->nccl_net_reported_latency && s.net_name_ != "Socket") {
      s.net_reported_latency_us_ = node.fabric->nccl_net_reported_latency->value.microseconds();
    }
    for (std::size_t sw = 0; sw < switches.size(); ++sw) {
      const auto& nics = switches[sw].nics;
      if (nics.empty()) continue;
      std::vector<int> local;
      for (int g : switches[sw].gpus) {
        if (g < G) local.push_back(g);
      }
      const int groups = ofi ? 1 : static_cast<int>(nics.size());
      const int per_group = ofi ? static_cast<int>(nics.size()) : 1;
      for (int k = 0; k < groups; ++k) {
        NicDevice d;
        d.pcie_switch = static_cast<int>(sw);
        d.local_gpus = local;
        d.physical_nics = per_group;
        d.bandwidth = net.nic_bandwidth.value * per_group;
        d.nccl_bw = d.bandwidth.gigabytes_per_second();
        s.nics_.push_back(d);
      }
    }
    if (ofi && !s.nics_.empty() && s.nics_.front().physical_nics > 1) {
      s.notes_.push_back("aws-ofi-nccl groups the " + std::to_string(net.nics) + " EFA devices into " +
                         std::to_string(s.nics_.size()) + " multi-rail devices of " +
                         format_bandwidth_bits(s.nics_.front().bandwidth));
    }
    if (env.ib_disable && node.fabric->nccl_net == "ib") {
      s.notes_.push_back("NCCL_IB_DISABLE=1: InfiniBand verbs off, NCCL uses the socket transport");
    }
    // GPUDirect RDMA: NIC and GPU support it and GPU 0's NIC path is within the GDR level.
    const PathType gdr_level = env.net_gdr_level.value_or(PathType::PXB);
    const bool nic_gdr = node.fabric->supports_gpudirect_rdma && net.gpudirect_rdma && s.net_name_ != "Socket";
    PathType d = s.gpu_nic_path(0);
    if (d == PathType::PXN) d = PathType::PIX;  // PXN uses the intermediate GPU's distance
    // FI_EFA_USE_DEVICE_RDMA=0: libfabric's EFA provider does not register GPU memory with the device.
    const bool efa_rdma_off = ofi && env.efa_device_rdma == false;
    s.net_gdr_ = nic_gdr && d <= gdr_level && !efa_rdma_off;
    if (nic_gdr && efa_rdma_off) {
      s.notes_.push_back(std::string("FI_EFA_USE_DEVICE_RDMA=0: GPUDirect RDMA off, sends staged through host memory") +
                         (env.gdr_required_check_disabled
                              ? ""
                              : "; aws-ofi-nccl refuses this on instances it requires GPUDirect on (p4d, p4de, p5 "
                                "and later) unless OFI_NCCL_DISABLE_GDR_REQUIRED_CHECK=1, so this predicts that run"));
    } else if (nic_gdr && !s.net_gdr_) {
      s.notes_.push_back(std::string("GPUDirect RDMA off: GPU-NIC path ") + std::string(to_string(d)) +
                         " is farther than NCCL_NET_GDR_LEVEL " + std::string(to_string(gdr_level)));
    }
  }

  // GPUs of one host that reach each other through neither P2P nor SHM are nodes of their own to
  // NCCL (the topology trim; see the header).
  if (s.ranks_per_host_ > 1 && s.transport(0, 1).kind == TransportKind::NET) {
    s.ranks_per_host_ = 1;
    s.notes_.push_back("neither P2P nor SHM between the GPUs of a host: NCCL makes each GPU a node of its own and "
                       "connects them through the network");
  }
  // A bare system's GPUs in different hosts (pods, or the trim above) meet through NCCL's socket
  // transport over the host's interface.
  if (s.nics_.empty() && s.ranks_per_host_ < G) {
    s.net_name_ = "Socket";
    NicDevice d;
    d.pcie_switch = -1;
    d.per_host = true;
    d.bandwidth = version.topology.socket_default_speed;
    d.nccl_bw = d.bandwidth.gigabytes_per_second();
    s.nics_.push_back(d);
    s.notes_.push_back("no network in the catalog for " + node.name + ": NCCL's socket transport over the host's "
                       "interface, " + format_bandwidth_bits(d.bandwidth) + " as NCCL assumes where it cannot "
                       "read a speed");
  }

  // NVLS.
  const int nvls_enable = env.nvls_enable.value_or(2);
  const int nccl_nodes = shape.nodes * G / s.ranks_per_host_;
  if (nvls_enable == 0) {
    s.notes_.push_back("NCCL_NVLS_ENABLE=0: NVLS off");
  } else if (s.cc_ < 90) {
    s.notes_.push_back("NVLS: needs sm90 or newer (" + node.gpu->name + " is sm" + std::to_string(s.cc_) + ")");
  } else if (!s.nvswitch_ || !s.nvlink_usable_) {
    s.notes_.push_back("NVLS: needs an NVSwitch with its fabric manager");
  } else if (placement.p2p == PlatformP2p::DISABLED) {
    s.notes_.push_back("NVLS: needs P2P between the GPUs");
  } else if (s.ranks_per_host_ < version.topology.nvls_min_gpus) {
    s.notes_.push_back("NVLS: needs at least " + std::to_string(version.topology.nvls_min_gpus) +
                       " GPUs per host in NCCL " + version.name);
  } else if (nccl_nodes > 1 && !version.topology.nvls_multi_node) {
    s.notes_.push_back("NVLS: NCCL " + version.name + " disables NVLS on several nodes");
  } else {
    s.nvls_supported_ = true;
  }

  s.collnet_supported_ = env.collnet_enable && node.fabric != nullptr &&
                         node.fabric->kind == hardware::FabricKind::INFINIBAND && !env.ib_disable && nccl_nodes > 1;
  if (env.collnet_enable && !s.collnet_supported_) {
    s.notes_.push_back("CollNet: needs several hosts on InfiniBand with an in-network reduction plugin");
  }
  const int pat_enable = env.pat_enable.value_or(2);
  s.pat_supported_ = version.topology.pat && pat_enable != 0 && s.cc_ >= 60 &&
                     (pat_enable == 1 || s.ranks_per_host_ == 1);
  return s;
}

PathType NcclSystem::gpu_path(int a, int b) const {
  if (a == b) return PathType::LOC;
  if (nvlink_usable_) return PathType::NVL;
  const int sa = gpu_switch_.at(a), sb = gpu_switch_.at(b);
  if (sa == sb) return PathType::PIX;
  const int na = switch_numa_.at(static_cast<std::size_t>(sa) % switch_numa_.size());
  const int nb = switch_numa_.at(static_cast<std::size_t>(sb) % switch_numa_.size());
  return na == nb ? PathType::PHB : PathType::SYS;
}

int NcclSystem::socket_of(int g) const {
  return switch_numa_.at(static_cast<std::size_t>(gpu_switch_.at(g)) % switch_numa_.size());
}

int NcclSystem::gpus_per_socket() const {
  std::map<int, int> per_numa;
  int most = 0;
  for (int g = 0; g < gpus(); ++g) most = std::max(most, ++per_numa[socket_of(g)]);
  return std::max(1, most);
}

PathType NcclSystem::gpu_nic_path(int g) const {
  PathType best = PathType::DIS;
  const int sw = gpu_switch_.at(g);
  for (const auto& nic : nics_) {
    PathType t;
    if (nic.pcie_switch < 0) {
      t = PathType::PHB;  // the host's own interface, through the CPU
    } else if (nic.pcie_switch == sw) {
      t = PathType::PIX;
    } else if (nvlink_usable_ && !env_.pxn_disable && !nic.local_gpus.empty()) {
      t = PathType::PXN;
    } else {
      const int na = switch_numa_.at(static_cast<std::size_t>(sw) % switch_numa_.size());
      const int nb = switch_numa_.at(static_cast<std::size_t>(nic.pcie_switch) % switch_numa_.size());
      t = na == nb ? PathType::PHB : PathType::SYS;
    }
    best = std::min(best, t);
  }
  return best;
}

bool NcclSystem::same_host(int a, int b) const {
  const int G = gpus();
  if (a / G != b / G) return false;
  return (a % G) / ranks_per_host_ == (b % G) / ranks_per_host_;
}

HopTransport NcclSystem::transport(int a, int b) const {
  const int G = gpus();
  HopTransport t;
  t.net_name = net_name_;
  const bool host = same_host(a, b);
  const int pod = placement_.gpus_per_pod == 0 ? G : placement_.gpus_per_pod;
  const bool same_pod = a / G == b / G && (a % G) / pod == (b % G) / pod;
  const bool same_shm = host && (same_pod || placement_.host_ipc);
  if (host && same_shm) {
    const int la = a % G, lb = b % G;
    const PathType path = gpu_path(la, lb);
    t.path = path;
    const PathType level = env_.p2p_level.value_or(PathType::PXB);
    const bool p2p = path <= level && placement_.p2p != PlatformP2p::DISABLED;
    // ncclTopoCheckNet: prefer the NIC when both GPUs reach a NIC (PXB or closer) faster than
    // each other. Only relevant without NVLink.
    bool net_faster = false;
    if (!nvlink_usable_ && !nics_.empty()) {
      const double p2p_bw = nccl_pci_bw_;
      double n1 = 0, n2 = 0;
      for (const auto& nic : nics_) {
        const bool near_a = nic.pcie_switch == gpu_switch_.at(la);
        const bool near_b = nic.pcie_switch == gpu_switch_.at(lb);
        if (near_a) n1 = std::max(n1, std::min(nic.nccl_bw, nccl_pci_bw_));
        if (near_b) n2 = std::max(n2, std::min(nic.nccl_bw, nccl_pci_bw_));
      }
      net_faster = n1 > p2p_bw && n2 > p2p_bw;
    }
    if (p2p && !net_faster) {
      t.kind = TransportKind::P2P;
      t.over_nvlink = path == PathType::NVL;
      t.read = t.over_nvlink && cc_ == 80;  // p2p.cc: read by default on sm80 NVLink
      if (env_.p2p_read) t.read = *env_.p2p_read;
      if (placement_.p2p == PlatformP2p::READ) t.read = true;
      const int rpp = std::max(1, placement_.ranks_per_process);
      const bool same_process = same_pod && (a / rpp) == (b / rpp);
      t.p2p_variant = same_process ? P2pVariant::DIRECT
                                   : (env_.cumem_enable.value_or(true) ? P2pVariant::CUMEM : P2pVariant::IPC);
      return t;
    }
    if (!env_.shm_disable && !net_faster) {
      t.kind = TransportKind::SHM;
      return t;
    }
  }
  t.kind = TransportKind::NET;
  t.path = PathType::NET;
  t.gdr = net_gdr_;
  t.pxn = gpu_nic_path(a % G) == PathType::PXN;
  return t;
}

}  // namespace clustersim::sim::nccl
