#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "sim/engine/simulation.hpp"
#include "sim/net/flow_network.hpp"

using namespace clustersim;
using namespace clustersim::sim;

namespace {

// a -> s -> b and c -> s -> b: two sources into one switch with one link out to b.
struct Star {
  Topology topo;
  VertexId a, c, s, b;
  LinkId a_s, c_s, s_b;
};

Star make_star(Bandwidth in, Bandwidth out, Duration latency) {
  TopologyBuilder tb;
  Star x;
  x.a = tb.add_vertex(VertexKind::GPU, 0, 0);
  x.c = tb.add_vertex(VertexKind::GPU, 0, 1);
  x.s = tb.add_vertex(VertexKind::PCIE_SWITCH, 0, 0);
  x.b = tb.add_vertex(VertexKind::GPU, 0, 2);
  x.a_s = tb.add_link(x.a, x.s, LinkKind::PCIE, in, latency);
  x.c_s = tb.add_link(x.c, x.s, LinkKind::PCIE, in, latency);
  x.s_b = tb.add_link(x.s, x.b, LinkKind::PCIE, out, latency);
  x.topo = std::move(tb).build();
  return x;
}

struct Log : FlowHandler {
  std::vector<FlowCompletion> done;
  void on_flow_complete(const FlowCompletion& d) override { done.push_back(d); }
};

}  // namespace

TEST_CASE("one flow: route latency, then bytes at the bottleneck bandwidth", "[unit][net][flow]") {
  const Star x = make_star(Bandwidth::gigabytes_per_second(100), Bandwidth::gigabytes_per_second(50), Duration::ns(500));
  Simulation sim;
  FlowNetwork& net = sim.emplace_model<FlowNetwork>(sim, x.topo);
  Log log;
  const FlowId id = net.transfer(x.a, x.b, Bytes::mib(1), log, {.tag = 7});
  CHECK(net.state(id) == FlowState::LATENT);
  sim.run();
  REQUIRE(log.done.size() == 1);
  // 2 hops x 500 ns = 1 us latency; 1 MiB / 50 GB/s = 1048576 / 5e10 s = 20.97152 us -> 21.97152 us.
  CHECK(log.done[0].finished.picoseconds() == 21'971'520);
  CHECK(log.done[0].tag == 7);
  CHECK(log.done[0].bytes == Bytes::mib(1));
  CHECK(log.done[0].started == TimePoint::zero());
  CHECK(net.state(id) == FlowState::GONE);
  CHECK(net.flows_completed() == 1);
  CHECK_NOTHROW(sim.check_all_handled());
}

TEST_CASE("two flows sharing a link each get half, then the survivor speeds up", "[unit][net][flow]") {
  const Star x = make_star(Bandwidth::gigabytes_per_second(100), Bandwidth::gigabytes_per_second(10), Duration::zero());
  Simulation sim;
  FlowNetwork net(sim, x.topo);
  std::vector<std::pair<int, std::int64_t>> ends;
  const FlowId f1 = net.transfer(x.a, x.b, Bytes::of(1'000'000), [&](const FlowCompletion& d) { ends.emplace_back(1, d.finished.picoseconds()); });
  const FlowId f2 = net.transfer(x.c, x.b, Bytes::of(3'000'000), [&](const FlowCompletion& d) { ends.emplace_back(2, d.finished.picoseconds()); });
  // Rates are set by the network's event at t = 0.
  sim.run_until(TimePoint::zero());
  CHECK(net.rate(f1).gigabytes_per_second() == Approx(5));
  CHECK(net.rate(f2).gigabytes_per_second() == Approx(5));
  sim.run();
  REQUIRE(ends.size() == 2);
  // Flow 1: 1 MB at 5 GB/s = 200 us. Flow 2 has then moved 1 MB and has 2 MB left at 10 GB/s
  // = 200 us more: 400 us.
  CHECK(ends[0] == std::pair<int, std::int64_t>{1, 200'000'000});
  CHECK(ends[1] == std::pair<int, std::int64_t>{2, 400'000'000});
  // The shared link carried 4 MB and was busy and saturated for all 400 us.
  const LinkUsage u = net.link_usage(x.s_b);
  CHECK(u.bytes == Approx(4e6));
  CHECK(u.busy_ps == 400'000'000);
  CHECK(u.saturated_ps == 400'000'000);
  CHECK(u.peak_flows == 2);
  CHECK(net.busiest_links(1) == std::vector<LinkId>{x.s_b});
  CHECK_NOTHROW(sim.check_all_handled());
}

