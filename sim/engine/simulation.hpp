#pragma once
// The discrete-event core: one Simulation owns the clock, the event queue and the models, and is
// passed by reference to whatever needs it. There are no globals; two simulations in one process
// (a planner comparing layouts, a test) never see each other.
//
// Semantics
//   - The clock only moves forward: it jumps to the time of the next event. An event may be
//     scheduled at the current time (it runs after the events already queued for that time) or
//     later, never earlier (a programmer error: std::logic_error).
//   - run() handles events until none is left; run_until(t) handles every event at time <= t and
//     then sets the clock to t (when t is later), leaving later events queued.
//   - Accounting: every scheduled event is eventually handled or cancelled. check_all_handled()
//     verifies it after a run (and that the bookkeeping adds up: scheduled = handled + cancelled
//     + pending), then asks each model for work it still holds (a flow in flight, a task never
//     run); any of these is a RuntimeError naming what was left.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/engine/event_queue.hpp"
#include "sim/engine/time_point.hpp"

namespace clustersim::sim {

// A component that the simulation owns (a flow network, a GPU stream executor, ...).
class Model {
 public:
  virtual ~Model() = default;
  virtual std::string_view model_name() const = 0;
  // Work this model still holds, one line each (nothing when it is idle). Checked after a run.
  virtual void describe_unfinished(std::vector<std::string>& out) const { (void)out; }
};

struct EventCounts {
  std::uint64_t scheduled = 0;
  std::uint64_t handled = 0;
  std::uint64_t cancelled = 0;
  std::uint64_t pending() const { return scheduled - handled - cancelled; }
};

class Simulation {
 public:
  Simulation() = default;
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;
  ~Simulation();

  TimePoint now() const { return now_; }

  EventId schedule_at(TimePoint when, EventHandler& handler, std::uint64_t tag = 0);
  EventId schedule_after(Duration delay, EventHandler& handler, std::uint64_t tag = 0);
  EventId schedule_at(TimePoint when, EventCallback callback);
  EventId schedule_after(Duration delay, EventCallback callback);
  // True when the event was still pending (it will not run); false for an event that already ran,
  // was cancelled before, or an invalid id.
  bool cancel(EventId id);
  bool is_pending(EventId id) const { return queue_.pending(id); }
  std::size_t pending_events() const { return queue_.size(); }
  // The time of the next event; TimePoint::max() when none is queued.
  TimePoint next_event_time() const { return queue_.empty() ? TimePoint::max() : queue_.next_time(); }

  // Handles the next event; false when none was left.
  bool step();
  // Handles events until none is left.
  void run();
  // Handles every event at time <= end, then moves the clock to `end` (if it is later).
  void run_until(TimePoint end);

  // For a model inside its event handler: move the clock forward to `t` and carry on as if an
  // event of its own at `t` had just been taken from the queue, saving the round trip through it.
  // Allowed only when that is exactly what would happen next: no other event is queued at or
  // before `t`, and `t` is within the run in progress (run_until's end; a single step() allows no
  // move). Counts as one event scheduled and handled. Returns false, changing nothing, otherwise.
  bool advance_to(TimePoint t);

  const EventCounts& counts() const { return counts_; }
  // Throws RuntimeError when an event was neither handled nor cancelled, or a model holds work.
  void check_all_handled() const;

  // Creates a model owned by this simulation; it lives as long as the simulation.
  template <class M, class... Args>
  M& emplace_model(Args&&... args) {
    auto model = std::make_unique<M>(std::forward<Args>(args)...);
    M& ref = *model;
    models_.push_back(std::move(model));
    return ref;
  }
  std::size_t model_count() const { return models_.size(); }

 private:
  void check_not_past(TimePoint when) const;
  bool step_within(TimePoint limit);

  TimePoint now_;
  TimePoint limit_;  // how far advance_to may move the clock during the event in progress
  EventQueue queue_;
  EventCounts counts_;
  // Destroyed before the queue: a model may hold event ids but never outlives its simulation.
  std::vector<std::unique_ptr<Model>> models_;
};

}  // namespace clustersim::sim
