#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "sim/net/max_min_solver.hpp"

using namespace clustersim::sim;

namespace {

constexpr double NO_CAP = MaxMinSolver::NO_CAP;

// Solves once from scratch: every flow added, one solve.
std::vector<double> solve_fresh(const std::vector<double>& capacities, const std::vector<std::vector<LinkId>>& routes,
                                const std::vector<double>& caps) {
  MaxMinSolver s(capacities);
  for (std::uint32_t f = 0; f < routes.size(); ++f) s.add_flow(f, routes[f], caps[f]);
  s.solve();
  std::vector<double> r;
  for (std::uint32_t f = 0; f < routes.size(); ++f) r.push_back(s.rate(f));
  return r;
}

// Textbook progressive filling, written independently of the solver: raise every unfrozen flow
// by the largest common step that fits (the least of each link's room over its unfrozen flows and
// each flow's distance to its cap), freeze the flows at their cap or on a link left full, repeat.
// O(rounds x (links + hops)); a reference for the incremental solver, not a fast path.
std::vector<double> reference_max_min(const std::vector<double>& capacities,
                                      const std::vector<std::vector<LinkId>>& routes, const std::vector<double>& caps) {
  const std::size_t n = routes.size();
  std::vector<double> rate(n, 0);
  std::vector<bool> frozen(n, false);
  std::size_t left = n;
  while (left > 0) {
    std::vector<double> load(capacities.size(), 0);
    std::vector<int> unfrozen(capacities.size(), 0);
    for (std::size_t f = 0; f < n; ++f) {
      for (const LinkId l : routes[f]) {
        load[l] += rate[f];
        if (!frozen[f]) ++unfrozen[l];
      }
    }
    double step = NO_CAP;
    for (std::size_t l = 0; l < capacities.size(); ++l) {
      if (unfrozen[l] > 0) step = std::min(step, std::max(0.0, capacities[l] - load[l]) / unfrozen[l]);
    }
    for (std::size_t f = 0; f < n; ++f) {
      if (!frozen[f]) step = std::min(step, caps[f] - rate[f]);
    }
    REQUIRE(step != NO_CAP);
    std::fill(load.begin(), load.end(), 0.0);
    for (std::size_t f = 0; f < n; ++f) {
      if (!frozen[f]) rate[f] += step;
      for (const LinkId l : routes[f]) load[l] += rate[f];
    }
    for (std::size_t f = 0; f < n; ++f) {
      if (frozen[f]) continue;
      bool stop = rate[f] >= caps[f] * (1 - 1e-12);
      for (const LinkId l : routes[f]) stop = stop || load[l] >= capacities[l] * (1 - 1e-12);
      if (stop) {
        frozen[f] = true;
        --left;
      }
    }
  }
  return rate;
}

// The incremental solver's rates against a solve from scratch and against the textbook reference,
// for the flows present (slot -> route, cap).
void check_against_fresh(const MaxMinSolver& inc, const std::vector<double>& capacities,
                         const std::map<std::uint32_t, std::pair<std::vector<LinkId>, double>>& present) {
  std::vector<std::vector<LinkId>> routes;
  std::vector<double> caps;
  std::vector<std::uint32_t> slots;
  for (const auto& [slot, rc] : present) {
    slots.push_back(slot);
    routes.push_back(rc.first);
    caps.push_back(rc.second);
  }
  const auto fresh = solve_fresh(capacities, routes, caps);
  const auto reference = reference_max_min(capacities, routes, caps);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    CHECK(inc.rate(slots[i]) == Approx(fresh[i]).epsilon(1e-9).margin(1e-9));
    CHECK(inc.rate(slots[i]) == Approx(reference[i]).epsilon(1e-9).margin(1e-9));
  }
}

}  // namespace