TEST_CASE("a rate cap limits a flow and leaves the rest to others", "[unit][net][flow]") {
  const Star x = make_star(Bandwidth::gigabytes_per_second(100), Bandwidth::gigabytes_per_second(10), Duration::zero());
  Simulation sim;
  FlowNetwork net(sim, x.topo);
  Log log;
  const FlowId capped = net.transfer(x.a, x.b, Bytes::of(2'000'000), log,
                                     {.rate_cap = Bandwidth::gigabytes_per_second(2), .tag = 1});
  const FlowId open = net.transfer(x.c, x.b, Bytes::of(8'000'000), log, {.tag = 2});
  sim.run_until(TimePoint::zero());
  // Capped at 2 GB/s; the other takes the remaining 8 GB/s of the 10 GB/s link.
  CHECK(net.rate(capped).gigabytes_per_second() == Approx(2));
  CHECK(net.rate(open).gigabytes_per_second() == Approx(8));
  sim.run();
  REQUIRE(log.done.size() == 2);
  // 2 MB / 2 GB/s = 1 ms and 8 MB / 8 GB/s = 1 ms: both end at 1 ms, reported in start order.
  CHECK(log.done[0].tag == 1);
  CHECK(log.done[1].tag == 2);
  CHECK(log.done[0].finished.picoseconds() == 1'000'000'000);
  CHECK(log.done[1].finished.picoseconds() == 1'000'000'000);
}

TEST_CASE("a flow started later re-shares the link and both finish on time", "[unit][net][flow]") {
  const Star x = make_star(Bandwidth::gigabytes_per_second(100), Bandwidth::gigabytes_per_second(10), Duration::zero());
  Simulation sim;
  FlowNetwork net(sim, x.topo);
  Log log;
  net.transfer(x.a, x.b, Bytes::of(3'000'000), log, {.tag = 1});
  sim.schedule_at(TimePoint::zero() + Duration::us(100), [&] { net.transfer(x.c, x.b, Bytes::of(1'000'000), log, {.tag = 2}); });
  sim.run();
  REQUIRE(log.done.size() == 2);
  // Flow 1 alone for 100 us at 10 GB/s: 1 MB moved, 2 MB left. Then 5 GB/s each: flow 2's 1 MB
  // takes 200 us (ends at 300 us), when flow 1 has 1 MB left: 100 us more at 10 GB/s -> 400 us.
  CHECK(log.done[0].tag == 2);
  CHECK(log.done[0].finished.picoseconds() == 300'000'000);
  CHECK(log.done[1].finished.picoseconds() == 400'000'000);
}

TEST_CASE("zero-byte flows, empty routes, cancellation", "[unit][net][flow]") {
  const Star x = make_star(Bandwidth::gigabytes_per_second(100), Bandwidth::gigabytes_per_second(10), Duration::us(1));
  Simulation sim;
  FlowNetwork net(sim, x.topo);
  Log log;
  // Zero bytes: done when the 2 us route latency ends.
  net.transfer(x.a, x.b, Bytes::of(0), log, {.tag = 1});
  // Source == destination with a cap: 1 MB at 1 GB/s = 1 ms; without a cap: at once.
  net.transfer(x.a, x.a, Bytes::of(1'000'000), log, {.rate_cap = Bandwidth::gigabytes_per_second(1), .tag = 2});
  net.transfer(x.a, x.a, Bytes::of(1'000'000), log, {.tag = 3});
  const FlowId gone = net.transfer(x.c, x.b, Bytes::mib(1), log, {.tag = 4});
  sim.schedule_at(TimePoint::zero() + Duration::us(5), [&] {
    CHECK(net.state(gone) == FlowState::ACTIVE);
    CHECK(net.cancel(gone));
    CHECK_FALSE(net.cancel(gone));
  });
  sim.run();
  REQUIRE(log.done.size() == 3);
  CHECK(log.done[0].tag == 3);
  CHECK(log.done[0].finished.picoseconds() == 0);
  CHECK(log.done[1].tag == 1);
  CHECK(log.done[1].finished.picoseconds() == 2'000'000);
  CHECK(log.done[2].tag == 2);
  CHECK(log.done[2].finished.picoseconds() == 1'000'000'000);
  CHECK(net.flows_in_flight() == 0);
  CHECK_NOTHROW(sim.check_all_handled());
  CHECK_THROWS_AS(net.transfer(x.a, x.b, Bytes::of(-1)), std::invalid_argument);
  CHECK_THROWS_AS(net.transfer(x.a, x.b, Bytes::of(1), {}, {.rate_cap = Bandwidth{}}), std::invalid_argument);
}

TEST_CASE("remaining bytes are brought up to date lazily", "[unit][net][flow]") {
  const Star x = make_star(Bandwidth::gigabytes_per_second(100), Bandwidth::gigabytes_per_second(10), Duration::zero());
  Simulation sim;
  FlowNetwork net(sim, x.topo);
  const FlowId f = net.transfer(x.a, x.b, Bytes::of(1'000'000));
  sim.run_until(TimePoint::zero() + Duration::us(30));
  // 30 us at 10 GB/s = 300 kB moved, 700 kB left.
  CHECK(net.remaining(f) == Bytes::of(700'000));
  sim.run();
}

TEST_CASE("a bulk start recomputes rates once and an explicit route is honoured", "[unit][net][flow]") {
  const Star x = make_star(Bandwidth::gigabytes_per_second(100), Bandwidth::gigabytes_per_second(10), Duration::zero());
  Simulation sim;
  FlowNetwork net(sim, x.topo);
  Log log;
  const Route via_c(std::vector<LinkId>{x.c_s, x.s_b});
  std::vector<FlowNetwork::BulkTransfer> bulk;
  for (int i = 0; i < 4; ++i) {
    FlowNetwork::BulkTransfer t;
    t.src = x.a;
    t.dst = x.b;
    t.bytes = Bytes::of(1'000'000);
    t.options.tag = static_cast<std::uint64_t>(i);
    if (i == 3) t.route = &via_c;
    bulk.push_back(t);
  }
  std::vector<FlowId> ids;
  net.transfer_many(bulk, log, &ids);
  CHECK(ids.size() == 4);
  sim.run_until(TimePoint::zero());
  CHECK(net.solver_counters().solves == 1);
  // Four flows on the 10 GB/s link: 2.5 GB/s each; 1 MB takes 400 us.
  for (const FlowId& id : ids) CHECK(net.rate(id).gigabytes_per_second() == Approx(2.5));
  sim.run();
  REQUIRE(log.done.size() == 4);
  for (const auto& d : log.done) CHECK(d.finished.picoseconds() == 400'000'000);
  // The explicit route crossed c -> s: 1 MB on that link.
  CHECK(net.link_usage(x.c_s).bytes == Approx(1e6));
  CHECK(net.link_usage(x.a_s).bytes == Approx(3e6));
}

TEST_CASE("the same inputs give the same completions in the same order", "[unit][net][flow]") {
  auto run_once = [] {
    // A ring of 6 switches, one GPU on each, with random flows between random GPUs.
    TopologyBuilder tb;
    std::vector<VertexId> sw;
    std::vector<VertexId> v;
    for (int i = 0; i < 6; ++i) sw.push_back(tb.add_vertex(VertexKind::PCIE_SWITCH, 0, i));
    for (int i = 0; i < 6; ++i) {
      v.push_back(tb.add_vertex(VertexKind::GPU, 0, i));
      tb.add_duplex(v[i], sw[i], LinkKind::PCIE, Bandwidth::gigabytes_per_second(30), Duration::ns(50));
    }
    for (int i = 0; i < 6; ++i) {
      tb.add_duplex(sw[i], sw[(i + 1) % 6], LinkKind::PCIE, Bandwidth::gigabytes_per_second(10 + i), Duration::ns(100));
    }
    const Topology topo = std::move(tb).build();
    Simulation sim;
    FlowNetwork net(sim, topo);
    std::vector<std::pair<std::uint64_t, std::int64_t>> out;
    std::mt19937_64 rng(99);
    std::uint64_t next_tag = 0;
    std::function<void()> start_one = [&] {
      const auto a = static_cast<std::size_t>(rng() % 6);
      auto b = static_cast<std::size_t>(rng() % 6);
      if (b == a) b = (a + 1) % 6;
      FlowOptions o;
      o.tag = next_tag++;
      if (rng() % 2 == 0) o.rate_cap = Bandwidth::gigabytes_per_second(2 + static_cast<double>(rng() % 5));
      net.transfer(v[a], v[b], Bytes::of(static_cast<std::int64_t>(10'000 + rng() % 1'000'000)),
                   [&](const FlowCompletion& d) {
                     out.emplace_back(d.tag, d.finished.picoseconds());
                     if (next_tag < 300) start_one();
                   },
                   o);
    };
    for (int i = 0; i < 20; ++i) start_one();
    sim.run();
    sim.check_all_handled();
    return out;
  };
  const auto first = run_once();
  const auto second = run_once();
  CHECK(first.size() == 300);
  CHECK(first == second);
}

TEST_CASE("explicit routes are paths between devices through each network switch at most once",
          "[unit][net][flow]") {
  TopologyBuilder tb;
  const VertexId a = tb.add_vertex(VertexKind::GPU, 0, 0);
  const VertexId s = tb.add_vertex(VertexKind::PCIE_SWITCH, 0, 0);
  const VertexId b = tb.add_vertex(VertexKind::GPU, 0, 1);
  const VertexId leaf = tb.add_vertex(VertexKind::LEAF_SWITCH, -1, 0);
  const LinkId a_s = tb.add_duplex(a, s, LinkKind::PCIE, Bandwidth::gigabytes_per_second(10));
  const LinkId s_b = tb.add_duplex(s, b, LinkKind::PCIE, Bandwidth::gigabytes_per_second(10));
  const LinkId s_leaf = tb.add_duplex(s, leaf, LinkKind::NIC_PORT, Bandwidth::gigabytes_per_second(10));
  const Topology topo = std::move(tb).build();
  Simulation sim;
  FlowNetwork net(sim, topo);
  // a -> s, then b -> s: not a path.
  CHECK_THROWS_AS(net.transfer(Route(std::vector<LinkId>{a_s, s_b + 1}), Bytes::of(1)), std::invalid_argument);
  // a -> s -> leaf -> s -> leaf -> s -> b passes the leaf twice.
  CHECK_THROWS_AS(net.transfer(Route(std::vector<LinkId>{a_s, s_leaf, s_leaf + 1, s_leaf, s_leaf + 1, s_b}), Bytes::of(1)),
                  std::invalid_argument);
  // a -> s -> leaf -> s -> b passes s twice, which is allowed (like socket -> memory -> socket).
  CHECK_NOTHROW(net.transfer(Route(std::vector<LinkId>{a_s, s_leaf, s_leaf + 1, s_b}), Bytes::of(1)));
  // Ends at a network switch.
  CHECK_THROWS_AS(net.transfer(Route(std::vector<LinkId>{a_s, s_leaf}), Bytes::of(1)), std::invalid_argument);
  CHECK_THROWS_AS(net.transfer(a, leaf, Bytes::of(1)), std::invalid_argument);
  CHECK_THROWS_AS(net.transfer(Route(std::vector<LinkId>{99}), Bytes::of(1)), std::out_of_range);
  // a -> s -> b is fine.
  CHECK_NOTHROW(net.transfer(Route(std::vector<LinkId>{a_s, s_b}), Bytes::of(1)));
  sim.run();
}
