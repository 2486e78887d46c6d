// HBM bandwidth of memory-bound kernels (memory_kernels.hpp) and of cudaMemcpy device-to-device,
// on every GPU of the sub-run at once (each its own buffers).
//
// Buffers start at four times the L2 cache (rounded up to a power of two) and double up to
// --memory-maxbytes; each buffer has two windows used alternately, so no launch finds its input in
// L2 from the launch before. Inputs are random floats. Each point: a warm-up launch, then three
// repeats of back-to-back launches (about 20 ms each) timed with CUDA events; the median repeat.
// bandwidth = bytes moved (reads plus writes) / time. Copies, writes and the elementwise kernel
// are checked at sampled elements.
//
// The fixed time of a kernel ("launch_gap" entries): 512 empty kernels back to back on one stream,
// each incrementing one word (so each follows the one before), queued behind a kernel that holds
// the stream for 20 ms: the GPU finds them all queued, as it finds a training step's kernels when
// the host runs ahead, and the time per kernel is launch, ramp and retirement with nothing to do.
// Two grids: one block of 32 threads, and 8 blocks of 256 threads per multiprocessor (the grid of
// the streaming kernels above). Three repeats, the median; queue_full says the host had queued
// all 512 before the holding kernel ended (otherwise the host's launch rate was measured).

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "calibrate/harness/cuda_checks.hpp"
#include "calibrate/harness/harness_json_writer.hpp"
#include "calibrate/harness/memory_kernels.hpp"
#include "calibrate/harness/random_fill.hpp"
#include "calibrate/harness/worker_context.hpp"

