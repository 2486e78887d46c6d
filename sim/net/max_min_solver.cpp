#include "sim/net/max_min_solver.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace clustersim::sim {

namespace {
// A link is saturated when its load is within this fraction of its capacity.
constexpr double SATURATION_TOLERANCE = 1e-9;
// A rate that moves by less than this fraction of itself is left as it was.
constexpr double RATE_TOLERANCE = 1e-12;
}  // namespace

MaxMinSolver::MaxMinSolver(std::span<const double> capacities)
    : capacity_(capacities.begin(), capacities.end()) {
  const std::size_t n = capacity_.size();
  for (std::size_t l = 0; l < n; ++l) {
    if (!(capacity_[l] > 0) || !std::isfinite(capacity_[l])) {
      throw std::invalid_argument("link " + std::to_string(l) + " capacity must be positive and finite");
    }
  }
  threshold_.resize(n);
  for (std::size_t l = 0; l < n; ++l) threshold_[l] = capacity_[l] * (1 - SATURATION_TOLERANCE);
  load_.assign(n, 0.0);
  members_.resize(n);
  account_.resize(n);
  expanded_.assign(n, 0);
  in_fill_.assign(n, 0);
  rem_.assign(n, 0.0);
  n_.assign(n, 0);
  level_.assign(n, 0.0);
  free_hops_.resize(MAX_HOPS + 1);
}

void MaxMinSolver::ensure_flow(std::uint32_t flow) {
  if (flow < rate_.size()) return;
  const std::size_t n = std::max<std::size_t>(flow + 1, rate_.size() * 2);
  rate_.resize(n, 0.0);
  cap_.resize(n, NO_CAP);
  new_rate_.resize(n, 0.0);
  hop_begin_.resize(n, 0);
  hop_count_.resize(n, 0);
  state_.resize(n, FREE);
  in_set_.resize(n, 0);
  frozen_.resize(n, 0);
  heap_.reserve_ids(capacity_.size() + n);
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
  return b;
}

void MaxMinSolver::account(LinkId l) {
  LinkAccount& a = account_[l];
  const std::int64_t dt = now_ps_ - a.last_ps;
  if (dt > 0) {
    a.bytes += load_[l] * static_cast<double>(dt) * 1e-12;
    if (!members_[l].empty()) a.busy_ps += dt;
    if (load_[l] >= threshold_[l]) a.saturated_ps += dt;
  }
  a.last_ps = now_ps_;
}

LinkUsage MaxMinSolver::usage(LinkId l, std::int64_t now_ps) const {
  const LinkAccount& a = account_.at(l);
  LinkUsage u;
  u.bytes = a.bytes;
  u.busy_ps = a.busy_ps;
  u.saturated_ps = a.saturated_ps;
  const std::int64_t dt = now_ps - a.last_ps;
  if (dt > 0) {
    u.bytes += load_[l] * static_cast<double>(dt) * 1e-12;
    if (!members_[l].empty()) u.busy_ps += dt;
    if (load_[l] >= threshold_[l]) u.saturated_ps += dt;
  }
  u.load = load_[l];
  u.flows = static_cast<std::uint32_t>(members_[l].size());
  u.peak_flows = a.peak_flows;
  return u;
}

void MaxMinSolver::add_flow(std::uint32_t flow, std::span<const LinkId> route, double cap) {
  if (route.size() > MAX_HOPS) throw std::length_error("a flow crosses at most 32 links");
  if (!(cap > 0)) throw std::invalid_argument("a flow's rate cap must be positive");
  if (route.empty() && cap == NO_CAP) throw std::invalid_argument("a flow with no links needs a rate cap");
  ensure_flow(flow);
  if (state_[flow] != FREE) throw std::logic_error("flow slot " + std::to_string(flow) + " is in use");
  const std::uint32_t begin = allocate_hops(route.size());
  hop_begin_[flow] = begin;
  hop_count_[flow] = static_cast<std::uint8_t>(route.size());
  for (std::size_t h = 0; h < route.size(); ++h) {
    const LinkId l = route[h];
    if (l >= capacity_.size()) throw std::out_of_range("link id " + std::to_string(l) + " out of range");
    account(l);
    auto& m = members_[l];
    hops_[begin + h] = Hop{l, static_cast<std::uint32_t>(m.size())};
    m.push_back(Member{flow, static_cast<std::uint32_t>(h)});
    account_[l].peak_flows = std::max(account_[l].peak_flows, static_cast<std::uint32_t>(m.size()));
  }
  rate_[flow] = 0;
  cap_[flow] = cap;
  state_[flow] = PENDING;
  added_.push_back(flow);
}

