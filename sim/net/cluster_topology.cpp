#include "sim/net/cluster_topology.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "hardware/errors.hpp"
#include "sim/net/router.hpp"

namespace clustersim::sim {

namespace {

struct NodePlan {
  NodeLayout layout;
  Bandwidth nvlink;       // GPU <-> NVSwitch, per direction
  Bandwidth mesh_pair;    // GPU <-> GPU in a direct mesh
  Bandwidth pcie;         // GPU or NIC <-> PCIe switch
  Bandwidth uplink;       // PCIe switch <-> socket
  Bandwidth memory;       // socket <-> memory
  Bandwidth socket_link;  // socket <-> socket
  Duration nvlink_latency;
  Duration pcie_latency;
  Duration host_latency;
};

int socket_of_numa(int numa, int sockets, int numa_nodes) {
  if (numa_nodes <= 0) numa_nodes = sockets;
  return std::clamp(numa * sockets / numa_nodes, 0, sockets - 1);
}

NodePlan plan_node(const ClusterConfig& config, const ResolvedNetwork& net, hardware::ParameterSet& params) {
  const hardware::NodeSpec& spec = config.node;
  const hardware::HostSpec& host = spec.host();
  NodePlan p;
  NodeLayout& n = p.layout;
  n.gpus = spec.gpus();
  n.gpu_fabric = spec.system->interconnect.kind;
  n.has_nvswitch = n.gpu_fabric == hardware::GpuFabric::NVSWITCH && n.gpus > 1;
  n.nvswitch_chips = spec.system->interconnect.nvswitch_chips;
  n.nvlink_links_per_chip = spec.system->interconnect.links_per_chip;
  n.pcie_switches = static_cast<int>(net.pcie_switches.size());
  n.sockets = std::max(1, host.sockets);
  n.nics = net.nics;
  n.vertex_count = n.nic_vertex(n.nics);

  n.switch_socket.resize(static_cast<std::size_t>(n.pcie_switches));
  n.gpu_switch.assign(static_cast<std::size_t>(n.gpus), -1);
  n.nic_switch.assign(static_cast<std::size_t>(n.nics), -1);
  for (int s = 0; s < n.pcie_switches; ++s) {
    const auto& sw = net.pcie_switches[static_cast<std::size_t>(s)];
    n.switch_socket[static_cast<std::size_t>(s)] = socket_of_numa(sw.numa_node, n.sockets, host.numa_nodes);
    for (int g : sw.gpus) {
      if (g >= 0 && g < n.gpus && n.gpu_switch[static_cast<std::size_t>(g)] < 0) n.gpu_switch[static_cast<std::size_t>(g)] = s;
    }
    for (int i : sw.nics) {
      if (i >= 0 && i < n.nics && n.nic_switch[static_cast<std::size_t>(i)] < 0) n.nic_switch[static_cast<std::size_t>(i)] = s;
    }
  }
  n.gpu_socket.resize(static_cast<std::size_t>(n.gpus));
  for (int g = 0; g < n.gpus; ++g) {
    const int s = n.gpu_switch[static_cast<std::size_t>(g)];
    n.gpu_socket[static_cast<std::size_t>(g)] = s >= 0 ? n.switch_socket[static_cast<std::size_t>(s)] : g * n.sockets / n.gpus;
  }
  n.nic_socket.resize(static_cast<std::size_t>(n.nics));
  for (int i = 0; i < n.nics; ++i) {
    const int s = n.nic_switch[static_cast<std::size_t>(i)];
    n.nic_socket[static_cast<std::size_t>(i)] = s >= 0 ? n.switch_socket[static_cast<std::size_t>(s)] : i * n.sockets / n.nics;
  }

  const hardware::NvlinkSpec& nv = spec.gpu->nvlink;
  p.nvlink = nv.per_direction();
  p.mesh_pair = nv.link_bandwidth.value * std::max(1, n.gpus > 1 ? nv.links / (n.gpus - 1) : 1);
  p.pcie = spec.gpu->pcie.bandwidth.value;
  p.uplink = spec.pcie_switch_uplink().value;
  p.memory = host.memory_bandwidth_per_socket.value;
  p.socket_link = host.inter_socket_bandwidth.value;
  p.nvlink_latency = params.duration(NVLINK_HOP_LATENCY, Duration::zero(),
                                     "not in the catalog; small-message latency is carried by the NCCL model");
  p.pcie_latency = params.duration(PCIE_HOP_LATENCY, Duration::zero(),
                                   "not in the catalog; small-message latency is carried by the NCCL model");
  p.host_latency = params.duration(HOST_HOP_LATENCY, Duration::zero(),
                                   "not in the catalog; small-message latency is carried by the NCCL model");
  return p;
}

// Adds one node's vertices and links, always in the same order (cluster_layout.hpp relies on it).
void add_node(TopologyBuilder& b, int node, const NodePlan& p) {
  const NodeLayout& n = p.layout;
  const VertexId base = static_cast<VertexId>(b.vertex_count());
  for (int g = 0; g < n.gpus; ++g) b.add_vertex(VertexKind::GPU, node, g);
  if (n.has_nvswitch) b.add_vertex(VertexKind::NVSWITCH, node, 0);
  for (int s = 0; s < n.pcie_switches; ++s) b.add_vertex(VertexKind::PCIE_SWITCH, node, s);
  for (int s = 0; s < n.sockets; ++s) b.add_vertex(VertexKind::CPU_SOCKET, node, s);
  for (int s = 0; s < n.sockets; ++s) b.add_vertex(VertexKind::HOST_MEMORY, node, s);
  for (int i = 0; i < n.nics; ++i) b.add_vertex(VertexKind::NIC, node, i);
  auto v = [&](int local) { return base + static_cast<VertexId>(local); };

  if (n.has_nvswitch) {
    for (int g = 0; g < n.gpus; ++g) {
      b.add_duplex(v(n.gpu_vertex(g)), v(n.nvswitch_vertex()), LinkKind::NVLINK, p.nvlink, p.nvlink_latency);
    }
  } else if (n.gpu_fabric == hardware::GpuFabric::NVLINK_MESH) {
    for (int a = 0; a < n.gpus; ++a) {
      for (int c = a + 1; c < n.gpus; ++c) {
        b.add_duplex(v(n.gpu_vertex(a)), v(n.gpu_vertex(c)), LinkKind::NVLINK, p.mesh_pair, p.nvlink_latency);
      }
    }
  }
  for (int g = 0; g < n.gpus; ++g) {
    const int s = n.gpu_switch[static_cast<std::size_t>(g)];
    const int up = s >= 0 ? n.pcie_switch_vertex(s) : n.socket_vertex(n.gpu_socket[static_cast<std::size_t>(g)]);
    b.add_duplex(v(n.gpu_vertex(g)), v(up), LinkKind::PCIE, p.pcie, p.pcie_latency);
  }
  for (int i = 0; i < n.nics; ++i) {
    const int s = n.nic_switch[static_cast<std::size_t>(i)];
    const int up = s >= 0 ? n.pcie_switch_vertex(s) : n.socket_vertex(n.nic_socket[static_cast<std::size_t>(i)]);
    b.add_duplex(v(n.nic_vertex(i)), v(up), LinkKind::PCIE, p.pcie, p.pcie_latency);
  }
  for (int s = 0; s < n.pcie_switches; ++s) {
    b.add_duplex(v(n.pcie_switch_vertex(s)), v(n.socket_vertex(n.switch_socket[static_cast<std::size_t>(s)])),
                 LinkKind::PCIE_UPLINK, p.uplink, p.pcie_latency);
  }
  for (int s = 0; s < n.sockets; ++s) {
    b.add_duplex(v(n.socket_vertex(s)), v(n.memory_vertex(s)), LinkKind::MEMORY, p.memory, p.host_latency);
  }
  for (int s = 0; s < n.sockets; ++s) {
    for (int t = s + 1; t < n.sockets; ++t) {
      b.add_duplex(v(n.socket_vertex(s)), v(n.socket_vertex(t)), LinkKind::INTER_SOCKET, p.socket_link,
                   p.host_latency);
    }
  }
}

// Near NICs and the intra-node route table, from one node built alone.
void fill_routes(NodeLayout& n, const NodePlan& plan) {
  TopologyBuilder b;
  add_node(b, 0, plan);
  n.link_count = static_cast<int>(b.link_count());
  const Topology one = std::move(b).build();

  const auto nv = static_cast<std::size_t>(n.vertex_count);
  n.route_offsets.assign(nv * nv + 1, 0);
  n.route_links.clear();
  std::vector<LinkId> reversed;
  for (std::size_t a = 0; a < nv; ++a) {
    const std::vector<LinkId> entry = shortest_path_tree(one, static_cast<VertexId>(a));
    for (std::size_t c = 0; c < nv; ++c) {
      reversed.clear();
      if (a != c && entry[c] != NO_LINK) {
        for (VertexId x = static_cast<VertexId>(c); x != a; x = one.link(entry[x]).from) reversed.push_back(entry[x]);
      }
      n.route_links.insert(n.route_links.end(), reversed.rbegin(), reversed.rend());
      n.route_offsets[a * nv + c + 1] = static_cast<std::uint32_t>(n.route_links.size());
    }
  }

  auto nics_where = [&](auto pred) {
    std::vector<int> out;
    for (int i = 0; i < n.nics; ++i) {
      if (pred(i)) out.push_back(i);
    }
    return out;
  };
  auto near_switch_or_socket = [&](int sw, int socket) {
    std::vector<int> out;
    if (sw >= 0) out = nics_where([&](int i) { return n.nic_switch[static_cast<std::size_t>(i)] == sw; });
    if (out.empty()) out = nics_where([&](int i) { return n.nic_socket[static_cast<std::size_t>(i)] == socket; });
    if (out.empty()) out = nics_where([](int) { return true; });
    return out;
  };
  n.near_nics.assign(nv, {});
  for (int g = 0; g < n.gpus; ++g) {
    n.near_nics[static_cast<std::size_t>(n.gpu_vertex(g))] =
        near_switch_or_socket(n.gpu_switch[static_cast<std::size_t>(g)], n.gpu_socket[static_cast<std::size_t>(g)]);
  }
  if (n.has_nvswitch) n.near_nics[static_cast<std::size_t>(n.nvswitch_vertex())] = nics_where([](int) { return true; });
  for (int s = 0; s < n.pcie_switches; ++s) {
    n.near_nics[static_cast<std::size_t>(n.pcie_switch_vertex(s))] =
        near_switch_or_socket(s, n.switch_socket[static_cast<std::size_t>(s)]);
  }
  for (int s = 0; s < n.sockets; ++s) {
    n.near_nics[static_cast<std::size_t>(n.socket_vertex(s))] = near_switch_or_socket(-1, s);
    n.near_nics[static_cast<std::size_t>(n.memory_vertex(s))] = near_switch_or_socket(-1, s);
  }
  for (int i = 0; i < n.nics; ++i) n.near_nics[static_cast<std::size_t>(n.nic_vertex(i))] = {i};
}

}  // namespace

Topology build_topology(const hardware::Catalog& catalog, const ClusterConfig& config, hardware::ParameterSet* params) {
  const ResolvedNetwork net = resolve_network(catalog, config);
  hardware::ParameterSet defaults;
  NodePlan plan = plan_node(config, net, params != nullptr ? *params : defaults);
  fill_routes(plan.layout, plan);

  ClusterLayout layout;
  layout.node_name = config.node.name;
  layout.nodes = config.nodes;
  layout.gpus_in_use = gpus_in_use(config);
  layout.node = plan.layout;

  TopologyBuilder b;
  for (int node = 0; node < config.nodes; ++node) add_node(b, node, plan);

  NetworkLayout& nl = layout.network;
  if (net.fabric != nullptr && net.nics > 0) {
    using hardware::NetworkTopologyKind;
    nl.present = true;
    nl.fabric = net.fabric->name;
    nl.kind = net.topology.kind;
    nl.nodes_per_leaf = nl.kind == NetworkTopologyKind::SINGLE_SWITCH ? config.nodes
                                                                      : std::min(net.topology.nodes_per_leaf, config.nodes);
    nl.oversubscription = net.topology.oversubscription;
    nl.gpudirect_rdma = net.gpudirect_rdma;
    nl.nic_bandwidth = net.nic_bandwidth.bytes_per_second();
    const int groups = (config.nodes + nl.nodes_per_leaf - 1) / nl.nodes_per_leaf;
    nl.leaves = nl.kind == NetworkTopologyKind::SINGLE_SWITCH  ? 1
              : nl.kind == NetworkTopologyKind::RAIL_OPTIMIZED ? groups * net.nics
                                                               : groups;
    nl.spines = nl.leaves > 1 ? net.spines : 0;
    const double leaf_ports = nl.kind == NetworkTopologyKind::RAIL_OPTIMIZED
                                  ? static_cast<double>(nl.nodes_per_leaf)
                                  : static_cast<double>(nl.nodes_per_leaf) * net.nics;
    nl.leaf_spine_bandwidth =
        nl.spines > 0 ? leaf_ports * nl.nic_bandwidth / nl.oversubscription / nl.spines : 0.0;

    nl.first_switch = static_cast<VertexId>(b.vertex_count());
    for (int l = 0; l < nl.leaves; ++l) b.add_vertex(VertexKind::LEAF_SWITCH, -1, l);
    for (int s = 0; s < nl.spines; ++s) b.add_vertex(VertexKind::SPINE_SWITCH, -1, s);

    const Duration half_nic = net.fabric->nic_latency.value / 2;
    const Duration hop = net.fabric->switch_latency.value;
    nl.first_nic_link = static_cast<LinkId>(b.link_count());
    for (int node = 0; node < config.nodes; ++node) {
      for (int i = 0; i < net.nics; ++i) {
        const VertexId nic = layout.vertex(node, layout.node.nic_vertex(i));
        const VertexId leaf = nl.first_switch + static_cast<VertexId>(layout.leaf_of(node, i));
        b.add_duplex(nic, leaf, LinkKind::NIC_PORT, net.nic_bandwidth, half_nic);
      }
    }
    nl.first_spine_link = static_cast<LinkId>(b.link_count());
    for (int l = 0; l < nl.leaves; ++l) {
      for (int s = 0; s < nl.spines; ++s) {
        b.add_duplex(nl.first_switch + static_cast<VertexId>(l), nl.first_switch + static_cast<VertexId>(nl.leaves + s),
                     LinkKind::FABRIC, Bandwidth::bytes_per_second(nl.leaf_spine_bandwidth), hop);
      }
    }
  }
  b.set_cluster(std::move(layout));
  return std::move(b).build();
}

}  // namespace clustersim::sim
