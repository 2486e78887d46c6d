#include "sim/net/cluster_config.hpp"

#include <cmath>

#include "hardware/errors.hpp"

namespace clustersim::sim {

namespace {

[[noreturn]] void fail(const std::string& key, const std::string& message) {
  throw InputError("", "cluster." + key, message);
}

}  // namespace

int gpus_in_use(const ClusterConfig& config) {
  return config.gpus_per_node == 0 ? config.node.gpus() : config.gpus_per_node;
}

ResolvedNetwork resolve_network(const hardware::Catalog& catalog, const ClusterConfig& config) {
  if (config.node.system == nullptr || config.node.gpu == nullptr) {
    throw std::logic_error("ClusterConfig.node was not resolved (use hardware::resolve_node)");
  }
  if (config.nodes < 1) fail("nodes", "expected at least 1 node, got " + std::to_string(config.nodes));
  const int board_gpus = config.node.gpus();
  if (config.gpus_per_node < 0 || config.gpus_per_node > board_gpus) {
    fail("gpus_per_node", "expected 1 to " + std::to_string(board_gpus) + " GPUs per node on " + config.node.name +
                              ", got " + std::to_string(config.gpus_per_node));
  }

  const NetworkOverrides& o = config.network;
  const hardware::InstanceSpec* inst = config.node.instance;
  ResolvedNetwork r;
  r.pcie_switches = config.node.pcie_switches;
  if (inst != nullptr) {
    r.fabric = config.node.fabric;
    r.nics = inst->network.nics;
    r.nic_bandwidth = inst->network.nic_bandwidth.value;
    r.gpudirect_rdma = inst->network.gpudirect_rdma;
    r.topology = inst->network.topology;
  }
  if (o.fabric) {
    try {
      r.fabric = &catalog.fabric(*o.fabric);
    } catch (const InputError& e) {
      throw e.located("", "cluster.network.fabric");
    }
    // A bare system given a fabric gets that fabric's GPUDirect RDMA unless told otherwise.
    if (inst == nullptr) r.gpudirect_rdma = r.fabric->supports_gpudirect_rdma;
  }
  if (o.nics) {
    if (*o.nics < 0) fail("network.nics", "expected a NIC count of at least 0, got " + std::to_string(*o.nics));
    r.nics = *o.nics;
  }
  if (o.nic_bandwidth) {
    if (!(o.nic_bandwidth->bytes_per_second() > 0) || !std::isfinite(o.nic_bandwidth->bytes_per_second())) {
      fail("network.nic_bandwidth", "expected a positive bandwidth, got " + format_bandwidth_bits(*o.nic_bandwidth));
    }
    r.nic_bandwidth = *o.nic_bandwidth;
  }
  if (o.topology) r.topology.kind = *o.topology;
  if (o.nodes_per_leaf) {
    if (*o.nodes_per_leaf < 1) {
      fail("network.nodes_per_leaf", "expected at least 1 node per leaf, got " + std::to_string(*o.nodes_per_leaf));
    }
    r.topology.nodes_per_leaf = *o.nodes_per_leaf;
  }
  if (o.oversubscription) {
    if (!(*o.oversubscription >= 1.0) || !std::isfinite(*o.oversubscription)) {
      fail("network.oversubscription",
           "expected a leaf downlink:uplink ratio of at least 1, got " + format_number(*o.oversubscription));
    }
    r.topology.oversubscription = *o.oversubscription;
  }
  if (o.gpudirect_rdma) r.gpudirect_rdma = *o.gpudirect_rdma;
  if (o.spines) {
    if (*o.spines < 1) fail("network.spines", "expected at least 1 spine, got " + std::to_string(*o.spines));
    r.spines = *o.spines;
  }

  if (r.fabric == nullptr || r.nics == 0) {
    if (r.fabric == nullptr && (o.nics.value_or(0) > 0 || o.nic_bandwidth)) {
      fail("network.fabric", config.node.name + " has no network of its own: name a fabric for its NICs");
    }
    r.fabric = nullptr;
    r.nics = 0;
    for (auto& s : r.pcie_switches) s.nics.clear();
    if (config.nodes > 1) {
      fail("nodes", config.node.name + " has no network, so the cluster can have only 1 node (got " +
                        std::to_string(config.nodes) +
                        "); use an instance or give cluster.network a fabric, NIC count and NIC bandwidth");
    }
    return r;
  }
  if (!(r.nic_bandwidth.bytes_per_second() > 0)) {
    fail("network.nic_bandwidth", config.node.name + " has NICs but no NIC bandwidth: give one");
  }
  if (r.gpudirect_rdma && !r.fabric->supports_gpudirect_rdma) {
    fail("network.gpudirect_rdma", "fabric '" + r.fabric->name + "' does not support GPUDirect RDMA");
  }

  // Place the NICs anew when their count differs from the layout's.
  std::size_t placed = 0;
  for (const auto& s : r.pcie_switches) placed += s.nics.size();
  if (placed != static_cast<std::size_t>(r.nics)) {
    if (r.pcie_switches.empty()) {
      fail("network.nics", config.node.name + " has no PCIe switch to place NICs on");
    }
    const auto switches = static_cast<long>(r.pcie_switches.size());
    for (auto& s : r.pcie_switches) s.nics.clear();
    for (int i = 0; i < r.nics; ++i) {
      const long sw = static_cast<long>(i) * switches / r.nics;
      r.pcie_switches[static_cast<std::size_t>(sw)].nics.push_back(i);
    }
  }
  return r;
}

}  // namespace clustersim::sim
