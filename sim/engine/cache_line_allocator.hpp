#pragma once
// std::allocator with 64-byte (cache line) alignment, for the flat tables of the simulator whose
// records are sized and laid out to cache lines.
//
// Large tables (at least LARGE bytes) are also placed on whole 2 MiB pages and offered to the
// kernel as transparent huge pages (madvise MADV_HUGEPAGE; Linux only, a hint that changes no
// result). The flow tables of a large cluster are read at random, one record per flow touched, so
// with 4 KiB pages nearly every such read also misses the TLB: 10,000 flows on a 1,024-GPU
// cluster hold about 11 MB, some 2,700 pages of 4 KiB, more than the core's second-level TLB
// covers, against 6 pages of 2 MiB. The rounding up to whole 2 MiB pages costs at most 2 MiB of
// address space per large table.

#include <cstddef>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace clustersim::sim {

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::size_t LINE = 64;
  static constexpr std::size_t HUGE_PAGE = std::size_t{2} << 20;
  static constexpr std::size_t LARGE = std::size_t{512} << 10;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>& /*other*/) {}  // NOLINT: rebinding is implicit
  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < LARGE) return static_cast<T*>(::operator new(bytes, std::align_val_t{LINE}));
    const std::size_t rounded = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    void* p = ::operator new(rounded, std::align_val_t{HUGE_PAGE});
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    ::madvise(p, rounded, MADV_HUGEPAGE);  // a hint: refused, the pages stay 4 KiB
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) {
    ::operator delete(p, std::align_val_t{n * sizeof(T) < LARGE ? LINE : HUGE_PAGE});
  }
  template <class U>
  bool operator==(const CacheLineAllocator<U>& /*other*/) const {
    return true;
  }
};

}  // namespace clustersim::sim
