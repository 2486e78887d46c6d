#pragma once
// The store-path probe: what one thread block of NCCL's Simple size pays per byte for its loads and
// its stores, independent of NCCL. NCCL 2.28 runs each channel's Simple work on one block of at
// most NCCL_SIMPLE_MAX_NTHREADS = 512 threads (src/include/device.h), moving 16-byte vectors,
// so one block's load and store issue, not HBM or NVLink, bounds a channel.
//
// One block of 512 threads walks buffers of S bytes (16-byte vectors, `unroll` independent vectors
// per thread in flight, a block-stride loop; NCCL 2.28 device.h ncclCollUnroll: 8 from sm80 on), in
// three patterns:
//   COPY:  out0 = in0                 1 load,  1 store per payload byte
//   SUM2:  out0 = in0 + in1 (float)   2 loads, 1 store (a reduce step of two inputs)
//   DUAL:  out0 = out1 = in0          1 load,  2 stores (a copy-and-send step)
// The inputs are always in the running GPU's memory; the outputs in its own memory or in a peer
// GPU's (peer access over NVLink). Time per payload byte t = kernel time / S, so with a load cost
// l and a store cost s (both per byte): t_copy = l + s, t_sum2 = 2 l + s, t_dual = l + 2 s.
// Least squares over the three (normal equations [[6, 5], [5, 6]] (l, s) = (c + 2 r + d, c + r + 2 d)):
//   l = (c + 7 r - 4 d) / 11,   s = (c - 4 r + 7 d) / 11,   store share f = s / (l + s).

#include <cuda_runtime.h>

#include <cstddef>

namespace clustersim::harness {

enum class StorePattern { COPY, SUM2, DUAL };

inline constexpr unsigned kStoreProbeThreads = 512;  // NCCL_SIMPLE_MAX_NTHREADS (NCCL 2.28 device.h)

// One block of kStoreProbeThreads threads over `bytes` (a multiple of 16 x kStoreProbeThreads x
// unroll). `unroll` is 1, 2, 4 or 8; `in1` is read only by SUM2, `out1` written only by DUAL.
// Returns the launch's error code (cudaGetLastError).
cudaError_t launch_store_probe(StorePattern pattern, int unroll, void* out0, void* out1, const void* in0,
                               const void* in1, std::size_t bytes, cudaStream_t stream);

}  // namespace clustersim::harness
