#include "sim/net/router.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/property_map/function_property_map.hpp>

#include "hardware/errors.hpp"

namespace clustersim::sim {

void Route::push_back(LinkId l) {
  if (size_ == MAX_HOPS) {
    throw std::length_error("a route has at most " + std::to_string(MAX_HOPS) + " links");
  }
  links_[size_++] = l;
}

void Route::append(std::span<const LinkId> links) {
  for (LinkId l : links) push_back(l);
}

void Route::append_shifted(std::span<const LinkId> links, LinkId base) {
  if (links.size() > MAX_HOPS - size_) {
    throw std::length_error("a route has at most " + std::to_string(MAX_HOPS) + " links");
  }
  // One check for the whole table entry, not one per link.
  for (const LinkId l : links) links_[size_++] = base + l;
}

bool operator==(const Route& a, const Route& b) {
  return a.size_ == b.size_ && std::equal(a.links_.begin(), a.links_.begin() + a.size_, b.links_.begin());
}

namespace {

using Edge = boost::graph_traits<TopologyGraph>::edge_descriptor;

bool forwards(VertexKind k) {
  return k == VertexKind::NVSWITCH || k == VertexKind::PCIE_SWITCH || k == VertexKind::CPU_SOCKET ||
         k == VertexKind::LEAF_SWITCH || k == VertexKind::SPINE_SWITCH;
}

// Edges a route from `src` may take: out of the source itself, or out of a forwarding device.
struct ForwardingEdges {
  const Topology* topology = nullptr;
  VertexId src = NO_VERTEX;
  bool operator()(const Edge& e) const {
    const auto u = static_cast<VertexId>(boost::source(e, topology->graph()));
    return u == src || forwards(topology->vertex(u).kind);
  }
};

class RecordEntryLink : public boost::default_dijkstra_visitor {
 public:
  explicit RecordEntryLink(std::vector<LinkId>* entry) : entry_(entry) {}
  template <class G>
  void edge_relaxed(const Edge& e, const G& g) const {
    (*entry_)[boost::target(e, g)] = boost::get(boost::edge_index, g, e);
  }

