// The fill of MaxMinSolver: gathering the flows whose rates can move, progressive filling,
// the outsider checks (V1 to V3) and the commit. The mathematics is in max_min_solver.hpp.
//
// A solve numbers the flows of A and their hot links in the order they join it (FillFlow,
// FillLink) and works on those dense arrays; the network's records are read when a flow or link
// joins, scanned for outsiders after each fill, and written once, at the commit.
#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

#include "sim/engine/branch_free.hpp"
#include "sim/net/max_min_detail.hpp"
#include "sim/net/max_min_solver.hpp"

namespace clustersim::sim {

namespace {
constexpr std::uint32_t NO_HOP = UINT32_MAX;
// Refills of a solve that couple through bottleneck links only (find_violations).
constexpr std::uint32_t RESTRICTED_ROUNDS = 8;
}  // namespace

using max_min_detail::for_each_bit;
using max_min_detail::for_each_bit64;
using max_min_detail::RATE_TOLERANCE;
using max_min_detail::TOLERANCE;

namespace {
__extension__ typedef unsigned __int128 SmallKey;  // __extension__: no -Wpedantic warning
// A key of the small fill's event search as one number: (level, id) in Key's order, then a slot
// that only names the winner (ids are unique): the level's bits above `id_slot` = id << 32 | slot.
// A level is never negative, nor -0 (see its callers), and the bits of such a double order as
// its value.
SmallKey small_key(double level, std::uint64_t id_slot) {
  return (static_cast<SmallKey>(std::bit_cast<std::uint64_t>(level)) << 64) | id_slot;
}
constexpr SmallKey NO_KEY = ~SmallKey{0} >> 1;  // above any key of a finite level or cap
}  // namespace

std::uint32_t MaxMinSolver::take_in_fill_link(LinkId l) {
  const auto number = static_cast<std::uint32_t>(fill_links_.size());
  fill_number_[l] = number;
  const LinkState& k = links_[l];
  // Only what a solve reads before a fill takes the link in (the fill sets the rest: rem, capsum,
  // n, in_a, head, slot, fill_level, a_max_rate).
  FillLink& f = fill_links_.emplace_back();
  f.id = l;
  f.fill_epoch = 0;
  f.visit = 0;
  f.slot = 0;
  f.a_total = 0;
  f.a_old_bottlenecked = 0;
  f.a_bottlenecked = 0;
  f.a_head = NO_HOP;
  f.capacity = k.capacity;
  f.load = k.load;
  f.level = k.level;
  return number;
}

// The flows bottlenecked on link l join A.
void MaxMinSolver::gather_held_on(LinkId l) {
  const LinkState& k = links_[l];
  const LinkMember* m = members_of(k);
  // Their records are asked for together first: gathering one reads its record, then its links,
  // and taken one by one those misses would come in turn.
  for (std::uint32_t i = 0; i < k.flows; ++i) {
    if (m[i].held) __builtin_prefetch(&flows_[m[i].flow]);
  }
  for (std::uint32_t i = 0; i < k.flows; ++i) {
    if (m[i].held) gather(m[i].flow);
  }
}

// Flow x, not yet in A, joins it: copied, with its hot links, into the fill's arrays.
void MaxMinSolver::gather_new(std::uint32_t x) {
  const Flow& f = flows_[x];
  const auto i = static_cast<std::uint32_t>(fill_flows_.size());
  fill_of_[x] = i;
  // Its hot links go to fill_links_of_ and a_hops_ side by side (entry for entry), both kept at
  // least a route's length beyond what is in use: written through pointers, no check per hop.
  const std::uint32_t begin = a_hop_count_;
  if (fill_links_of_.size() < begin + MAX_HOPS) {
    fill_links_of_.resize(2 * (begin + MAX_HOPS));
    a_hops_.resize(2 * (begin + MAX_HOPS));
  }
  std::uint32_t* numbers = fill_links_of_.data() + begin;
  FillHop* a_hops = a_hops_.data() + begin;
  std::uint32_t at = begin;
  const std::uint32_t bottleneck = f.bottleneck;
  // The links are asked for together before the first is taken in (each takes its figures).
  for_each_bit(f.hot_mask, [&](std::uint32_t h) { __builtin_prefetch(&links_[hop_link(f, h)]); });
  for_each_bit(f.hot_mask, [&](std::uint32_t h) {
    const LinkId l = hop_link(f, h);
    const std::uint32_t j = fill_link(l);
    *numbers++ = j;
    FillLink& k = fill_links_[j];
    ++k.a_total;
    k.a_old_bottlenecked += bottleneck == l ? 1U : 0U;
    *a_hops++ = FillHop{i, k.a_head};
    k.a_head = at++;
  });
  a_hop_count_ = at;
  fill_flows_.push_back(FillFlow{.id = x,
                                 .links_begin = begin,
                                 .link_count = at - begin,
                                 .bottleneck = f.bottleneck,
                                 .new_bottleneck = UNSOLVED,
                                 .frozen = 0,
                                 .part = 0,
                                 .cap = f.cap,
                                 .rate = f.state == PENDING ? 0.0 : f.rate,
                                 .new_rate = 0});
}

template <bool WITH_HEAP>
void MaxMinSolver::freeze(std::uint32_t i, double rate, std::uint32_t bottleneck) {
  FillFlow& f = fill_flows_[i];
  f.frozen = fill_epoch_;
  f.new_rate = rate;
  f.new_bottleneck = bottleneck;
  if constexpr (WITH_HEAP) heap_.erase(2 * i + 1);
  const std::uint32_t* links = fill_links_of_.data() + f.links_begin;
  for (std::uint32_t h = 0; h < f.link_count; ++h) {
    const std::uint32_t j = links[h];
    FillLink& k = fill_links_[j];
    k.rem -= rate;
    if (rate > k.a_max_rate) k.a_max_rate = rate;
    --k.n;
    if constexpr (WITH_HEAP) {
      if (heap_.contains(2 * j)) {
        if (k.n == 0) {
          heap_.erase(2 * j);
        } else {
          heap_.update(2 * j, Key{std::max(k.rem, 0.0) / k.n, k.id});
        }
      }
    }
  }
}

// Freezes every unfrozen flow of A on fill link j at `level`.
template <bool WITH_HEAP>
void MaxMinSolver::freeze_link(std::uint32_t j, double level) {
  fill_links_[j].fill_level = level;
  const LinkId id = fill_links_[j].id;
  for (std::uint32_t hi = fill_links_[j].head; hi != NO_HOP && fill_links_[j].n > 0; hi = fill_hops_[hi].next) {
    const std::uint32_t x = fill_hops_[hi].flow;
    if (fill_flows_[x].frozen != fill_epoch_) freeze<WITH_HEAP>(x, level, id);
  }
}

// The fill of a part of at most 64 flows crossing at most 64 hot links, on bit sets: the same
// choices in the same order as the general fill below (links frozen newest flow first, as its lists
// run), so the same rates to the last bit. Returns false, having changed nothing that matters,
// when the part crosses more links than it can hold.
bool MaxMinSolver::small_fill() {
  SmallFill& s = small_;
  const auto flows = static_cast<std::uint32_t>(part_.size());
  const auto cap_base = static_cast<std::uint32_t>(links_.size());
  std::uint32_t links = 0;
  std::uint64_t capped = 0;  // the part's flows with a cap
  // Locals, so that the stores below (which the compiler must assume may alias them) force no reloads.
  const std::uint32_t epoch = fill_epoch_;
  FillLink* const fill_links = fill_links_.data();
  for (std::uint32_t p = 0; p < flows; ++p) {
    const FillFlow& f = fill_flows_[part_[p]];
    const std::uint32_t* numbers = fill_links_of_.data() + f.links_begin;
    const std::uint32_t count = f.link_count;
    const double rate = f.rate;
    const double cap = f.cap;
    const std::uint64_t bit = std::uint64_t{1} << p;
    std::uint64_t mine = 0;
    for (std::uint32_t h = 0; h < count; ++h) {
      const std::uint32_t number = numbers[h];
      FillLink& k = fill_links[number];
      std::uint32_t slot = k.slot;
      if (k.fill_epoch != epoch) {
        if (links == SMALL_FILL) return false;
        k.fill_epoch = epoch;
        slot = links++;
        k.slot = slot;
        s.link_flows[slot] = 0;
        s.rem[slot] = k.capacity - k.load;
        s.capsum[slot] = 0;
        s.a_max_rate[slot] = 0;
        k.fill_level = NO_CAP;  // set in place: a link's event sets it once
        s.id_slot[slot] = std::uint64_t{k.id} << 32 | slot;
        s.link[slot] = number;
        s.n[slot] = 0;
      }
      mine |= std::uint64_t{1} << slot;
      s.link_flows[slot] |= bit;
      // The flow's old rate goes back into what is left for A.
      s.rem[slot] += rate;
      s.capsum[slot] += cap;
      ++s.n[slot];
    }
    s.flow_links[p] = mine;
    if (cap != NO_CAP) {
      s.cap[p] = cap;
      s.cap_id_slot[p] = std::uint64_t{cap_base + f.id} << 32 | p;
      capped |= bit;
    }
  }
  std::uint64_t unfrozen = flows == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << flows) - 1;
  // A flow's result goes straight to its record (what find_violations, the coupling search and
  // the commit read).
  FillFlow* const fill_flows = fill_flows_.data();
  const std::uint32_t* const part = part_.data();
  const std::uint32_t fill_epoch = fill_epoch_;
  const auto freeze_one = [&](std::uint32_t p, double rate, std::uint32_t bottleneck) {
    unfrozen &= ~(std::uint64_t{1} << p);
    FillFlow& f = fill_flows[part[p]];
    f.frozen = fill_epoch;
    f.new_rate = rate;
    f.new_bottleneck = bottleneck;
    for_each_bit64(s.flow_links[p], [&](std::uint32_t slot) {
      s.rem[slot] -= rate;
      s.a_max_rate[slot] = rate > s.a_max_rate[slot] ? rate : s.a_max_rate[slot];  // std::max's value, as maxsd
      --s.n[slot];
    });
  };
  std::uint32_t candidates[SMALL_FILL];
  std::uint32_t candidate_count = 0;
  for (std::uint32_t slot = 0; slot < links; ++slot) {
    fill_links[s.link[slot]].in_a = s.n[slot];  // what find_violations reads
    s.rem[slot] = std::max(s.rem[slot], 0.0);
    // A link whose room covers the caps of all of A's flows on it cannot hold any of them back;
    // with one flow every link counts (ties go to the lowest link id, then to the cap).
    candidates[candidate_count] = slot;
    candidate_count += ((s.capsum[slot] > s.rem[slot]) | (flows == 1)) ? 1U : 0U;
  }
  // The least cap of the unfrozen flows (by level, then id), found again when its flow freezes.
  // Keys are compared as one 128-bit number (see small_key): the same order as Key's.
  SmallKey least_cap = NO_KEY;
  std::uint32_t cap_flow = UINT32_MAX;
  while (unfrozen != 0) {
    if (cap_flow == UINT32_MAX || ((unfrozen >> cap_flow) & 1U) == 0) {
      least_cap = NO_KEY;
      for_each_bit64(unfrozen & capped, [&](std::uint32_t p) {
        const SmallKey key = small_key(s.cap[p], s.cap_id_slot[p]);
        least_cap = key < least_cap ? key : least_cap;
      });
      cap_flow = least_cap == NO_KEY ? UINT32_MAX : static_cast<std::uint32_t>(least_cap);
    }
    // One pass without a branch per link: a link with no unfrozen flow left gets no key and
    // leaves the candidates (the others close up behind it, in order).
    SmallKey best = NO_KEY;
    std::uint32_t kept = 0;
    for (std::uint32_t c = 0; c < candidate_count; ++c) {
      const std::uint32_t slot = candidates[c];
      const std::uint32_t n = s.n[slot];
      const bool live = n != 0;
      // max(0, rem): +0 for a rem of -0, so that the key's bits order as the level. A dead link
      // divides by 1 instead of 0 (n | !live); its key is computed but never taken.
      const std::uint32_t divisor = n | static_cast<std::uint32_t>(!live);
      const SmallKey key = small_key(std::max(0.0, s.rem[slot]) / divisor, s.id_slot[slot]);
      best = (live & (key < best)) ? key : best;
      candidates[kept] = slot;
      kept += live ? 1U : 0U;
    }
    candidate_count = kept;
    if (cap_flow != UINT32_MAX && least_cap < best) {
      freeze_one(cap_flow, s.cap[cap_flow], CAPPED);
      continue;
    }
    const std::uint32_t best_slot = best == NO_KEY ? UINT32_MAX : static_cast<std::uint32_t>(best);
    if (best_slot == UINT32_MAX) throw std::logic_error("max-min fill: a flow with nothing to hold it back");
    // The level itself, as the general fill computes it (the key's differs only for a rem of -0).
    const double level = std::max(s.rem[best_slot], 0.0) / s.n[best_slot];
    fill_links[s.link[best_slot]].fill_level = level;
    // Newest first, as the general fill's lists run.
    for (std::uint64_t m = s.link_flows[best_slot] & unfrozen; m != 0;) {
      const auto p = static_cast<std::uint32_t>(63 - std::countl_zero(m));
      m &= ~(std::uint64_t{1} << p);
      freeze_one(p, level, static_cast<LinkId>(s.id_slot[best_slot] >> 32));
    }
  }
  // The links' results back into the solve's arrays.
  filled_links_ = std::span<const std::uint32_t>(s.link, links);
  for (std::uint32_t slot = 0; slot < links; ++slot) {
    FillLink& k = fill_links[s.link[slot]];
    // What find_violations reads (rem, capsum, n and head are set afresh by any fill that takes
    // it in): the load the part leaves, the level it froze flows at, the fastest of them.
    k.load = k.capacity - s.rem[slot];
    k.a_max_rate = s.a_max_rate[slot];
  }
  return true;
}

