#include "sim/net/topology.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace clustersim::sim {

std::string_view to_string(VertexKind k) {
  switch (k) {
    case VertexKind::GPU: return "gpu";
    case VertexKind::NVSWITCH: return "nvswitch";
    case VertexKind::PCIE_SWITCH: return "pcie-switch";
    case VertexKind::CPU_SOCKET: return "socket";
    case VertexKind::HOST_MEMORY: return "memory";
    case VertexKind::NIC: return "nic";
    case VertexKind::LEAF_SWITCH: return "leaf";
    case VertexKind::SPINE_SWITCH: return "spine";
  }
  return "vertex";
}

std::string_view to_string(LinkKind k) {
  switch (k) {
    case LinkKind::NVLINK: return "nvlink";
    case LinkKind::PCIE: return "pcie";
    case LinkKind::PCIE_UPLINK: return "pcie-uplink";
    case LinkKind::MEMORY: return "memory";
    case LinkKind::INTER_SOCKET: return "inter-socket";
    case LinkKind::NIC_PORT: return "nic-port";
    case LinkKind::FABRIC: return "fabric";
  }
  return "link";
}

std::span<const LinkId> Topology::out_links(VertexId v) const {
  if (v >= vertices_.size()) throw std::out_of_range("vertex id " + std::to_string(v) + " out of range");
  return {out_links_.data() + out_offsets_[v], out_links_.data() + out_offsets_[v + 1]};
}

std::optional<LinkId> Topology::find_link(VertexId from, VertexId to) const {
  for (LinkId l : out_links(from)) {
    if (links_[l].to == to) return l;
  }
  return std::nullopt;
}

std::string Topology::describe_vertex(VertexId v) const {
  const Vertex& x = vertex(v);
  std::string s;
  if (x.node >= 0) {
    s.append("node ").append(std::to_string(x.node)).append(" ");
  }
  s.append(to_string(x.kind));
  if (x.kind != VertexKind::NVSWITCH) s.append(" ").append(std::to_string(x.index));
  return s;
}

std::string Topology::describe_link(LinkId l) const {
  const Link& k = link(l);
  return describe_vertex(k.from) + " -> " + describe_vertex(k.to) + " (" + std::string(to_string(k.kind)) + ", " +
         format_bandwidth(k.bandwidth) + ")";
}

void Topology::no_cluster() { throw std::logic_error("this topology was not built from a cluster description"); }

void Topology::out_of_range(const char* what, int node, int index) const {
  throw std::out_of_range(std::string(what) + " " + std::to_string(index) + " of node " + std::to_string(node) +
                          " is out of range (" + std::to_string(cluster_->nodes) + " nodes)");
}

namespace {

void check_range(int value, int count, const char* what) {
  if (value < 0 || value >= count) {
    throw std::out_of_range(std::string(what) + " " + std::to_string(value) + " out of range (0.." +
                            std::to_string(count - 1) + ")");
  }
}

}  // namespace

VertexId Topology::cpu_socket(int node, int socket) const {
  const ClusterLayout& c = cluster();
  check_range(node, c.nodes, "node");
  check_range(socket, c.node.sockets, "socket");
  return c.vertex(node, c.node.socket_vertex(socket));
}

VertexId Topology::host_memory(int node, int socket) const {
  const ClusterLayout& c = cluster();
  check_range(node, c.nodes, "node");
  check_range(socket, c.node.sockets, "socket");
  return c.vertex(node, c.node.memory_vertex(socket));
}

VertexId Topology::pcie_switch(int node, int index) const {
  const ClusterLayout& c = cluster();
  check_range(node, c.nodes, "node");
  check_range(index, c.node.pcie_switches, "PCIe switch");
  return c.vertex(node, c.node.pcie_switch_vertex(index));
}

VertexId Topology::nvswitch(int node) const {
  const ClusterLayout& c = cluster();
  check_range(node, c.nodes, "node");
  if (!c.node.has_nvswitch) throw std::logic_error(c.node_name + " has no NVSwitch");
  return c.vertex(node, c.node.nvswitch_vertex());
}

VertexId Topology::leaf_switch(int index) const {
  const ClusterLayout& c = cluster();
  check_range(index, c.network.leaves, "leaf");
  return c.network.first_switch + static_cast<VertexId>(index);
}

VertexId Topology::spine_switch(int index) const {
  const ClusterLayout& c = cluster();
  check_range(index, c.network.spines, "spine");
  return c.network.first_switch + static_cast<VertexId>(c.network.leaves + index);
}

