#include <catch2/catch.hpp>

#include "hardware/errors.hpp"
#include "sim/engine/simulation.hpp"
#include "sim/exec/stream_executor.hpp"
#include "sim/exec/task_graph.hpp"
#include "sim/net/flow_network.hpp"

using namespace clustersim;
using namespace clustersim::sim;
using namespace clustersim::sim::exec;

namespace {

TaskSpec compute_on(std::uint32_t stream, std::uint32_t label, Duration d) {
  TaskSpec s;
  s.stream = stream;
  s.label = label;
  s.duration = d;
  return s;
}

// Two GPUs joined by one 100 GB/s link each way (1 us latency).
struct Pair {
  Topology topo;
  VertexId a, b;
  LinkId ab;
};
Pair make_pair() {
  TopologyBuilder tb;
  Pair p;
  p.a = tb.add_vertex(VertexKind::GPU, 0, 0);
  p.b = tb.add_vertex(VertexKind::GPU, 0, 1);
  p.ab = tb.add_link(p.a, p.b, LinkKind::NVLINK, Bandwidth::gigabytes_per_second(100), Duration::us(1));
  tb.add_link(p.b, p.a, LinkKind::NVLINK, Bandwidth::gigabytes_per_second(100), Duration::us(1));
  p.topo = std::move(tb).build();
  return p;
}

}  // namespace

TEST_CASE("streams run in order; dependencies cross streams", "[unit][step][exec]") {
  TaskGraph g;
  const auto s0 = g.add_stream(0, 0, "compute");
  const auto s1 = g.add_stream(0, 1, "comm");
  const auto l = g.add_label("k", "compute");
  const TaskId a = g.add(compute_on(s0, l, Duration::us(10)));
  const TaskId b = g.add(compute_on(s0, l, Duration::us(5)));
  const TaskId c = g.add(compute_on(s1, l, Duration::us(20)));
  g.depend(c, a);
  const TaskId d = g.add(compute_on(s0, l, Duration::us(1)));
  g.depend(d, c);
  Simulation sim;
  auto& ex = sim.emplace_model<StreamExecutor>(sim, g, nullptr);
  ex.run();
  // a [0, 10); b after a on its stream [10, 15); c after a [10, 30); d after b and c [30, 31).
  CHECK(ex.timing(a).end.picoseconds() == Duration::us(10).picoseconds());
  CHECK(ex.timing(b).start.picoseconds() == Duration::us(10).picoseconds());
  CHECK(ex.timing(c).end.picoseconds() == Duration::us(30).picoseconds());
  CHECK(ex.timing(d).start.picoseconds() == Duration::us(30).picoseconds());
  CHECK(ex.timing(d).binding == c);
  CHECK(ex.makespan().picoseconds() == Duration::us(31).picoseconds());
  CHECK_NOTHROW(sim.check_all_handled());
}

TEST_CASE("transfers share a link through the flow network", "[unit][step][exec]") {
  const Pair p = make_pair();
  TaskGraph g;
  const auto s0 = g.add_stream(0, 0, "tp");
  const auto s1 = g.add_stream(0, 1, "dp");
  const auto l = g.add_label("x", "comm");
  const FlowSpec f{.route = Route(std::vector<LinkId>{p.ab}), .bytes = Bytes::of(100'000'000), .cap = std::nullopt};
  TaskSpec t;
  t.stream = s0;
  t.label = l;
  const TaskId x = g.add_transfer(t, std::vector<FlowSpec>{f});
  t.stream = s1;
  const TaskId y = g.add_transfer(t, std::vector<FlowSpec>{f});
  Simulation sim;
  auto& net = sim.emplace_model<FlowNetwork>(sim, p.topo);
  auto& ex = sim.emplace_model<StreamExecutor>(sim, g, &net);
  ex.run();
  // Both 100 MB flows share 100 GB/s: 50 GB/s each, 2 ms, after the 1 us route latency.
  CHECK(ex.timing(x).end.picoseconds() == Duration::us(2001).picoseconds());
  CHECK(ex.timing(y).end.picoseconds() == Duration::us(2001).picoseconds());
}

TEST_CASE("a transfer waits its delay, then its capped flows", "[unit][step][exec]") {
  const Pair p = make_pair();
  TaskGraph g;
  const auto s0 = g.add_stream(0, 0, "tp");
  const auto l = g.add_label("x", "comm");
  const FlowSpec f{.route = Route(std::vector<LinkId>{p.ab}),
                   .bytes = Bytes::of(10'000'000),
                   .cap = Bandwidth::gigabytes_per_second(10)};
  TaskSpec t;
  t.stream = s0;
  t.label = l;
  t.duration = Duration::us(5);
  const TaskId x = g.add_transfer(t, std::vector<FlowSpec>{f});
  Simulation sim;
  auto& net = sim.emplace_model<FlowNetwork>(sim, p.topo);
  auto& ex = sim.emplace_model<StreamExecutor>(sim, g, &net);
  ex.run();
  // 5 us delay + 1 us latency + 10 MB / 10 GB/s (the cap, below the link's 100) = 1006 us.
  CHECK(ex.timing(x).end.picoseconds() == Duration::us(1006).picoseconds());
  CHECK(ex.timing(x).start.picoseconds() == Duration::us(5).picoseconds());
}

TEST_CASE("a collective holding SMs slows the kernels beside it", "[unit][step][exec]") {
  TaskGraph g;
  const auto s0 = g.add_stream(0, 0, "compute");
  const auto s1 = g.add_stream(0, 1, "comm");
  const auto l = g.add_label("k", "compute");
  TaskSpec k = compute_on(s0, l, Duration::us(100));
  k.uses_sms = true;
  const TaskId kernel = g.add(k);
  TaskSpec c = compute_on(s1, l, Duration::us(50));
  c.work = WorkKind::TRANSFER;
  c.sm_share = 0.25f;
  g.add_transfer(c, {});
  Simulation sim;
  auto& ex = sim.emplace_model<StreamExecutor>(sim, g, nullptr);
  ex.run();
  // 50 us at 3/4 speed does 37.5 us of the kernel's work; the other 62.5 us run alone: 112.5 us
  // = c + f T with c = 100 us, f = 0.25, T = 50 us.
  CHECK(ex.timing(kernel).end.picoseconds() == Duration::ns(112'500).picoseconds());
}

TEST_CASE("long chains of zero-time tasks do not recurse; a cycle is reported", "[unit][step][exec]") {
  TaskGraph g;
  const auto s0 = g.add_stream(0, 0, "compute");
  const auto l = g.add_label("m", "marker");
  TaskSpec m;
  m.stream = s0;
  m.label = l;
  m.work = WorkKind::MARKER;
  for (int i = 0; i < 200'000; ++i) g.add(m);
  Simulation sim;
  auto& ex = sim.emplace_model<StreamExecutor>(sim, g, nullptr);
  ex.run();
  CHECK(ex.finished() == 200'000);

  TaskGraph cyc;
  const auto a = cyc.add_stream(0, 0, "a");
  const auto b = cyc.add_stream(0, 1, "b");
  const auto lc = cyc.add_label("t", "compute");
  const TaskId x = cyc.add(compute_on(a, lc, Duration::us(1)));
  const TaskId y = cyc.add(compute_on(b, lc, Duration::us(1)));
  cyc.depend(x, y);
  cyc.depend(y, x);
  Simulation sim2;
  auto& ex2 = sim2.emplace_model<StreamExecutor>(sim2, cyc, nullptr);
  CHECK_THROWS_AS(ex2.run(), RuntimeError);
}