void MaxMinSolver::fill() {
  // The part's flows filled before leave the count of A's flows bottlenecked outside the part
  // (none before the solve's first fill).
  if (fill_epoch_ != 0) {
    for (const std::uint32_t i : part_) {
      const FillFlow& f = fill_flows_[i];
      if (f.frozen != 0 && f.new_bottleneck < links_.size()) --fill_links_[fill_number_[f.new_bottleneck]].a_bottlenecked;
    }
  }
  ++fill_epoch_;
  ++counters_.fills;
  counters_.flows_solved += part_.size();
  if (part_.size() <= SMALL_FILL) {
    if (small_fill()) return;
    ++fill_epoch_;  // the links it stamped must be taken in afresh
  }
  general_fill();
  // What find_violations reads (the small fill writes it itself).
  for (const std::uint32_t j : filled_) fill_links_[j].load = fill_links_[j].capacity - fill_links_[j].rem;
}

void MaxMinSolver::general_fill() {
  filled_.clear();
  for (const std::uint32_t i : part_) {
    const FillFlow& f = fill_flows_[i];
    const std::uint32_t* links = fill_links_of_.data() + f.links_begin;
    for (std::uint32_t h = 0; h < f.link_count; ++h) {
      const std::uint32_t j = links[h];
      FillLink& k = fill_links_[j];
      if (k.fill_epoch != fill_epoch_) {
        k.fill_epoch = fill_epoch_;
        filled_.push_back(j);
        k.rem = k.capacity - k.load;
        k.capsum = 0;
        k.fill_level = NO_CAP;
        k.a_max_rate = 0;
        k.n = 0;
        k.in_a = 0;
        k.head = NO_HOP;
      }
      fill_hops_.push_back(FillHop{i, k.head});
      k.head = static_cast<std::uint32_t>(fill_hops_.size() - 1);
      // The flow's old rate goes back into what is left for A.
      k.rem += f.rate;
      k.capsum += f.cap;
      ++k.n;
      ++k.in_a;
    }
  }
  filled_links_ = filled_;  // complete: nothing is added to it past here
  const auto cap_base = static_cast<std::uint32_t>(links_.size());

  if (part_.size() == 1) {
    // One flow: its rate is the least of its cap and what each of its links has left (the same
    // choice as the general fill below, ties going to the lowest link id, then to the cap).
    const std::uint32_t x = part_.front();
    const FillFlow& f = fill_flows_[x];
    Key best{f.cap, cap_base + f.id};
    std::uint32_t best_link = NO_HOP;
    for (const std::uint32_t j : filled_) {
      FillLink& k = fill_links_[j];
      k.rem = std::max(k.rem, 0.0);
      const Key key{k.rem, k.id};
      if (key < best) {
        best = key;
        best_link = j;
      }
    }
    if (best_link == NO_HOP && best.level == NO_CAP) {
      throw std::logic_error("max-min fill: a flow with nothing to hold it back");
    }
    if (best_link != NO_HOP) fill_links_[best_link].fill_level = best.level;
    freeze<false>(x, best.level, best_link != NO_HOP ? best.id : CAPPED);
    return;
  }

  // A link whose room covers the caps of all of A's flows on it cannot hold any of them back: it
  // never binds (freeze still charges it). The others are the candidates.
  candidates_.clear();
  for (const std::uint32_t j : filled_) {
    FillLink& k = fill_links_[j];
    k.rem = std::max(k.rem, 0.0);
    if (k.capsum > k.rem) candidates_.push_back(j);
  }

  if (candidates_.size() + part_.size() <= LINEAR_FILL_LIMIT) {
    // Small: find the next event by scanning the candidate links, with the caps in sorted order;
    // no heap. Same keys and ties as the heap.
    caps_.clear();
    for (const std::uint32_t i : part_) {
      const FillFlow& f = fill_flows_[i];
      if (f.cap != NO_CAP) caps_.push_back(CapKey{Key{f.cap, cap_base + f.id}, i});
    }
    // Insertion sort: a handful of caps, mostly few enough that nothing beats it.
    for (std::size_t a = 1; a < caps_.size(); ++a) {
      const CapKey c = caps_[a];
      std::size_t b = a;
      for (; b > 0 && c.key < caps_[b - 1].key; --b) caps_[b] = caps_[b - 1];
      caps_[b] = c;
    }
    std::size_t next_cap = 0;
    std::size_t unfrozen = part_.size();
    while (unfrozen > 0) {
      Key best{NO_CAP, UINT32_MAX};
      std::uint32_t best_link = NO_HOP;
      for (const std::uint32_t j : candidates_) {
        const FillLink& k = fill_links_[j];
        if (k.n == 0) continue;
        const Key key{std::max(k.rem, 0.0) / k.n, k.id};
        if (key < best) {
          best = key;
          best_link = j;
        }
      }
      while (next_cap < caps_.size() && fill_flows_[caps_[next_cap].flow].frozen == fill_epoch_) ++next_cap;
      if (next_cap < caps_.size() && caps_[next_cap].key < best) {
        freeze<false>(caps_[next_cap].flow, caps_[next_cap].key.level, CAPPED);
        --unfrozen;
        continue;
      }
      if (best_link == NO_HOP) throw std::logic_error("max-min fill: a flow with nothing to hold it back");
      const std::uint32_t before = fill_links_[best_link].n;
      freeze_link<false>(best_link, best.level);
      unfrozen -= before;
    }
    return;
  }

  heap_.clear();
  for (const std::uint32_t j : candidates_) {
    const FillLink& k = fill_links_[j];
    heap_.push(2 * j, Key{k.rem / k.n, k.id});
  }
  for (const std::uint32_t i : part_) {
    const FillFlow& f = fill_flows_[i];
    if (f.cap != NO_CAP) heap_.push(2 * i + 1, Key{f.cap, cap_base + f.id});
  }
  while (!heap_.empty()) {
    const std::uint32_t id = heap_.top_id();
    const double level = heap_.top_key().level;
    heap_.pop();
    if (id % 2 == 1) {
      freeze<true>(id / 2, level, CAPPED);
    } else {
      freeze_link<true>(id / 2, level);
    }
  }
}