TEST_CASE("the reference filling agrees with the textbook example", "[unit][net][maxmin]") {
  // Links of capacity 1; flow 0 crosses links 0 and 1, flow 1 link 0, flow 2 link 1, flow 3 link 1
  // capped at 0.1: flow 3 stops at 0.1; link 1 fills when 0.1 + 2x = 1 -> x = 0.45 (flows 0 and 2);
  // flow 1 takes what link 0 leaves: 1 - 0.45 = 0.55.
  const auto r = reference_max_min({1, 1}, {{0, 1}, {0}, {1}, {1}}, {NO_CAP, NO_CAP, NO_CAP, 0.1});
  CHECK(r[0] == Approx(0.45));
  CHECK(r[1] == Approx(0.55));
  CHECK(r[2] == Approx(0.45));
  CHECK(r[3] == Approx(0.1));
}

TEST_CASE("one flow takes the narrowest link of its route", "[unit][net][maxmin]") {
  MaxMinSolver s(std::vector<double>{10, 4, 7});
  s.add_flow(0, std::vector<LinkId>{0, 1, 2}, NO_CAP);
  const auto changes = s.solve();
  REQUIRE(changes.size() == 1);
  // min(10, 4, 7) = 4.
  CHECK(s.rate(0) == Approx(4));
  CHECK(s.saturated(1));
  CHECK_FALSE(s.saturated(0));
}

TEST_CASE("two flows on one link share it equally", "[unit][net][maxmin]") {
  MaxMinSolver s(std::vector<double>{10});
  s.add_flow(0, std::vector<LinkId>{0}, NO_CAP);
  s.add_flow(1, std::vector<LinkId>{0}, NO_CAP);
  s.solve();
  // 10 / 2 = 5 each.
  CHECK(s.rate(0) == Approx(5));
  CHECK(s.rate(1) == Approx(5));
  s.remove_flow(0);
  s.solve();
  // Alone again: the whole 10.
  CHECK(s.rate(1) == Approx(10));
}

TEST_CASE("the linear network: one long flow and one short flow per link", "[unit][net][maxmin]") {
  // Bertsekas & Gallager, Data Networks, section 6.5: a session crossing links a, b, c, and one
  // single-link session on each. Flow 0: a, b, c; flow 1: a; flow 2: b; flow 3: c.
  const std::vector<std::vector<LinkId>> routes{{0, 1, 2}, {0}, {1}, {2}};
  const std::vector<double> caps(4, NO_CAP);
  SECTION("equal capacities") {
    // Every link has two flows: level 1/2 everywhere, every session gets 1/2.
    const auto r = solve_fresh({1, 1, 1}, routes, caps);
    for (double x : r) CHECK(x == Approx(0.5));
  }
  SECTION("capacities 1, 2, 3") {
    // Fill: link a saturates first at 1/2 (1 / 2 flows) freezing flows 0 and 1 at 0.5; link b
    // then has 2 - 0.5 = 1.5 left for flow 2; link c has 3 - 0.5 = 2.5 left for flow 3.
    const auto r = solve_fresh({1, 2, 3}, routes, caps);
    CHECK(r[0] == Approx(0.5));
    CHECK(r[1] == Approx(0.5));
    CHECK(r[2] == Approx(1.5));
    CHECK(r[3] == Approx(2.5));
  }
}

TEST_CASE("the classic 3-link, 4-flow example", "[unit][net][maxmin]") {
  // Links L0 = 10, L1 = 8, L2 = 9 (units per second). Flows: A on L0, L1; B on L0; C on L1, L2;
  // D on L2.
  // Fill: levels L0 = 10/2 = 5, L1 = 8/2 = 4, L2 = 9/2 = 4.5. L1 fills first at 4: A = C = 4.
  // L0: 10 - 4 = 6 left for B alone -> B = 6. L2: 9 - 4 = 5 left for D -> D = 5.
  // Check: L0 4 + 6 = 10, L1 4 + 4 = 8, L2 4 + 5 = 9, all saturated; A and C have L1 as their
  // bottleneck (nobody on L1 is faster), B has L0, D has L2.
  const auto r = solve_fresh({10, 8, 9}, {{0, 1}, {0}, {1, 2}, {2}}, std::vector<double>(4, NO_CAP));
  CHECK(r[0] == Approx(4));
  CHECK(r[1] == Approx(6));
  CHECK(r[2] == Approx(4));
  CHECK(r[3] == Approx(5));
}

