#pragma once
// The pending events of a simulation, ordered by (time, insertion sequence).
//
// Order: a binary min-heap keyed by (time in picoseconds, sequence number), the sequence number
// counting insertions from 0. Two events at the same time run in the order they were scheduled,
// so the same inputs give the same order and the same output (ns-3 and SimCpp20 do the same).
//
// Cancellation is eager: the heap knows each event's position (IndexedHeap), so cancel removes the
// entry in O(log n) and the queue never carries dead entries. An EventId names a slot and the
// slot's generation; a slot is reused after its event ran or was cancelled, with a new
// generation, so a stale id can never cancel a later event.
//
// An event is either an EventHandler (an object and a 64-bit tag it interprets: no allocation,
// the form models use on hot paths) or an EventCallback (a std::function, convenient for tests
// and one-off events).

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/engine/indexed_heap.hpp"
#include "sim/engine/time_point.hpp"

namespace clustersim::sim {

class Simulation;

// An object that receives events. `tag` is whatever the scheduler passed (an index into the
// model's own tables, a kind of event, ...).
class EventHandler {
 public:
  virtual void handle_event(Simulation& sim, std::uint64_t tag) = 0;

 protected:
  ~EventHandler() = default;
};

using EventCallback = std::function<void()>;

struct EventId {
  static constexpr std::uint32_t NONE = UINT32_MAX;
  std::uint32_t slot = NONE;
  std::uint32_t generation = 0;
  bool valid() const { return slot != NONE; }
  friend bool operator==(const EventId&, const EventId&) = default;
};

class EventQueue {
 public:
  struct Fired {
    TimePoint time;
    EventHandler* handler = nullptr;
    std::uint64_t tag = 0;
    EventCallback callback;
  };

  EventId push(TimePoint time, EventHandler& handler, std::uint64_t tag);
  EventId push(TimePoint time, EventCallback callback);
  // True when the event was pending and is now cancelled; false for a stale or invalid id.
  bool cancel(EventId id);
  bool pending(EventId id) const;
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  // The time of the earliest pending event (the queue must not be empty).
  TimePoint next_time() const { return TimePoint::from_picoseconds(heap_.top_key().time); }
  // Removes the earliest event and hands it over.
  Fired pop();

 private:
  struct Key {
    std::int64_t time;
    std::uint64_t seq;
    bool operator<(const Key& o) const { return time < o.time || (time == o.time && seq < o.seq); }
  };
  struct Slot {
    EventHandler* handler = nullptr;
    std::uint64_t tag = 0;
    EventCallback callback;
    std::uint32_t generation = 0;
  };
  std::uint32_t take_slot(TimePoint time);
  void release(std::uint32_t slot);

  IndexedHeap<Key> heap_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace clustersim::sim