bool MaxMinSolver::find_violations() {
  violators_.clear();
  for (const std::uint32_t j : filled_links_) {
    FillLink& k = fill_links_[j];
    const LinkState& g = links_[k.id];
    const bool froze = k.fill_level != NO_CAP;
    k.level = pick(froze, k.fill_level, k.level);  // no branch: whether it froze follows no pattern
    if (g.flows == k.in_a) continue;  // every flow on the link is in the part
    // The flows outside the part bottlenecked here: outsiders (as committed) and flows of A filled
    // before (as their last fill left them).
    const std::uint32_t outsiders_bottlenecked = g.bottlenecked - k.a_old_bottlenecked;
    const std::uint32_t bottlenecked = outsiders_bottlenecked + k.a_bottlenecked;
    if (!froze && bottlenecked == 0) continue;
    // V1: the link froze flows of the part at fill_level; faster flows must come down to it. No
    // outsider on a link with outsiders bottlenecked on it runs faster than its level (each solve
    // leaves it so, within the tolerance): when the link froze the part at or above that level and
    // holds no other flow of A, there is none to find.
    const bool insiders = k.a_total != k.in_a;
    const bool v1 = froze && (insiders || !(outsiders_bottlenecked > 0 && k.fill_level >= g.level));
    // V2, V3: flows bottlenecked on the link lose their bottleneck when it has room left, or when a
    // flow of the part overtakes them on it.
    const bool has_room = k.load < threshold(g);  // k.load: the capacity less what the fill left
    const bool v23 = bottlenecked > 0 && (has_room || k.a_bottlenecked > 0 || k.a_max_rate > g.level * (1 + TOLERANCE));
    if (!v1 && !v23) continue;
    const double v1_limit = k.fill_level * (1 + TOLERANCE);
    const LinkMember* m = members_of(g);
    for (std::uint32_t i = 0; i < g.flows; ++i) {
      const std::uint32_t x = m[i].flow;
      // An outsider's rate is read from its record only when a check needs it: V1, or V2/V3 on a
      // flow held here (the list's mark says which, as committed).
      double rate;
      bool held;
      if (in_a(x)) {
        const FillFlow& a = fill_flows_[fill_of_[x]];
        if (a.part == part_epoch_) continue;
        rate = a.new_rate;
        held = a.new_bottleneck == k.id;
      } else {
        held = m[i].held;
        if (!v1 && !held) continue;
        rate = flows_[x].rate;
      }
      if ((v1 && rate > v1_limit) || (v23 && held && (has_room || k.a_max_rate > rate * (1 + TOLERANCE)))) {
        violators_.push_back(x);
      }
    }
  }
  counters_.outsiders_added += violators_.size();
  // Done: the commit reads only the new rates and bottlenecks, not what the loop below updates.
  if (violators_.empty()) return false;
  // The part's new rates and bottlenecks become A's current ones, for the refill.
  for (const std::uint32_t i : part_) {
    FillFlow& f = fill_flows_[i];
    f.rate = f.new_rate;
    if (f.new_bottleneck < links_.size()) ++fill_links_[fill_number_[f.new_bottleneck]].a_bottlenecked;
  }
  // The violators are filled again with the flows of A coupled to them (directly or not) through
  // links where a flow of A is bottlenecked: there a change of one moves the others. Flows of A
  // that only share links it is not bottlenecked on keep their rates; the checks above catch them
  // if the refill pushes such a link's level below them. After a few rounds, a safeguard: the
  // coupling runs through every shared hot link, so that no flow of A outside the part shares a
  // link with it, the violators are all outsiders, and A grows at each round until none is left.
  ++part_epoch_;
  if (part_epoch_ >= RESTRICTED_ROUNDS) full_coupling_ = true;
  part_.clear();
  const auto join = [&](std::uint32_t i) {
    FillFlow& g = fill_flows_[i];
    if (g.part != part_epoch_) {
      g.part = part_epoch_;
      part_.push_back(i);
    }
  };
  for (const std::uint32_t x : violators_) {
    gather(x);
    join(fill_of_[x]);
  }
  for (std::size_t p = 0; p < part_.size(); ++p) {
    const FillFlow& f = fill_flows_[part_[p]];
    for (std::uint32_t h = 0; h < f.link_count; ++h) {
      FillLink& k = fill_links_[fill_links_of_[f.links_begin + h]];
      if (k.visit == part_epoch_) continue;
      k.visit = part_epoch_;
      if (!full_coupling_ && k.a_bottlenecked == 0) continue;
      for (std::uint32_t hi = k.a_head; hi != NO_HOP; hi = a_hops_[hi].next) join(a_hops_[hi].flow);
    }
  }
  return true;
}

