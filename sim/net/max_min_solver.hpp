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
// Incremental recomputation. After flows start or end only some rates can move. The solver keeps,
// besides the rates, each flow's bottleneck (the link whose filling froze it, or its cap) and each
// link's level (the rate of the flows bottlenecked there). It then works on a set A of flows,
// starting from the seeds:
//   - every flow that started;
//   - the flows bottlenecked on a saturated link a flow ended on (they may speed up). Flows on
//     that link held elsewhere do not care; a flow ending on unsaturated links changes nothing.
// A is filled against what the other flows ("outsiders", rates unchanged) leave:
// rem_l = C_l - sum_{g not in A} r_g. The result is the global max-min allocation exactly when
// every outsider still meets the condition above; on a link l of A's routes an outsider g fails
// it in one of three ways, and each such g joins A, which is filled again (only the part of A
// coupled to the newcomers through shared hot links: the rest cannot move):
//   (V1) l froze flows of A at level lambda and g runs faster than lambda (g must yield);
//   (V2) g was bottlenecked on l and l is no longer saturated (g may speed up);
//   (V3) g was bottlenecked on l and a flow of A now runs faster than g on l (g may take more).
// Outsiders on links A does not cross keep their rates and their reasons, and A's own flows are
// max-min within what is left, so when no outsider fails the allocation is the max-min one (up to
// the tolerances below). A grows only where a rate really moves, so the work follows the flows
// whose bottleneck moves, not the size of the network or of the saturated region: a flow that
// ends on unsaturated links costs nothing but unlinking it.
//
// Single flows first. Before any fill, each change is offered to a single flow: a flow that
// started, or the one flow left bottlenecked on a link a flow ended on. Rated alone against
// everything as it stands (the least of its cap and what each of its links leaves it), it is kept
// when V1 to V3 hold on its links, which makes the allocation max-min again; changes that pass are
// taken one after another, the others go to the fill together. A flow that starts where its cap
// fits costs one pass over its hot links.
//
// Cold links. A flow's potential is the most it could ever run at, min(c_f, min_{l in R_f} C_l);
// a link whose flows' potentials sum to less than its capacity can never fill, so no flow is ever
// bottlenecked there and no fill needs it. Such links (most PCIe and NVLink ports at moderate
// load, a leaf's port with one flow) are cold: fills skip them and their load is not even
// kept (it is summed from their flows when asked for, or when the link turns hot). Each flow keeps
// a bit mask of its hot hops, updated when a link turns hot or cold (O(flows on it), at the add or
// remove that crosses the threshold), so every pass of a solve touches only links that can bind.
//
// Floating point: rates and loads are doubles. A link is saturated when its load reaches
// C_l (1 - 1e-9), and rates within a relative 1e-9 count as equal in the tests above; a rate that
// changes by less than 1e-12 of itself keeps its old value (no spurious completion-time updates);
// residuals are clamped at 0.
//
// Links that can never bind (Topology::never_overloaded_links, the uplinks of a non-blocking leaf)
// keep no list of their flows at all, only a count, their load and the bytes it carried: a flow
// whose rate changes updates them in O(1).
//
// Link statistics: busy time (at least one flow on the link) and saturated time (load at capacity)
// are summed at their transitions, with the clock the caller sets before each change. Bytes: a
// link that never binds integrates its load (bytes += load x dt at each change); any other link is
// credited the bytes of each flow that leaves it (the caller says how many it moved), so a report
// of bytes in flight adds the moving flows' progress (FlowNetwork::link_usage does).
//
// Layout: one 128-byte record per link, its first cache line what a solve reads and writes
// (capacity, load, level, the scratch of the fill in progress), its second the flow list and the
// statistics that adding or removing a flow touches; one record per flow. A link's flow list and a
// flow's hops point at each other (positions both ways), so adding or removing a flow is O(hops)
// with no search and no allocation once warm.

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "sim/engine/indexed_heap.hpp"
#include "sim/net/net_ids.hpp"

