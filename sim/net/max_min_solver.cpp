#include "sim/net/max_min_solver.hpp"
#include "sim/net/max_min_detail.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

namespace clustersim::sim {

using max_min_detail::for_each_bit;
using max_min_detail::RATE_TOLERANCE;
using max_min_detail::TOLERANCE;

MaxMinSolver::MaxMinSolver(std::span<const double> capacities, std::span<const std::uint8_t> never_binds) {
  if (!never_binds.empty() && never_binds.size() != capacities.size()) {
    throw std::invalid_argument("never_binds must have one entry per link");
  }
  links_.resize(capacities.size());
  for (std::size_t l = 0; l < capacities.size(); ++l) {
    const double c = capacities[l];
    if (!(c > 0) || !std::isfinite(c)) {
      throw std::invalid_argument("link " + std::to_string(l) + " capacity must be positive and finite");
    }
    links_[l].capacity = c;
    links_[l].threshold = c * (1 - TOLERANCE);
    links_[l].never_binds = !never_binds.empty() && never_binds[l] != 0;
  }
  free_hops_.resize(MAX_HOPS + 1);
}

void MaxMinSolver::ensure_flow(std::uint32_t flow) {
  if (flow < flows_.size()) return;
  flows_.resize(std::max<std::size_t>(flow + 1, flows_.size() * 2));
  heap_.reserve_ids(links_.size() + flows_.size());
}

std::uint32_t MaxMinSolver::allocate_hops(std::size_t n) {
  auto& free = free_hops_[n];
  if (!free.empty()) {
    const std::uint32_t b = free.back();
    free.pop_back();
    return b;
  }
  const auto b = static_cast<std::uint32_t>(hops_.size());
  hops_.resize(hops_.size() + n);
  hop_next_.resize(hops_.size());
  return b;
}

// Records a change of the link's saturation for the saturated-time statistic.
void MaxMinSolver::note_saturation(LinkId l) {
  Link& k = links_[l];
  const bool now_saturated = k.hot && is_saturated(k);
  if (now_saturated == k.saturated) return;
  if (now_saturated) {
    k.saturated_since = now_ps_;
  } else {
    k.saturated_ps += now_ps_ - k.saturated_since;
  }
  k.saturated = now_saturated;
}

// A link that never binds: integrate the bytes it carried so far, then change its load.
void MaxMinSolver::add_unlisted_load(Link& k, double delta) {
  k.bytes += k.load * static_cast<double>(now_ps_ - k.bytes_since) * 1e-12;
  k.bytes_since = now_ps_;
  k.load = std::max(0.0, k.load + delta);
}

// After a flow's rate changed: the links that never bind follow it (hot links are set by the fill).
void MaxMinSolver::apply_new_rate(std::uint32_t flow, double old_rate, double new_rate) {
  const Flow& f = flows_[flow];
  for_each_bit(f.never_mask, [&](std::uint32_t h) { add_unlisted_load(links_[hops_[f.hop_begin + h].link], new_rate - old_rate); });
}

// The link's flows could now fill it: keep its load from here on and mark it in their masks.
void MaxMinSolver::turn_hot(LinkId l) {
  Link& k = links_[l];
  k.hot = true;
  double load = 0;
  for (const LinkMember& m : k.members) {
    Flow& f = flows_[m.flow];
    load += f.rate;
    f.hot_mask |= 1U << (m.hop - f.hop_begin);
  }
  k.load = load;
  note_saturation(l);
}

void MaxMinSolver::turn_cold(LinkId l) {
  Link& k = links_[l];
  k.hot = false;
  for (const LinkMember& m : k.members) {
    Flow& f = flows_[m.flow];
    f.hot_mask &= ~(1U << (m.hop - f.hop_begin));
  }
  k.load = 0;
  note_saturation(l);
}

double MaxMinSolver::load(LinkId l) const {
  const Link& k = links_.at(l);
  if (k.hot || k.never_binds) return k.load;
  double sum = 0;
  for (const LinkMember& m : k.members) sum += flows_[m.flow].rate;
  return sum;
}

LinkUsage MaxMinSolver::usage(LinkId l, std::int64_t now_ps) const {
  const Link& k = links_.at(l);
  LinkUsage u;
  u.bytes = k.bytes + (k.never_binds ? k.load * static_cast<double>(now_ps - k.bytes_since) * 1e-12 : 0.0);
  u.busy_ps = k.busy_ps + (k.flows == 0 ? 0 : now_ps - k.busy_since);
  u.saturated_ps = k.saturated_ps + (k.saturated ? now_ps - k.saturated_since : 0);
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
  const std::uint32_t begin = allocate_hops(route.size());
  f.hop_begin = begin;
  f.hop_count = static_cast<std::uint8_t>(route.size());
  f.potential = potential;
  f.rate = 0;
  f.cap = cap;
  f.state = PENDING;
  f.bottleneck = UNSOLVED;
  f.hot_mask = 0;
  f.never_mask = 0;
  for (std::size_t h = 0; h < route.size(); ++h) {
    const LinkId l = route[h];
    Link& k = links_[l];
    if (k.flows++ == 0) k.busy_since = now_ps_;
    if (k.flows > k.peak_flows) k.peak_flows = k.flows;
    if (k.never_binds) {
      hops_[begin + h] = Hop{l, UNLISTED, flow};
      f.never_mask |= 1U << h;
      continue;
    }
    hops_[begin + h] = Hop{l, static_cast<std::uint32_t>(k.members.size()), flow};
    k.members.push_back(LinkMember{flow, begin + static_cast<std::uint32_t>(h)});
    k.potential += potential;
    if (k.hot) {
      f.hot_mask |= 1U << h;
    } else if (k.potential >= k.threshold) {
      turn_hot(l);  // sets this flow's bit too
    }
  }
  added_.push_back(flow);
}

void MaxMinSolver::remove_flow(std::uint32_t flow, double bytes_moved) {
  if (flow >= flows_.size() || flows_[flow].state == FREE) {
    throw std::logic_error("flow slot " + std::to_string(flow) + " is not in use");
  }
  Flow& f = flows_[flow];
  const double r = f.rate;
  const std::uint32_t begin = f.hop_begin;
  const std::uint32_t count = f.hop_count;
  for (std::uint32_t h = 0; h < count; ++h) {
    const Hop hop = hops_[begin + h];
    const LinkId l = hop.link;
    Link& k = links_[l];
    if (--k.flows == 0) k.busy_ps += now_ps_ - k.busy_since;
    if (hop.pos == UNLISTED) {
      if (r > 0) add_unlisted_load(k, -r);
      continue;
    }
    if (k.hot && r > 0) {
      // The flows bottlenecked on a saturated link may speed up; elsewhere nobody cares.
      const std::uint32_t others = k.bottlenecked - (f.bottleneck == l ? 1 : 0);
      if (others > 0 && is_saturated(k)) dirty_.push_back(l);
      k.load = std::max(0.0, k.load - r);
      note_saturation(l);
    }
    k.bytes += bytes_moved;
    auto& m = k.members;
    const LinkMember last = m.back();
    m[hop.pos] = last;
    hops_[last.hop].pos = hop.pos;
    m.pop_back();
    k.potential -= f.potential;
    if (m.empty()) k.potential = 0;  // clear what rounding may have left
    if (k.hot && k.potential < k.threshold) turn_cold(l);
  }
  if (f.bottleneck < links_.size()) --links_[f.bottleneck].bottlenecked;
  f.bottleneck = UNSOLVED;
  if (f.state == PENDING) {
    auto it = std::find(added_.begin(), added_.end(), flow);
    if (it != added_.end()) added_.erase(it);
  }
  free_hops_[count].push_back(begin);
  f.state = FREE;
  f.rate = 0;
  f.hot_mask = 0;
  f.never_mask = 0;
}

std::size_t MaxMinSolver::memory_bytes() const {
  std::size_t b = links_.capacity() * sizeof(Link);
  for (const Link& k : links_) b += k.members.capacity() * sizeof(LinkMember);
  b += flows_.capacity() * sizeof(Flow) + hops_.capacity() * sizeof(Hop) + hop_next_.capacity() * sizeof(std::uint32_t);
  for (const auto& f : free_hops_) b += sizeof(f) + f.capacity() * sizeof(std::uint32_t);
  b += (added_.capacity() + set_.capacity() + violators_.capacity()) * sizeof(std::uint32_t);
  b += (dirty_.capacity() + fill_links_.capacity() + solve_links_.capacity() + candidates_.capacity()) * sizeof(LinkId);
  b += part_.capacity() * sizeof(std::uint32_t) + caps_.capacity() * sizeof(Key);
  b += changes_.capacity() * sizeof(RateChange) + heap_.memory_bytes();
  return b;
}

}  // namespace clustersim::sim