// One flow rated on its own against everything else as it stands: its rate is the least of its
// cap and what each of its hot links leaves it (its own old rate given back), exactly what a fill
// of A = {it} gives; the change is kept only when no other flow's max-min condition fails on its
// links (V1 to V3 of the header, checked here for a single flow). Returns false, having changed
// nothing, when the general fill is needed.
bool MaxMinSolver::rate_alone(std::uint32_t x) {
  Flow& f = flows_[x];
  const bool pending = f.state == PENDING;
  const double old_rate = pending ? 0.0 : f.rate;
  const auto cap_base = static_cast<std::uint32_t>(links_.size());
  Key best{f.cap, cap_base + x};
  for_each_bit(f.hot_mask, [&](std::uint32_t h) {
    const LinkId l = hop_link(f, h);
    const LinkState& k = links_[l];
    const Key key{std::max(k.capacity - k.load + old_rate, 0.0), l};
    if (key < best) best = key;
  });
  const double rate = best.level;
  if (best.id < cap_base) {
    // V1: flows on the link it fills that run faster must share it.
    const double limit = rate * (1 + TOLERANCE);
    const LinkState& k = links_[best.id];
    const LinkMember* m = members_of(k);
    for (std::uint32_t i = 0; i < k.flows; ++i) {
      if (m[i].flow != x && flows_[m[i].flow].rate > limit) return false;
    }
  }
  bool disturbs = false;
  for_each_bit(f.hot_mask, [&](std::uint32_t h) {
    const LinkId l = hop_link(f, h);
    const LinkState& k = links_[l];
    const std::uint32_t others = k.bottlenecked - (f.bottleneck == l ? 1 : 0);
    if (others == 0) return;
    // V2: the others bottlenecked here would get room; V3: it would overtake them.
    if (k.load + rate - old_rate < threshold(k) || rate > k.level * (1 + TOLERANCE)) disturbs = true;
  });
  if (disturbs) return false;

  ++counters_.alone;
  ++counters_.flows_solved;
  const std::uint32_t bottleneck = best.id < cap_base ? best.id : CAPPED;
  if (bottleneck != f.bottleneck) set_bottleneck(x, bottleneck);
  if (bottleneck < links_.size()) links_[bottleneck].level = rate;
  if (!pending && std::abs(rate - old_rate) <= RATE_TOLERANCE * std::max(rate, old_rate)) return true;
  for_each_bit(f.hot_mask, [&](std::uint32_t h) {
    const LinkId l = hop_link(f, h);
    links_[l].load = std::max(0.0, links_[l].load + rate - old_rate);
    note_saturation(l);
  });
  f.state = LIVE;
  f.rate = rate;
  apply_new_rate(x, old_rate, rate);
  changes_.push_back(RateChange{x, old_rate, rate});
  ++counters_.rate_changes;
  return true;
}

