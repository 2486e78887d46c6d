// The step program's analytic pass on programs small enough to time by hand.

#include <catch2/catch.hpp>

#include <cmath>

#include "sim/nccl/step_program.hpp"

using namespace clustersim;
using namespace clustersim::sim::nccl;

namespace {

Hop hop(double gbps, double latency_us) {
  Hop h;
  h.rate = Bandwidth::gigabytes_per_second(gbps);
  h.latency = Duration::from_seconds(latency_us * 1e-6);
  return h;
}

}  // namespace

TEST_CASE("a connection sends in order and pipelines its latency", "[unit][nccl]") {
  StepProgram p;
  const int h = p.add_hop(hop(10, 5));
  const int c = p.add_connection(8);
  // Three 1 MB transfers on one connection: 100 us each back to back; the last arrives 5 us later:
  // 3 x 1e6 B / 10 GB/s + 5 us = 305 us.
  for (int i = 0; i < 3; ++i) p.add(h, c, 1e6);
  CHECK(evaluate_program(p).total.microseconds() == Approx(305.0));
}

TEST_CASE("a dependency waits for the arrival", "[unit][nccl]") {
  StepProgram p;
  p.fixed = Duration::us(2);
  const int h = p.add_hop(hop(10, 5));
  const int a = p.add(h, p.add_connection(8), 1e6);
  p.add(h, p.add_connection(8), 1e6, {a});
  // t0 = 2 us; first: 2 + 100 = 102, arrives 107; second starts at 107, finishes 207, arrives 212.
  CHECK(evaluate_program(p).total.microseconds() == Approx(212.0));
}

TEST_CASE("the credit window stalls a fast sender behind a slow reader", "[unit][nccl]") {
  StepProgram p;
  const int fast = p.add_hop(hop(10, 0));
  const int slow = p.add_hop(hop(1, 0));
  const int c_fast = p.add_connection(1);  // one slot: each step waits for the previous to be read
  const int c_slow = p.add_connection(8);
  // Fast sends 1 MB (100 us); the reader forwards it slowly (1000 us) and frees the slot only then.
  const int a = p.add(fast, c_fast, 1e6);
  p.add(slow, c_slow, 1e6, {a}, true);
  const int b = p.add(fast, c_fast, 1e6);
  p.add(slow, c_slow, 1e6, {b}, true);
  // a: 0-100; reader: 100-1100; b waits for the slot: 1100-1200; reader: 1200-2200 (its
  // connection is free at 1100, b arrives at 1200).
  CHECK(evaluate_program(p).total.microseconds() == Approx(2200.0));
}

TEST_CASE("rates split a resource in proportion to what each flow moves", "[unit][nccl]") {
  StepProgram p;
  Hop a = hop(0, 0), b = hop(0, 0);
  a.loads = {{ResourceKind::NVLINK_OUT, 2}};
  b.loads = {{ResourceKind::NVLINK_OUT, 1}};
  a.bytes_per_cycle = 1e6;
  b.bytes_per_cycle = 2e6;
  a.channel_cap = b.channel_cap = Bandwidth::gigabytes_per_second(1000);
  p.add_hop(a);
  p.add_hop(b);
  Capacities caps;
  caps.per_instance[static_cast<int>(ResourceKind::NVLINK_OUT)] = Bandwidth::gigabytes_per_second(400);
  assign_rates(p, caps);
  // Per cycle the link moves 2 x 1 MB + 1 x 2 MB = 4 MB at 400 GB/s: 10 us. Each flow moves its
  // bytes in that time: a 1 MB / 10 us = 100 GB/s, b 2 MB / 10 us = 200 GB/s.
  CHECK(p.hops[0].rate.gigabytes_per_second() == Approx(100.0));
  CHECK(p.hops[1].rate.gigabytes_per_second() == Approx(200.0));
}

