#pragma once
// Blocks of 2^c elements carved out of one array, each aligned to its own size within the array,
// recycled through one free list per size class. The max-min solver keeps every flow's hops and
// every link's flow list in such blocks: no allocation per flow or per link once the pool has
// reached its peak size, neighbouring lists in one array rather than scattered over the heap, and
// a list of up to 64 bytes never straddles two cache lines (the array itself is 64-byte aligned).
//
// A block is named by its offset in the array; offsets stay valid when the array grows (the
// elements move, so pointers into it do not). Growing the array to align a block leaves a gap in
// front of it; the gap is cut into aligned blocks of smaller classes and put on their free lists,
// so nothing is lost.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/engine/cache_line_allocator.hpp"

namespace clustersim::sim {

template <class T>
class BlockPool {
 public:
  static constexpr unsigned CLASSES = 32;

  // The size class of a block that holds n elements: the least c with 2^c >= n.
  static unsigned class_for(std::size_t n) { return n <= 1 ? 0U : static_cast<unsigned>(std::bit_width(n - 1)); }

  // A free block of 2^c elements (their contents unspecified).
  std::uint32_t allocate(unsigned c) {
    std::vector<std::uint32_t>& free = free_[c];
    if (!free.empty()) {
      const std::uint32_t b = free.back();
      free.pop_back();
      return b;
    }
    const std::size_t size = std::size_t{1} << c;
    std::size_t end = data_.size();
    const std::size_t begin = (end + size - 1) & ~(size - 1);
    // The gap before an aligned block: the largest aligned blocks that fit, on their free lists.
    while (end < begin) {
      const auto k = static_cast<unsigned>(std::countr_zero(end | (std::size_t{1} << (CLASSES - 1))));
      unsigned fit = k;
      while (end + (std::size_t{1} << fit) > begin) --fit;
      free_[fit].push_back(static_cast<std::uint32_t>(end));
      end += std::size_t{1} << fit;
    }
    data_.resize(begin + size);
    return static_cast<std::uint32_t>(begin);
  }
  void release(std::uint32_t block, unsigned c) { free_[c].push_back(block); }

  T* at(std::uint32_t block) { return data_.data() + block; }
  const T* at(std::uint32_t block) const { return data_.data() + block; }

  std::size_t memory_bytes() const {
    std::size_t b = data_.capacity() * sizeof(T);
    for (const auto& f : free_) b += f.capacity() * sizeof(std::uint32_t);
    return b;
  }

 private:
  std::vector<T, CacheLineAllocator<T>> data_;
  std::vector<std::uint32_t> free_[CLASSES];
};

}  // namespace clustersim::sim
