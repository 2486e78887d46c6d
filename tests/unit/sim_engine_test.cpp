#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "hardware/errors.hpp"
#include "sim/engine/simulation.hpp"
#include "sim/engine/tiered_heap.hpp"

using namespace clustersim;
using namespace clustersim::sim;

namespace {

struct Recorder : EventHandler {
  std::vector<std::pair<std::int64_t, std::uint64_t>> seen;  // (time ps, tag)
  void handle_event(Simulation& sim, std::uint64_t tag) override { seen.emplace_back(sim.now().picoseconds(), tag); }
};

struct BusyModel : Model {
  int open = 0;
  std::string_view model_name() const override { return "busy"; }
  void describe_unfinished(std::vector<std::string>& out) const override {
    if (open > 0) out.push_back(std::to_string(open) + " tasks open");
  }
};

}  // namespace

TEST_CASE("time points add durations and subtract to durations", "[unit][engine]") {
  const TimePoint t = TimePoint::zero() + Duration::us(3);
  // 3 us = 3,000,000 ps.
  CHECK(t.picoseconds() == 3'000'000);
  CHECK((t - TimePoint::zero()) == Duration::us(3));
  CHECK((t + Duration::ns(5)) - t == Duration::ns(5));
  CHECK(Duration::ns(1) + t > t);
  CHECK(format_time(t) == "t=3 us");
}

TEST_CASE("events run in (time, insertion sequence) order", "[unit][engine]") {
  Simulation sim;
  Recorder r;
  // Scheduled out of order; equal times keep the order they were scheduled in.
  sim.schedule_at(TimePoint::from_picoseconds(5), r, 1);
  sim.schedule_at(TimePoint::from_picoseconds(3), r, 2);
  sim.schedule_at(TimePoint::from_picoseconds(5), r, 3);
  sim.schedule_at(TimePoint::from_picoseconds(1), r, 4);
  sim.schedule_at(TimePoint::from_picoseconds(3), r, 5);
  sim.run();
  const std::vector<std::pair<std::int64_t, std::uint64_t>> expected{{1, 4}, {3, 2}, {3, 5}, {5, 1}, {5, 3}};
  CHECK(r.seen == expected);
  CHECK(sim.now() == TimePoint::from_picoseconds(5));
  CHECK_NOTHROW(sim.check_all_handled());
  CHECK(sim.counts().scheduled == 5);
  CHECK(sim.counts().handled == 5);
}