void MaxMinSolver::remove_flow(std::uint32_t flow) {
  if (flow >= state_.size() || state_[flow] == FREE) {
    throw std::logic_error("flow slot " + std::to_string(flow) + " is not in use");
  }
  const double r = rate_[flow];
  const std::uint32_t begin = hop_begin_[flow];
  const std::uint32_t count = hop_count_[flow];
  for (std::uint32_t h = 0; h < count; ++h) {
    const Hop hop = hops_[begin + h];
    const LinkId l = hop.link;
    account(l);
    // Flows whose bottleneck was this link may speed up: only a saturated link matters.
    if (r > 0 && load_[l] >= threshold_[l]) dirty_.push_back(l);
    load_[l] = std::max(0.0, load_[l] - r);
    auto& m = members_[l];
    const Member last = m.back();
    m[hop.pos] = last;
    hops_[hop_begin_[last.flow] + last.hop].pos = hop.pos;
    m.pop_back();
  }
  if (state_[flow] == PENDING) {
    // Not solved yet: drop it from the list of started flows.
    auto it = std::find(added_.begin(), added_.end(), flow);
    if (it != added_.end()) added_.erase(it);
  }
  free_hops_[count].push_back(begin);
  state_[flow] = FREE;
  rate_[flow] = 0;
}

void MaxMinSolver::gather(std::uint32_t flow) {
  if (in_set_[flow] == epoch_) return;
  in_set_[flow] = epoch_;
  set_.push_back(flow);
  const std::uint32_t begin = hop_begin_[flow];
  const std::uint32_t count = hop_count_[flow];
  for (std::uint32_t h = 0; h < count; ++h) {
    const LinkId l = hops_[begin + h].link;
    if (expanded_[l] != epoch_ && load_[l] >= threshold_[l]) queue_.push_back(l);
  }
}

void MaxMinSolver::expand() {
  while (!queue_.empty()) {
    const LinkId l = queue_.back();
    queue_.pop_back();
    if (expanded_[l] == epoch_) continue;
    expanded_[l] = epoch_;
    // Index loop: gather() does not touch members_.
    const auto& m = members_[l];
    for (std::size_t i = 0; i < m.size(); ++i) gather(m[i].flow);
  }
}

void MaxMinSolver::freeze(std::uint32_t flow, double rate) {
  frozen_[flow] = fill_epoch_;
  new_rate_[flow] = rate;
  heap_.erase(static_cast<std::uint32_t>(capacity_.size()) + flow);
  const std::uint32_t begin = hop_begin_[flow];
  const std::uint32_t count = hop_count_[flow];
  for (std::uint32_t h = 0; h < count; ++h) {
    const LinkId l = hops_[begin + h].link;
    rem_[l] -= rate;
    if (--n_[l] == 0) {
      heap_.erase(l);
    } else if (heap_.contains(l)) {
      heap_.update(l, Key{std::max(rem_[l], 0.0) / n_[l], l});
    }
  }
}

