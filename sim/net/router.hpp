#pragma once
// Routes: the list of directional links a flow crosses from one vertex to another.
//
// Shortest path. Among the paths with the fewest hops, the one with the least sum of 1/bandwidth
// (the least serialization time per byte) wins: Dijkstra over the Boost graph with the cost of a
// link = 10^6 + B_max / B_link, where B_max is the widest link of the topology, so a hop always
// outweighs any bandwidth preference (B_max / B_link stays far below 10^6 / 32 for real links).
// On a p4d, GPU 0 -> GPU 1 has two 2-hop paths (NVSwitch, shared PCIe switch); NVLink is wider,
// so it wins, as NCCL's path search prefers NVLink (NCCL 2.28 src/graph/paths.cc: PATH_NVL is the
// best path type). Devices do not forward: a path may start or end at a GPU, a NIC or a host
// memory but never pass through one; switches, CPU sockets (root complexes) and network switches
// forward.
//
// Inside a node, routes come from a table computed once per cluster (cluster_layout.hpp). Between
// nodes a route is composed: source -> one of its NICs, the network, the destination's NIC ->
// destination.
//   NIC choice: the NICs nearest the endpoint (on its PCIe switch, else its socket); the path hint
//     picks slot (hint mod count) on both sides, so GPU k of one node reaches GPU k of another
//     node on the same NIC index, the same rail (RAIL_ALIGNED). An NCCL model passes its channel
//     number as the hint to spread channels over a GPU's NICs, as NCCL does.
//   Without GPUDirect RDMA the data is staged in host memory: GPU -> memory of the NIC's socket
//     -> NIC (and the mirror image on the receiving side).
//   Network: same leaf: NIC -> leaf -> NIC; otherwise NIC -> leaf -> spine -> leaf -> NIC, the
//     spine chosen destination-mod-k (the destination NIC's global index modulo the spine count),
//     the static routing that InfiniBand subnet managers use in fat trees.
//   ECMP (RoutePolicy::ECMP): the NIC slot and the spine come from a hash of (source,
//     destination, hint) instead (splitmix64; deterministic across runs and platforms).
// Routes between vertices outside the node layout (or on a hand-built topology) come from
// Dijkstra as above, one shortest-path tree per source, cached.

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "sim/net/topology.hpp"

namespace clustersim::sim {

enum class RoutePolicy { RAIL_ALIGNED, ECMP };

// A route by value: up to MAX_HOPS link ids, no allocation. Copies move only the links in use.
class Route {
 public:
  static constexpr std::size_t MAX_HOPS = 32;
  Route() {}  // NOLINT: the unused tail of links_ stays uninitialized on purpose
  explicit Route(std::span<const LinkId> links) { append(links); }
  Route(const Route& o) : size_(o.size_) { std::copy_n(o.links_.begin(), o.size_, links_.begin()); }
  Route& operator=(const Route& o) {
    size_ = o.size_;
    std::copy_n(o.links_.begin(), o.size_, links_.begin());
    return *this;
  }

  std::span<const LinkId> links() const { return {links_.data(), size_}; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  LinkId operator[](std::size_t i) const { return links_[i]; }
  void push_back(LinkId l);
  void append(std::span<const LinkId> links);
  void append(const Route& r) { append(r.links()); }
  // Appends base + each of `links` (a node's route table entry, placed on one node's links).
  void append_shifted(std::span<const LinkId> links, LinkId base);
  friend bool operator==(const Route& a, const Route& b);

 private:
  std::uint32_t size_ = 0;
  std::array<LinkId, MAX_HOPS> links_;
};

class Router {
 public:
  explicit Router(const Topology& topology, RoutePolicy policy = RoutePolicy::RAIL_ALIGNED);

  // The route from src to dst (empty when src == dst). RuntimeError when dst cannot be reached.
  Route route(VertexId src, VertexId dst, std::uint32_t path_hint = 0) {
    std::int64_t ps = 0;
    return route(src, dst, path_hint, ps);
  }
  // The same, adding its latency (the sum of its links') to `latency_ps`: inside a node from the
  // node's table of route latencies, so that a route costs no look-up per link.
  Route route(VertexId src, VertexId dst, std::uint32_t path_hint, std::int64_t& latency_ps);
  RoutePolicy policy() const { return policy_; }
  const Topology& topology() const { return topology_; }

  // Sum of the hop latencies of a route (what a flow pays before its bytes move).
  Duration latency(const Route& route) const {
    std::int64_t ps = 0;
    for (LinkId l : route.links()) ps += latency_ps_[l];
    return Duration::ps(ps);
  }
  // The narrowest link of a route (infinite for an empty route).
  Bandwidth bottleneck(const Route& route) const;

 private:
  void append_intra(Route& r, int node, int local_src, int local_dst, std::int64_t& ps) const;
  void append_to_nic(Route& r, int node, int local, int nic, bool to_nic, std::int64_t& ps) const;
  void push(Route& r, LinkId l, std::int64_t& ps) const {
    r.push_back(l);
    ps += latency_ps_[l];
  }
  Route generic_route(VertexId src, VertexId dst);

  const Topology& topology_;
  RoutePolicy policy_;
  std::vector<std::int64_t> latency_ps_;  // per link
  // Per pair of local vertices of a node (as the layout's route table): the latency of the route
  // inside one node, when every node's links have the same latencies as the first's (else empty).
  std::vector<std::int64_t> intra_latency_ps_;
  std::unordered_map<VertexId, std::vector<LinkId>> trees_;  // predecessor link per vertex, by source
};

// Shortest routes from `src` to every vertex (the cost above): the link that enters each vertex on
// its route from `src`, NO_LINK for `src` itself and for vertices it cannot reach.
std::vector<LinkId> shortest_path_tree(const Topology& topology, VertexId src);

}  // namespace clustersim::sim