TEST_CASE("an event scheduled for the current time runs after those already queued for it", "[unit][engine]") {
  Simulation sim;
  std::vector<std::string> order;
  sim.schedule_at(TimePoint::from_picoseconds(10), [&] {
    order.push_back("a");
    sim.schedule_after(Duration::zero(), [&] { order.push_back("c"); });
  });
  sim.schedule_at(TimePoint::from_picoseconds(10), [&] { order.push_back("b"); });
  sim.run();
  CHECK(order == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("cancelled events do not run and stale ids cancel nothing", "[unit][engine]") {
  Simulation sim;
  Recorder r;
  const EventId a = sim.schedule_at(TimePoint::from_picoseconds(2), r, 1);
  const EventId b = sim.schedule_at(TimePoint::from_picoseconds(4), r, 2);
  CHECK(sim.is_pending(a));
  CHECK(sim.cancel(a));
  CHECK_FALSE(sim.cancel(a));  // already cancelled
  CHECK_FALSE(sim.is_pending(a));
  // The freed slot is reused with a new generation: the old id must not reach the new event.
  const EventId c = sim.schedule_at(TimePoint::from_picoseconds(3), r, 3);
  CHECK(c.slot == a.slot);
  CHECK_FALSE(sim.cancel(a));
  CHECK(sim.is_pending(c));
  sim.run();
  const std::vector<std::pair<std::int64_t, std::uint64_t>> expected{{3, 3}, {4, 2}};
  CHECK(r.seen == expected);
  CHECK_FALSE(sim.cancel(b));  // already ran
  CHECK(sim.counts().cancelled == 1);
  CHECK_NOTHROW(sim.check_all_handled());
}

TEST_CASE("run_until handles events up to a time and stops the clock there", "[unit][engine]") {
  Simulation sim;
  Recorder r;
  for (std::uint64_t i = 1; i <= 4; ++i) sim.schedule_at(TimePoint::from_picoseconds(static_cast<std::int64_t>(10 * i)), r, i);
  sim.run_until(TimePoint::from_picoseconds(20));
  // Events at 10 and 20 (inclusive) ran; 30 and 40 wait.
  CHECK(r.seen.size() == 2);
  CHECK(sim.now() == TimePoint::from_picoseconds(20));
  CHECK(sim.pending_events() == 2);
  CHECK(sim.next_event_time() == TimePoint::from_picoseconds(30));
  // Two events were neither handled nor cancelled.
  CHECK_THROWS_AS(sim.check_all_handled(), RuntimeError);
  sim.run_until(TimePoint::from_picoseconds(25));
  CHECK(sim.now() == TimePoint::from_picoseconds(25));
  sim.run();
  CHECK(r.seen.size() == 4);
  CHECK_NOTHROW(sim.check_all_handled());
  CHECK_THROWS_AS(sim.run_until(TimePoint::from_picoseconds(1)), std::logic_error);
}

TEST_CASE("events cannot be scheduled in the past", "[unit][engine]") {
  Simulation sim;
  sim.schedule_at(TimePoint::from_picoseconds(100), [] {});
  sim.run();
  CHECK_THROWS_AS(sim.schedule_at(TimePoint::from_picoseconds(50), [] {}), std::logic_error);
  CHECK_THROWS_AS(sim.schedule_at(TimePoint::from_picoseconds(200), EventCallback{}), std::logic_error);
}

TEST_CASE("the all-handled check asks the models for work left", "[unit][engine]") {
  Simulation sim;
  BusyModel& m = sim.emplace_model<BusyModel>();
  CHECK(sim.model_count() == 1);
  m.open = 2;
  try {
    sim.check_all_handled();
    FAIL("expected a RuntimeError");
  } catch (const RuntimeError& e) {
    CHECK(std::string(e.what()).find("busy: 2 tasks open") != std::string::npos);
  }
  m.open = 0;
  CHECK_NOTHROW(sim.check_all_handled());
}

TEST_CASE("step handles one event at a time", "[unit][engine]") {
  Simulation sim;
  int n = 0;
  sim.schedule_after(Duration::ns(1), [&] { ++n; });
  sim.schedule_after(Duration::ns(2), [&] { ++n; });
  CHECK(sim.step());
  CHECK(n == 1);
  CHECK(sim.now() == TimePoint::zero() + Duration::ns(1));
  CHECK(sim.step());
  CHECK_FALSE(sim.step());
  CHECK(n == 2);
}

TEST_CASE("a handler may move the clock on only when nothing else comes first", "[unit][engine]") {
  // Events at 10 and 20. Inside the handler at 10, moving to 15 is what the queue would do next
  // (nothing before 15); moving to 25 would jump over the event at 20.
  auto scenario = [](auto run, bool expect_15, bool expect_25) {
    Simulation sim;
    bool moved_15 = false;
    bool moved_25 = false;
    sim.schedule_at(TimePoint::from_picoseconds(10), [&] {
      moved_15 = sim.advance_to(TimePoint::from_picoseconds(15));
      moved_25 = sim.advance_to(TimePoint::from_picoseconds(25));
    });
    sim.schedule_at(TimePoint::from_picoseconds(20), [] {});
    run(sim);
    CHECK(moved_15 == expect_15);
    CHECK(moved_25 == expect_25);
    CHECK_NOTHROW(sim.check_all_handled());
    // A move counts as one event scheduled and handled: 2 + (1 if moved).
    CHECK(sim.counts().handled == (expect_15 ? 3U : 2U));
  };
  scenario([](Simulation& s) { s.run(); }, true, false);
  // run_until(12) ends the run at 12: no move past it.
  scenario([](Simulation& s) { s.run_until(TimePoint::from_picoseconds(12)); s.run(); }, false, false);
  // A single step() allows no move.
  scenario([](Simulation& s) { while (s.step()) {} }, false, false);
}

TEST_CASE("a tiered heap pops what one ordered set pops, through pushes, re-keys and removals",
          "[unit][engine]") {
  // Ties of time broken by a sequence per id, as the flow network's queue breaks them.
  std::vector<std::uint64_t> seq(600);
  struct BySeq {
    const std::vector<std::uint64_t>* seq;
    bool operator()(std::int64_t a, std::uint32_t a_id, std::int64_t b, std::uint32_t b_id) const {
      return a < b || (a == b && (*seq)[a_id] < (*seq)[b_id]);
    }
  };
  TieredHeap<BySeq> heap(BySeq{&seq});
  std::set<std::tuple<std::int64_t, std::uint64_t, std::uint32_t>> reference;
  std::vector<std::int64_t> key(seq.size(), -1);
  std::uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  std::uint64_t next_seq = 0;
  std::int64_t now = 0;
  for (int step = 0; step < 200000; ++step) {
    const auto id = static_cast<std::uint32_t>(next() % seq.size());
    const std::uint64_t op = next() % 10;
    // Times from now on, on a coarse grid so that equal times are common.
    const std::int64_t t = now + static_cast<std::int64_t>(next() % 64) * 1000;
    if (op < 6) {
      if (key[id] >= 0) reference.erase({key[id], seq[id], id});
      if (key[id] < 0) seq[id] = next_seq++;
      heap.push_or_update(id, t);
      key[id] = t;
      reference.insert({t, seq[id], id});
    } else if (op < 7) {
      if (key[id] >= 0) reference.erase({key[id], seq[id], id});
      heap.erase(id);
      key[id] = -1;
    } else if (!reference.empty()) {
      const auto [k, s, top] = *reference.begin();
      REQUIRE(heap.top_id() == top);
      REQUIRE(heap.top_key() == k);
      heap.pop();
      reference.erase(reference.begin());
      key[top] = -1;
      now = k;
    }
    REQUIRE(heap.size() == reference.size());
    REQUIRE(heap.empty() == reference.empty());
    REQUIRE(heap.contains(id) == (key[id] >= 0));
  }
}
