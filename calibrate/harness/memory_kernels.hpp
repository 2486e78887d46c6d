#pragma once
// Memory-bound kernels for the HBM test. Each thread moves 16-byte vectors, four independent ones
// per loop trip, over a grid-stride loop, so the loads in flight are enough to saturate HBM.
//   copy:        dst = src                      bytes moved = 2 S (S read, S written)
//   read:        xor of every word of src        bytes moved = S
//   write:       dst = f(index)                  bytes moved = S
//   elementwise: c = a + s b (float, "triad")   bytes moved = 3 S
// S is the buffer size in bytes, a multiple of 64.
//
// For the fixed time of a kernel (the launch-gap test): an empty kernel whose first thread
// increments one word (each launch depends on the one before through stream order), and a kernel
// that holds the stream for a given time (reading the GPU's global nanosecond timer) while the host
// queues the empty launches behind it, so the GPU finds them all queued.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace clustersim::harness {

enum class MemoryKernel { COPY, READ, WRITE, ELEMENTWISE };

// `blocks` x 256 threads. `sink` (read) receives a value only in the impossible case the xor equals
// a magic number, which keeps the compiler from dropping the loads.
void launch_memory_kernel(MemoryKernel kind, void* dst, const void* src_a, const void* src_b, std::size_t bytes,
                          unsigned blocks, std::uint32_t* sink, cudaStream_t stream);

void launch_empty_kernel(std::uint32_t* word, unsigned blocks, unsigned threads, cudaStream_t stream);
void launch_hold_kernel(std::uint64_t nanoseconds, cudaStream_t stream);

}  // namespace clustersim::harness
