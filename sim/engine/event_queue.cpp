#include "sim/engine/event_queue.hpp"

#include <utility>

namespace clustersim::sim {

std::uint32_t EventQueue::take_slot(TimePoint time) {
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  heap_.push(slot, Key{time.picoseconds(), next_seq_++});
  return slot;
}

EventId EventQueue::push(TimePoint time, EventHandler& handler, std::uint64_t tag) {
  const std::uint32_t slot = take_slot(time);
  Slot& s = slots_[slot];
  s.handler = &handler;
  s.tag = tag;
  return EventId{slot, s.generation};
}

EventId EventQueue::push(TimePoint time, EventCallback callback) {
  const std::uint32_t slot = take_slot(time);
  Slot& s = slots_[slot];
  s.handler = nullptr;
  s.callback = std::move(callback);
  return EventId{slot, s.generation};
}

bool EventQueue::pending(EventId id) const {
  return id.valid() && id.slot < slots_.size() && slots_[id.slot].generation == id.generation &&
         heap_.contains(id.slot);
}

bool EventQueue::cancel(EventId id) {
  if (!pending(id)) return false;
  heap_.erase(id.slot);
  release(id.slot);
  return true;
}

void EventQueue::release(std::uint32_t slot) {
  Slot& s = slots_[slot];
  s.handler = nullptr;
  if (s.callback) s.callback = nullptr;
  ++s.generation;
  free_slots_.push_back(slot);
}

EventQueue::Fired EventQueue::pop() {
  const std::uint32_t slot = heap_.top_id();
  Fired f;
  f.time = TimePoint::from_picoseconds(heap_.top_key().time);
  heap_.pop();
  Slot& s = slots_[slot];
  f.handler = s.handler;
  f.tag = s.tag;
  if (s.handler == nullptr) f.callback = std::move(s.callback);
  release(slot);
  return f;
}

}  // namespace clustersim::sim