namespace clustersim::harness {

namespace {

struct Kernel {
  const char* name;
  MemoryKernel kind;
  bool is_memcpy;
  int streams_moved;  // bytes moved = streams_moved * size
};

constexpr Kernel kKernels[] = {
    {"copy", MemoryKernel::COPY, false, 2},
    {"read", MemoryKernel::READ, false, 1},
    {"write", MemoryKernel::WRITE, false, 1},
    {"elementwise", MemoryKernel::ELEMENTWISE, false, 3},
    {"cuda_memcpy", MemoryKernel::COPY, true, 2},
};

// Samples `dst` and its expected value at a few indices; false on a mismatch.
bool check_samples(const Kernel& k, const char* dst, const char* a, const char* b, std::size_t bytes) {
  for (int s = 0; s < 16; ++s) {
    const std::size_t idx = (static_cast<std::size_t>(s) * 2654435761u % (bytes / 16)) * 16;
    unsigned char got[16], x[16], y[16];
    CHECK_CUDA(cudaMemcpy(got, dst + idx, 16, cudaMemcpyDeviceToHost));
    if (k.kind == MemoryKernel::COPY) {
      CHECK_CUDA(cudaMemcpy(x, a + idx, 16, cudaMemcpyDeviceToHost));
      if (std::memcmp(got, x, 16) != 0) return false;
    } else if (k.kind == MemoryKernel::WRITE) {
      const std::uint32_t xi = static_cast<std::uint32_t>(idx / 16) * 2654435761u;
      const std::uint32_t want[4] = {xi, xi ^ 0x55555555u, xi + 1u, ~xi};
      if (std::memcmp(got, want, 16) != 0) return false;
    } else if (k.kind == MemoryKernel::ELEMENTWISE) {
      CHECK_CUDA(cudaMemcpy(x, a + idx, 16, cudaMemcpyDeviceToHost));
      CHECK_CUDA(cudaMemcpy(y, b + idx, 16, cudaMemcpyDeviceToHost));
      float fx[4], fy[4], fg[4];
      std::memcpy(fx, x, 16);
      std::memcpy(fy, y, 16);
      std::memcpy(fg, got, 16);
      for (int i = 0; i < 4; ++i) {
        if (!(std::fabs(fg[i] - (fx[i] + 1.5f * fy[i])) <= 1e-6f * (1 + std::fabs(fg[i])))) return false;
      }
    }
  }
  return true;
}

constexpr int kGapKernels = 512;
constexpr std::uint64_t kHoldNs = 20'000'000;

void measure_launch_gap(WorkerContext& ctx, const cudaDeviceProp& prop, std::uint32_t* word, cudaStream_t stream,
                        cudaEvent_t start, cudaEvent_t stop) {
  struct Grid {
    const char* op;
    unsigned blocks, threads;
  };
  const Grid grids[] = {{"one_block", 1, 32},
                        {"full_grid", static_cast<unsigned>(prop.multiProcessorCount) * 8, 256}};
  for (const Grid& g : grids) {
    const std::string test = std::string("launch_gap ") + g.op;
    try {
      for (int i = 0; i < 64; ++i) launch_empty_kernel(word, g.blocks, g.threads, stream);
      CHECK_CUDA(cudaStreamSynchronize(stream));
      std::vector<double> per_kernel;
      bool queue_full = true;
      for (int rep = 0; rep < 3; ++rep) {
        launch_hold_kernel(kHoldNs, stream);
        const double t0 = now_unix();
        CHECK_CUDA(cudaEventRecord(start, stream));
        for (int i = 0; i < kGapKernels; ++i) launch_empty_kernel(word, g.blocks, g.threads, stream);
        CHECK_CUDA(cudaEventRecord(stop, stream));
        // Queued in well under the holding time: the GPU saw a full queue.
        if (now_unix() - t0 > 0.5 * static_cast<double>(kHoldNs) * 1e-9) queue_full = false;
        CHECK_CUDA(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
        per_kernel.push_back(ms * 1e3 / kGapKernels);
      }
      std::sort(per_kernel.begin(), per_kernel.end());
      JsonWriter w;
      w.begin_object()
          .field("kernel", "launch_gap")
          .field("op", g.op)
          .field("kernels", kGapKernels)
          .field("blocks", static_cast<int>(g.blocks))
          .field("threads", static_cast<int>(g.threads))
          .field("time_us", per_kernel[1])
          .field("queue_full", queue_full)
          .field("gpu", ctx.device)
          .field("gpu_name", prop.name)
          .end_object();
      ctx.sink.add(Section::MEMORY, w.take());
    } catch (const HarnessError& e) {
      ctx.failure(test, "failed", e.what());
      if (cudaDeviceSynchronize() != cudaSuccess) throw;
    }
  }
}

}  // namespace

void run_memory(WorkerContext& ctx) {
  CHECK_CUDA(cudaSetDevice(ctx.device));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, ctx.device));
  const std::size_t l2 = static_cast<std::size_t>(std::max(prop.l2CacheSize, 1 << 20));
  std::size_t first = 1;
  while (first < 4 * l2) first *= 2;

  std::size_t free_bytes = 0, total_bytes = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  // Three buffers of two windows each must fit in half the free memory.
  std::size_t largest = static_cast<std::size_t>(ctx.opt.memory_max_bytes);
  while (largest > first && 6 * largest > free_bytes / 2) largest /= 2;
  largest = std::max(largest, first);

  std::vector<std::size_t> sizes;
  for (std::size_t s = first; s <= largest; s *= 2) sizes.push_back(s);

  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  std::uint32_t* sink = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  struct Release {
    void** a;
    void** b;
    void** c;
    std::uint32_t** sink;
    cudaStream_t* s;
    cudaEvent_t* e1;
    cudaEvent_t* e2;
    ~Release() {
      cudaFree(*a);
      cudaFree(*b);
      cudaFree(*c);
      cudaFree(*sink);
      if (*e1) cudaEventDestroy(*e1);
      if (*e2) cudaEventDestroy(*e2);
      if (*s) cudaStreamDestroy(*s);
    }
  } release{&a, &b, &c, &sink, &stream, &start, &stop};
  CHECK_CUDA(cudaMalloc(&a, 2 * largest));
  CHECK_CUDA(cudaMalloc(&b, 2 * largest));
  CHECK_CUDA(cudaMalloc(&c, 2 * largest));
  CHECK_CUDA(cudaMalloc(&sink, sizeof(std::uint32_t)));
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  fill_uniform(a, FillType::F32, 2 * largest / 4, 21, 1.0f, stream);
  fill_uniform(b, FillType::F32, 2 * largest / 4, 22, 1.0f, stream);
  fill_uniform(c, FillType::F32, 2 * largest / 4, 23, 1.0f, stream);
  CHECK_CUDA(cudaStreamSynchronize(stream));