 private:
  std::vector<LinkId>* entry_;
};

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::vector<LinkId> shortest_path_tree(const Topology& topology, VertexId src) {
  const TopologyGraph& g = topology.graph();
  const std::size_t n = boost::num_vertices(g);
  if (src >= n) throw std::out_of_range("vertex id " + std::to_string(src) + " out of range");
  double widest = 0;
  for (const Link& l : topology.links()) widest = std::max(widest, l.bandwidth.bytes_per_second());
  const auto index = boost::get(boost::edge_index, g);
  auto cost = boost::make_function_property_map<Edge, double>([&](const Edge& e) {
    return 1e6 + widest / topology.link(index[e]).bandwidth.bytes_per_second();
  });
  boost::filtered_graph<TopologyGraph, ForwardingEdges> fg(g, ForwardingEdges{&topology, src});
  std::vector<LinkId> entry(n, NO_LINK);
  std::vector<double> distance(n, std::numeric_limits<double>::infinity());
  boost::dijkstra_shortest_paths(
      fg, static_cast<TopologyGraph::vertex_descriptor>(src),
      boost::weight_map(cost)
          .distance_map(boost::make_iterator_property_map(distance.begin(), boost::get(boost::vertex_index, g)))
          .visitor(RecordEntryLink(&entry)));
  return entry;
}

Router::Router(const Topology& topology, RoutePolicy policy) : topology_(topology), policy_(policy) {
  latency_ps_.reserve(topology.link_count());
  for (const Link& l : topology.links()) latency_ps_.push_back(l.latency.picoseconds());
  if (!topology_.has_cluster()) return;
  const ClusterLayout& c = topology_.cluster();
  const auto per_node = static_cast<std::size_t>(c.node.link_count);
  for (int n = 1; n < c.nodes; ++n) {
    const auto base = static_cast<std::size_t>(c.link_base(n));
    if (!std::equal(latency_ps_.begin(), latency_ps_.begin() + static_cast<std::ptrdiff_t>(per_node),
                    latency_ps_.begin() + static_cast<std::ptrdiff_t>(base))) {
      return;
    }
  }
  intra_latency_ps_.resize(c.node.route_offsets.size() - 1, 0);
  for (std::size_t pair = 0; pair + 1 < c.node.route_offsets.size(); ++pair) {
    for (std::uint32_t i = c.node.route_offsets[pair]; i < c.node.route_offsets[pair + 1]; ++i) {
      intra_latency_ps_[pair] += latency_ps_[c.node.route_links[i]];
    }
  }
}

Bandwidth Router::bottleneck(const Route& route) const {
  double b = std::numeric_limits<double>::infinity();
  for (LinkId l : route.links()) b = std::min(b, topology_.link(l).bandwidth.bytes_per_second());
  return Bandwidth::bytes_per_second(b);
}

void Router::append_intra(Route& r, int node, int local_src, int local_dst, std::int64_t& ps) const {
  if (local_src == local_dst) return;
  const ClusterLayout& c = topology_.cluster();
  const auto pair = static_cast<std::size_t>(local_src) * static_cast<std::size_t>(c.node.vertex_count) +
                    static_cast<std::size_t>(local_dst);
  const std::uint32_t begin = c.node.route_offsets[pair];
  const std::uint32_t end = c.node.route_offsets[pair + 1];
  if (begin == end) {
    throw RuntimeError("no route from " + topology_.describe_vertex(c.vertex(node, local_src)) + " to " +
                       topology_.describe_vertex(c.vertex(node, local_dst)));
  }
  const LinkId base = c.link_base(node);
  if (!intra_latency_ps_.empty()) {
    r.append_shifted(std::span<const LinkId>(c.node.route_links).subspan(begin, end - begin), base);
    ps += intra_latency_ps_[pair];
  } else {
    for (std::uint32_t i = begin; i < end; ++i) push(r, base + c.node.route_links[i], ps);
  }
}

void Router::append_to_nic(Route& r, int node, int local, int nic, bool to_nic, std::int64_t& ps) const {
  const ClusterLayout& c = topology_.cluster();
  const int nic_local = c.node.nic_vertex(nic);
  if (local == nic_local) return;
  const bool staged = !c.network.gpudirect_rdma && local < c.node.gpus;
  if (staged) {
    // No GPUDirect RDMA: the bytes bounce through host memory on the NIC's socket.
    const int mem = c.node.memory_vertex(c.node.nic_socket[static_cast<std::size_t>(nic)]);
    if (to_nic) {
      append_intra(r, node, local, mem, ps);
      append_intra(r, node, mem, nic_local, ps);
    } else {
      append_intra(r, node, nic_local, mem, ps);
      append_intra(r, node, mem, local, ps);
    }
  } else if (to_nic) {
    append_intra(r, node, local, nic_local, ps);
  } else {
    append_intra(r, node, nic_local, local, ps);
  }
}

Route Router::route(VertexId src, VertexId dst, std::uint32_t path_hint, std::int64_t& latency_ps) {
  if (src >= topology_.vertex_count() || dst >= topology_.vertex_count()) {
    throw std::out_of_range("route between vertices " + std::to_string(src) + " and " + std::to_string(dst) +
                            " of a topology with " + std::to_string(topology_.vertex_count()) + " vertices");
  }
  if (src == dst) return {};
  if (topology_.has_cluster()) {
    const ClusterLayout& c = topology_.cluster();
    if (c.is_node_vertex(src) && c.is_node_vertex(dst)) {
      const int a = c.node_of(src);
      const int b = c.node_of(dst);
      const int ls = c.local_of(src);
      const int ld = c.local_of(dst);
      Route r;
      if (a == b) {
        append_intra(r, a, ls, ld, latency_ps);
        return r;
      }
      const auto& src_nics = c.node.near_nics[static_cast<std::size_t>(ls)];
      const auto& dst_nics = c.node.near_nics[static_cast<std::size_t>(ld)];
      if (!c.network.present || src_nics.empty() || dst_nics.empty()) {
        throw RuntimeError("no route from " + topology_.describe_vertex(src) + " to " +
                           topology_.describe_vertex(dst) + ": the nodes have no network");
      }
      const std::uint64_t hash =
          policy_ == RoutePolicy::ECMP
              ? splitmix64((static_cast<std::uint64_t>(src) << 32 | dst) ^ splitmix64(path_hint))
              : path_hint;
      const std::size_t slot = hash % src_nics.size();
      const int nic_s = src_nics[slot];
      const int nic_d = dst_nics[slot % dst_nics.size()];
      append_to_nic(r, a, ls, nic_s, true, latency_ps);
      push(r, c.nic_uplink(a, nic_s), latency_ps);
      const int leaf_s = c.leaf_of(a, nic_s);
      const int leaf_d = c.leaf_of(b, nic_d);
      if (leaf_s != leaf_d) {
        const auto spines = static_cast<std::uint64_t>(c.network.spines);
        const std::uint64_t dst_nic_index =
            static_cast<std::uint64_t>(b) * static_cast<std::uint64_t>(c.node.nics) + static_cast<std::uint64_t>(nic_d);
        const int spine = static_cast<int>(policy_ == RoutePolicy::ECMP ? (hash >> 32) % spines : dst_nic_index % spines);
        push(r, c.leaf_to_spine(leaf_s, spine), latency_ps);
        push(r, c.spine_to_leaf(spine, leaf_d), latency_ps);
      }
      push(r, c.nic_downlink(b, nic_d), latency_ps);
      append_to_nic(r, b, ld, nic_d, false, latency_ps);
      return r;
    }
  }
  Route r = generic_route(src, dst);
  latency_ps += latency(r).picoseconds();
  return r;
}

Route Router::generic_route(VertexId src, VertexId dst) {
  auto it = trees_.find(src);
  if (it == trees_.end()) it = trees_.emplace(src, shortest_path_tree(topology_, src)).first;
  const std::vector<LinkId>& entry = it->second;
  if (entry[dst] == NO_LINK) {
    throw RuntimeError("no route from " + topology_.describe_vertex(src) + " to " + topology_.describe_vertex(dst));
  }
  std::array<LinkId, Route::MAX_HOPS> reversed{};
  std::size_t n = 0;
  for (VertexId v = dst; v != src; v = topology_.link(entry[v]).from) {
    if (n == Route::MAX_HOPS) throw std::length_error("a route has at most " + std::to_string(Route::MAX_HOPS) + " links");
    reversed[n++] = entry[v];
  }
  Route r;
  while (n > 0) r.push_back(reversed[--n]);
  return r;
}

}  // namespace clustersim::sim