void MaxMinSolver::fill() {
  ++fill_epoch_;
  ++counters_.fills;
  counters_.flows_solved += set_.size();
  fill_links_.clear();
  for (const std::uint32_t f : set_) {
    const std::uint32_t begin = hop_begin_[f];
    const std::uint32_t count = hop_count_[f];
    for (std::uint32_t h = 0; h < count; ++h) {
      const LinkId l = hops_[begin + h].link;
      if (in_fill_[l] != fill_epoch_) {
        in_fill_[l] = fill_epoch_;
        fill_links_.push_back(l);
        rem_[l] = capacity_[l] - load_[l];
        n_[l] = 0;
        level_[l] = NO_CAP;
      }
      // The flow's old rate goes back into what is left for A.
      rem_[l] += rate_[f];
      ++n_[l];
    }
  }
  heap_.clear();
  for (const LinkId l : fill_links_) {
    rem_[l] = std::max(rem_[l], 0.0);
    heap_.push(l, Key{rem_[l] / n_[l], l});
  }
  const auto cap_base = static_cast<std::uint32_t>(capacity_.size());
  for (const std::uint32_t f : set_) {
    if (cap_[f] != NO_CAP) heap_.push(cap_base + f, Key{cap_[f], cap_base + f});
  }
  while (!heap_.empty()) {
    const std::uint32_t id = heap_.top_id();
    const double level = heap_.top_key().level;
    heap_.pop();
    if (id >= cap_base) {
      freeze(id - cap_base, level);
      continue;
    }
    level_[id] = level;
    const auto& m = members_[id];
    for (std::size_t i = 0; i < m.size(); ++i) {
      const std::uint32_t f = m[i].flow;
      if (in_set_[f] == epoch_ && frozen_[f] != fill_epoch_) freeze(f, level);
    }
  }
}

bool MaxMinSolver::find_violations() {
  bool found = false;
  for (const LinkId l : fill_links_) {
    if (expanded_[l] == epoch_ || level_[l] == NO_CAP) continue;
    // l became a bottleneck of A at level_[l]; a flow outside A that runs faster must yield.
    const double limit = level_[l] * (1 + SATURATION_TOLERANCE);
    for (const Member& m : members_[l]) {
      if (in_set_[m.flow] != epoch_ && rate_[m.flow] > limit) {
        queue_.push_back(l);
        found = true;
        break;
      }
    }
  }
  return found;
}

std::span<const MaxMinSolver::RateChange> MaxMinSolver::solve() {
  changes_.clear();
  if (added_.empty() && dirty_.empty()) return changes_;
  ++counters_.solves;
  ++epoch_;
  set_.clear();
  queue_.swap(dirty_);
  dirty_.clear();
  for (const std::uint32_t f : added_) gather(f);
  added_.clear();
  expand();
  for (;;) {
    fill();
    if (!find_violations()) break;
    expand();
  }
  for (const LinkId l : fill_links_) {
    account(l);
    load_[l] = std::max(0.0, capacity_[l] - rem_[l]);
  }
  for (const std::uint32_t f : set_) {
    const double old_rate = rate_[f];
    const double new_rate = new_rate_[f];
    if (state_[f] == PENDING) {
      state_[f] = LIVE;
    } else if (std::abs(new_rate - old_rate) <= RATE_TOLERANCE * std::max(new_rate, old_rate)) {
      continue;
    }
    rate_[f] = new_rate;
    changes_.push_back(RateChange{f, old_rate, new_rate});
  }
  counters_.rate_changes += changes_.size();
  return changes_;
}

std::size_t MaxMinSolver::memory_bytes() const {
  std::size_t b = 0;
  b += (capacity_.capacity() + threshold_.capacity() + load_.capacity() + rem_.capacity() + level_.capacity()) *
       sizeof(double);
  b += (expanded_.capacity() + in_fill_.capacity() + n_.capacity()) * sizeof(std::uint32_t);
  b += account_.capacity() * sizeof(LinkAccount);
  b += members_.capacity() * sizeof(std::vector<Member>);
  for (const auto& m : members_) b += m.capacity() * sizeof(Member);
  b += (rate_.capacity() + cap_.capacity() + new_rate_.capacity()) * sizeof(double);
  b += (hop_begin_.capacity() + in_set_.capacity() + frozen_.capacity()) * sizeof(std::uint32_t);
  b += hop_count_.capacity() + state_.capacity();
  b += hops_.capacity() * sizeof(Hop);
  for (const auto& f : free_hops_) b += sizeof(f) + f.capacity() * sizeof(std::uint32_t);
  b += (added_.capacity() + set_.capacity()) * sizeof(std::uint32_t);
  b += (dirty_.capacity() + queue_.capacity() + fill_links_.capacity()) * sizeof(LinkId);
  b += changes_.capacity() * sizeof(RateChange) + heap_.memory_bytes();
  return b;
}

}  // namespace clustersim::sim
