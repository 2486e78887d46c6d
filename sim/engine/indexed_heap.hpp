#pragma once
// A d-ary min-heap (binary by default) of (key, id) entries that knows where each id sits, so
// that an entry can be re-keyed or removed in O(log n) without a search. A wider heap (ARITY 4)
// is shallower: fewer moves per pop but more comparisons per level (measured on the flow
// network's completion heap: more instructions, no gain in time, so it stays binary). Ids are small dense integers (slot numbers of
// a flat array); the position table grows to the largest id seen and is never shrunk, so a
// long-running simulation allocates nothing once it has reached its peak size.
//
// Keys are compared with operator<; callers make keys unique (time, insertion sequence) so that
// the order of equal times is the order of insertion, whatever the heap's internal layout.

#include <cassert>
#include <cstdint>
#include <utility>
#include <vector>

namespace clustersim::sim {

template <class Key, unsigned ARITY = 2>
class IndexedHeap {
  static_assert(ARITY >= 2);

 public:
  static constexpr std::uint32_t NOT_IN_HEAP = UINT32_MAX;

  bool empty() const { return entries_.empty(); }
  std::size_t size() const { return entries_.size(); }
  bool contains(std::uint32_t id) const { return id < pos_.size() && pos_[id] != NOT_IN_HEAP; }
  std::uint32_t top_id() const { return entries_.front().id; }
  const Key& top_key() const { return entries_.front().key; }
  const Key& key(std::uint32_t id) const { return entries_[pos_[id]].key; }

  // Makes room for ids below `n` (optional; push grows the table as needed).
  void reserve_ids(std::size_t n) {
    if (pos_.size() < n) pos_.resize(n, NOT_IN_HEAP);
  }

  void push(std::uint32_t id, const Key& key) {
    reserve_ids(static_cast<std::size_t>(id) + 1);
    assert(pos_[id] == NOT_IN_HEAP && "id already in the heap");
    entries_.push_back(Entry{key, id});
    const auto i = static_cast<std::uint32_t>(entries_.size() - 1);
    pos_[id] = i;
    sift_up(i);
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
    const bool smaller = key < entries_[i].key;
    entries_[i].key = key;
    if (smaller) {
      sift_up(i);
    } else {
      sift_down(i);
    }
  }

  void pop() { erase_at(0); }

  void erase(std::uint32_t id) {
    if (contains(id)) erase_at(pos_[id]);
  }

  void clear() {
    for (const Entry& e : entries_) pos_[e.id] = NOT_IN_HEAP;
    entries_.clear();
  }

  std::size_t memory_bytes() const {
    return entries_.capacity() * sizeof(Entry) + pos_.capacity() * sizeof(std::uint32_t);
  }

 private:
  struct Entry {
    Key key;
    std::uint32_t id;
  };

  void erase_at(std::uint32_t i) {
    pos_[entries_[i].id] = NOT_IN_HEAP;
    const auto last = static_cast<std::uint32_t>(entries_.size() - 1);
    if (i != last) {
      entries_[i] = entries_[last];
      pos_[entries_[i].id] = i;
      entries_.pop_back();
      // The moved entry may belong above or below its new place.
      if (i > 0 && entries_[i].key < entries_[(i - 1) / ARITY].key) {
        sift_up(i);
      } else {
        sift_down(i);
      }
    } else {
      entries_.pop_back();
    }
  }

  void sift_up(std::uint32_t i) {
    Entry e = entries_[i];
    while (i > 0) {
      const std::uint32_t parent = (i - 1) / ARITY;
      if (!(e.key < entries_[parent].key)) break;
      entries_[i] = entries_[parent];
      pos_[entries_[i].id] = i;
      i = parent;
    }
    entries_[i] = e;
    pos_[e.id] = i;
  }

  void sift_down(std::uint32_t i) {
    const auto n = static_cast<std::uint32_t>(entries_.size());
    Entry e = entries_[i];
    for (;;) {
      const std::uint32_t first = ARITY * i + 1;
      if (first >= n) break;
      std::uint32_t child = first;
      const std::uint32_t last = first + ARITY < n ? first + ARITY : n;
      for (std::uint32_t c = first + 1; c < last; ++c) {
        if (entries_[c].key < entries_[child].key) child = c;
      }
      if (!(entries_[child].key < e.key)) break;
      entries_[i] = entries_[child];
      pos_[entries_[i].id] = i;
      i = child;
    }
    entries_[i] = e;
    pos_[e.id] = i;
  }

  std::vector<Entry> entries_;
  std::vector<std::uint32_t> pos_;
};

}  // namespace clustersim::sim