TEST_CASE("NVLink's knee: channels near the link's rate get less than the hard minimum", "[unit][nccl]") {
  // 12 channels of a 4-rank ring, each capped at 25 GB/s, on an NVLink of 360 GB/s (payload), LL128's
  // 16/15 wire bytes per payload byte.
  auto ring = [](double knee) {
    StepProgram p;
    Hop h = hop(0, 0);
    h.loads = {{ResourceKind::NVLINK_OUT, 12}, {ResourceKind::NVLINK_IN, 12}};
    h.bytes_per_cycle = 1e6;
    h.wire_factor = 16.0 / 15.0;
    h.channel_cap = Bandwidth::gigabytes_per_second(25);
    p.add_hop(h);
    Capacities caps;
    caps.per_instance[static_cast<int>(ResourceKind::NVLINK_OUT)] = Bandwidth::gigabytes_per_second(360);
    caps.per_instance[static_cast<int>(ResourceKind::NVLINK_IN)] = Bandwidth::gigabytes_per_second(360);
    caps.nvlink_knee = knee;
    assign_rates(p, caps);
    return p.hops[0];
  };
  // Hard minimum: the wire share is 360 / 12 / (16/15) = 28.125 GB/s of payload, above the cap:
  // every channel runs at its 25 GB/s (300 GB/s in all).
  const Hop hard = ring(0);
  CHECK(hard.rate.gigabytes_per_second() == Approx(25.0));
  CHECK(std::isinf(hard.soft_cap.bytes_per_second()));
  // Knee p = 3.2, in payload bytes: each channel's share of the link is 360 / 12 = 30 GB/s, so
  // rate = (25^-3.2 + 30^-3.2)^(-1/3.2) = 25 (1 + (25/30)^3.2)^(-1/3.2) = 25 / 1.1486 = 21.77 GB/s
  // (261 GB/s in all: the 4 x H200 ring measures 263.8 GB/s busbw with Simple at 12 channels).
  const Hop soft = ring(3.2);
  CHECK(soft.rate.gigabytes_per_second() == Approx(21.77).epsilon(0.001));
  CHECK(soft.soft_cap.gigabytes_per_second() == Approx(21.77).epsilon(0.001));
  // Far from the link (2 channels' worth of share) the knee costs almost nothing: the share is
  // 180 GB/s, 25 (1 + (25/180)^3.2)^(-1/3.2) = 24.98 GB/s.
  StepProgram p;
  Hop h = hop(0, 0);
  h.loads = {{ResourceKind::NVLINK_OUT, 2}};
  h.bytes_per_cycle = 1e6;
  h.channel_cap = Bandwidth::gigabytes_per_second(25);
  p.add_hop(h);
  Capacities caps;
  caps.per_instance[static_cast<int>(ResourceKind::NVLINK_OUT)] = Bandwidth::gigabytes_per_second(360);
  caps.nvlink_knee = 3.2;
  assign_rates(p, caps);
  CHECK(p.hops[0].rate.gigabytes_per_second() == Approx(24.98).epsilon(0.001));
}

TEST_CASE("the NVLink ramp: a launch's channels get less of the link early on", "[unit][nccl]") {
  // d = 0.2, tau = 1 ms: the link's share is scaled by 1 - 0.2 e^(-t / 1 ms): 0.8 at the start,
  // 1 - 0.2 / e = 0.92642 after 1 ms, 1 - 0.2 e^-10 = 0.99999 after 10 ms.
  const NvlinkRamp ramp{0.2, 1e-3};
  CHECK(ramp.factor(0) == Approx(0.8));
  CHECK(ramp.factor(1e-3) == Approx(1 - 0.2 / std::exp(1.0)));
  CHECK(ramp.factor(-1) == Approx(0.8));  // before t0: the start
  CHECK(NvlinkRamp{}.factor(0) == 1.0);

  // 24 channels of a 2-rank ring, each capped at 20 GB/s, on 360 GB/s of NVLink, hard minimum:
  // the share is 360 / 24 = 15 GB/s, below the cap: 15 GB/s at the ramp's end, 0.8 x 15 = 12 at
  // its start.
  StepProgram p;
  Hop h = hop(0, 0);
  h.loads = {{ResourceKind::NVLINK_OUT, 24}};
  h.bytes_per_cycle = 1e6;
  h.channel_cap = Bandwidth::gigabytes_per_second(20);
  p.add_hop(h);
  Capacities caps;
  caps.per_instance[static_cast<int>(ResourceKind::NVLINK_OUT)] = Bandwidth::gigabytes_per_second(360);
  caps.ramp = ramp;
  assign_rates(p, caps);
  CHECK(p.hops[0].rate.gigabytes_per_second() == Approx(15.0));
  CHECK(rate_at(p, p.hops[0], 0) / 1e9 == Approx(12.0));
  CHECK(rate_at(p, p.hops[0], 1e-3) / 1e9 == Approx(15.0 * (1 - 0.2 / std::exp(1.0))));
  CHECK(flow_cap_at(p, p.hops[0], 0) / 1e9 == Approx(12.0));
  // With the knee p = 3.2 at the start: 20 (1 + (20 / 12)^3.2)^(-1/3.2) = 20 (1 + 5.127)^(-1/3.2)
  // = 20 / 1.7621 = 11.35 GB/s.
  caps.nvlink_knee = 3.2;
  assign_rates(p, caps);
  CHECK(rate_at(p, p.hops[0], 0) / 1e9 == Approx(20 * std::pow(1 + std::pow(20.0 / 12.0, 3.2), -1 / 3.2)));
  CHECK(rate_at(p, p.hops[0], 0) / 1e9 == Approx(11.35).epsilon(0.001));

  // A channel's 10 transfers of 1.5 MB back to back at 15 GB/s would take 1 ms; with the ramp the
  // first starts at 12 GB/s (125 us), the second at 15 (1 - 0.2 e^-0.125) = 12.35 GB/s, ... each
  // at the rate of its own start, so the whole takes longer than 1 ms and less than 1.25 ms:
  // t_{k+1} = t_k + 1.5e6 / (15e9 (1 - 0.2 e^(-t_k / 1 ms))), summed here as the pass does.
  StepProgram q;
  Hop one = hop(0, 0);
  one.loads = {{ResourceKind::NVLINK_OUT, 1}};
  one.bytes_per_cycle = 1e6;
  one.channel_cap = Bandwidth::gigabytes_per_second(1000);
  const int hi = q.add_hop(one);
  const int c = q.add_connection(8);
  for (int i = 0; i < 10; ++i) q.add(hi, c, 1.5e6);
  Capacities qc;
  qc.per_instance[static_cast<int>(ResourceKind::NVLINK_OUT)] = Bandwidth::gigabytes_per_second(15);
  qc.ramp = ramp;
  assign_rates(q, qc);
  double t = 0;
  for (int i = 0; i < 10; ++i) t += 1.5e6 / (15e9 * (1 - 0.2 * std::exp(-t / 1e-3)));
  CHECK(evaluate_program(q).total.seconds() == Approx(t));
  CHECK(t > 1.0e-3);
  CHECK(t < 1.25e-3);
}

