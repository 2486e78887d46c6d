#pragma once
// std::allocator with 64-byte (cache line) alignment, for the flat tables of the simulator whose
// records are sized and laid out to cache lines.

#include <cstddef>
#include <new>

namespace clustersim::sim {

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::size_t LINE = 64;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>& /*other*/) {}  // NOLINT: rebinding is implicit
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{LINE})); }
  void deallocate(T* p, std::size_t /*n*/) { ::operator delete(p, std::align_val_t{LINE}); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>& /*other*/) const {
    return true;
  }
};

}  // namespace clustersim::sim
