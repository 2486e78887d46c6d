#pragma once
// A d-ary min-heap (binary by default) of (key, id) entries that knows where each id sits, so
// that an entry can be re-keyed or removed in O(log n) without a search. Ids are small dense
// integers (slot numbers of a flat array); the position table grows to the largest id seen and is
// never shrunk, so a long-running simulation allocates nothing once it has reached its peak size.
//
// Order: `Order` compares two entries (key and id); the default compares keys with operator<.
// Callers make the order total (time, then insertion sequence) so that the order of equal times
// is the order of insertion, whatever the heap's internal layout. An order may look the tie-break
// up by id only when keys are equal, which keeps entries small: a 16-byte entry in a 4-ary heap
// puts each entry's children in one cache line (the array is aligned so that every group of
// siblings starts a line), so a sift moves through log4(n) lines instead of log2(n).
//
// The least child is chosen by index arithmetic on the comparisons' results (a 4-ary heap: two
// pairs, then their winners), not by a branch per comparison: which child is least follows no
// pattern, and the flow network's heaps (a completion moves its flows' entries through about seven
// levels) spent most of their time on mispredicted comparisons (simulated: 19 of 97 per completion,
// 3 after). An order whose common case compares the keys without branching (the flow network's
// looks its tie-break up only when times are equal) keeps it branch-free. Ties go to the first
// child, as a linear scan gives them, so the pops are the same whatever the order.
//
// pop() is bottom-up: the hole at the top goes down along the least children to a leaf, and the
// last entry fills it and sifts up from there (it nearly always belongs near the bottom), which
// saves a comparison and a branch a level. With a total order it pops exactly what a plain sift
// pops; with equal keys the two could pop them in different orders.

#include <cassert>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/engine/branch_free.hpp"
#include "sim/engine/cache_line_allocator.hpp"

namespace clustersim::sim {

template <class Key>
struct KeyOrder {
  bool operator()(const Key& a, std::uint32_t /*a_id*/, const Key& b, std::uint32_t /*b_id*/) const { return a < b; }
};

template <class Key, unsigned ARITY = 2, class Order = KeyOrder<Key>>
class IndexedHeap {
  static_assert(ARITY >= 2);

 public:
  static constexpr std::uint32_t NOT_IN_HEAP = UINT32_MAX;

  IndexedHeap() : entries_(PAD) {}
  explicit IndexedHeap(Order order) : order_(std::move(order)), entries_(PAD) {}

  bool empty() const { return entries_.size() == PAD; }
  std::size_t size() const { return entries_.size() - PAD; }
  bool contains(std::uint32_t id) const { return id < pos_.size() && pos_[id] != NOT_IN_HEAP; }
  std::uint32_t top_id() const { return entries_[PAD].id; }
  const Key& top_key() const { return entries_[PAD].key; }
  const Key& key(std::uint32_t id) const { return entries_[pos_[id]].key; }

  // Makes room for ids below `n` (optional; push grows the table as needed).
  void reserve_ids(std::size_t n) {
    if (pos_.size() < n) pos_.resize(n, NOT_IN_HEAP);
  }

  void push(std::uint32_t id, const Key& key) {
    reserve_ids(static_cast<std::size_t>(id) + 1);
    assert(pos_[id] == NOT_IN_HEAP && "id already in the heap");
    entries_.push_back(Entry{key, id});
    sift_up(static_cast<std::uint32_t>(entries_.size() - 1));
  }

  // Inserts `id` or changes its key.
  void push_or_update(std::uint32_t id, const Key& key) {
    if (contains(id)) {
      update(id, key);
    } else {
      push(id, key);
    }
  }

  void update(std::uint32_t id, const Key& key) {
    const std::uint32_t i = pos_[id];
    const bool smaller = order_(key, id, entries_[i].key, id);
    entries_[i].key = key;
    if (smaller) {
      sift_up(i);
    } else {
      sift_down(i);
    }
  }

