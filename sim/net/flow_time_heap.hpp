#pragma once
// The flow network's heaps of flow slots by time: a 4-ary indexed min-heap of (time in
// picoseconds, slot) entries ordered by (time, start sequence), the sequence (SeqOf: slot ->
// start sequence, from the network's per-slot table) read only when two times are equal. It
// knows where each slot sits, so an entry can be re-keyed or removed in O(log n) without a search.
//
// Why not IndexedHeap (sim/engine/indexed_heap.hpp) with an order that breaks ties: the order is
// the same total one, so every pop gives the same slot, but the choice of the least of four
// children is made here with conditional moves on the times (the rare tie takes a branch), not
// with one unpredictable branch per comparison: on the flow network benchmark a completion moves
// its flows' entries through about seven levels, and mispredicted comparisons were most of what
// the heaps cost (branch simulation: 19 of 97 mispredictions per completion, 3 after).
//
// Layout: 16-byte entries, the array 64-byte aligned and the root at index 3, so that the four
// children of every entry (4 (i - 3) + 4 ... + 7) fill one cache line.

#include <cstdint>
#include <vector>

#include "sim/engine/cache_line_allocator.hpp"

namespace clustersim::sim {

template <class SeqOf>
class FlowTimeHeap {
 public:
  static constexpr std::uint32_t NOT_IN_HEAP = UINT32_MAX;

  explicit FlowTimeHeap(SeqOf seq_of) : seq_of_(seq_of), entries_(PAD) {}

  bool empty() const { return entries_.size() == PAD; }
  std::size_t size() const { return entries_.size() - PAD; }
  bool contains(std::uint32_t slot) const { return slot < pos_.size() && pos_[slot] != NOT_IN_HEAP; }
  std::uint32_t top_id() const { return entries_[PAD].slot; }
  std::int64_t top_key() const { return entries_[PAD].time; }

  void push(std::uint32_t slot, std::int64_t time) {
    if (pos_.size() <= slot) pos_.resize(static_cast<std::size_t>(slot) + 1, NOT_IN_HEAP);
    entries_.push_back(Entry{time, slot});
    sift_up(static_cast<std::uint32_t>(entries_.size() - 1));
  }
  void push_or_update(std::uint32_t slot, std::int64_t time) {
    if (contains(slot)) {
      update(slot, time);
    } else {
      push(slot, time);
    }
  }
  void update(std::uint32_t slot, std::int64_t time) {
    const std::uint32_t i = pos_[slot];
    const bool smaller = time < entries_[i].time;  // equal times: same entry, same place
    entries_[i].time = time;
    if (smaller) {
      sift_up(i);
    } else {
      sift_down(i);
    }
  }
  void pop() { erase_at(PAD); }
  void erase(std::uint32_t slot) {
    if (contains(slot)) erase_at(pos_[slot]);
  }

  std::size_t memory_bytes() const {
    return entries_.capacity() * sizeof(Entry) + pos_.capacity() * sizeof(std::uint32_t);
  }

 private:
  struct Entry {
    std::int64_t time;
    std::uint32_t slot;
  };
  static_assert(sizeof(Entry) == 16);
  static constexpr std::uint32_t ARITY = 4;
  static constexpr std::uint32_t PAD = ARITY - 1;
  static std::uint32_t parent(std::uint32_t i) { return (i - PAD - 1) / ARITY + PAD; }
  static std::uint32_t first_child(std::uint32_t i) { return ARITY * (i - PAD) + 1 + PAD; }

  std::uint64_t seq(std::uint32_t slot) const { return seq_of_(slot); }
  bool before(const Entry& a, const Entry& b) const {
    if (a.time != b.time) [[likely]] return a.time < b.time;
    return seq(a.slot) < seq(b.slot);
  }
  // Whether entry c comes before entry b: a conditional move on the times; only equal times branch.
  bool select(const Entry& c, const Entry& b) const {
    bool lt = c.time < b.time;
    if (c.time == b.time) [[unlikely]] lt = seq(c.slot) < seq(b.slot);
    return lt;
  }

  void erase_at(std::uint32_t i) {
    pos_[entries_[i].slot] = NOT_IN_HEAP;
    const auto last = static_cast<std::uint32_t>(entries_.size() - 1);
    if (i != last) {
      entries_[i] = entries_[last];
      entries_.pop_back();
      // The moved entry may belong above or below its new place.
      if (i > PAD && before(entries_[i], entries_[parent(i)])) {
        sift_up(i);
      } else {
        sift_down(i);
      }
    } else {
      entries_.pop_back();
    }
  }

  void sift_up(std::uint32_t i) {
    const Entry e = entries_[i];
    while (i > PAD) {
      const std::uint32_t p = parent(i);
      if (!before(e, entries_[p])) break;
      entries_[i] = entries_[p];
      pos_[entries_[i].slot] = i;
      i = p;
    }
    entries_[i] = e;
    pos_[e.slot] = i;
  }

  // The least of the children first .. last - 1 (at least one).
  std::uint32_t least_child(std::uint32_t first, std::uint32_t last) const {
    const Entry* en = entries_.data();
    if (last - first == ARITY) {
      // Two pairs, then their winners: a shorter chain than one pass.
      // (Index arithmetic rather than ?:, which the compiler may turn back into a branch.)
      const std::uint32_t a = first + static_cast<std::uint32_t>(select(en[first + 1], en[first]));
      const std::uint32_t b = first + 2 + static_cast<std::uint32_t>(select(en[first + 3], en[first + 2]));
      return a ^ ((a ^ b) & (0U - static_cast<std::uint32_t>(select(en[b], en[a]))));
    }
    std::uint32_t best = first;
    for (std::uint32_t c = first + 1; c < last; ++c) {
      best ^= (best ^ c) & (0U - static_cast<std::uint32_t>(select(en[c], en[best])));
    }
    return best;
  }

  void sift_down(std::uint32_t i) {
    const auto n = static_cast<std::uint32_t>(entries_.size());
    const Entry e = entries_[i];
    for (;;) {
      const std::uint32_t first = first_child(i);
      if (first >= n) break;
      const std::uint32_t child = least_child(first, first + ARITY < n ? first + ARITY : n);
      if (!before(entries_[child], e)) break;
      entries_[i] = entries_[child];
      pos_[entries_[i].slot] = i;
      i = child;
    }
    entries_[i] = e;
    pos_[e.slot] = i;
  }

  [[no_unique_address]] SeqOf seq_of_;
  std::vector<Entry, CacheLineAllocator<Entry>> entries_;
  std::vector<std::uint32_t> pos_;
};

}  // namespace clustersim::sim