  // Enough resident blocks to cover every multiprocessor several times.
  const unsigned blocks = static_cast<unsigned>(prop.multiProcessorCount) * 8;

  measure_launch_gap(ctx, prop, sink, stream, start, stop);

  for (const auto& k : kKernels) {
    for (const std::size_t size : sizes) {
      const std::string test = std::string(k.name) + " " + std::to_string(size) + " B";
      if (ctx.seconds_left() < 1.0) {
        ctx.failure(test, "skipped", "time budget");
        continue;
      }
      try {
        auto launch = [&](int i) {
          const std::size_t off = static_cast<std::size_t>(i % 2) * size;
          char* dst = static_cast<char*>(c) + off;
          const char* sa = static_cast<const char*>(a) + off;
          const char* sb = static_cast<const char*>(b) + off;
          if (k.is_memcpy) {
            CHECK_CUDA(cudaMemcpyAsync(dst, sa, size, cudaMemcpyDeviceToDevice, stream));
          } else {
            launch_memory_kernel(k.kind, dst, sa, sb, size, blocks, sink, stream);
          }
        };
        launch(0);
        CHECK_CUDA(cudaEventRecord(start, stream));
        launch(1);
        CHECK_CUDA(cudaEventRecord(stop, stream));
        CHECK_CUDA(cudaEventSynchronize(stop));
        float first_ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&first_ms, start, stop));
        const int iters = std::clamp(static_cast<int>(20.0 / std::max(first_ms, 1e-3f)), 2, ctx.opt.memory_iters);
        std::vector<double> per_launch;
        for (int rep = 0; rep < 3; ++rep) {
          CHECK_CUDA(cudaEventRecord(start, stream));
          for (int i = 0; i < iters; ++i) launch(i);
          CHECK_CUDA(cudaEventRecord(stop, stream));
          CHECK_CUDA(cudaEventSynchronize(stop));
          float ms = 0;
          CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
          per_launch.push_back(ms * 1e3 / iters);
        }
        std::sort(per_launch.begin(), per_launch.end());
        const double time_us = per_launch[1];
        bool ok = true;
        if (k.kind != MemoryKernel::READ) {
          // The last launch wrote window (iters - 1) % 2.
          const std::size_t off = static_cast<std::size_t>((iters - 1) % 2) * size;
          ok = check_samples(k, static_cast<const char*>(c) + off, static_cast<const char*>(a) + off,
                             static_cast<const char*>(b) + off, size);
          if (!ok) ctx.failure(test, "failed", "sampled output differs from the expected value");
        }
        const double moved = static_cast<double>(k.streams_moved) * static_cast<double>(size);
        JsonWriter w;
        w.begin_object()
            .field("kernel", k.name)
            .field("bytes_moved", static_cast<std::int64_t>(moved))
            .field("time_us", time_us)
            .field("bandwidth_GBps", moved / (time_us * 1e-6) / 1e9)
            .field("buffer_bytes", static_cast<std::int64_t>(size))
            .field("iters", iters)
            .field("check", k.kind == MemoryKernel::READ ? "none" : ok ? "ok" : "failed")
            .field("gpu", ctx.device)
            .field("gpu_name", prop.name)
            .end_object();
        ctx.sink.add(Section::MEMORY, w.take());
      } catch (const HarnessError& e) {
        ctx.failure(test, "failed", e.what());
        if (cudaDeviceSynchronize() != cudaSuccess) throw;
      }
    }
  }
}

}  // namespace clustersim::harness
