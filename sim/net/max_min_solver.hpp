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
// broken by id, so the result does not depend on anything but the inputs. Small fills (at most 64
// flows on at most 64 links, nearly all of them in practice) keep the sets as bit masks and scan
// the links that can still bind for the next event instead: O(F h + e L) for e events, with the
// same keys, ties and freezing order as the heap, hence the same rates to the last bit.
//
// Incremental recomputation. After flows start or end only some rates can move. The solver keeps,
// besides the rates, each flow's bottleneck (the link whose filling froze it, or its cap) and each
// link's level (the rate of the flows bottlenecked there). It then works on a set A of flows,
// starting from the seeds:
//   - every flow that started;
//   - on a link where a started flow cannot have its potential, the flows it can push aside: those
//     held there, and those held elsewhere running at or above the share it and the held ones
//     would get of what the others leave (a slower one is caught by V1 below if need be);
//   - the flows bottlenecked on a saturated link a flow ended on (they may speed up). Flows on
//     that link held elsewhere do not care; a flow ending on unsaturated links changes nothing;
//   - then, from the flows of A other than those that started (the ones pushed aside, and those
//     a flow's end frees), the flows bottlenecked on any other saturated hot link they cross, and
//     so on through the saturated links the new ones cross: a flow that moves moves its load there
//     too, so the flows held there must give way or get room, and move in turn. The checks below
//     would bring them in a refill later, round by round; taking them at once saves the rounds (on
//     the benchmark below, 0.49 fills a completion instead of 0.71 at 10,000 flows). A may hold
//     flows whose rates do not move: they keep them, at the cost of being rated. (From the started
//     flows too, or from a flow's own bottleneck, it gathers more than the rounds it saves.)
// A is filled against what the other flows ("outsiders", rates unchanged) leave:
// rem_l = C_l - sum_{g not in A} r_g. The result is the global max-min allocation exactly when
// every other flow still meets the condition above; on a link l of the filled flows' routes a flow
// g that was not filled fails it in one of three ways, and each such g is filled again:
//   (V1) l froze flows of the fill at level lambda and g runs faster than lambda (g must yield);
//   (V2) g is bottlenecked on l and l is no longer saturated (g may speed up);
//   (V3) g is bottlenecked on l and a filled flow now runs faster than g on l (g may take more).
// A refill covers the violators and the flows of A coupled to them through links where a flow of
// A is bottlenecked (directly or not): there a change of one moves the others. A flow of A that
// only shares links it is not bottlenecked on keeps the rate its last fill gave it and is checked
// like an outsider, with that rate and bottleneck: V1 catches it if the refill pulls such a
// link's level below it. Each fill starts from the current rates of everything outside it (A's
// included), so rem_l = C_l - sum_{g not in the part} r_g. Every check covers every flow on the
// filled links outside the part, so when a round finds none the condition holds for every flow,
// and the allocation is the max-min one (up to the tolerances below). Should the rounds go on
// (8 of them), the coupling widens to every shared hot link: then no flow of A outside the part
// shares a link with it, only outsiders can fail, A grows at each round and the solve ends.
// A grows only where a rate really moves, so the work follows the flows whose bottleneck moves,
// not the size of the network or of the saturated region: a flow that ends on unsaturated links
// costs nothing but unlinking it.
//
// Single flows first. Before any fill, each change is offered to a single flow: a flow that
// started, or the one flow left bottlenecked on a link a flow ended on. Rated alone against
// everything as it stands (the least of its cap and what each of its links leaves it), it is kept
// when V1 to V3 hold on its links, which makes the allocation max-min again; changes that pass are
// taken one after another, the others go to the fill together. A flow that starts where its cap
// fits costs one pass over its hot links.
//
// Cost. A solve costs O(hops) per flow rated alone, and per fill O(|part| h) plus the event search
// above, plus one pass over the flow lists of the links the fill saturated or whose bottlenecked
// flows it may disturb (the V1 to V3 checks). A change that cascades through k rounds costs the
// parts refilled, each the violators and the flows sharing their bottlenecks, not all of A: on
// the 1,024-GPU benchmark at 10,000 flows (tests/bench/flow_network_bench.cpp) a completion
// takes about 1.06 solves, 0.9 flows rated alone, 0.49 fills and 3.7 flow ratings for 3.2 rate
// changes (4.6 ratings before the seeds took the saturated links' flows at once, 6.2 when refills
// took all of A coupled through any shared hot link).
// Measured with callgrind over 100,000 completions of that benchmark (after 60,000 of warm-up):
// about 5,580 instructions (6,090 before those seeds) and 23 misses of a 1 MB last-level cache (the
// size of the core's own second level) per completion. The solve is 52% of the instructions (the
// small fill 20%, gathering A 10%) and a fifth of the misses; adding flows (the new route's links
// and flow lists) 7% of the instructions and a quarter of the misses; the network's heaps 8% of the
// instructions. The misses cost little on a quiet machine (the core overlaps them; asking early for
// those it could overlap anyway gained nothing measurable), but when the other core streams through
// the shared cache each is a trip to memory: beside a loop streaming through 256 MB the same
// benchmark ran 40% slower, and there the layout below (23 misses a completion instead of 26.5,
// 8.9 MB of tables at 10,000 flows instead of 11.3) ran it 5 to 18% faster than the one before in
// interleaved runs (1 to 2% on a quiet machine).
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
// Layout. Per link, two 64-byte lines: the first holding everything that adding or removing a flow
// and a solve read or write (capacity, load, potential, level, bytes, busy time, the flow count,
// the place of a long flow list), the second its flow list while that has at most 8 entries (most
// links; a longer list moves to a block of a pool, block_pool.hpp), so that the list's line is
// known from the link's number and both lines are asked for at once (a link that never binds has no
// level, and keeps there the time up to which its bytes are integrated, so that a rate change on it
// touches that line alone: 1 to 5% more completions a second at 10,000 flows, interleaved runs);
// the time-stamps of the saturated-time statistic sit apart (touched only when a link's saturation
// changes from one instant to a later one) beside a bit per link. "Hot" and "never binds" are not
// stored: a link is hot when its potential reaches its capacity (1 - 1e-9), and it never binds when
// it has no flow list. Per flow, two 64-byte lines: the first holds all that a solve reads and
// writes of it (rate, cap, bottleneck, the masks of hot hops and of hops that never bind, state,
// and the links of its first 8 hops), so that rating it, checking it as an outsider or taking it
// into A reads one line; the second what only adding and removing it need (its potential, and where
// each of its first hops sits in its link's flow list). An entry of a link's flow list names the
// flow and the hop's place in its route, and a hop its place in the list, so adding or removing a
// flow is O(hops), with no search and no allocation once warm. The entry also marks whether the
// link is the flow's bottleneck (set and cleared wherever a bottleneck moves), so that finding the
// flows held on a link (a flow ended there; a check after a fill; a single flow to rate alone)
// reads the list alone, and the records of only the flows it names: on the benchmark below, taking
// the flows held on a link went from 4.3% of the time (a miss on every other flow's record) to 0.8%
// (perf), though the benchmark as a whole moved by no more than its noise. Hops past the 8th go to
// a block of a second pool, which a slot keeps when its flow ends, for the next flow in that slot
// (the network gives a flow that starts the slot of one that just ended). Whether a flow is in A:
// its number in the fill's arrays, per flow, counts when the entry of that number names it
// (likewise for links). A fill copies the hot links and flows it works on into small dense arrays
// (its own numbering; a link's record padded to 128 bytes, a flow's to 64, so that a number becomes
// an address by one shift), so that its inner loops touch nothing else. The small fill keeps its
// sets as bit masks and its per-link and per-flow figures in arrays of 64; it compares event keys
// (level, id) as one 128-bit number (the level's bits, then id << 32 | slot, the low half fixed for
// the fill), and writes each flow's result and each link's level, flow count and load straight into
// the fill's records. Its scan for the next event has no branch per link (a link left with no
// unfrozen flow gets no key and drops out of the candidates by a conditional count), and the
// tests that follow no pattern elsewhere in a solve (whether a fill froze flows on a link; the
// three tests on a link reached by the seeds' cascade) are taken without a branch each: the same
// results, fewer mispredicted branches (about 2% more completions a second at 10,000 flows).

