#pragma once
// The host-memory path probe: what GPUs' kernels and copy engines move through pinned host memory
// over PCIe, one direction at a time and both at once, on one GPU and on several together. NCCL's
// SHM transport (NCCL_P2P_DISABLE=1, or P2P not allowed) is kernels doing exactly this: without
// NCCL_SHM_USE_CUDA_MEMCPY the sender's block stores each step into a buffer in host memory and
// the receiver's block loads it from there (NCCL 2.28 src/transport/shm.cc), so a GPU in a ring
// both stores to and loads from host memory at once. CPU offload (ZeRO-Offload) does the same with
// copy engines (gradients down, parameters up).
//
// Actions, each on one GPU, each over its own S-byte pinned host buffer (cudaHostAllocPortable,
// touched by the host first) and S bytes of device memory:
//   load   blocks of 512 threads load 16-byte vectors from host memory and store them to device
//          memory (an SHM receiver's recv step);
//   store  blocks load device memory and store to host memory (an SHM sender's send step);
//   relay  blocks load one host buffer and store to another (recvCopySend: a ring's middle step);
//   h2d, d2h  cudaMemcpyAsync by the copy engines.
// A kernel's blocks each take a contiguous share of the buffer (as NCCL's channels take theirs),
// 8 vectors per thread in flight (NCCL 2.28 ncclCollUnroll from sm80 on). Payload rate = S / time
// (a relay moves S bytes in and S out).

#include <cuda_runtime.h>

#include <cstddef>

namespace clustersim::harness {

inline constexpr unsigned kHostProbeThreads = 512;  // NCCL_SIMPLE_MAX_NTHREADS (NCCL 2.28 device.h)
inline constexpr std::size_t kHostProbeGranule = 16 * 8;  // a vector of 16 bytes, 8 in flight a thread

// `blocks` blocks copy `bytes` (a multiple of kHostProbeGranule x kHostProbeThreads x blocks) from
// `in` to `out`; which of the two is host memory makes the action (load, store, relay). With
// `slice_bytes` > 0 (a multiple of kHostProbeGranule x kHostProbeThreads dividing each block's
// share) each block copies its share in steps of that size, each synchronised as an NCCL Simple
// step over SHM is: the step's flag polled before, a barrier, a system-wide fence and the next
// flag posted after (host_probe_kernels.cu). Returns the launch's error code (cudaGetLastError).
cudaError_t launch_host_probe(int blocks, void* out, const void* in, std::size_t bytes, cudaStream_t stream,
                              std::size_t slice_bytes = 0);

}  // namespace clustersim::harness