std::vector<std::uint8_t> Topology::never_overloaded_links() const {
  auto is_network_switch = [&](VertexId v) {
    return vertices_[v].kind == VertexKind::LEAF_SWITCH || vertices_[v].kind == VertexKind::SPINE_SWITCH;
  };
  // Bounds use only links to or from devices (never switch-to-switch links, which may be the very
  // links being judged: two links may not vouch for each other).
  const std::size_t n = vertices_.size();
  std::vector<double> in_device(n, 0.0), out_device(n, 0.0);
  std::vector<int> in_switches(n, 0), out_switches(n, 0);
  for (const Link& l : links_) {
    const double c = l.bandwidth.bytes_per_second();
    if (is_network_switch(l.from)) {
      ++in_switches[l.to];
    } else {
      in_device[l.to] += c;
    }
    if (is_network_switch(l.to)) {
      ++out_switches[l.from];
    } else {
      out_device[l.from] += c;
    }
  }
  std::vector<std::uint8_t> out(links_.size(), 0);
  for (LinkId id = 0; id < links_.size(); ++id) {
    const Link& l = links_[id];
    const double capacity = l.bandwidth.bytes_per_second();
    const std::optional<LinkId> back = find_link(l.to, l.from);
    const double back_capacity = back ? links_[*back].bandwidth.bytes_per_second() : 0.0;
    double bound = std::numeric_limits<double>::infinity();
    if (is_network_switch(l.from)) {
      // What enters `from` from devices, other than from `to` (a route does not pass a switch twice).
      const int other_switches = in_switches[l.from] - (back && is_network_switch(l.to) ? 1 : 0);
      if (other_switches == 0) bound = std::min(bound, in_device[l.from] - (is_network_switch(l.to) ? 0.0 : back_capacity));
    }
    if (is_network_switch(l.to)) {
      // What can leave `to` towards devices, other than back to `from`.
      const int other_switches = out_switches[l.to] - (back && is_network_switch(l.from) ? 1 : 0);
      if (other_switches == 0) bound = std::min(bound, out_device[l.to] - (is_network_switch(l.from) ? 0.0 : back_capacity));
    }
    out[id] = bound <= capacity * (1 + 1e-9) ? 1 : 0;
  }
  return out;
}

std::size_t Topology::memory_bytes() const {
  std::size_t b = vertices_.capacity() * sizeof(Vertex) + links_.capacity() * sizeof(Link) +
                  out_offsets_.capacity() * sizeof(std::uint32_t) + out_links_.capacity() * sizeof(LinkId);
  // adjacency_list<vecS, vecS, directedS>: per vertex a vector of out-edges, per edge a stored
  // edge (target + property); counted from sizes, which is what the allocator holds at least.
  b += boost::num_vertices(*graph_) * (sizeof(std::vector<int>) + sizeof(void*)) +
       boost::num_edges(*graph_) * (sizeof(std::size_t) + sizeof(void*) + sizeof(LinkId));
  if (cluster_) {
    const NodeLayout& n = cluster_->node;
    b += sizeof(ClusterLayout) + (n.route_offsets.capacity() + n.route_links.capacity()) * sizeof(std::uint32_t);
    for (const auto& v : n.near_nics) b += sizeof(v) + v.capacity() * sizeof(int);
  }
  return b;
}

VertexId TopologyBuilder::add_vertex(VertexKind kind, int node, int index) {
  topo_.vertices_.push_back(Vertex{kind, node, index});
  return static_cast<VertexId>(topo_.vertices_.size() - 1);
}

LinkId TopologyBuilder::add_link(VertexId from, VertexId to, LinkKind kind, Bandwidth bandwidth, Duration latency) {
  if (from >= topo_.vertices_.size() || to >= topo_.vertices_.size() || from == to) {
    throw std::invalid_argument("link between vertices " + std::to_string(from) + " and " + std::to_string(to) +
                                " of a topology with " + std::to_string(topo_.vertices_.size()) + " vertices");
  }
  if (!(bandwidth.bytes_per_second() > 0) || !std::isfinite(bandwidth.bytes_per_second())) {
    throw std::invalid_argument("link bandwidth must be positive and finite, got " + format_bandwidth(bandwidth));
  }
  if (latency < Duration::zero()) throw std::invalid_argument("link latency must not be negative");
  topo_.links_.push_back(Link{from, to, kind, bandwidth, latency});
  return static_cast<LinkId>(topo_.links_.size() - 1);
}

LinkId TopologyBuilder::add_duplex(VertexId a, VertexId b, LinkKind kind, Bandwidth bandwidth, Duration latency) {
  const LinkId first = add_link(a, b, kind, bandwidth, latency);
  add_link(b, a, kind, bandwidth, latency);
  return first;
}

Topology TopologyBuilder::build() && {
  Topology& t = topo_;
  const std::size_t nv = t.vertices_.size();
  t.out_offsets_.assign(nv + 1, 0);
  for (const Link& l : t.links_) ++t.out_offsets_[l.from + 1];
  for (std::size_t v = 0; v < nv; ++v) t.out_offsets_[v + 1] += t.out_offsets_[v];
  t.out_links_.resize(t.links_.size());
  std::vector<std::uint32_t> fill(t.out_offsets_.begin(), t.out_offsets_.end() - 1);
  for (LinkId l = 0; l < t.links_.size(); ++l) t.out_links_[fill[t.links_[l].from]++] = l;

  t.graph_ = std::make_unique<TopologyGraph>(nv);
  for (LinkId l = 0; l < t.links_.size(); ++l) boost::add_edge(t.links_[l].from, t.links_[l].to, l, *t.graph_);
  return std::move(t);
}

}  // namespace clustersim::sim