#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "sim/engine/indexed_heap.hpp"
#include "sim/net/block_pool.hpp"
#include "sim/net/max_min_detail.hpp"
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

// A flow on a link, and where that link sits in the flow's hops.
struct LinkMember {
  std::uint32_t flow;
  std::uint8_t hop;   // the link's place in the flow's route
  bool held = false;  // the link is the flow's bottleneck (Flow::bottleneck; set_bottleneck keeps both)
};
static_assert(sizeof(LinkMember) == 8);

class MaxMinSolver {
 public:
  static constexpr double NO_CAP = std::numeric_limits<double>::infinity();
  static constexpr std::size_t MAX_HOPS = 32;

  // One capacity per link, bytes/s, positive and finite. `never_binds` (empty, or one entry per
  // link) marks links that can never be a constraint (Topology::never_overloaded_links).
  explicit MaxMinSolver(std::span<const double> capacities, std::span<const std::uint8_t> never_binds = {});

  // The clock (picoseconds) at which the following changes happen; never decreases.
  void set_time(std::int64_t now_ps) {
    if (now_ps != now_ps_ && !saturation_pending_.empty()) settle_saturation();
    now_ps_ = now_ps;
  }

  // Puts `flow` (a slot number the caller chooses, dense, free) on its links; its rate is 0 until
  // the next solve. `cap` > 0, NO_CAP for none. A flow with no links must have a cap.
  void add_flow(std::uint32_t flow, std::span<const LinkId> route, double cap);
  // Takes a flow off its links (started or not yet solved), crediting `bytes_moved` to each.
  void remove_flow(std::uint32_t flow, double bytes_moved = 0);
  bool needs_solve() const { return !added_.empty() || !dirty_.empty(); }
  // Hints, for a flow that a coming change will touch: its record with its first hops (stage 1),
  // then, once that has arrived, its links (stage 2), then the entries of their flow lists that
  // taking it off reads (stage 3). They change nothing; a hint on a slot not in use is harmless.
  void prefetch_flow(std::uint32_t flow) const {
    if (flow >= flows_.size()) return;
    __builtin_prefetch(&flows_[flow]);
    __builtin_prefetch(&flows_[flow].potential);
  }
  void prefetch_links(std::uint32_t flow) const;
  void prefetch_members(std::uint32_t flow) const;
  // The links of a route about to be added.
  void prefetch_route(std::span<const LinkId> route) const {
    for (const LinkId l : route) __builtin_prefetch(&links_[l]);
  }

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
  bool saturated(LinkId l) const { return is_hot(links_[l]) && is_saturated(links_[l]); }
  bool hot(LinkId l) const { return is_hot(links_[l]); }
  std::size_t link_count() const { return links_.size(); }
  // The flows on a link (none listed for a link that never binds).
  std::span<const LinkMember> flows_on(LinkId l) const;
  // Statistics of link l up to `now_ps` (>= the last time set).
  LinkUsage usage(LinkId l, std::int64_t now_ps) const;
  const SolverCounters& counters() const { return counters_; }
  // Bytes held by the solver's tables (capacities, not sizes).
  std::size_t memory_bytes() const;

