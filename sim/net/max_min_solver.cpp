#include "sim/net/max_min_solver.hpp"
#include "sim/net/max_min_detail.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

namespace clustersim::sim {

using max_min_detail::for_each_bit;

MaxMinSolver::MaxMinSolver(std::span<const double> capacities, std::span<const std::uint8_t> never_binds) {
  if (!never_binds.empty() && never_binds.size() != capacities.size()) {
    throw std::invalid_argument("never_binds must have one entry per link");
  }
  links_.resize(capacities.size());
  stats_.resize(capacities.size());
  saturated_bits_.resize((capacities.size() + 63) / 64);
  fill_number_.resize(capacities.size());
  for (std::size_t l = 0; l < capacities.size(); ++l) {
    const double c = capacities[l];
    if (!(c > 0) || !std::isfinite(c)) {
      throw std::invalid_argument("link " + std::to_string(l) + " capacity must be positive and finite");
    }
    links_[l].capacity = c;
    if (!never_binds.empty() && never_binds[l] != 0) {
      links_[l].members = NO_LIST;
      links_[l].bytes_since = 0;
    }
  }
}

std::span<const LinkMember> MaxMinSolver::flows_on(LinkId l) const {
  const LinkState& k = links_[l];
  if (k.members == NO_LIST || k.flows == 0) return {};
  return {members_of(k), k.flows};
}

void MaxMinSolver::ensure_flow(std::uint32_t flow) {
  if (flow < flows_.size()) return;
  flows_.resize(std::max<std::size_t>(flow + 1, flows_.size() * 2));
  fill_of_.resize(flows_.size(), UINT32_MAX);
}

// Appends to a listed link's flow list (moving it to a block twice as large when full) and counts
// the flow; returns its position.
std::uint32_t MaxMinSolver::append_member(LinkState& k, LinkMember m) {
  const std::uint32_t n = k.flows;
  // Full when n is its capacity (INLINE_MEMBERS, then bit_ceil(peak_flows)): n never exceeds the
  // peak, so only at the peak, when that is a power of two from INLINE_MEMBERS on (the test, cheap
  // when n is below the peak, as it mostly is).
  if (n == k.peak_flows && n >= INLINE_MEMBERS && std::has_single_bit(n)) {
    const std::uint32_t block = members_.allocate(BlockPool<LinkMember>::class_for(2 * std::size_t{n}));
    std::copy_n(members_of(k), n, members_.at(block));
    if (n > INLINE_MEMBERS) members_.release(k.members, BlockPool<LinkMember>::class_for(n));
    k.members = block;
  }
  k.flows = n + 1;
  if (k.flows > k.peak_flows) k.peak_flows = k.flows;
  members_of(k)[n] = m;
  return n;
}

void MaxMinSolver::mark_held(const Flow& f, LinkId l, bool held) {
  std::uint32_t h = 0;
  while (hop_link(f, h) != l) ++h;
  members_of(links_[l])[hop_pos(f, h)].held = held;
}

void MaxMinSolver::set_bottleneck(std::uint32_t x, std::uint32_t b) {
  Flow& f = flows_[x];
  if (f.bottleneck < links_.size()) {
    --links_[f.bottleneck].bottlenecked;
    mark_held(f, f.bottleneck, false);
  }
  if (b < links_.size()) {
    ++links_[b].bottlenecked;
    mark_held(f, b, true);
  }
  f.bottleneck = b;
}

void MaxMinSolver::settle_saturation() {
  for (const LinkId l : saturation_pending_) {
    const LinkState& k = links_[l];
    const bool now_saturated = is_hot(k) && is_saturated(k);
    std::uint64_t& word = saturated_bits_[l / 64];
    const std::uint64_t bit = std::uint64_t{1} << (l % 64);
    if (now_saturated == ((word & bit) != 0)) continue;
    LinkStats& s = stats_[l];
    if (now_saturated) {
      s.saturated_since = now_ps_;
    } else {
      s.saturated_ps += now_ps_ - s.saturated_since;
    }
    word ^= bit;
  }
  saturation_pending_.clear();
}

// A link that never binds: integrate the bytes it carried so far, then change its load.
void MaxMinSolver::add_unlisted_load(LinkId l, double delta) {
  LinkState& k = links_[l];
  k.bytes += k.load * static_cast<double>(now_ps_ - k.bytes_since) * 1e-12;
  k.bytes_since = now_ps_;
  k.load = std::max(0.0, k.load + delta);
}

// After a flow's rate changed: the links that never bind follow it (hot links are set by the fill).
void MaxMinSolver::apply_new_rate(std::uint32_t flow, double old_rate, double new_rate) {
  const Flow& f = flows_[flow];
  if (f.never_mask == 0) return;
  for_each_bit(f.never_mask, [&](std::uint32_t h) { add_unlisted_load(hop_link(f, h), new_rate - old_rate); });
}

// The link's flows could now fill it: keep its load from here on and mark it in their masks.
void MaxMinSolver::turn_hot(LinkId l) {
  LinkState& k = links_[l];
  double load = 0;
  const LinkMember* m = members_of(k);
  for (std::uint32_t i = 0; i < k.flows; ++i) {
    Flow& f = flows_[m[i].flow];
    load += f.rate;
    f.hot_mask |= 1U << m[i].hop;
  }
  k.load = load;
  note_saturation(l);
}

void MaxMinSolver::turn_cold(LinkId l) {
  LinkState& k = links_[l];
  const LinkMember* m = members_of(k);
  for (std::uint32_t i = 0; i < k.flows; ++i) {
    Flow& f = flows_[m[i].flow];
    f.hot_mask &= ~(1U << m[i].hop);
  }
  k.load = 0;
  note_saturation(l);
}

double MaxMinSolver::load(LinkId l) const {
  const LinkState& k = links_.at(l);
  if (k.members == NO_LIST || is_hot(k)) return k.load;
  double sum = 0;
  for (const LinkMember& m : flows_on(l)) sum += flows_[m.flow].rate;
  return sum;
}

LinkUsage MaxMinSolver::usage(LinkId l, std::int64_t now_ps) const {
  const LinkState& k = links_.at(l);
  const LinkStats& s = stats_[l];
  LinkUsage u;
  u.bytes = k.bytes + (k.members == NO_LIST ? k.load * static_cast<double>(now_ps - k.bytes_since) * 1e-12 : 0.0);
  u.busy_ps = k.flows == 0 ? k.busy : now_ps - k.busy;
  // Saturated up to the last settled instant, then (changes at now_ps_ not settled yet) as it is now.
  const bool settled = ((saturated_bits_[l / 64] >> (l % 64)) & 1U) != 0;
  u.saturated_ps = s.saturated_ps + (settled ? now_ps_ - s.saturated_since : 0) + (saturated(l) ? now_ps - now_ps_ : 0);
  u.load = load(l);
  u.flows = k.flows;
  u.peak_flows = k.peak_flows;
  return u;
}

void MaxMinSolver::add_flow(std::uint32_t flow, std::span<const LinkId> route, double cap) {
  if (route.size() > MAX_HOPS) throw std::length_error("a flow crosses at most 32 links");
  if (!(cap > 0)) throw std::invalid_argument("a flow's rate cap must be positive");
  if (route.empty() && cap == NO_CAP) throw std::invalid_argument("a flow with no links needs a rate cap");
  double potential = cap;
  for (const LinkId l : route) {
    if (l >= links_.size()) throw std::out_of_range("link id " + std::to_string(l) + " out of range");
    potential = std::min(potential, links_[l].capacity);
  }
  ensure_flow(flow);
  Flow& f = flows_[flow];
  if (f.state != FREE) throw std::logic_error("flow slot " + std::to_string(flow) + " is in use");
  // The hops past INLINE_HOPS go to a block of hops_, which the slot keeps from one flow to the
  // next (a larger one replaces it when the route needs more room).
  if (route.size() > INLINE_HOPS) {
    const unsigned c = BlockPool<Hop>::class_for(route.size() - INLINE_HOPS);
    if (f.spill_class == NO_BLOCK || f.spill_class < c) {
      if (f.spill_class != NO_BLOCK) hops_.release(f.spill, f.spill_class);
      f.spill = hops_.allocate(c);
      f.spill_class = static_cast<std::uint8_t>(c);
    }
  }
  f.hop_count = static_cast<std::uint8_t>(route.size());
  f.potential = potential;
  f.rate = 0;
  f.cap = cap;
  f.state = PENDING;
  f.bottleneck = UNSOLVED;
  f.hot_mask = 0;
  f.never_mask = 0;
  for (std::uint32_t h = 0; h < route.size(); ++h) {
    const LinkId l = route[h];
    LinkState& k = links_[l];
    if (k.members == NO_LIST) {
      if (k.flows++ == 0) k.busy = now_ps_ - k.busy;
      if (k.flows > k.peak_flows) k.peak_flows = k.flows;
      if (h < INLINE_HOPS) {
        f.links[h] = l;
        f.pos[h] = UNLISTED;
      } else {
        hops_.at(f.spill)[h - INLINE_HOPS] = Hop{l, UNLISTED};
      }
      f.never_mask |= 1U << h;
      continue;
    }
    if (k.flows == 0) k.busy = now_ps_ - k.busy;
    const bool was_hot = is_hot(k);
    const std::uint32_t pos = append_member(k, LinkMember{flow, static_cast<std::uint8_t>(h)});
    if (h < INLINE_HOPS) {
      f.links[h] = l;
      f.pos[h] = pos;
    } else {
      hops_.at(f.spill)[h - INLINE_HOPS] = Hop{l, pos};
    }
    k.potential += potential;
    if (was_hot) {
      f.hot_mask |= 1U << h;
    } else if (is_hot(k)) {
      turn_hot(l);  // sets this flow's bit too
    }
  }
  added_.push_back(flow);
}

void MaxMinSolver::prefetch_links(std::uint32_t flow) const {
  if (flow >= flows_.size() || flows_[flow].state == FREE) return;
  const Flow& f = flows_[flow];
  for (std::uint32_t h = 0; h < f.hop_count; ++h) __builtin_prefetch(&links_[hop_link(f, h)]);
}

void MaxMinSolver::prefetch_members(std::uint32_t flow) const {
  if (flow >= flows_.size() || flows_[flow].state == FREE) return;
  const Flow& f = flows_[flow];
  for (std::uint32_t h = 0; h < f.hop_count; ++h) {
    const std::uint32_t pos = hop_pos(f, h);
    const LinkState& k = links_[hop_link(f, h)];
    if (pos == UNLISTED || k.flows == 0) continue;
    __builtin_prefetch(members_of(k) + pos);
    __builtin_prefetch(members_of(k) + (k.flows - 1));
  }
}

void MaxMinSolver::remove_flow(std::uint32_t flow, double bytes_moved) {
  if (flow >= flows_.size() || flows_[flow].state == FREE) {
    throw std::logic_error("flow slot " + std::to_string(flow) + " is not in use");
  }
  Flow& f = flows_[flow];
  const double r = f.rate;
  const std::uint32_t count = f.hop_count;
  for (std::uint32_t h = 0; h < count; ++h) {
    const Hop p{hop_link(f, h), hop_pos(f, h)};
    const LinkId l = p.link;
    LinkState& k = links_[l];
    if (--k.flows == 0) k.busy = now_ps_ - k.busy;
    if (p.pos == UNLISTED) {
      if (r > 0) add_unlisted_load(l, -r);
      continue;
    }
    const bool hot = is_hot(k);
    if (hot && r > 0) {
      // The flows bottlenecked on a saturated link may speed up; elsewhere nobody cares.
      const std::uint32_t others = k.bottlenecked - (f.bottleneck == l ? 1 : 0);
      if (others > 0 && is_saturated(k)) dirty_.push_back(l);
      k.load = std::max(0.0, k.load - r);
      note_saturation(l);
    }
    k.bytes += bytes_moved;
    LinkMember* m = members_of(k);
    const LinkMember last = m[k.flows];
    m[p.pos] = last;
    hop_pos(flows_[last.flow], last.hop) = p.pos;
    k.potential -= f.potential;
    if (k.flows == 0) k.potential = 0;  // clear what rounding may have left
    if (hot && !is_hot(k)) turn_cold(l);
  }
  if (f.bottleneck < links_.size()) --links_[f.bottleneck].bottlenecked;  // its entry is gone
  f.bottleneck = UNSOLVED;
  if (f.state == PENDING) {
    auto it = std::find(added_.begin(), added_.end(), flow);
    if (it != added_.end()) added_.erase(it);
  }
  f.state = FREE;
  f.rate = 0;
  f.hot_mask = 0;
  f.never_mask = 0;
}

std::size_t MaxMinSolver::memory_bytes() const {
  std::size_t b = links_.capacity() * sizeof(LinkState) + stats_.capacity() * sizeof(LinkStats);
  b += saturated_bits_.capacity() * sizeof(std::uint64_t) + saturation_pending_.capacity() * sizeof(LinkId);
  b += flows_.capacity() * sizeof(Flow) + hops_.memory_bytes() + members_.memory_bytes();
  b += (added_.capacity() + dirty_.capacity() + violators_.capacity()) * sizeof(std::uint32_t);
  b += fill_flows_.capacity() * sizeof(FillFlow) + fill_links_.capacity() * sizeof(FillLink);
  b += (fill_links_of_.capacity() + fill_number_.capacity() + fill_of_.capacity() + part_.capacity() + filled_.capacity() +
        candidates_.capacity()) *
       sizeof(std::uint32_t);
  b += (fill_hops_.capacity() + a_hops_.capacity()) * sizeof(FillHop) + caps_.capacity() * sizeof(CapKey);
  b += changes_.capacity() * sizeof(RateChange) + heap_.memory_bytes();
  return b;
}

}  // namespace clustersim::sim
