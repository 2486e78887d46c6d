// The fill of MaxMinSolver: gathering the flows whose rates can move, progressive filling,
// the outsider checks (V1 to V3) and the commit. The mathematics is in max_min_solver.hpp.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/net/max_min_detail.hpp"
#include "sim/net/max_min_solver.hpp"

namespace clustersim::sim {

namespace {
constexpr std::uint32_t NO_HOP = UINT32_MAX;
}  // namespace

using max_min_detail::for_each_bit;
using max_min_detail::RATE_TOLERANCE;
using max_min_detail::TOLERANCE;

void MaxMinSolver::gather(std::uint32_t flow) {
  Flow& f = flows_[flow];
  if (f.in_set == epoch_) return;
  f.in_set = epoch_;
  set_.push_back(flow);
}

template <bool WITH_HEAP>
void MaxMinSolver::freeze(std::uint32_t flow, double rate, std::uint32_t bottleneck) {
  Flow& f = flows_[flow];
  f.frozen = fill_epoch_;
  f.new_rate = rate;
  f.new_bottleneck = bottleneck;
  if constexpr (WITH_HEAP) heap_.erase(static_cast<std::uint32_t>(links_.size()) + flow);
  const std::uint32_t begin = f.hop_begin;
  for_each_bit(f.hot_mask, [&](std::uint32_t h) {
    const LinkId l = hops_[begin + h].link;
    Link& k = links_[l];
    k.rem -= rate;
    if (rate > k.a_max_rate) k.a_max_rate = rate;
    --k.n;
    if constexpr (WITH_HEAP) {
      if (heap_.contains(l)) {
        if (k.n == 0) {
          heap_.erase(l);
        } else {
          heap_.update(l, Key{std::max(k.rem, 0.0) / k.n, l});
        }
      }
    }
  });
}

// Freezes every unfrozen flow of A on link l at `level`.
template <bool WITH_HEAP>
void MaxMinSolver::freeze_link(LinkId l, double level) {
  Link& k = links_[l];
  k.fill_level = level;
  for (std::uint32_t hi = k.a_head; hi != NO_HOP && k.n > 0; hi = hop_next_[hi]) {
    const std::uint32_t x = hops_[hi].flow;
    if (flows_[x].frozen != fill_epoch_) freeze<WITH_HEAP>(x, level, l);
  }
}

void MaxMinSolver::fill() {
  ++fill_epoch_;
  ++counters_.fills;
  counters_.flows_solved += part_.size();
  fill_links_.clear();
  for (const std::uint32_t x : part_) {
    const Flow& f = flows_[x];
    const std::uint32_t begin = f.hop_begin;
    for_each_bit(f.hot_mask, [&](std::uint32_t h) {
      const LinkId l = hops_[begin + h].link;
      Link& k = links_[l];
      if (k.fill_epoch != fill_epoch_) {
        k.fill_epoch = fill_epoch_;
        fill_links_.push_back(l);
        if (k.solve_epoch != epoch_) {
          k.solve_epoch = epoch_;
          solve_links_.push_back(l);
        }
        k.rem = k.capacity - k.load;
        k.capsum = 0;
        k.fill_level = NO_CAP;
        k.a_max_rate = 0;
        k.n = 0;
        k.in_a = 0;
        k.a_bottlenecked = 0;
        k.a_head = NO_HOP;
      }
      hop_next_[begin + h] = k.a_head;
      k.a_head = begin + h;
      // The flow's old rate goes back into what is left for A.
      k.rem += f.rate;
      k.capsum += f.cap;
      ++k.n;
      ++k.in_a;
      if (f.bottleneck == l) ++k.a_bottlenecked;
    });
  }
  const auto cap_base = static_cast<std::uint32_t>(links_.size());

  if (part_.size() == 1) {
    // One flow: its rate is the least of its cap and what each of its links has left (the same
    // choice as the general fill below, ties going to the lowest link id, then to the cap).
    const std::uint32_t x = part_.front();
    Key best{flows_[x].cap, cap_base + x};
    for (const LinkId l : fill_links_) {
      Link& k = links_[l];
      k.rem = std::max(k.rem, 0.0);
      const Key key{k.rem, l};
      if (key < best) best = key;
    }
    if (best.id == cap_base + x && best.level == NO_CAP) {
      throw std::logic_error("max-min fill: a flow with nothing to hold it back");
    }
    if (best.id < cap_base) links_[best.id].fill_level = best.level;
    freeze<false>(x, best.level, best.id < cap_base ? best.id : CAPPED);
    return;
  }

  // A link whose room covers the caps of all of A's flows on it cannot hold any of them back: it
  // never binds (freeze still charges it). The others are the candidates.
  candidates_.clear();
  for (const LinkId l : fill_links_) {
    Link& k = links_[l];
    k.rem = std::max(k.rem, 0.0);
    if (k.capsum > k.rem) candidates_.push_back(l);
  }

  if (candidates_.size() + part_.size() <= LINEAR_FILL_LIMIT) {
    // Small: find the next event by scanning the candidate links, with the caps in sorted order;
    // no heap. Same keys and ties as the heap.
    caps_.clear();
    for (const std::uint32_t x : part_) {
      if (flows_[x].cap != NO_CAP) caps_.push_back(Key{flows_[x].cap, cap_base + x});
    }
    std::sort(caps_.begin(), caps_.end());
    std::size_t next_cap = 0;
    std::size_t unfrozen = part_.size();
    while (unfrozen > 0) {
      Key best{NO_CAP, UINT32_MAX};
      for (const LinkId l : candidates_) {
        const Link& k = links_[l];
        if (k.n == 0) continue;
        const Key key{std::max(k.rem, 0.0) / k.n, l};
        if (key < best) best = key;
      }
      while (next_cap < caps_.size() && flows_[caps_[next_cap].id - cap_base].frozen == fill_epoch_) ++next_cap;
      if (next_cap < caps_.size() && caps_[next_cap] < best) best = caps_[next_cap];
      if (best.id == UINT32_MAX) throw std::logic_error("max-min fill: a flow with nothing to hold it back");
      if (best.id >= cap_base) {
        freeze<false>(best.id - cap_base, best.level, CAPPED);
        --unfrozen;
      } else {
        const std::uint32_t before = links_[best.id].n;
        freeze_link<false>(best.id, best.level);
        unfrozen -= before;
      }
    }
    return;
  }

  heap_.clear();
  for (const LinkId l : candidates_) heap_.push(l, Key{links_[l].rem / links_[l].n, l});
  for (const std::uint32_t x : part_) {
    if (flows_[x].cap != NO_CAP) heap_.push(cap_base + x, Key{flows_[x].cap, cap_base + x});
  }
  while (!heap_.empty()) {
    const std::uint32_t id = heap_.top_id();
    const double level = heap_.top_key().level;
    heap_.pop();
    if (id >= cap_base) {
      freeze<true>(id - cap_base, level, CAPPED);
    } else {
      freeze_link<true>(id, level);
    }
  }
}

bool MaxMinSolver::find_violations() {
  violators_.clear();
  for (const LinkId l : fill_links_) {
    const Link& k = links_[l];
    const bool froze = k.fill_level != NO_CAP;
    const bool outsiders_bottlenecked = k.bottlenecked != k.a_bottlenecked;
    if (!froze && !outsiders_bottlenecked) continue;
    const auto& m = links_[l].members;
    if (m.size() == k.in_a) continue;  // no outsider on l
    // V1: l froze flows of A at fill_level; faster outsiders must come down to it.
    if (froze) {
      const double limit = k.fill_level * (1 + TOLERANCE);
      for (const LinkMember& x : m) {
        const Flow& f = flows_[x.flow];
        if (f.in_set != epoch_ && f.rate > limit) violators_.push_back(x.flow);
      }
    }
    // V2, V3: outsiders bottlenecked on l lose their bottleneck when l has room left, or when a
    // flow of A overtakes them on l.
    if (!outsiders_bottlenecked) continue;
    const bool has_room = k.capacity - k.rem < k.threshold;
    const bool overtaken = k.a_max_rate > k.level * (1 + TOLERANCE);
    if (has_room || overtaken) {
      for (const LinkMember& x : m) {
        const Flow& f = flows_[x.flow];
        if (f.in_set != epoch_ && f.bottleneck == l) violators_.push_back(x.flow);
      }
    }
  }
  counters_.outsiders_added += violators_.size();
  for (const std::uint32_t x : violators_) gather(x);
  if (violators_.empty()) return false;
  // Only the violators and the flows of A they are coupled to (through shared hot links, directly
  // or not) are filled again; the rest of A keeps what the last fill gave it.
  ++part_epoch_;
  part_.clear();
  for (const std::uint32_t x : violators_) {
    if (flows_[x].part != part_epoch_) {
      flows_[x].part = part_epoch_;
      part_.push_back(x);
    }
  }
  for (std::size_t i = 0; i < part_.size(); ++i) {
    const Flow& f = flows_[part_[i]];
    for_each_bit(f.hot_mask, [&](std::uint32_t h) {
      const LinkId l = hops_[f.hop_begin + h].link;
      Link& k = links_[l];
      if (k.visit == part_epoch_) return;
      k.visit = part_epoch_;
      // The flows of A on the link are those of the last fill that took it in (no fill of this
      // solve took it in: none but newcomers).
      if (k.solve_epoch != epoch_) return;
      for (std::uint32_t hi = k.a_head; hi != NO_HOP; hi = hop_next_[hi]) {
        Flow& g = flows_[hops_[hi].flow];
        if (g.part != part_epoch_) {
          g.part = part_epoch_;
          part_.push_back(hops_[hi].flow);
        }
      }
    });
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
  const std::uint32_t begin = f.hop_begin;
  const auto cap_base = static_cast<std::uint32_t>(links_.size());
  Key best{f.cap, cap_base + x};
  for_each_bit(f.hot_mask, [&](std::uint32_t h) {
    const LinkId l = hops_[begin + h].link;
    const Link& k = links_[l];
    const Key key{std::max(k.capacity - k.load + old_rate, 0.0), l};
    if (key < best) best = key;
  });
  const double rate = best.level;
  if (best.id < cap_base) {
    // V1: flows on the link it fills that run faster must share it.
    const double limit = rate * (1 + TOLERANCE);
    for (const LinkMember& m : links_[best.id].members) {
      if (m.flow != x && flows_[m.flow].rate > limit) return false;
    }
  }
  bool disturbs = false;
  for_each_bit(f.hot_mask, [&](std::uint32_t h) {
    const LinkId l = hops_[begin + h].link;
    const Link& k = links_[l];
    const std::uint32_t others = k.bottlenecked - (f.bottleneck == l ? 1 : 0);
    if (others == 0) return;
    // V2: the others bottlenecked here would get room; V3: it would overtake them.
    if (k.load + rate - old_rate < k.threshold || rate > k.level * (1 + TOLERANCE)) disturbs = true;
  });
  if (disturbs) return false;

  ++counters_.alone;
  ++counters_.flows_solved;
  const std::uint32_t bottleneck = best.id < cap_base ? best.id : CAPPED;
  if (bottleneck != f.bottleneck) {
    if (f.bottleneck < links_.size()) --links_[f.bottleneck].bottlenecked;
    if (bottleneck < links_.size()) ++links_[bottleneck].bottlenecked;
    f.bottleneck = bottleneck;
  }
  if (bottleneck < links_.size()) links_[bottleneck].level = rate;
  if (!pending && std::abs(rate - old_rate) <= RATE_TOLERANCE * std::max(rate, old_rate)) return true;
  for_each_bit(f.hot_mask, [&](std::uint32_t h) {
    const LinkId l = hops_[begin + h].link;
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

std::span<const MaxMinSolver::RateChange> MaxMinSolver::solve() {
  changes_.clear();
  if (added_.empty() && dirty_.empty()) return changes_;
  ++counters_.solves;
  // First, one change at a time where a single flow can absorb it on its own: a link that lost a
  // flow and has one other flow bottlenecked on it, a flow that started.
  std::size_t kept = 0;
  for (const LinkId l : dirty_) {
    std::uint32_t only = UINT32_MAX;
    std::uint32_t count = 0;
    for (const LinkMember& m : links_[l].members) {
      if (flows_[m.flow].bottleneck == l) {
        only = m.flow;
        ++count;
      }
    }
    if (count == 0 || (count == 1 && rate_alone(only))) continue;
    dirty_[kept++] = l;
  }
  dirty_.resize(kept);
  kept = 0;
  for (const std::uint32_t x : added_) {
    if (!rate_alone(x)) added_[kept++] = x;
  }
  added_.resize(kept);
  if (added_.empty() && dirty_.empty()) return changes_;

  ++epoch_;
  set_.clear();
  for (const std::uint32_t x : added_) gather(x);
  // A started flow that cannot have its potential on a link will share that link: the link's
  // flows join A now rather than one fill later (V1).
  for (const std::uint32_t x : added_) {
    const Flow& f = flows_[x];
    for_each_bit(f.hot_mask, [&](std::uint32_t h) {
      const LinkId l = hops_[f.hop_begin + h].link;
      const Link& k = links_[l];
      if (k.load + f.potential < k.threshold) return;
      for (const LinkMember& m : links_[l].members) gather(m.flow);
    });
  }
  added_.clear();
  for (const LinkId l : dirty_) {
    for (const LinkMember& x : links_[l].members) {
      if (flows_[x.flow].bottleneck == l) gather(x.flow);
    }
  }
  dirty_.clear();
  if (set_.empty()) return changes_;
  solve_links_.clear();
  part_.assign(set_.begin(), set_.end());
  do {
    fill();
  } while (find_violations());

  for (const LinkId l : solve_links_) {
    Link& k = links_[l];
    k.load = std::max(0.0, k.capacity - k.rem);
    if (k.fill_level != NO_CAP) k.level = k.fill_level;
    note_saturation(l);
  }
  for (const std::uint32_t x : set_) {
    Flow& f = flows_[x];
    if (f.bottleneck != f.new_bottleneck) {
      if (f.bottleneck < links_.size()) --links_[f.bottleneck].bottlenecked;
      if (f.new_bottleneck < links_.size()) ++links_[f.new_bottleneck].bottlenecked;
      f.bottleneck = f.new_bottleneck;
    }
    const double old_rate = f.rate;
    const double new_rate = f.new_rate;
    if (f.state == PENDING) {
      f.state = LIVE;
    } else if (std::abs(new_rate - old_rate) <= RATE_TOLERANCE * std::max(new_rate, old_rate)) {
      continue;
    }
    f.rate = new_rate;
    apply_new_rate(x, old_rate, new_rate);
    changes_.push_back(RateChange{x, old_rate, new_rate});
  }
  counters_.rate_changes += changes_.size();
  return changes_;
}

}  // namespace clustersim::sim
