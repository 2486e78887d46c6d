#pragma once
// The network as a directed graph: vertices are devices (GPU, NVSwitch, PCIe switch, CPU socket,
// host memory, NIC, network switch) and every edge is one directional link with a bandwidth (bytes
// per second, per direction) and a latency (paid once per flow that crosses it). A full-duplex
// cable is two links. The graph is a Boost adjacency_list whose edges carry the LinkId, beside
// flat arrays of vertices and links that the flow network indexes directly.
//
// A topology comes from build_topology (cluster_topology.hpp: a catalog node times a node count,
// with a ClusterLayout that makes routing arithmetic) or from TopologyBuilder (any graph: tests,
// small what-if fabrics). Link and vertex ids are dense integers, stable for the topology's life.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "hardware/units.hpp"
#include "sim/net/cluster_layout.hpp"

namespace clustersim::sim {

enum class VertexKind { GPU, NVSWITCH, PCIE_SWITCH, CPU_SOCKET, HOST_MEMORY, NIC, LEAF_SWITCH, SPINE_SWITCH };
std::string_view to_string(VertexKind k);

enum class LinkKind {
  NVLINK,        // GPU <-> NVSwitch, or GPU <-> GPU in a direct mesh
  PCIE,          // GPU or NIC <-> PCIe switch (or straight to the root complex)
  PCIE_UPLINK,   // PCIe switch <-> CPU root complex
  MEMORY,        // CPU socket <-> its host memory
  INTER_SOCKET,  // CPU socket <-> CPU socket (UPI / xGMI)
  NIC_PORT,      // NIC <-> its leaf (or single) switch
  FABRIC,        // leaf switch <-> spine switch
};
std::string_view to_string(LinkKind k);

struct Vertex {
  VertexKind kind = VertexKind::GPU;
  std::int32_t node = -1;  // -1 for network switches
  std::int32_t index = 0;  // within its kind: GPU 0..7 of its node, NIC 0..31, leaf 0..L-1, ...
};

struct Link {
  VertexId from = NO_VERTEX;
  VertexId to = NO_VERTEX;
  LinkKind kind = LinkKind::NVLINK;
  Bandwidth bandwidth;  // per direction
  Duration latency;
};

using TopologyGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                            boost::property<boost::edge_index_t, LinkId>>;

class Topology {
 public:
  std::size_t vertex_count() const { return vertices_.size(); }
  std::size_t link_count() const { return links_.size(); }
  const Vertex& vertex(VertexId v) const { return vertices_.at(v); }
  const Link& link(LinkId l) const { return links_.at(l); }
  const std::vector<Link>& links() const { return links_; }
  const std::vector<Vertex>& vertices() const { return vertices_; }
  const TopologyGraph& graph() const { return *graph_; }
  // Links leaving `v`, in the order they were added.
  std::span<const LinkId> out_links(VertexId v) const;
  std::optional<LinkId> find_link(VertexId from, VertexId to) const;

  // "node 3 gpu 5", "leaf 2", "node 0 nvswitch".
  std::string describe_vertex(VertexId v) const;
  // "node 3 gpu 5 -> node 3 nvswitch (nvlink, 450 GB/s)".
  std::string describe_link(LinkId l) const;

  // Cluster structure (present for topologies built from a cluster description).
  bool has_cluster() const { return cluster_.has_value(); }
  const ClusterLayout& cluster() const {  // std::logic_error when absent
    if (!cluster_) no_cluster();
    return *cluster_;
  }
  int nodes() const { return cluster().nodes; }
  VertexId gpu(int node, int local) const {
    const ClusterLayout& c = cluster();
    if (static_cast<unsigned>(node) >= static_cast<unsigned>(c.nodes) ||
        static_cast<unsigned>(local) >= static_cast<unsigned>(c.node.gpus)) {
      out_of_range("GPU", node, local);
    }
    return c.vertex(node, c.node.gpu_vertex(local));
  }
  VertexId nic(int node, int index) const {
    const ClusterLayout& c = cluster();
    if (static_cast<unsigned>(node) >= static_cast<unsigned>(c.nodes) ||
        static_cast<unsigned>(index) >= static_cast<unsigned>(c.node.nics)) {
      out_of_range("NIC", node, index);
    }
    return c.vertex(node, c.node.nic_vertex(index));
  }
  VertexId cpu_socket(int node, int socket) const;
  VertexId host_memory(int node, int socket) const;
  VertexId pcie_switch(int node, int index) const;
  VertexId nvswitch(int node) const;  // std::logic_error when the board has none
  VertexId leaf_switch(int index) const;
  VertexId spine_switch(int index) const;

  // Links that can never carry more than their capacity, whatever the traffic: a link out of a
  // network switch carries at most what enters the switch on its other links, and a link into one
  // at most what can leave it on its other links (network switches neither send nor receive
  // transfers, and a route passes through a network switch at most once; FlowNetwork enforces
  // both). When that bound is
  // no more than the link's bandwidth, sharing on the link is implied by sharing elsewhere and
  // the link need never be a constraint (the uplinks of a non-blocking leaf, for instance).
  std::vector<std::uint8_t> never_overloaded_links() const;

  // Bytes held by the topology's tables (vertices, links, adjacency, layout, route templates),
  // counted from container capacities; the Boost graph is estimated from its vertex and edge counts.
  std::size_t memory_bytes() const;

 private:
  friend class TopologyBuilder;
  [[noreturn]] static void no_cluster();
  [[noreturn]] void out_of_range(const char* what, int node, int index) const;
  std::vector<Vertex> vertices_;
  std::vector<Link> links_;
  std::vector<std::uint32_t> out_offsets_;  // CSR of out_links_ by vertex
  std::vector<LinkId> out_links_;
  std::unique_ptr<TopologyGraph> graph_ = std::make_unique<TopologyGraph>();  // on the heap: cheap moves
  std::optional<ClusterLayout> cluster_;
};

// Builds any topology by hand (tests, small fabrics); build_topology uses it too.
class TopologyBuilder {
 public:
  VertexId add_vertex(VertexKind kind, int node = -1, int index = 0);
  // One directional link. Bandwidth must be positive and finite, latency non-negative.
  LinkId add_link(VertexId from, VertexId to, LinkKind kind, Bandwidth bandwidth, Duration latency = Duration::zero());
  // Two links, from->to then to->from, with the same figures; returns the first id (the second is +1).
  LinkId add_duplex(VertexId a, VertexId b, LinkKind kind, Bandwidth bandwidth, Duration latency = Duration::zero());
  void set_cluster(ClusterLayout layout) { topo_.cluster_ = std::move(layout); }
  std::size_t vertex_count() const { return topo_.vertices_.size(); }
  std::size_t link_count() const { return topo_.links_.size(); }
  Topology build() &&;

 private:
  Topology topo_;
};

}  // namespace clustersim::sim