namespace clustersim::sim {

struct LinkUsage {
  double bytes = 0;               // see the note on statistics above
  std::int64_t busy_ps = 0;       // time with at least one flow on the link
  std::int64_t saturated_ps = 0;  // time with the load at capacity
  double load = 0;                // bytes/s now
  std::uint32_t flows = 0;        // flows on it now
  std::uint32_t peak_flows = 0;   // most flows at once
};

struct SolverCounters {
  std::uint64_t solves = 0;           // recomputations that had work to do (one per network event)
  std::uint64_t alone = 0;            // flows rated on their own, without a fill
  std::uint64_t flows_solved = 0;     // flows rated: sum of |A| over fills, plus those alone
  std::uint64_t fills = 0;            // progressive fills (>= solves: a fill is redone when A grows)
  std::uint64_t outsiders_added = 0;  // flows that joined A after a fill (V1 to V3)
  std::uint64_t rate_changes = 0;     // flows whose rate changed
};

// A flow on a link, and where that link sits in the solver's hop pool.
struct LinkMember {
  std::uint32_t flow;
  std::uint32_t hop;  // index in the hop pool: the flow's first hop index + the link's place in its route
};

class MaxMinSolver {
 public:
  static constexpr double NO_CAP = std::numeric_limits<double>::infinity();
  static constexpr std::size_t MAX_HOPS = 32;

  // One capacity per link, bytes/s, positive and finite. `never_binds` (empty, or one entry per
  // link) marks links that can never be a constraint (Topology::never_overloaded_links).
  explicit MaxMinSolver(std::span<const double> capacities, std::span<const std::uint8_t> never_binds = {});

  // The clock (picoseconds) at which the following changes happen; never decreases.
  void set_time(std::int64_t now_ps) { now_ps_ = now_ps; }

  // Puts `flow` (a slot number the caller chooses, dense, free) on its links; its rate is 0 until
  // the next solve. `cap` > 0, NO_CAP for none. A flow with no links must have a cap.
  void add_flow(std::uint32_t flow, std::span<const LinkId> route, double cap);
  // Takes a flow off its links (started or not yet solved), crediting `bytes_moved` to each.
  void remove_flow(std::uint32_t flow, double bytes_moved = 0);
  bool needs_solve() const { return !added_.empty() || !dirty_.empty(); }

  struct RateChange {
    std::uint32_t flow;
    double old_rate;  // 0 for a flow that started
    double new_rate;
  };
  // Recomputes the rates that can change; returns the flows whose rate changed (valid until the
  // next call), in the order they were gathered.
  std::span<const RateChange> solve();

  double rate(std::uint32_t flow) const { return flows_[flow].rate; }
  double capacity(LinkId l) const { return links_[l].capacity; }
  double load(LinkId l) const;
  bool saturated(LinkId l) const { return links_[l].hot && is_saturated(links_[l]); }
  bool hot(LinkId l) const { return links_[l].hot; }
  std::size_t link_count() const { return links_.size(); }
  // The flows on a link (none listed for a link that never binds).
  std::span<const LinkMember> flows_on(LinkId l) const { return links_[l].members; }
  // Statistics of link l up to `now_ps` (>= the last time set).
  LinkUsage usage(LinkId l, std::int64_t now_ps) const;
  const SolverCounters& counters() const { return counters_; }
  // Bytes held by the solver's tables (capacities, not sizes).
  std::size_t memory_bytes() const;

 private:
  enum : std::uint8_t { FREE = 0, PENDING = 1, LIVE = 2 };
  static constexpr std::uint32_t CAPPED = UINT32_MAX - 1;  // bottleneck: held by its own cap
  static constexpr std::uint32_t UNSOLVED = UINT32_MAX;    // bottleneck: not rated yet
  static constexpr std::uint32_t UNLISTED = UINT32_MAX;    // Hop::pos on a link that never binds
  // Up to this many candidate links plus flows, a fill scans instead of using the heap.
  static constexpr std::size_t LINEAR_FILL_LIMIT = 48;