TEST_CASE("a rate cap holds a flow below its share and frees the rest", "[unit][net][maxmin]") {
  // Link of 10; flow 0 capped at 2; flows 1 and 2 share the remaining 8 -> 4 each.
  const auto r = solve_fresh({10}, {{0}, {0}, {0}}, {2, NO_CAP, NO_CAP});
  CHECK(r[0] == Approx(2));
  CHECK(r[1] == Approx(4));
  CHECK(r[2] == Approx(4));
  // A cap above the fair share does not bind: caps 6, 6, 6 on 10 -> 10/3 each.
  const auto q = solve_fresh({10}, {{0}, {0}, {0}}, {6, 6, 6});
  for (double x : q) CHECK(x == Approx(10.0 / 3));
  // A flow with no link moves at its cap.
  const auto z = solve_fresh({10}, {{}}, {3});
  CHECK(z[0] == Approx(3));
}

TEST_CASE("a flow ending on unsaturated links costs no recomputation", "[unit][net][maxmin]") {
  MaxMinSolver s(std::vector<double>{10, 10});
  s.add_flow(0, std::vector<LinkId>{0}, 2);  // capped: link 0 carries 2 of 10
  s.add_flow(1, std::vector<LinkId>{1}, NO_CAP);
  s.solve();
  const auto solves = s.counters().solves;
  s.remove_flow(0);
  CHECK_FALSE(s.needs_solve());
  CHECK(s.solve().empty());
  CHECK(s.counters().solves == solves);
  // A capped flow that fits where it starts is solved alone: one flow in the fill.
  const auto solved = s.counters().flows_solved;
  s.add_flow(2, std::vector<LinkId>{0}, 3);
  s.solve();
  CHECK(s.counters().flows_solved == solved + 1);
  CHECK(s.rate(2) == Approx(3));
}

TEST_CASE("a flow that speeds up brings the flows held on its other saturated links into one fill",
          "[unit][net][maxmin]") {
  // Link 0 (capacity 10) carries f0 and f1; link 1 (12) carries f1 and f2. Progressive filling:
  // link 0's level 10/2 = 5 comes before link 1's 12/2 = 6, so f0 = f1 = 5 on link 0, then f2 takes
  // the 12 - 5 = 7 left on link 1 (bottlenecked there, and no slower than f1 on it).
  MaxMinSolver s(std::vector<double>{10, 12});
  s.add_flow(0, std::vector<LinkId>{0}, NO_CAP);
  s.add_flow(1, std::vector<LinkId>{0, 1}, NO_CAP);
  s.add_flow(2, std::vector<LinkId>{1}, NO_CAP);
  s.solve();
  CHECK(s.rate(0) == Approx(5));
  CHECK(s.rate(1) == Approx(5));
  CHECK(s.rate(2) == Approx(7));
  // f0 ends: f1 alone on link 0 could take 10, but link 1 now splits 12 between f1 and f2: 6 each.
  // f1 seeds the solve (held on the saturated link a flow left); f2, held on the saturated link 1
  // that f1 crosses, joins at once, so one fill of both settles it (without it, f1 alone would be
  // filled to 5 against f2's 7, f2 found running faster on the link that froze f1, and both filled
  // again).
  const auto fills = s.counters().fills;
  s.remove_flow(0);
  const auto changes = s.solve();
  CHECK(s.counters().fills == fills + 1);
  CHECK(changes.size() == 2);
  CHECK(s.rate(1) == Approx(6));
  CHECK(s.rate(2) == Approx(6));
}