  // Removes the least entry. Bottom-up: the hole left at the top goes down to a leaf along the
  // least children (no comparison against the entry that fills it), and the last entry, which
  // nearly always belongs near the bottom, goes into the hole and up from there. The same pops as
  // a plain sift (the order is total), with a comparison and a branch fewer a level.
  void pop() {
    pos_[entries_[PAD].id] = NOT_IN_HEAP;
    const Entry e = entries_.back();
    entries_.pop_back();
    const auto n = static_cast<std::uint32_t>(entries_.size());
    if (n == PAD) return;
    std::uint32_t i = PAD;
    for (;;) {
      const std::uint32_t first = first_child(i);
      if (first >= n) break;
      const std::uint32_t child = least_child(first, first + ARITY < n ? first + ARITY : n);
      entries_[i] = entries_[child];
      pos_[entries_[i].id] = i;
      i = child;
    }
    entries_[i] = e;
    sift_up(i);
  }

  void erase(std::uint32_t id) {
    if (contains(id)) erase_at(pos_[id]);
  }

  void clear() {
    for (std::size_t i = PAD; i < entries_.size(); ++i) pos_[entries_[i].id] = NOT_IN_HEAP;
    entries_.resize(PAD);
  }

  std::size_t memory_bytes() const {
    return entries_.capacity() * sizeof(Entry) + pos_.capacity() * sizeof(std::uint32_t);
  }

 private:
  struct Entry {
    Key key;
    std::uint32_t id;
  };
  // Entries sit at PAD.. so that (with the array 64-byte aligned) the children of every entry,
  // ARITY * (i - PAD) + 1 + PAD onwards, start a cache line when a group of siblings fills one.
  static constexpr std::uint32_t PAD = ARITY * sizeof(Entry) == CacheLineAllocator<Entry>::LINE ? ARITY - 1 : 0;
  static std::uint32_t parent(std::uint32_t i) { return (i - PAD - 1) / ARITY + PAD; }
  static std::uint32_t first_child(std::uint32_t i) { return ARITY * (i - PAD) + 1 + PAD; }

  bool before(const Entry& a, const Entry& b) const { return order_(a.key, a.id, b.key, b.id); }

  void erase_at(std::uint32_t i) {
    pos_[entries_[i].id] = NOT_IN_HEAP;
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
      pos_[entries_[i].id] = i;
      i = p;
    }
    entries_[i] = e;
    pos_[e.id] = i;
  }

  // Of two entries' indices, b if it comes before a, else a.
  std::uint32_t first_of(std::uint32_t a, std::uint32_t b) const { return pick(before(entries_[b], entries_[a]), b, a); }

  // The least of the children first .. last - 1 (at least one), the first of equals.
  std::uint32_t least_child(std::uint32_t first, std::uint32_t last) const {
    if constexpr (ARITY == 4) {
      // Two pairs, then their winners: a shorter chain than one pass. Written with conditional
      // expressions on small offsets, which compile to flag moves (setcc, cmov): no branch, and
      // fewer instructions than pick's masks.
      if (last - first == ARITY) {
        const Entry* c = entries_.data() + first;
        const std::uint32_t a = before(c[1], c[0]) ? 1U : 0U;
        const std::uint32_t b = before(c[3], c[2]) ? 3U : 2U;
        return first + (before(c[b], c[a]) ? b : a);
      }
    }
    std::uint32_t best = first;
    for (std::uint32_t c = first + 1; c < last; ++c) best = first_of(best, c);
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
      pos_[entries_[i].id] = i;
      i = child;
    }
    entries_[i] = e;
    pos_[e.id] = i;
  }

  [[no_unique_address]] Order order_;
  std::vector<Entry, CacheLineAllocator<Entry>> entries_;
  std::vector<std::uint32_t> pos_;
};

}  // namespace clustersim::sim
