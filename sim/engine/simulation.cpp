#include "sim/engine/simulation.hpp"

#include <stdexcept>

#include "hardware/errors.hpp"

namespace clustersim::sim {

Simulation::~Simulation() {
  // Models go first (reverse order of creation): a later model may refer to an earlier one.
  while (!models_.empty()) models_.pop_back();
}

void Simulation::check_not_past(TimePoint when) const {
  if (when < now_) {
    throw std::logic_error("event scheduled in the past: at " + format_time(when) + ", clock at " +
                           format_time(now_));
  }
}

EventId Simulation::schedule_at(TimePoint when, EventHandler& handler, std::uint64_t tag) {
  check_not_past(when);
  ++counts_.scheduled;
  return queue_.push(when, handler, tag);
}

EventId Simulation::schedule_after(Duration delay, EventHandler& handler, std::uint64_t tag) {
  return schedule_at(now_ + delay, handler, tag);
}

EventId Simulation::schedule_at(TimePoint when, EventCallback callback) {
  if (!callback) throw std::logic_error("event scheduled with an empty callback");
  check_not_past(when);
  ++counts_.scheduled;
  return queue_.push(when, std::move(callback));
}

EventId Simulation::schedule_after(Duration delay, EventCallback callback) {
  return schedule_at(now_ + delay, std::move(callback));
}

bool Simulation::cancel(EventId id) {
  if (!queue_.cancel(id)) return false;
  ++counts_.cancelled;
  return true;
}

bool Simulation::step() { return step_within(TimePoint::zero()); }

bool Simulation::step_within(TimePoint limit) {
  if (queue_.empty()) return false;
  EventQueue::Fired fired = queue_.pop();
  now_ = fired.time;
  limit_ = limit;
  ++counts_.handled;
  if (fired.handler != nullptr) {
    fired.handler->handle_event(*this, fired.tag);
  } else {
    fired.callback();
  }
  return true;
}

void Simulation::run() {
  while (step_within(TimePoint::max())) {
  }
}

bool Simulation::advance_to(TimePoint t) {
  if (t < now_ || t > limit_) return false;
  if (!queue_.empty() && queue_.next_time() <= t) return false;
  now_ = t;
  ++counts_.scheduled;
  ++counts_.handled;
  return true;
}

void Simulation::run_until(TimePoint end) {
  if (end < now_) {
    throw std::logic_error("run_until " + format_time(end) + " is before the clock, " + format_time(now_));
  }
  while (!queue_.empty() && queue_.next_time() <= end) step_within(end);
  now_ = end;
}

void Simulation::check_all_handled() const {
  if (counts_.handled + counts_.cancelled + queue_.size() != counts_.scheduled) {
    throw RuntimeError("event accounting broken: " + std::to_string(counts_.scheduled) + " scheduled, " +
                       std::to_string(counts_.handled) + " handled, " + std::to_string(counts_.cancelled) +
                       " cancelled, " + std::to_string(queue_.size()) + " queued");
  }
  std::string problems;
  if (counts_.pending() != 0) {
    problems += std::to_string(counts_.pending()) + " of " + std::to_string(counts_.scheduled) +
                " scheduled events were neither handled nor cancelled (next at " + format_time(queue_.next_time()) +
                ")";
  }
  std::vector<std::string> unfinished;
  for (const auto& m : models_) {
    unfinished.clear();
    m->describe_unfinished(unfinished);
    for (const auto& line : unfinished) {
      if (!problems.empty()) problems += "; ";
      problems += std::string(m->model_name()) + ": " + line;
    }
  }
  if (!problems.empty()) throw RuntimeError("simulation ended with work left: " + problems);
}

}  // namespace clustersim::sim
