#pragma once
// The cluster a topology is built from: one node design from the catalog (a system or an
// instance, hardware::NodeSpec via resolve_node) times a node count, with the node's network
// optionally overridden. models/ fills it from a scenario's ClusterSpec; NetworkOverrides mirrors
// models::NetworkOverride field for field (plus `spines`, which the scenario does not name yet).
//
// Resolution (resolve_network): each overridden field replaces the instance's figure; a bare
// system has no network until overrides give it a fabric, a NIC count and a NIC bandwidth. When
// the NIC count changes, the NICs are placed anew on the node's PCIe switches, spread evenly in
// switch order (NIC i on switch floor(i * switches / nics)), so that a p5 cut to 8 NICs keeps one
// NIC per GPU and a node with fewer NICs than switches spreads them over both sockets.
//
// Lifetime: NodeSpec points into the Catalog it was resolved from; the catalog must outlive the
// config and anything built from it.

#include <optional>
#include <string>
#include <vector>

#include "hardware/catalog.hpp"
#include "hardware/units.hpp"

namespace clustersim::sim {

struct NetworkOverrides {
  std::optional<std::string> fabric;  // a catalog fabric name
  std::optional<int> nics;            // NICs per node
  std::optional<Bandwidth> nic_bandwidth;  // per NIC, per direction
  std::optional<hardware::NetworkTopologyKind> topology;
  std::optional<int> nodes_per_leaf;
  std::optional<double> oversubscription;  // leaf downlink : uplink bandwidth, >= 1
  std::optional<bool> gpudirect_rdma;
  // Spine switches of a leaf/spine or rail-optimized fabric. Default 1: the spine layer is one
  // aggregate switch whose per-leaf links carry the leaf's whole uplink bandwidth, which is what
  // ideal ECMP spreading over many spines amounts to in a flow model. More spines split each
  // leaf's uplink into that many links and make the spine choice of a route visible.
  std::optional<int> spines;
};

struct ClusterConfig {
  hardware::NodeSpec node;
  int nodes = 1;
  int gpus_per_node = 0;  // GPUs in use per node; 0 means all of the board's
  NetworkOverrides network;
};

// The node network after overrides.
struct ResolvedNetwork {
  const hardware::FabricSpec* fabric = nullptr;  // null: the nodes have no network
  int nics = 0;
  Bandwidth nic_bandwidth;
  bool gpudirect_rdma = false;
  hardware::NetworkTopology topology;
  int spines = 1;
  std::vector<hardware::PcieSwitch> pcie_switches;  // the board's switches with the NICs placed
};

// Applies the overrides and checks the result; bad values are InputErrors located at
// "cluster.network.<key>" (or "cluster.nodes", "cluster.gpus_per_node").
ResolvedNetwork resolve_network(const hardware::Catalog& catalog, const ClusterConfig& config);

// GPUs in use per node (config.gpus_per_node, or the board's count when it is 0).
int gpus_in_use(const ClusterConfig& config);

}  // namespace clustersim::sim