// Writes the fills' results back: loads and levels of A's links, bottlenecks and rates of its flows.
void MaxMinSolver::commit() {
  for (const FillLink& k : fill_links_) {
    LinkState& g = links_[k.id];
    g.load = std::max(0.0, k.load);
    g.level = k.level;  // the link's own level unless a fill of this solve froze flows there
    note_saturation(k.id);
  }
  const auto first_change = changes_.size();
  for (const FillFlow& a : fill_flows_) {
    Flow& f = flows_[a.id];
    if (f.bottleneck != a.new_bottleneck) set_bottleneck(a.id, a.new_bottleneck);
    const double old_rate = f.rate;
    const double new_rate = a.new_rate;
    if (f.state == PENDING) {
      f.state = LIVE;
    } else if (std::abs(new_rate - old_rate) <= RATE_TOLERANCE * std::max(new_rate, old_rate)) {
      continue;
    }
    f.rate = new_rate;
    apply_new_rate(a.id, old_rate, new_rate);
    changes_.push_back(RateChange{a.id, old_rate, new_rate});
  }
  counters_.rate_changes += changes_.size() - first_change;
}

std::span<const MaxMinSolver::RateChange> MaxMinSolver::solve() {
  changes_.clear();
  if (added_.empty() && dirty_.empty()) return changes_;
  ++counters_.solves;
  // First, one change at a time where a single flow can absorb it on its own: a link that lost a
  // flow and has one other flow bottlenecked on it, a flow that started.
  std::size_t kept = 0;
  // The link's count of flows bottlenecked on it says which case it is; only a link with one
  // needs its list read, up to that flow.
  for (const LinkId l : dirty_) {
    const LinkState& k = links_[l];
    if (k.bottlenecked == 0) continue;
    if (k.bottlenecked == 1) {
      const LinkMember* m = members_of(k);
      std::uint32_t i = 0;
      while (!m[i].held) ++i;
      if (rate_alone(m[i].flow)) continue;
    }
    dirty_[kept++] = l;
  }
  dirty_.resize(kept);
  kept = 0;
  for (const std::uint32_t x : added_) {
    if (!rate_alone(x)) added_[kept++] = x;
  }
  added_.resize(kept);
  if (added_.empty() && dirty_.empty()) return changes_;

  fill_epoch_ = 0;
  part_epoch_ = 0;
  fill_flows_.clear();
  fill_links_.clear();
  a_hop_count_ = 0;
  fill_hops_.clear();
  full_coupling_ = false;
  for (const std::uint32_t x : added_) gather(x);
  const auto first_moved = static_cast<std::uint32_t>(fill_flows_.size());
  // A started flow that cannot have its potential on a link will share that link: the link's
  // flows that it can push aside join A now rather than one fill later (V1). Those are the flows
  // held there, and those held elsewhere that run at or above the share it and the held ones would
  // get of what the others leave; a slower one keeps its rate unless the fill's level falls below
  // it, which V1 then catches.
  for (const std::uint32_t x : added_) {
    const Flow& f = flows_[x];
      for_each_bit(f.hot_mask, [&](std::uint32_t h) {
      const LinkId l = hop_link(f, h);
      const LinkState& k = links_[l];
      if (k.load + f.potential < threshold(k)) return;
      // The held flows run at the link's level; the rest of its load is the others'.
      const double held_elsewhere = k.load - k.bottlenecked * k.level;
      const double share = std::max(0.0, k.capacity - held_elsewhere) / (k.bottlenecked + 1);
      const LinkMember* m = members_of(k);
      for (std::uint32_t i = 0; i < k.flows; ++i) {
        if (m[i].held || flows_[m[i].flow].rate >= share * (1 - TOLERANCE)) gather(m[i].flow);
      }
    });
  }
  added_.clear();
  for (const LinkId l : dirty_) gather_held_on(l);
  dirty_.clear();
  // The flows that joined so far besides the started ones (pushed aside by those, or freed by a
  // flow's end) move, and so does their load on their other hot links; where such a link is
  // saturated, the flows bottlenecked there may have to give way (V1, V3) or get room (V2), and
  // move in turn. They join A now, through every saturated link reached this way, rather than
  // each one refill later (see the header).
  for (std::uint32_t a = first_moved; a < fill_flows_.size(); ++a) {
    const Flow& f = flows_[fill_flows_[a].id];
    for_each_bit(f.hot_mask, [&](std::uint32_t h) {
      const LinkId o = hop_link(f, h);
      const LinkState& k = links_[o];
      // One branch for the three tests (each alone follows no pattern).
      if ((o != f.bottleneck) & (k.bottlenecked > 0) & is_saturated(k)) gather_held_on(o);
    });
  }
  if (fill_flows_.empty()) return changes_;
  part_.resize(fill_flows_.size());
  for (std::uint32_t i = 0; i < part_.size(); ++i) part_[i] = i;
  do {
    fill();
  } while (find_violations());
  commit();
  return changes_;
}

}  // namespace clustersim::sim
