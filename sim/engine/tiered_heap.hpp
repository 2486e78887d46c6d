#pragma once
// A priority queue of (time, id) entries that knows where each id sits (like IndexedHeap: push,
// re-key, remove by id), split in two tiers so that the work follows the entries due soon, not
// all of them:
//   near: a 4-ary heap (the IndexedHeap layout: siblings on one cache line, the least child found
//         without a branch, bottom-up pops) of the entries whose time is at most `bound`;
//   far:  an unordered array of the others (time > bound). Re-keying a far entry that stays far
//         writes its time and nothing else; one that crosses the bound moves tier.
// Every near time is at most the bound and every far time above it, so the least entry of near
// is the least of all (equal times are always on the same side, and the order breaks their ties),
// and the pops are exactly those of one heap under the same total order. When near runs empty
// the bound moves up: to about the eighth smallest of far's times (read from 64 evenly spaced
// samples, a far time itself, so that at least one entry moves), and the entries at or below it
// form the new near heap (built in place, O(its size)).
//
// Why: the flow network's completions re-key an entry at every rate change (about three per
// completion at 10,000 flows) and pop one per completion; with one heap of 10,000 entries each
// of those walked six or seven levels, the lower ones outside the core's caches. Here a pop walks
// a heap an eighth as large, and most re-keys touch one entry.
//
// Ids are small dense integers; the position table grows to the largest id seen and is never
// shrunk. `Order` compares (time, id) pairs and must be total (the flow network's breaks equal
// times by start sequence).

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/engine/cache_line_allocator.hpp"

namespace clustersim::sim {

template <class Order>
class TieredHeap {
 public:
  using Key = std::int64_t;
  static constexpr std::uint32_t NOT_IN_HEAP = UINT32_MAX;

  explicit TieredHeap(Order order) : order_(std::move(order)), near_(PAD) {}

  bool empty() const { return near_.size() == PAD; }  // near is empty only when far is too
  std::size_t size() const { return near_.size() - PAD + far_.size(); }
  bool contains(std::uint32_t id) const { return id < pos_.size() && pos_[id] != NOT_IN_HEAP; }
  std::uint32_t top_id() const { return near_[PAD].id; }
  Key top_key() const { return near_[PAD].key; }

  void push(std::uint32_t id, Key key) {
    if (pos_.size() <= id) pos_.resize(static_cast<std::size_t>(id) + 1, NOT_IN_HEAP);
    if (key <= bound_) {
      near_push(id, key);
    } else {
      far_push(id, key);
      if (near_.size() == PAD) refill();
    }
  }

  // A hint: the entry of `id` will be read or written soon (its place in the position table).
  void prefetch(std::uint32_t id) const {
    if (id < pos_.size()) __builtin_prefetch(&pos_[id]);
  }

  void push_or_update(std::uint32_t id, Key key) {
    if (contains(id)) {
      update(id, key);
    } else {
      push(id, key);
    }
  }

  void update(std::uint32_t id, Key key) {
    const std::uint32_t p = pos_[id];
    if ((p & FAR) != 0) {
      if (key > bound_) {
        far_[p & ~FAR].key = key;
      } else {
        far_remove_at(p & ~FAR);
        near_push(id, key);
      }
      return;
    }
    if (key <= bound_) {
      const bool smaller = order_(key, id, near_[p].key, id);
      near_[p].key = key;
      if (smaller) {
        sift_up(p);
      } else {
        sift_down(p);
      }
      return;
    }
    near_erase_at(p);
    far_push(id, key);
    if (near_.size() == PAD) refill();
  }

  // Removes the least entry (bottom-up, as IndexedHeap::pop).
  void pop() {
    pos_[near_[PAD].id] = NOT_IN_HEAP;
    const Entry e = near_.back();
    near_.pop_back();
    const auto n = static_cast<std::uint32_t>(near_.size());
    if (n == PAD) {
      if (!far_.empty()) refill();
      return;
    }
    std::uint32_t i = PAD;
    for (;;) {
      const std::uint32_t first = first_child(i);
      if (first >= n) break;
      const std::uint32_t child = least_child(first, first + ARITY < n ? first + ARITY : n);
      near_[i] = near_[child];
      pos_[near_[i].id] = i;
      i = child;
    }
    near_[i] = e;
    sift_up(i);
  }

  void erase(std::uint32_t id) {
    if (!contains(id)) return;
    const std::uint32_t p = pos_[id];
    if ((p & FAR) != 0) {
      far_remove_at(p & ~FAR);
      pos_[id] = NOT_IN_HEAP;
      return;
    }
    near_erase_at(p);
    if (near_.size() == PAD && !far_.empty()) refill();
  }

  std::size_t memory_bytes() const {
    return (near_.capacity() + far_.capacity()) * sizeof(Entry) + pos_.capacity() * sizeof(std::uint32_t);
  }