TEST_CASE("a chain's upstream kernels run ahead when launched back to back", "[unit][nccl]") {
  StepProgram p;
  p.fixed = Duration::us(2);
  const int h = p.add_hop(hop(10, 5));
  const int c0 = p.add_connection(8);
  const int c1 = p.add_connection(8);
  // Two chunks of 1 MB down a chain of two hops (rank 0 -> 1 -> 2).
  const int a0 = p.add(h, c0, 1e6);
  p.add(h, c1, 1e6, {a0}, true);
  const int a1 = p.add(h, c0, 1e6);
  p.add(h, c1, 1e6, {a1}, true);
  // Single pass: c0 sends at 2-102 and 102-202 (arrivals 107, 207); c1 forwards at 107-207 and
  // 207-307, arriving 312 us.
  // Back to back each rank only does its own part: t0 + the longest connection span, start of its
  // first send to the arrival of its last = 2 + (312 - 107) = 207 us (c0: 2 + 205 = 207 too).
  CHECK(evaluate_program(p).total.microseconds() == Approx(312.0));
  CHECK(evaluate_program(p).loop.microseconds() == Approx(312.0));  // not marked: launches do not overlap
  p.kernels_run_ahead = true;
  CHECK(evaluate_program(p).loop.microseconds() == Approx(207.0));
  // Over the network the hop's latency is spent between the kernels: back to back it is paid once
  // for the loop, not per launch. The single pass is the same (312 us) and each connection's span
  // loses the 5 us: c1 107 -> 307, c0 2 -> 202, loop = 2 + (307 - 107) = 202 us.
  p.hops[h].transport.kind = TransportKind::NET;
  CHECK(evaluate_program(p).total.microseconds() == Approx(312.0));
  CHECK(evaluate_program(p).loop.microseconds() == Approx(202.0));
}

TEST_CASE("socket proxies charged over time: steps that do not overlap each get the whole proxy", "[unit][nccl]") {
  // Two hops through the socket transport, up and down, each loading the proxies with 2 flows
  // (a send and a receive on each node's proxy), the proxies moving 6 GB/s.
  auto program = [](bool over_time) {
    StepProgram p;
    Hop up = hop(0, 0), down = hop(0, 0);
    for (Hop* h : {&up, &down}) {
      h->loads = {{ResourceKind::NIC_OUT, 2}, {ResourceKind::NIC_IN, 2}};
      h->bytes_per_cycle = 1e6;
      h->channel_cap = Bandwidth::gigabytes_per_second(1000);
      h->proxy_shared = over_time;
    }
    const int hu = p.add_hop(up);
    const int hd = p.add_hop(down);
    const int proxy = p.add_shared();
    Capacities caps;
    caps.per_instance[static_cast<int>(ResourceKind::NIC_OUT)] = Bandwidth::gigabytes_per_second(6);
    caps.per_instance[static_cast<int>(ResourceKind::NIC_IN)] = Bandwidth::gigabytes_per_second(6);
    assign_rates(p, caps);
    // One chunk: up, then down once it has arrived.
    const int a = p.add(hu, p.add_connection(8), 1.2e6);
    if (over_time) p.charge_last(-1, 0, proxy);
    p.add(hd, p.add_connection(8), 1.2e6, {a});
    if (over_time) p.charge_last(-1, 0, proxy);
    return p;
  };
  // Static share: both hops' 2 + 2 flows on the 6 GB/s proxy, 1.5 GB/s each, though they never
  // overlap: 2 x 1.2 MB / 1.5 GB/s = 1600 us.
  CHECK(evaluate_program(program(false)).total.microseconds() == Approx(1600.0));
  // Over time each step has the proxy to itself: 2 flows, 3 GB/s: 2 x 1.2 MB / 3 GB/s = 800 us.
  const StepProgram p = program(true);
  CHECK(p.hops[0].link_cost == Approx(2.0 / 6e9));
  CHECK(evaluate_program(p).total.microseconds() == Approx(800.0));
}