 private:
  enum : std::uint8_t { FREE = 0, PENDING = 1, LIVE = 2 };
  static constexpr std::uint32_t CAPPED = UINT32_MAX - 1;  // bottleneck: held by its own cap
  static constexpr std::uint32_t UNSOLVED = UINT32_MAX;    // bottleneck: not rated yet
  static constexpr std::uint32_t UNLISTED = UINT32_MAX;    // a hop's place (Flow::pos, Hop::pos) on a link that never binds
  static constexpr std::uint32_t NO_LIST = UINT32_MAX;     // LinkState::members of a link that never binds
  static constexpr std::uint8_t NO_BLOCK = UINT8_MAX;       // Flow::spill_class of a slot without a spill block
  static constexpr std::uint32_t INLINE_HOPS = 8;          // hops kept in the flow's record
  static constexpr std::uint32_t INLINE_MEMBERS = 8;       // flows listed in the link's record
  // Up to this many candidate links plus flows, a fill scans instead of using the heap.
  static constexpr std::size_t LINEAR_FILL_LIMIT = 48;

  // Two cache lines: the figures, then the flow list while it has at most INLINE_MEMBERS entries
  // (the list's line is known from the link's number alone, not read from the first line).
  struct alignas(64) LinkState {  // 128 bytes: a line-aligned table holds each on two whole lines
    double capacity = 0;
    double load = 0;       // kept while hot, or always for a link that never binds
    double potential = 0;  // sum of the potentials of the flows on the link (0 if it never binds)
    union {
      double level = 0;           // rate of the flows bottlenecked here (when bottlenecked > 0)
      std::int64_t bytes_since;  // never binds (no level): bytes integrated up to here
    };
    double bytes = 0;      // see the note on statistics
    // Busy time, folded into one number: the busy time so far while the link is idle, the start of
    // the current busy period minus the busy time before it while it has flows.
    std::int64_t busy = 0;
    std::uint32_t members = 0;  // block of its flow list in members_ past INLINE_MEMBERS (NO_LIST: it never binds)
    std::uint32_t flows = 0;    // flows on the link (all listed, unless it never binds)
    std::uint32_t bottlenecked = 0;
    std::uint32_t peak_flows = 0;  // also sizes the flow list: INLINE_MEMBERS, then bit_ceil(peak_flows)
    alignas(64) LinkMember inline_members[INLINE_MEMBERS];
  };
  static_assert(sizeof(LinkState) == 128);
  // What a link's statistics need only now and then.
  struct LinkStats {
    std::int64_t saturated_ps = 0;
    std::int64_t saturated_since = 0;
  };
  struct Hop {  // a hop past INLINE_HOPS (the first ones sit in the flow's record)
    LinkId link;
    std::uint32_t pos;  // index in the link's flow list, UNLISTED on a link that never binds
  };
  // Two cache lines: all that a solve reads and writes of a flow (the first hops' links
  // included), then what only adding and removing it need (where it sits in its links' lists).
  struct alignas(64) Flow {  // 128 bytes, on two whole lines
    double rate = 0;
    double cap = NO_CAP;
    std::uint32_t bottleneck = UNSOLVED;
    std::uint32_t hot_mask = 0;    // bit h: hop h's link is hot
    std::uint32_t never_mask = 0;  // bit h: hop h's link never binds
    LinkId links[INLINE_HOPS];     // the links of its first hops (the others in its spill block)
    std::uint8_t hop_count = 0;
    std::uint8_t state = FREE;
    alignas(64) double potential = 0;  // the most it could ever run at: min(cap, narrowest link of its route)
    std::uint32_t spill = 0;              // block of its hops past INLINE_HOPS in hops_
    std::uint8_t spill_class = NO_BLOCK;  // size class of the slot's spill block (kept while the slot is free)
    std::uint32_t pos[INLINE_HOPS];       // per first hop: index in the link's flow list, or UNLISTED
  };
  static_assert(sizeof(Flow) == 128);
  struct Key {
    double level;
    std::uint32_t id;
    bool operator<(const Key& o) const { return max_min_detail::key_less(level, id, o.level, o.id); }
  };
  // The fill's own copies, numbered in the order they joined this solve.
  // Both padded to a power of two (128 and 64 bytes): an index becomes an address with one shift.
  struct alignas(128) FillLink {  // a hot link of the flows of A
    FillLink() {}  // NOLINT: take_in_fill_link sets what is read before a fill sets the rest
    LinkId id;
    std::uint32_t fill_epoch;  // the fill that last took it in (its scratch below is that fill's)
    std::uint32_t visit;       // part epoch of the last coupling search that reached it
    std::uint32_t n;           // unfrozen flows of the fill on it
    std::uint32_t in_a;        // the part's flows on it (the fill that last took it in)
    std::uint32_t a_total;     // A's flows on it
    std::uint32_t a_old_bottlenecked;  // A's flows whose old bottleneck is this link
    std::uint32_t a_bottlenecked;      // A's flows whose new bottleneck it is (during a fill: outside the part)
    std::uint32_t head;            // the part's flows on it: first entry in fill_hops_ (general fill)
    std::uint32_t a_head;          // A's flows on it: first entry in a_hops_
    std::uint32_t slot;            // its place in the small fill in progress
    double capacity;
    double load;        // as the last fill left it (as the solve found it before any)
    double rem;         // capacity left for the part's unfrozen flows
    double capsum;      // sum of the caps of the part's flows on it
    double fill_level;  // level at which the last fill froze flows on it (NO_CAP: none)
    double level;       // level at which a fill of this solve last froze flows on it (else the link's level)
    double a_max_rate;  // fastest new rate of the part on it
  };
  struct alignas(64) FillFlow {  // a flow of A
    std::uint32_t id;
    std::uint32_t links_begin;  // its hot links (FillLink numbers) in fill_links_of_
    std::uint32_t link_count;
    std::uint32_t bottleneck;  // old
    std::uint32_t new_bottleneck;  // as its last fill left it
    std::uint32_t frozen;  // fill epoch at which it was frozen
    std::uint32_t part;    // part epoch at which it joined the part being refilled
    double cap;
    double rate;  // the rate counted in its links' loads: old, then as its last fill left it
    double new_rate;
  };
  struct CapKey {
    Key key;
    std::uint32_t flow;  // FillFlow number
  };
  struct FillHop {  // a flow of A on a fill link: the link's list, newest first
    std::uint32_t flow;
    std::uint32_t next;
  };

