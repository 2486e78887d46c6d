#pragma once
// Max-min fair rates of flows over capacitated directional links, kept up to date incrementally.
//
// The allocation. Links l have capacities C_l (bytes/s); flow f crosses the links of its route R_f
// and may carry a cap c_f (its own rate limit: an NCCL channel's throughput, a protocol's
// efficiency; +inf when absent). The max-min fair allocation r is the unique feasible one
// (sum_{f : l in R_f} r_f <= C_l, r_f <= c_f) in which no flow can gain without taking from a
// flow that has no more than it. Equivalently every flow f is either at its cap, or crosses a
// bottleneck link l: saturated (sum r = C_l) and r_f >= r_g for every g on l.
//
// Progressive filling computes it: raise every unfrozen flow's rate together; when a link fills,
// freeze the flows on it at the current level; when a flow reaches its cap, freeze it there;
// repeat until every flow is frozen. With rem_l the capacity left on l and n_l its unfrozen flows,
// the next event is the smallest of rem_l / n_l over links and c_f over unfrozen flows; a binary
// heap of those keys gives O((F h + L) log(F + L)) for F flows of h hops over L links. Ties are
// broken by id, so the result does not depend on anything but the inputs.
//
// Incremental recomputation. After a flow starts or ends only some rates can move. A link is
// saturated when its load reaches C_l (1 - 1e-9). The solver gathers a set A of flows:
//   - every flow that started;
//   - every flow on a saturated link that a flow ended on (its bottleneck may have loosened);
//   - transitively, every flow on any saturated link crossed by a flow of A (a rate change there
//     moves the share of every flow on that link).
// Links of A that are not saturated keep their other flows ("outsiders") at their rates: A is
// filled against the capacity the outsiders leave, rem_l = C_l - sum_{g not in A} r_g. The result
// is the global max-min allocation unless a link l that was not saturated becomes a bottleneck of
// A at level lambda while an outsider on it runs faster than lambda (it should yield); then l's
// flows join A and the fill is redone. Outsiders keep valid bottlenecks: theirs are saturated
// links, none of which A touches without taking all of their flows in. So:
//   - a flow ending on links none of which is saturated changes no other rate (no other flow had
//     its bottleneck there): no work beyond unlinking it;
//   - a flow starting where its cap fits in what its links have left takes its cap: A = {it}.
// The cost is that of the connected set of flows whose bottleneck can move, not of the network.
//
// Floating point: rates and loads are doubles; a rate that changes by less than 1e-12 of itself
// keeps its old value (no spurious completion-time updates); residuals are clamped at 0.
//
// Link statistics (bytes carried, busy time, saturated time) are integrated exactly between
// changes: bytes += load x dt, with the clock the caller sets before each change.

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "sim/engine/indexed_heap.hpp"
#include "sim/net/net_ids.hpp"

namespace clustersim::sim {

struct LinkUsage {
  double bytes = 0;                 // carried since t = 0
  std::int64_t busy_ps = 0;         // time with at least one flow on the link
  std::int64_t saturated_ps = 0;    // time with the load at capacity
  double load = 0;                  // bytes/s now
  std::uint32_t flows = 0;          // flows on it now
  std::uint32_t peak_flows = 0;     // most flows at once
};

struct SolverCounters {
  std::uint64_t solves = 0;          // recomputations that had work to do
  std::uint64_t flows_solved = 0;    // sum of |A| over fills
  std::uint64_t fills = 0;           // progressive fills (>= solves: a fill is redone when A grows)
  std::uint64_t rate_changes = 0;    // flows whose rate changed
};

class MaxMinSolver {
 public:
  static constexpr double NO_CAP = std::numeric_limits<double>::infinity();
  static constexpr std::size_t MAX_HOPS = 32;

  // One capacity per link, bytes/s, positive and finite.
  explicit MaxMinSolver(std::span<const double> capacities);

  // The clock (picoseconds) at which the following changes happen; never decreases.
  void set_time(std::int64_t now_ps) { now_ps_ = now_ps; }