  struct alignas(64) Link {
    // First line: the solve.
    double capacity = 0;
    double threshold = 0;   // capacity (1 - tolerance): saturated at or above
    double load = 0;        // kept while hot, or always for a link that never binds
    double level = 0;       // rate of the flows bottlenecked here (when bottlenecked > 0)
    double potential = 0;   // sum of the potentials of the flows on the link
    double rem = 0;         // fill scratch: capacity left for A's unfrozen flows
    double capsum = 0;      // fill scratch: sum of the caps of A's flows on the link
    double a_max_rate = 0;  // fill scratch: fastest new rate of A on the link
    // Second line: the fill's other scratch, the flow list, the statistics.
    double fill_level = 0;  // fill scratch: level at which the link froze flows of A (NO_CAP: none)
    std::uint32_t bottlenecked = 0;
    std::uint32_t fill_epoch = 0;   // the scratch belongs to the fill with this epoch
    std::uint32_t solve_epoch = 0;  // the link is in solve_links_ of the solve with this epoch
    std::uint32_t visit = 0;        // part epoch of the last coupling search that reached it
    std::uint32_t n = 0;            // fill scratch: A's unfrozen flows on the link
    std::uint32_t in_a = 0;         // fill scratch: A's flows on the link
    std::uint32_t a_bottlenecked = 0;  // fill scratch: A's flows whose old bottleneck is the link
    std::uint32_t flows = 0;           // flows on the link (listed in members, unless never_binds)
    std::uint32_t a_head = 0;          // fill scratch: first hop of A on the link (list in hop_next_)
    std::uint32_t peak_flows = 0;
    bool hot = false;          // potential >= threshold: the link may bind; load is kept
    bool never_binds = false;  // no list, never hot
    bool saturated = false;    // as of the last change (for the saturated-time statistic)
    std::vector<LinkMember> members;
    double bytes = 0;
    std::int64_t bytes_since = 0;  // never_binds: bytes integrated up to here
    std::int64_t busy_ps = 0;
    std::int64_t busy_since = 0;
    std::int64_t saturated_ps = 0;
    std::int64_t saturated_since = 0;
  };
  struct Flow {
    double rate = 0;
    double cap = NO_CAP;
    double potential = 0;  // the most it could ever run at: min(cap, narrowest link of its route)
    double new_rate = 0;
    std::uint32_t hot_mask = 0;    // bit h: hop h's link is hot
    std::uint32_t never_mask = 0;  // bit h: hop h's link never binds
    std::uint32_t hop_begin = 0;
    std::uint32_t bottleneck = UNSOLVED;
    std::uint32_t new_bottleneck = UNSOLVED;
    std::uint32_t in_set = 0;  // epoch at which the flow joined A
    std::uint32_t frozen = 0;  // fill epoch at which the flow was frozen
    std::uint32_t part = 0;    // part epoch at which the flow joined the part being refilled
    std::uint8_t hop_count = 0;
    std::uint8_t state = FREE;
  };
  struct Hop {
    LinkId link;
    std::uint32_t pos;   // index in the link's members, UNLISTED on a link that never binds
    std::uint32_t flow;  // whose hop it is
  };
  struct Key {
    double level;
    std::uint32_t id;
    bool operator<(const Key& o) const { return level < o.level || (level == o.level && id < o.id); }
  };

  static bool is_saturated(const Link& k) { return k.load >= k.threshold; }
  void turn_hot(LinkId l);
  void turn_cold(LinkId l);
  void ensure_flow(std::uint32_t flow);
  std::uint32_t allocate_hops(std::size_t n);
  void note_saturation(LinkId l);
  void add_unlisted_load(Link& k, double delta);
  void apply_new_rate(std::uint32_t flow, double old_rate, double new_rate);
  void gather(std::uint32_t flow);
  bool rate_alone(std::uint32_t flow);
  void fill();
  bool find_violations();
  template <bool WITH_HEAP>
  void freeze(std::uint32_t flow, double rate, std::uint32_t bottleneck);
  template <bool WITH_HEAP>
  void freeze_link(LinkId l, double level);

  std::vector<Link> links_;
  std::vector<Flow> flows_;
  std::vector<Hop> hops_;
  std::vector<std::uint32_t> hop_next_;  // fill scratch: next hop of A on the same link
  std::vector<std::vector<std::uint32_t>> free_hops_;  // free hop blocks by length

  // Work lists (kept between solves so that they allocate nothing once grown).
  std::vector<std::uint32_t> added_;
  std::vector<LinkId> dirty_;
  std::vector<std::uint32_t> set_;
  std::vector<std::uint32_t> violators_;
  std::vector<std::uint32_t> part_;  // the flows of A that the next fill rates
  std::vector<LinkId> fill_links_;   // hot links of the last fill
  std::vector<LinkId> solve_links_;  // hot links of all fills of this solve
  std::vector<LinkId> candidates_;   // fill links that may hold a flow of A back
  std::vector<Key> caps_;            // caps of A's flows, ascending
  std::vector<RateChange> changes_;
  IndexedHeap<Key> heap_;  // ids: links, then flows (caps) at link_count() + flow

  std::uint32_t epoch_ = 0;
  std::uint32_t fill_epoch_ = 0;
  std::uint32_t part_epoch_ = 0;
  std::int64_t now_ps_ = 0;
  SolverCounters counters_;
};

}  // namespace clustersim::sim
