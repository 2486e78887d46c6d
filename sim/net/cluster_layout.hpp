#pragma once
// Where things sit in a topology built from a cluster description, so that ids and routes are
// arithmetic rather than searches.
//
// Numbering. Every node has the same local layout (NodeLayout): local vertices
//   [GPUs][NVSwitch, if the board has one][PCIe switches][CPU sockets][host memories][NICs]
// and local links in a fixed order; node n's vertex v is n * node.vertex_count + v and its local
// link k is n * node.link_count + k. The network's switches and links follow all nodes:
// NIC i of node n reaches its switch by link first_nic_link + 2 * (n * nics + i) and is reached by
// the next id; leaf l reaches spine s by first_spine_link + 2 * (l * spines + s), the spine answers
// on the next id.
//
// Intra-node routes are computed once for one node (every pair of local vertices, by Dijkstra on
// the node's graph; see router.hpp) and shifted by the node's link offset, so a route costs a
// table read whatever the cluster size, and the table's size does not grow with the node count.

#include <cstdint>
#include <string>
#include <vector>

#include "hardware/catalog.hpp"
#include "sim/net/net_ids.hpp"

namespace clustersim::sim {

struct NodeLayout {
  int gpus = 0;
  bool has_nvswitch = false;
  int pcie_switches = 0;
  int sockets = 0;
  int nics = 0;
  int vertex_count = 0;
  int link_count = 0;

  int gpu_vertex(int i) const { return i; }
  int nvswitch_vertex() const { return gpus; }
  int pcie_switch_vertex(int i) const { return gpus + (has_nvswitch ? 1 : 0) + i; }
  int socket_vertex(int i) const { return pcie_switch_vertex(pcie_switches) + i; }
  int memory_vertex(int i) const { return socket_vertex(sockets) + i; }
  int nic_vertex(int i) const { return memory_vertex(sockets) + i; }

  std::vector<int> gpu_switch;     // PCIe switch of each GPU; -1 when it hangs off a socket directly
  std::vector<int> nic_switch;     // PCIe switch of each NIC; -1 likewise
  std::vector<int> switch_socket;  // CPU socket of each PCIe switch
  std::vector<int> gpu_socket;
  std::vector<int> nic_socket;
  // NICs a route from or to each local vertex uses (its PCIe switch's NICs, else its socket's,
  // else all), in NIC order; a path hint picks among them.
  std::vector<std::vector<int>> near_nics;
  // Intra-node routes as local link ids: route(a, b) = route_links[route_offsets[a * V + b] ..
  // route_offsets[a * V + b + 1]); empty when a == b or b cannot be reached.
  std::vector<std::uint32_t> route_offsets;
  std::vector<std::uint32_t> route_links;

  // Figures of the board kept for reports: the NVSwitch planes behind the aggregated switch.
  hardware::GpuFabric gpu_fabric = hardware::GpuFabric::NVSWITCH;
  int nvswitch_chips = 0;
  std::vector<int> nvlink_links_per_chip;
};

struct NetworkLayout {
  bool present = false;
  std::string fabric;
  hardware::NetworkTopologyKind kind = hardware::NetworkTopologyKind::LEAF_SPINE;
  int nodes_per_leaf = 1;
  int leaves = 0;
  int spines = 0;  // 0 when one leaf (or the single switch) holds every NIC
  double oversubscription = 1.0;
  bool gpudirect_rdma = false;
  double nic_bandwidth = 0;         // bytes/s per NIC per direction
  double leaf_spine_bandwidth = 0;  // bytes/s per leaf-spine link per direction
  VertexId first_switch = NO_VERTEX;  // leaves, then spines
  LinkId first_nic_link = NO_LINK;
  LinkId first_spine_link = NO_LINK;
};

struct ClusterLayout {
  std::string node_name;  // catalog system or instance
  int nodes = 0;
  int gpus_in_use = 0;  // per node (the board may have more)
  NodeLayout node;
  NetworkLayout network;

  VertexId vertex(int node_index, int local) const {
    return static_cast<VertexId>(node_index) * static_cast<VertexId>(node.vertex_count) + static_cast<VertexId>(local);
  }
  LinkId link_base(int node_index) const {
    return static_cast<LinkId>(node_index) * static_cast<LinkId>(node.link_count);
  }
  int node_of(VertexId v) const { return static_cast<int>(v / static_cast<VertexId>(node.vertex_count)); }
  int local_of(VertexId v) const { return static_cast<int>(v % static_cast<VertexId>(node.vertex_count)); }
  bool is_node_vertex(VertexId v) const {
    return v < static_cast<VertexId>(nodes) * static_cast<VertexId>(node.vertex_count);
  }
  // The leaf switch (0-based) that NIC `nic` of node `n` plugs into.
  int leaf_of(int n, int nic) const {
    const int group = n / network.nodes_per_leaf;
    return network.kind == hardware::NetworkTopologyKind::RAIL_OPTIMIZED ? group * node.nics + nic
         : network.kind == hardware::NetworkTopologyKind::SINGLE_SWITCH  ? 0
                                                                         : group;
  }
  LinkId nic_uplink(int n, int nic) const {
    return network.first_nic_link + 2 * (static_cast<LinkId>(n) * static_cast<LinkId>(node.nics) + static_cast<LinkId>(nic));
  }
  LinkId nic_downlink(int n, int nic) const { return nic_uplink(n, nic) + 1; }
  LinkId leaf_to_spine(int leaf, int spine) const {
    return network.first_spine_link +
           2 * (static_cast<LinkId>(leaf) * static_cast<LinkId>(network.spines) + static_cast<LinkId>(spine));
  }
  LinkId spine_to_leaf(int spine, int leaf) const { return leaf_to_spine(leaf, spine) + 1; }
};

}  // namespace clustersim::sim