  // Puts `flow` (a slot number the caller chooses, dense, free) on its links; its rate is 0 until
  // the next solve. `cap` > 0, NO_CAP for none. A flow with no links must have a cap.
  void add_flow(std::uint32_t flow, std::span<const LinkId> route, double cap);
  // Takes a flow off its links (started or not yet solved).
  void remove_flow(std::uint32_t flow);
  bool needs_solve() const { return !added_.empty() || !dirty_.empty(); }

  struct RateChange {
    std::uint32_t flow;
    double old_rate;  // 0 for a flow that started
    double new_rate;
  };
  // Recomputes the rates that can change; returns the flows whose rate changed (valid until the
  // next call), in the order they were gathered.
  std::span<const RateChange> solve();

  double rate(std::uint32_t flow) const { return rate_[flow]; }
  double capacity(LinkId l) const { return capacity_[l]; }
  double load(LinkId l) const { return load_[l]; }
  bool saturated(LinkId l) const { return load_[l] >= threshold_[l]; }
  std::size_t link_count() const { return capacity_.size(); }
  std::size_t flows_on(LinkId l) const { return members_[l].size(); }
  // Statistics of link l up to `now_ps` (>= the last time set).
  LinkUsage usage(LinkId l, std::int64_t now_ps) const;
  const SolverCounters& counters() const { return counters_; }
  // Bytes held by the solver's tables (capacities, not sizes).
  std::size_t memory_bytes() const;

 private:
  enum : std::uint8_t { FREE = 0, PENDING = 1, LIVE = 2 };
  struct Hop {
    LinkId link;
    std::uint32_t pos;  // index in members_[link]
  };
  struct Member {
    std::uint32_t flow;
    std::uint32_t hop;  // index of the link in the flow's route
  };
  struct Key {
    double level;
    std::uint32_t id;
    bool operator<(const Key& o) const { return level < o.level || (level == o.level && id < o.id); }
  };
  struct LinkAccount {
    std::int64_t last_ps = 0;
    std::int64_t busy_ps = 0;
    std::int64_t saturated_ps = 0;
    double bytes = 0;
    std::uint32_t peak_flows = 0;
  };

  void ensure_flow(std::uint32_t flow);
  std::uint32_t allocate_hops(std::size_t n);
  void account(LinkId l);
  void gather(std::uint32_t flow);
  void expand();
  void fill();
  bool find_violations();
  void freeze(std::uint32_t flow, double rate);

  // Links.
  std::vector<double> capacity_;
  std::vector<double> threshold_;
  std::vector<double> load_;
  std::vector<std::vector<Member>> members_;
  std::vector<LinkAccount> account_;
  std::vector<std::uint32_t> expanded_;  // epoch at which the link's flows all joined A
  std::vector<std::uint32_t> in_fill_;   // fill epoch at which rem_/n_ were set
  std::vector<double> rem_;
  std::vector<std::uint32_t> n_;
  std::vector<double> level_;  // level at which the link froze flows in the last fill (+inf: none)

  // Flows.
  std::vector<double> rate_;
  std::vector<double> cap_;
  std::vector<double> new_rate_;
  std::vector<std::uint32_t> hop_begin_;
  std::vector<std::uint8_t> hop_count_;
  std::vector<std::uint8_t> state_;
  std::vector<std::uint32_t> in_set_;  // epoch at which the flow joined A
  std::vector<std::uint32_t> frozen_;  // fill epoch at which the flow was frozen
  std::vector<Hop> hops_;
  std::vector<std::vector<std::uint32_t>> free_hops_;  // free hop blocks by length

  // Work lists (kept between solves so that they allocate nothing once grown).
  std::vector<std::uint32_t> added_;
  std::vector<LinkId> dirty_;
  std::vector<LinkId> queue_;
  std::vector<std::uint32_t> set_;
  std::vector<LinkId> fill_links_;
  std::vector<RateChange> changes_;
  IndexedHeap<Key> heap_;  // ids: links, then flows (caps) at link_count() + flow

  std::uint32_t epoch_ = 0;
  std::uint32_t fill_epoch_ = 0;
  std::int64_t now_ps_ = 0;
  SolverCounters counters_;
};

}  // namespace clustersim::sim