  static double threshold(const LinkState& k) { return k.capacity * (1 - max_min_detail::TOLERANCE); }  // saturated at or above
  static bool is_hot(const LinkState& k) { return k.potential >= threshold(k); }
  static bool is_saturated(const LinkState& k) { return k.load >= threshold(k); }
  // A link's flow list: in its record or in the pool, chosen without a branch (the links with long
  // lists are few, and follow no pattern among those a solve visits).
  const LinkMember* members_of(const LinkState& k) const {
    const auto in_record = reinterpret_cast<std::uintptr_t>(k.inline_members);
    const auto in_pool =
        reinterpret_cast<std::uintptr_t>(members_.at(0)) + std::uintptr_t{k.members} * sizeof(LinkMember);
    const std::uintptr_t mask = std::uintptr_t{0} - static_cast<std::uintptr_t>(k.peak_flows <= INLINE_MEMBERS);
    return reinterpret_cast<const LinkMember*>(in_pool ^ ((in_record ^ in_pool) & mask));
  }
  LinkMember* members_of(LinkState& k) { return const_cast<LinkMember*>(std::as_const(*this).members_of(k)); }
  // Hop h of a flow: its link, and its place in the link's list (in the record for the first
  // INLINE_HOPS, else in the spill block).
  LinkId hop_link(const Flow& f, std::uint32_t h) const {
    return h < INLINE_HOPS ? f.links[h] : hops_.at(f.spill)[h - INLINE_HOPS].link;
  }
  std::uint32_t& hop_pos(Flow& f, std::uint32_t h) {
    return h < INLINE_HOPS ? f.pos[h] : hops_.at(f.spill)[h - INLINE_HOPS].pos;
  }
  std::uint32_t hop_pos(const Flow& f, std::uint32_t h) const {
    return h < INLINE_HOPS ? f.pos[h] : hops_.at(f.spill)[h - INLINE_HOPS].pos;
  }
  // Whether flow x joined A in this solve (its FillFlow number, checked against the number's owner).
  bool in_a(std::uint32_t x) const {
    const std::uint32_t n = fill_of_[x];
    return n < fill_flows_.size() && fill_flows_[n].id == x;
  }
  std::uint32_t append_member(LinkState& k, LinkMember m);
  // Moves flow x's bottleneck to b (a link, CAPPED or UNSOLVED): the links' counts of flows held
  // there and the `held` marks of its entries in their flow lists.
  void set_bottleneck(std::uint32_t x, std::uint32_t b);
  void mark_held(const Flow& f, LinkId l, bool held);
  void turn_hot(LinkId l);
  void turn_cold(LinkId l);
  void ensure_flow(std::uint32_t flow);
  // The link's saturation may have changed at now_ps_: settled (and its statistic updated) when the
  // clock moves on, so that a link that leaves and regains saturation at one instant costs nothing.
  void note_saturation(LinkId l) {
    const LinkState& k = links_[l];
    const bool now_saturated = is_hot(k) && is_saturated(k);
    const bool was = ((saturated_bits_[l / 64] >> (l % 64)) & 1U) != 0;
    if (now_saturated != was) saturation_pending_.push_back(l);
  }
  void settle_saturation();
  void add_unlisted_load(LinkId l, double delta);
  void apply_new_rate(std::uint32_t flow, double old_rate, double new_rate);
  // Flow x joins A (once per solve; the test inline, as most calls find it there already).
  void gather(std::uint32_t x) {
    if (!in_a(x)) gather_new(x);
  }
  void gather_new(std::uint32_t x);
  void gather_held_on(LinkId l);
  // The FillLink number of hot link l in this solve, taking it in when it has none.
  std::uint32_t fill_link(LinkId l) {
    const std::uint32_t number = fill_number_[l];
    return number < fill_links_.size() && fill_links_[number].id == l ? number : take_in_fill_link(l);
  }
  std::uint32_t take_in_fill_link(LinkId l);
  bool rate_alone(std::uint32_t flow);
  void fill();
  void general_fill();  // the fill of a part too large for small_fill (fill() takes it from there)
  bool find_violations();
  void commit();
  bool small_fill();
  template <bool WITH_HEAP>
  void freeze(std::uint32_t i, double rate, std::uint32_t bottleneck);
  template <bool WITH_HEAP>
  void freeze_link(std::uint32_t j, double level);

