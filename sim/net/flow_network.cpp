#include "sim/net/flow_network.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

namespace clustersim::sim {

namespace {

constexpr std::uint32_t NO_INDEX = UINT32_MAX;

std::vector<double> link_capacities(const Topology& t) {
  std::vector<double> c;
  c.reserve(t.link_count());
  for (const Link& l : t.links()) c.push_back(l.bandwidth.bytes_per_second());
  return c;
}

// now + left / rate, rounded once to the picosecond and kept inside the clock's range.
std::int64_t completion_ps(std::int64_t now_ps, double left, double rate) {
  const double dt = std::nearbyint(left / rate * 1e12);
  constexpr double limit = static_cast<double>(INT64_MAX / 4);
  return dt >= limit - static_cast<double>(now_ps) ? INT64_MAX / 4 : now_ps + static_cast<std::int64_t>(dt);
}

}  // namespace

FlowNetwork::FlowNetwork(Simulation& sim, const Topology& topology, FlowNetworkOptions options)
    : sim_(sim),
      topology_(topology),
      router_(topology, options.routing),
      solver_(link_capacities(topology), topology.never_overloaded_links()) {}

FlowNetwork::~FlowNetwork() {
  if (wake_.valid()) sim_.cancel(wake_);
}

std::uint32_t FlowNetwork::allocate_slot() {
  if (!free_slots_.empty()) {
    const std::uint32_t s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  const auto s = static_cast<std::uint32_t>(flows_.size());
  flows_.emplace_back();
  progress_.emplace_back();
  return s;
}

inline void FlowNetwork::release_slot(std::uint32_t slot) {
  flows_[slot].state = FREE;
  ++flows_[slot].generation;
  flows_[slot].handler = nullptr;
  if (flows_[slot].function != NO_INDEX) {
    functions_[flows_[slot].function] = nullptr;
    free_functions_.push_back(flows_[slot].function);
    flows_[slot].function = NO_INDEX;
  }
  release_latent_route(slot);
  free_slots_.push_back(slot);
  --in_flight_;
}

bool FlowNetwork::live(FlowId id) const {
  return id.slot < flows_.size() && flows_[id.slot].state != FREE && flows_[id.slot].generation == id.generation;
}

void FlowNetwork::endpoint_error(VertexId v) const {
  if (v >= topology_.vertex_count()) throw std::out_of_range("vertex id " + std::to_string(v) + " out of range");
  throw std::invalid_argument("a transfer cannot start or end at a network switch (" + topology_.describe_vertex(v) +
                              ")");
}

void FlowNetwork::check_route(const Route& route) const {
  // Network switches a route passes through: none may come twice (never_overloaded_links relies
  // on it); other vertices may (a copy staged in host memory goes socket -> memory -> socket).
  std::array<VertexId, Route::MAX_HOPS> switches{};
  std::size_t n = 0;
  for (std::size_t i = 0; i < route.size(); ++i) {
    const LinkId l = route[i];
    if (l >= topology_.link_count()) throw std::out_of_range("link id " + std::to_string(l) + " out of range");
    const Link& link = topology_.links()[l];
    if (i == 0) {
      check_endpoint(link.from);
    } else if (topology_.links()[route[i - 1]].to != link.from) {
      throw std::invalid_argument("route is not a path: " + topology_.describe_link(route[i - 1]) + " then " +
                                  topology_.describe_link(l));
    }
    const VertexKind k = topology_.vertex(link.to).kind;
    if (k != VertexKind::LEAF_SWITCH && k != VertexKind::SPINE_SWITCH) continue;
    for (std::size_t j = 0; j < n; ++j) {
      if (switches[j] == link.to) {
        throw std::invalid_argument("route passes through " + topology_.describe_vertex(link.to) + " twice");
      }
    }
    switches[n++] = link.to;
  }
  if (!route.empty()) check_endpoint(topology_.links()[route[route.size() - 1]].to);
}

FlowId FlowNetwork::transfer(VertexId src, VertexId dst, Bytes bytes, OnFlowComplete on_complete,
                             const FlowOptions& options) {
  check_endpoint(src);
  check_endpoint(dst);
  std::int64_t latency_ps = 0;
  const Route r = router_.route(src, dst, options.path_hint, latency_ps);
  return start(r, Duration::ps(latency_ps), bytes, on_complete.handler_, std::move(on_complete.fn_), options);
}

FlowId FlowNetwork::transfer(const Route& route, Bytes bytes, OnFlowComplete on_complete, const FlowOptions& options) {
  check_route(route);
  return start(route, router_.latency(route), bytes, on_complete.handler_, std::move(on_complete.fn_), options);
}

void FlowNetwork::transfer_many(std::span<const BulkTransfer> transfers, FlowHandler& handler,
                                std::vector<FlowId>* ids) {
  for (const BulkTransfer& t : transfers) {
    const FlowId id = t.route != nullptr ? transfer(*t.route, t.bytes, handler, t.options)
                                         : transfer(t.src, t.dst, t.bytes, handler, t.options);
    if (ids != nullptr) ids->push_back(id);
  }
}

FlowId FlowNetwork::start(const Route& route, Duration latency, Bytes bytes, FlowHandler* handler, FlowFunction fn,
                          const FlowOptions& options) {
  if (bytes < Bytes::of(0)) throw std::invalid_argument("a transfer cannot move a negative number of bytes");
  double cap = MaxMinSolver::NO_CAP;
  if (options.rate_cap) {
    cap = options.rate_cap->bytes_per_second();
    if (!(cap > 0) || !std::isfinite(cap)) {
      throw std::invalid_argument("a rate cap must be positive and finite, got " + format_bandwidth(*options.rate_cap));
    }
  }
  const std::uint32_t slot = allocate_slot();
  ++in_flight_;
  flows_[slot].state = LATENT;
  flows_[slot].seq = next_seq_++;
  flows_[slot].start_ps = sim_.now().picoseconds();
  flows_[slot].bytes = bytes.count();
  flows_[slot].cap = cap;
  flows_[slot].handler = handler;
  flows_[slot].tag = options.tag;
  if (fn) {
    std::uint32_t f;
    if (!free_functions_.empty()) {
      f = free_functions_.back();
      free_functions_.pop_back();
      functions_[f] = std::move(fn);
    } else {
      f = static_cast<std::uint32_t>(functions_.size());
      functions_.push_back(std::move(fn));
    }
    flows_[slot].function = f;
  }
  const FlowId id{slot, flows_[slot].generation};
  if (latency == Duration::zero() && in_event_) {
    // Started by a completion callback with nothing to wait for: it joins the rates that the
    // event in progress recomputes when its callbacks are done.
    activate(slot, route.links());
    return id;
  }
  // Its links wait in a block of the route pool (the links in use only, not a whole Route).
  const std::uint32_t r = route_pool_.allocate(BlockPool<LinkId>::class_for(route.size()));
  std::copy_n(route.links().data(), route.size(), route_pool_.at(r));
  flows_[slot].latent_route = r;
  flows_[slot].latent_hops = static_cast<std::uint8_t>(route.size());
  if (latency == Duration::zero()) {
    ready_.push_back(id);
  } else {
    latent_.push(slot, (sim_.now() + latency).picoseconds());
  }
  arm(sim_.now() + latency);
  return id;
}

void FlowNetwork::activate_latent(std::uint32_t slot) {
  activate(slot, latent_links(slot));
  release_latent_route(slot);
}

void FlowNetwork::release_latent_route(std::uint32_t slot) {
  FlowRecord& f = flows_[slot];
  if (f.latent_route == NO_INDEX) return;
  route_pool_.release(f.latent_route, BlockPool<LinkId>::class_for(f.latent_hops));
  f.latent_route = NO_INDEX;
}

void FlowNetwork::activate(std::uint32_t slot, std::span<const LinkId> route) {
  flows_[slot].state = ACTIVE;
  progress_[slot].left = static_cast<double>(flows_[slot].bytes);
  progress_[slot].last_ps = sim_.now().picoseconds();
  const bool instant = flows_[slot].bytes == 0 || (route.empty() && flows_[slot].cap == MaxMinSolver::NO_CAP);
  if (instant) {
    finish(slot);
  } else {
    solver_.add_flow(slot, route, flows_[slot].cap);
  }
}

bool FlowNetwork::cancel(FlowId id) {
  if (!live(id) || flows_[id.slot].state == FINISHING) return false;
  const std::uint32_t slot = id.slot;
  latent_.erase(slot);  // a flow in ready_ is skipped there once its generation has moved on
  if (flows_[slot].state == ACTIVE) {
    completions_.erase(slot);
    solver_.set_time(sim_.now().picoseconds());
    solver_.remove_flow(slot, moved(slot));
    if (solver_.needs_solve()) arm(sim_.now());
  }
  release_slot(slot);
  return true;
}

FlowState FlowNetwork::state(FlowId id) const {
  if (!live(id) || flows_[id.slot].state == FINISHING) return FlowState::GONE;
  return flows_[id.slot].state == LATENT ? FlowState::LATENT : FlowState::ACTIVE;
}

Bandwidth FlowNetwork::rate(FlowId id) const {
  if (!live(id) || flows_[id.slot].state != ACTIVE) return Bandwidth{};
  return Bandwidth::bytes_per_second(solver_.rate(id.slot));
}

// Bytes an active flow has moved by now.
double FlowNetwork::moved(std::uint32_t slot) const {
  const Progress& p = progress_[slot];
  const double left_now = p.left - solver_.rate(slot) * static_cast<double>(sim_.now().picoseconds() - p.last_ps) * 1e-12;
  return static_cast<double>(flows_[slot].bytes) - std::max(0.0, left_now);
}

Bytes FlowNetwork::remaining(FlowId id) const {
  if (!live(id) || flows_[id.slot].state == FINISHING) return Bytes{};
  if (flows_[id.slot].state == LATENT) return Bytes::of(flows_[id.slot].bytes);
  return Bytes::from_double(static_cast<double>(flows_[id.slot].bytes) - moved(id.slot));
}

LinkUsage FlowNetwork::link_usage(LinkId link) const {
  LinkUsage u = solver_.usage(link, sim_.now().picoseconds());
  // The solver counts the bytes of flows that have left; add the progress of those still moving.
  for (const LinkMember& m : solver_.flows_on(link)) u.bytes += moved(m.flow);
  return u;
}

std::vector<LinkId> FlowNetwork::busiest_links(std::size_t count) const {
  std::vector<std::pair<LinkUsage, LinkId>> all;
  all.reserve(topology_.link_count());
  for (LinkId l = 0; l < topology_.link_count(); ++l) all.emplace_back(link_usage(l), l);
  const std::size_t n = std::min(count, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n), all.end(), [](const auto& a, const auto& b) {
    if (a.first.saturated_ps != b.first.saturated_ps) return a.first.saturated_ps > b.first.saturated_ps;
    if (a.first.bytes != b.first.bytes) return a.first.bytes > b.first.bytes;
    return a.second < b.second;
  });
  std::vector<LinkId> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(all[i].second);
  return out;
}

void FlowNetwork::describe_unfinished(std::vector<std::string>& out) const {
  if (in_flight_ == 0) return;
  std::size_t latent = 0;
  for (const FlowRecord& f : flows_) latent += f.state == LATENT ? 1 : 0;
  out.push_back(std::to_string(in_flight_) + " flows still in flight (" + std::to_string(in_flight_ - latent) +
                " moving, " + std::to_string(latent) + " in their start latency)");
}

std::size_t FlowNetwork::memory_bytes() const {
  std::size_t b = solver_.memory_bytes() + completions_.memory_bytes() + latent_.memory_bytes() +
                  ready_.capacity() * sizeof(FlowId);
  b += flows_.capacity() * sizeof(FlowRecord) + progress_.capacity() * sizeof(Progress);
  b += (free_slots_.capacity() + free_functions_.capacity() + finished_.capacity()) *
       sizeof(std::uint32_t);
  b += functions_.capacity() * sizeof(FlowFunction) + route_pool_.memory_bytes();
  return b;
}

void FlowNetwork::arm(TimePoint t) {
  if (in_event_) return;  // the event in progress re-arms when it ends
  if (wake_.valid() && wake_time_ <= t) return;
  if (wake_.valid()) sim_.cancel(wake_);
  wake_ = sim_.schedule_at(t, *this);
  wake_time_ = t;
}

void FlowNetwork::rearm() {
  const TimePoint next = next_time();
  if (next == TimePoint::max()) {
    if (wake_.valid()) sim_.cancel(wake_);
    wake_ = EventId{};
    wake_time_ = TimePoint::max();
    return;
  }
  if (wake_.valid() && wake_time_ == next) return;
  if (wake_.valid()) sim_.cancel(wake_);
  wake_ = sim_.schedule_at(next, *this);
  wake_time_ = next;
}

void FlowNetwork::apply_rate_changes() {
  const std::int64_t now = sim_.now().picoseconds();
  const std::span<const MaxMinSolver::RateChange> changes = solver_.solve();
  // What each change writes is asked for first, so that the misses overlap instead of coming
  // one after another (each update's heap walk waits on its own).
  for (const MaxMinSolver::RateChange& c : changes) {
    __builtin_prefetch(&progress_[c.flow]);
    completions_.prefetch(c.flow);
  }
  for (const MaxMinSolver::RateChange& c : changes) {
    Progress& p = progress_[c.flow];
    p.left = std::max(0.0, p.left - c.old_rate * static_cast<double>(now - p.last_ps) * 1e-12);
    p.last_ps = now;
    completions_.push_or_update(c.flow, completion_ps(now, p.left, c.new_rate));
  }
}

void FlowNetwork::prefetch_next(int stage) const {
  if (!completions_.empty()) {
    const std::uint32_t c = completions_.top_id();
    if (stage == 1) {
      __builtin_prefetch(&flows_[c]);
      __builtin_prefetch(&progress_[c]);
      solver_.prefetch_flow(c);
    } else if (stage == 2) {
      solver_.prefetch_links(c);
    } else {
      solver_.prefetch_members(c);
    }
  }
  // The end of latency at the top only when it comes before the next completion: a start latency
  // outlasts many completions, and asking for its route at every one of them is wasted work.
  if (!latent_.empty() && (completions_.empty() || latent_.top_key() <= completions_.top_key())) {
    const std::uint32_t l = latent_.top_id();
    if (stage == 1) {
      __builtin_prefetch(&flows_[l]);
      solver_.prefetch_flow(l);
    } else if (flows_[l].latent_route != NO_INDEX) {
      if (stage == 2) {
        __builtin_prefetch(route_pool_.at(flows_[l].latent_route));
      } else {
        solver_.prefetch_route(latent_links(l));
      }
    }
  }
}

void FlowNetwork::finish(std::uint32_t slot) {
  flows_[slot].state = FINISHING;
  finished_.push_back(slot);
}

void FlowNetwork::handle_event(Simulation& sim, std::uint64_t /*tag*/) {
  wake_ = EventId{};
  wake_time_ = TimePoint::max();
  in_event_ = true;
  try {
    for (;;) {
      process_due(sim);
      // Go straight on to the network's next time when nothing else comes first.
      const TimePoint next = next_time();
      if (next == TimePoint::max() || next == sim.now() || !sim.advance_to(next)) break;
    }
  } catch (...) {
    in_event_ = false;
    throw;
  }
  in_event_ = false;
  rearm();
}

TimePoint FlowNetwork::next_time() const {
  TimePoint next = TimePoint::max();
  if (!completions_.empty()) next = TimePoint::from_picoseconds(completions_.top_key());
  if (!latent_.empty()) next = std::min(next, TimePoint::from_picoseconds(latent_.top_key()));
  if (ready_head_ < ready_.size() || solver_.needs_solve()) next = sim_.now();
  return next;
}

// Everything due at the current time: ends of latencies, completions and their callbacks, then
// one recomputation of rates.
void FlowNetwork::process_due(Simulation& sim) {
  const std::int64_t now = sim.now().picoseconds();
  solver_.set_time(now);
  try {
    for (;;) {
      // Everything due now, in (time, start sequence) order: ends of latencies (from the latent
      // heap and the ready list) and completions.
      for (;;) {
        while (ready_head_ < ready_.size() && !live(ready_[ready_head_])) ++ready_head_;
        std::uint32_t pick = FlowId::NONE;
        std::int64_t best_time = now + 1;
        int source = 0;
        const StartOrder before{&flows_};
        if (ready_head_ < ready_.size()) {
          pick = ready_[ready_head_].slot;
          best_time = now;
          source = 1;
        }
        if (!latent_.empty() && latent_.top_key() <= now &&
            (source == 0 || before(latent_.top_key(), latent_.top_id(), best_time, pick))) {
          pick = latent_.top_id();
          best_time = latent_.top_key();
          source = 2;
        }
        if (!completions_.empty() && completions_.top_key() <= now &&
            (source == 0 || before(completions_.top_key(), completions_.top_id(), best_time, pick))) {
          pick = completions_.top_id();
          best_time = completions_.top_key();
          source = 3;
        }
        if (source == 0) break;
        if (source == 1) {
          ++ready_head_;
          activate_latent(pick);
        } else if (source == 2) {
          latent_.pop();
          activate_latent(pick);
        } else {
          completions_.pop();
          solver_.remove_flow(pick, static_cast<double>(flows_[pick].bytes));
          finish(pick);
        }
      }
      if (ready_head_ == ready_.size()) {
        ready_.clear();
        ready_head_ = 0;
      }
      if (finished_.empty()) break;
      prefetch_next(1);
      // Completion callbacks may start or cancel transfers; they see a consistent network.
      for (std::size_t i = 0; i < finished_.size(); ++i) {
        const std::uint32_t f = finished_[i];
        FlowCompletion done;
        done.id = FlowId{f, flows_[f].generation};
        done.tag = flows_[f].tag;
        done.started = TimePoint::from_picoseconds(flows_[f].start_ps);
        done.finished = sim.now();
        done.bytes = Bytes::of(flows_[f].bytes);
        FlowHandler* handler = flows_[f].handler;
        FlowFunction fn;
        if (flows_[f].function != NO_INDEX) fn = std::move(functions_[flows_[f].function]);
        release_slot(f);
        ++completed_count_;
        if (handler != nullptr) handler->on_flow_complete(done);
        if (fn) fn(done);
      }
      finished_.clear();
      prefetch_next(2);
    }
    apply_rate_changes();
    if (rate_observer_ != nullptr) rate_observer_->on_rates_changed(*this, sim.now());
    prefetch_next(3);
  } catch (...) {
    // A callback threw: the flows it had not reached are done all the same.
    for (const std::uint32_t f : finished_) {
      if (flows_[f].state == FINISHING) release_slot(f);
    }
    finished_.clear();
    throw;
  }
}

}  // namespace clustersim::sim