 private:
  struct Entry {
    Key key;
    std::uint32_t id;
  };
  static constexpr unsigned ARITY = 4;
  static constexpr std::uint32_t FAR = 1U << 31;  // pos_: a far entry's index, with this bit
  // Near entries sit at PAD.. so that every group of siblings starts a cache line.
  static constexpr std::uint32_t PAD = ARITY - 1;
  static_assert(ARITY * sizeof(Entry) == CacheLineAllocator<Entry>::LINE);
  static std::uint32_t parent(std::uint32_t i) { return (i - PAD - 1) / ARITY + PAD; }
  static std::uint32_t first_child(std::uint32_t i) { return ARITY * (i - PAD) + 1 + PAD; }

  bool before(const Entry& a, const Entry& b) const { return order_(a.key, a.id, b.key, b.id); }

  void far_push(std::uint32_t id, Key key) {
    pos_[id] = FAR | static_cast<std::uint32_t>(far_.size());
    far_.push_back(Entry{key, id});
  }
  // Takes far entry i out (the last one fills its place); the caller sets the position of its id.
  void far_remove_at(std::uint32_t i) {
    const Entry last = far_.back();
    far_.pop_back();
    if (i != far_.size()) {
      far_[i] = last;
      pos_[last.id] = FAR | i;
    }
  }

  void near_push(std::uint32_t id, Key key) {
    near_.push_back(Entry{key, id});
    sift_up(static_cast<std::uint32_t>(near_.size() - 1));
  }

  void near_erase_at(std::uint32_t i) {
    pos_[near_[i].id] = NOT_IN_HEAP;
    const auto last = static_cast<std::uint32_t>(near_.size() - 1);
    if (i != last) {
      near_[i] = near_[last];
      near_.pop_back();
      if (i > PAD && before(near_[i], near_[parent(i)])) {
        sift_up(i);
      } else {
        sift_down(i);
      }
    } else {
      near_.pop_back();
    }
  }

  // Near is empty, far is not: the bound moves up to about the eighth smallest far time, and the
  // far entries at or below it become the near heap.
  void refill() {
    const std::size_t n = far_.size();
    constexpr std::size_t SAMPLES = 64;
    std::array<Key, SAMPLES> sample;
    const std::size_t s = std::min(n, SAMPLES);
    for (std::size_t k = 0; k < s; ++k) sample[k] = far_[k * n / s].key;
    const std::size_t rank = s / 8;
    std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(rank),
                     sample.begin() + static_cast<std::ptrdiff_t>(s));
    const Key bound = sample[rank];
    bound_ = bound;
    // One pass; an entry that moves leaves the last one in its place.
    Entry* const far = far_.data();
    std::uint32_t* const pos = pos_.data();
    auto end = static_cast<std::uint32_t>(n);
    for (std::uint32_t i = 0; i < end;) {
      const Entry e = far[i];
      if (e.key > bound) {
        ++i;
        continue;
      }
      pos[e.id] = static_cast<std::uint32_t>(near_.size());
      near_.push_back(e);
      if (i != --end) {
        far[i] = far[end];
        pos[far[i].id] = FAR | i;
      }
    }
    far_.resize(end);
    // Floyd's construction: sift down every entry that has a child, the last first.
    const auto size = static_cast<std::uint32_t>(near_.size());
    if (size > PAD + 1) {
      for (std::uint32_t i = parent(size - 1) + 1; i-- > PAD;) sift_down(i);
    }
  }

  void sift_up(std::uint32_t i) {
    const Entry e = near_[i];
    while (i > PAD) {
      const std::uint32_t p = parent(i);
      if (!before(e, near_[p])) break;
      near_[i] = near_[p];
      pos_[near_[i].id] = i;
      i = p;
    }
    near_[i] = e;
    pos_[e.id] = i;
  }

  // The least of the children first .. last - 1 (at least one), the first of equals.
  std::uint32_t least_child(std::uint32_t first, std::uint32_t last) const {
    if (last - first == ARITY) {
      const Entry* c = near_.data() + first;
      const std::uint32_t a = before(c[1], c[0]) ? 1U : 0U;
      const std::uint32_t b = before(c[3], c[2]) ? 3U : 2U;
      return first + (before(c[b], c[a]) ? b : a);
    }
    std::uint32_t best = first;
    for (std::uint32_t c = first + 1; c < last; ++c) best = before(near_[c], near_[best]) ? c : best;
    return best;
  }

  void sift_down(std::uint32_t i) {
    const auto n = static_cast<std::uint32_t>(near_.size());
    const Entry e = near_[i];
    for (;;) {
      const std::uint32_t first = first_child(i);
      if (first >= n) break;
      const std::uint32_t child = least_child(first, first + ARITY < n ? first + ARITY : n);
      if (!before(near_[child], e)) break;
      near_[i] = near_[child];
      pos_[near_[i].id] = i;
      i = child;
    }
    near_[i] = e;
    pos_[e.id] = i;
  }

  [[no_unique_address]] Order order_;
  Key bound_ = INT64_MIN;  // near: times <= bound_; far: times > bound_
  std::vector<Entry, CacheLineAllocator<Entry>> near_;
  std::vector<Entry> far_;
  std::vector<std::uint32_t> pos_;
};

}  // namespace clustersim::sim