  std::vector<LinkState, CacheLineAllocator<LinkState>> links_;
  std::vector<LinkStats> stats_;
  std::vector<std::uint64_t> saturated_bits_;  // per link: saturated as of the last settled instant
  std::vector<LinkId> saturation_pending_;     // links whose saturation may have changed at now_ps_
  std::vector<Flow, CacheLineAllocator<Flow>> flows_;
  BlockPool<Hop> hops_;
  BlockPool<LinkMember> members_;

  // Work lists (kept between solves so that they allocate nothing once grown).
  std::vector<std::uint32_t> added_;
  std::vector<LinkId> dirty_;
  std::vector<std::uint32_t> violators_;
  // The fill's arrays: A's flows and their hot links in the fill's numbering.
  std::vector<FillFlow> fill_flows_;
  std::vector<FillLink> fill_links_;
  std::vector<std::uint32_t> fill_links_of_;  // per flow of A, its hot links
  std::vector<FillHop> fill_hops_;
  std::vector<FillHop> a_hops_;  // per fill link, A's flows on it (FillLink::a_head)
  std::uint32_t a_hop_count_ = 0;  // entries of fill_links_of_ and a_hops_ in use (both sized beyond)
  std::vector<std::uint32_t> fill_number_;  // per link: its FillLink number, when it has one this solve
  std::vector<std::uint32_t> fill_of_;      // per flow: its FillFlow number, when it has one this solve
  std::vector<std::uint32_t> part_;         // the flows of A that the next fill rates
  std::vector<std::uint32_t> filled_;       // the links of the general fill in progress
  std::span<const std::uint32_t> filled_links_;  // the links of the last fill (filled_, or the small fill's)
  std::vector<std::uint32_t> candidates_;   // filled links that may hold a flow of A back
  std::vector<CapKey> caps_;  // caps of the part's flows, ascending
  std::vector<RateChange> changes_;
  IndexedHeap<Key> heap_;  // ids: 2 x FillLink number for links, 2 x FillFlow number + 1 for caps
  // The small fill (at most 64 flows on at most 64 links): sets of flows and links as bits, flows
  // numbered by their place in the part, links by the order the fill took them in.
  static constexpr std::size_t SMALL_FILL = 64;
  struct SmallFill {
    std::uint64_t link_flows[SMALL_FILL];  // per link: the part's flows on it
    std::uint64_t flow_links[SMALL_FILL];  // per flow: its links
    double rem[SMALL_FILL];
    double capsum[SMALL_FILL];
    double a_max_rate[SMALL_FILL];
    std::uint32_t link[SMALL_FILL];  // FillLink number
    std::uint32_t n[SMALL_FILL];     // unfrozen flows on the link
    // Event keys as 128-bit numbers (max_min_fill.cpp): the level's bits, then id << 32 | slot.
    std::uint64_t id_slot[SMALL_FILL];   // per link: its id and slot, the low half of its key
    double cap[SMALL_FILL];                // per flow with a cap: its cap,
    std::uint64_t cap_id_slot[SMALL_FILL];  // and the low half of its key (cap id, its place)
  };
  SmallFill small_;

  std::uint32_t fill_epoch_ = 0;
  std::uint32_t part_epoch_ = 0;
  bool full_coupling_ = false;  // refills couple through every shared hot link (see find_violations)
  std::int64_t now_ps_ = 0;
  SolverCounters counters_;
};

}  // namespace clustersim::sim