TEST_CASE("incremental solves agree with solving from scratch", "[unit][net][maxmin]") {
  // Random flows (1 to 4 links of 12, some capped) start and end; after every change the
  // incremental rates must equal those of a fresh solve of the flows present.
  std::mt19937_64 rng(12345);
  const std::vector<double> capacities{10, 12, 8, 20, 5, 15, 9, 11, 7, 30, 6, 14};
  MaxMinSolver inc(capacities);
  std::map<std::uint32_t, std::pair<std::vector<LinkId>, double>> present;
  std::uint32_t next = 0;
  std::vector<std::uint32_t> free_slots;
  int checks = 0;
  for (int step = 0; step < 600; ++step) {
    const bool add = present.size() < 3 || (present.size() < 40 && rng() % 100 < 55);
    if (add) {
      std::uint32_t slot;
      if (!free_slots.empty() && rng() % 2 == 0) {
        slot = free_slots.back();
        free_slots.pop_back();
      } else {
        slot = next++;
      }
      std::vector<LinkId> route;
      const std::size_t hops = 1 + rng() % 4;
      while (route.size() < hops) {
        const auto l = static_cast<LinkId>(rng() % capacities.size());
        if (std::find(route.begin(), route.end(), l) == route.end()) route.push_back(l);
      }
      const double cap = rng() % 3 == 0 ? 0.5 + static_cast<double>(rng() % 80) / 10 : NO_CAP;
      inc.add_flow(slot, route, cap);
      present[slot] = {route, cap};
    } else {
      auto it = present.begin();
      std::advance(it, static_cast<long>(rng() % present.size()));
      inc.remove_flow(it->first);
      free_slots.push_back(it->first);
      present.erase(it);
    }
    // Sometimes batch two changes into one solve.
    if (rng() % 4 == 0) continue;
    inc.solve();
    check_against_fresh(inc, capacities, present);
    ++checks;
  }
  CHECK(checks > 300);
}

TEST_CASE("incremental solves agree with solving from scratch on large random networks", "[unit][net][maxmin]") {
  // Many flows per link, so that fills take the heap path and parts of A are refilled; also links
  // that turn hot and cold as flows come and go.
  for (const std::uint64_t seed : {7ULL, 8ULL, 9ULL}) {
    std::mt19937_64 rng(seed);
    std::vector<double> capacities;
    for (int l = 0; l < 40; ++l) capacities.push_back(5.0 + static_cast<double>(rng() % 200) / 4);
    MaxMinSolver inc(capacities);
    std::map<std::uint32_t, std::pair<std::vector<LinkId>, double>> present;
    std::uint32_t next = 0;
    for (int step = 0; step < 400; ++step) {
      const int burst = 1 + static_cast<int>(rng() % 6);
      for (int b = 0; b < burst; ++b) {
        if (present.size() < 60 || (present.size() < 160 && rng() % 100 < 52)) {
          std::vector<LinkId> route;
          const std::size_t hops = 1 + rng() % 5;
          while (route.size() < hops) {
            const auto l = static_cast<LinkId>(rng() % capacities.size());
            if (std::find(route.begin(), route.end(), l) == route.end()) route.push_back(l);
          }
          const double cap = rng() % 4 == 0 ? NO_CAP : 0.2 + static_cast<double>(rng() % 100) / 8;
          inc.add_flow(next, route, cap);
          present[next++] = {route, cap};
        } else {
          auto it = present.begin();
          std::advance(it, static_cast<long>(rng() % present.size()));
          inc.remove_flow(it->first);
          present.erase(it);
        }
      }
      inc.solve();
      if (step % 10 != 0) continue;
      check_against_fresh(inc, capacities, present);
      // Feasible: no link carries more than its capacity.
      for (LinkId l = 0; l < capacities.size(); ++l) CHECK(inc.load(l) <= capacities[l] * (1 + 1e-9));
    }
  }
}

TEST_CASE("links marked never-binding stay out of the sharing", "[unit][net][maxmin]") {
  // Link 1 (capacity 5) is declared never-binding: two uncapped flows on links 0 (10) and 1 share
  // only link 0 -> 5 each, even though link 1 would hold them to 2.5.
  const std::vector<double> capacities{10, 5};
  const std::vector<std::uint8_t> never{0, 1};
  MaxMinSolver s(capacities, never);
  s.add_flow(0, std::vector<LinkId>{0, 1}, NO_CAP);
  s.add_flow(1, std::vector<LinkId>{0, 1}, NO_CAP);
  s.solve();
  CHECK(s.rate(0) == Approx(5));
  CHECK(s.rate(1) == Approx(5));
  CHECK_FALSE(s.hot(1));
  // Its load is still reported (summed from its flows).
  CHECK(s.load(1) == Approx(10));
}
