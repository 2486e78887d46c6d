// Point-to-point bandwidth and latency for every ordered GPU pair.
//
// NCCL modes: all ranks hold one communicator; for each pair (src, dst) src runs ncclSend and dst
// ncclRecv while the other ranks wait, timed as nccl-tests times sendrecv (one launch to connect
// and synchronize, a barrier, -n launches back to back on the host clock, time averaged over the
// two ranks). The transport is set by the sub-run's environment: NCCL_P2P_READ_ENABLE=0 (P2P write),
// =1 (P2P read), NCCL_P2P_DISABLE=1 (through host shared memory). bandwidth = bytes / time;
// the smallest size gives the latency. The received data is checked against the sent pattern.
//
// cudaMemcpyPeer: one process, peer access enabled where cudaDeviceCanAccessPeer allows it, each
// copy timed with CUDA events around -n copies on a stream of the source device.

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "calibrate/harness/collective_kernels.hpp"
#include "calibrate/harness/cuda_checks.hpp"
#include "calibrate/harness/harness_json_writer.hpp"
#include "calibrate/harness/nccl_comm.hpp"
#include "calibrate/harness/worker_context.hpp"

namespace clustersim::harness {

namespace {

using Clock = std::chrono::steady_clock;

struct P2pPoint {
  std::int64_t size_bytes;
  double time_us;
  double bandwidth;
  std::optional<std::int64_t> errors;
};

std::string mode_name(const std::string& mode) {
  if (mode == "write") return "nccl_p2p_write";
  if (mode == "read") return "nccl_p2p_read";
  if (mode == "shm") return "nccl_shm";
  return "cuda_memcpy_peer";
}

std::string p2p_entry(const WorkerContext& ctx, int src, int dst, const std::vector<P2pPoint>& points,
                      std::optional<bool> peer_access) {
  JsonWriter w;
  w.begin_object()
      .field("src", src)
      .field("dst", dst)
      .field("src_device", ctx.devices.at(static_cast<std::size_t>(src)))
      .field("dst_device", ctx.devices.at(static_cast<std::size_t>(dst)))
      .field("mode", mode_name(ctx.run.p2p_mode));
  w.key("env").begin_object();
  for (const auto& [k, v] : ctx.run.env) w.field(k, v);
  w.end_object();
  if (peer_access) w.field("peer_access", *peer_access);
  w.field("iters", ctx.run.iters);
  w.key("points").begin_array();
  for (const auto& p : points) {
    w.begin_object()
        .field("size_bytes", p.size_bytes)
        .field("time_us", p.time_us)
        .field("bandwidth_GBps", p.bandwidth)
        .field("errors", p.errors)
        .end_object();
  }
  w.end_array().end_object();
  return w.take();
}

std::vector<std::int64_t> sweep(const SubRun& run) {
  std::vector<std::int64_t> sizes;
  for (std::int64_t s = std::max<std::int64_t>(run.min_bytes, 4); s <= run.max_bytes;
       s = std::max<std::int64_t>(s * run.step_factor, s + 1)) {
    sizes.push_back(s / 4 * 4);
  }
  return sizes;
}

}  // namespace

void run_p2p_nccl(WorkerContext& ctx) {
  const SubRun& run = ctx.run;
  const int rank = ctx.group.rank();
  const int n = ctx.group.size();
  const double timeout = ctx.opt.test_timeout_s;
  CHECK_CUDA(cudaSetDevice(ctx.device));
  const auto sizes = sweep(run);
  if (sizes.empty()) return;
  const std::size_t max_bytes = static_cast<std::size_t>(sizes.back());

  NcclComm comm(ctx.group, ctx.device, ctx.opt, "p2p-init");
  const bool nccl_alloc = ctx.opt.alloc == "ncclmem";
  DeviceBuffer send(max_bytes, nccl_alloc);
  DeviceBuffer recv(max_bytes, nccl_alloc);
  unsigned long long* wrong = nullptr;
  unsigned long long* wrong_host = nullptr;  // pinned: the read-back stays under the test timeout
  struct Free {
    unsigned long long** d;
    unsigned long long** h;
    ~Free() {
      cudaFree(*d);
      cudaFreeHost(*h);
    }
  } free_counters{&wrong, &wrong_host};
  CHECK_CUDA(cudaMalloc(&wrong, sizeof(unsigned long long)));
  CHECK_CUDA(cudaMallocHost(&wrong_host, sizeof(unsigned long long)));
  fill_pattern(send.as<float>(), max_bytes / 4, 7, rank, 0, comm.stream());
  comm.wait(timeout);

  bool broken = false;
  for (int src = 0; src < n && !broken; ++src) {
    for (int dst = 0; dst < n && !broken; ++dst) {
      if (src == dst) continue;
      const bool active = rank == src || rank == dst;
      const std::string pair = std::to_string(src) + "->" + std::to_string(dst);
      std::vector<P2pPoint> points;
      double last_s = 0;
      std::int64_t last_size = 0;
      for (const std::int64_t size : sizes) {
        const double estimate = last_size ? last_s * static_cast<double>(size) / last_size * (run.iters + 2) : 0;
        if (any_of(ctx.group, "p2p-budget-" + pair, ctx.seconds_left() < estimate + 2.0)) {
          if (rank == 0) ctx.failure("pair " + pair + " from " + std::to_string(size) + " B", "skipped", "time budget");
          break;
        }
        const std::size_t count = static_cast<std::size_t>(size) / 4;
        auto step = [&]() {
          comm.check(ncclGroupStart(), "ncclGroupStart");
          if (rank == src) comm.check(ncclSend(send.get(), count, ncclFloat, dst, comm.get(), comm.stream()), "ncclSend");
          if (rank == dst) comm.check(ncclRecv(recv.get(), count, ncclFloat, src, comm.get(), comm.stream()), "ncclRecv");
          comm.check(ncclGroupEnd(), "ncclGroupEnd");
        };
        std::string error;
        double seconds = 0;
        std::int64_t bad = 0;
        try {
          if (active) {
            step();  // connects the pair on first use, and synchronizes
            comm.wait(timeout);
          }
          barrier(ctx.group, "p2p-start-" + pair);
          const auto t0 = Clock::now();
          if (active) {
            for (int i = 0; i < run.iters; ++i) step();
            comm.wait(timeout);
            seconds = std::chrono::duration<double>(Clock::now() - t0).count() / run.iters;
          }
          if (rank == dst) {
            CHECK_CUDA(cudaMemsetAsync(wrong, 0, sizeof(*wrong), comm.stream()));
            // The sender's pattern is v(7, src, i): a broadcast from src, for the check's purposes.
            CollectiveCheck k{CollectiveKind::BROADCAST, 7, rank, n, src, count, count};
            verify_collective(k, recv.as<float>(), wrong, comm.stream());
            CHECK_CUDA(cudaMemcpyAsync(wrong_host, wrong, sizeof(*wrong_host), cudaMemcpyDeviceToHost, comm.stream()));
            comm.wait(timeout);
            bad = static_cast<std::int64_t>(*wrong_host);
          }
        } catch (const HarnessError& e) {
          error = e.what();
        }
        if (any_of(ctx.group, "p2p-status-" + pair + std::to_string(size), !error.empty())) {
          if (!error.empty()) ctx.failure("pair " + pair + " size " + std::to_string(size), "failed", error);
          broken = true;  // the communicator may be aborted; the remaining pairs cannot run on it
          break;
        }
        const double mean = allreduce_sum(ctx.group, "p2p-time-" + pair, seconds) / 2;
        bad = allreduce_sum(ctx.group, "p2p-errors-" + pair, bad);
        points.push_back({size, mean * 1e6, static_cast<double>(size) / 1e9 / mean, bad});
        last_s = mean;
        last_size = size;
      }
      if (rank == 0 && !points.empty()) ctx.sink.add(Section::P2P, p2p_entry(ctx, src, dst, points, std::nullopt));
    }
  }
  if (broken && rank == 0) ctx.failure("remaining pairs", "skipped", "an earlier pair failed on this communicator");
}

void run_p2p_memcpy(WorkerContext& ctx) {
  const SubRun& run = ctx.run;
  const int n = static_cast<int>(ctx.devices.size());
  const auto sizes = sweep(run);
  if (sizes.empty() || n < 2) return;
  const std::size_t max_bytes = static_cast<std::size_t>(sizes.back());

  std::vector<void*> bufs(static_cast<std::size_t>(n), nullptr);
  struct FreeAll {
    std::vector<void*>& b;
    const std::vector<int>& d;
    ~FreeAll() {
      for (std::size_t i = 0; i < b.size(); ++i) {
        if (b[i] != nullptr && cudaSetDevice(d[i]) == cudaSuccess) cudaFree(b[i]);
      }
    }
  } free_all{bufs, ctx.devices};
  for (int i = 0; i < n; ++i) {
    CHECK_CUDA(cudaSetDevice(ctx.devices[static_cast<std::size_t>(i)]));
    CHECK_CUDA(cudaMalloc(&bufs[static_cast<std::size_t>(i)], 2 * max_bytes));
    fill_pattern(static_cast<float*>(bufs[static_cast<std::size_t>(i)]), 2 * max_bytes / 4, 9, i, 0, nullptr);
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  for (int src = 0; src < n; ++src) {
    for (int dst = 0; dst < n; ++dst) {
      if (src == dst) continue;
      const int sdev = ctx.devices[static_cast<std::size_t>(src)];
      const int ddev = ctx.devices[static_cast<std::size_t>(dst)];
      const std::string pair = std::to_string(src) + "->" + std::to_string(dst);
      std::vector<P2pPoint> points;
      bool peer = false;
      try {
        int can = 0;
        CHECK_CUDA(cudaDeviceCanAccessPeer(&can, sdev, ddev));
        if (can) {
          CHECK_CUDA(cudaSetDevice(sdev));
          const cudaError_t e = cudaDeviceEnablePeerAccess(ddev, 0);
          if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CHECK_CUDA(e);
          (void)cudaGetLastError();  // clear "already enabled"
          CHECK_CUDA(cudaSetDevice(ddev));
          const cudaError_t e2 = cudaDeviceEnablePeerAccess(sdev, 0);
          if (e2 != cudaSuccess && e2 != cudaErrorPeerAccessAlreadyEnabled) CHECK_CUDA(e2);
          (void)cudaGetLastError();
          peer = true;
        }
        CHECK_CUDA(cudaSetDevice(sdev));
        cudaStream_t stream = nullptr;
        cudaEvent_t start = nullptr, stop = nullptr;
        CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        CHECK_CUDA(cudaEventCreate(&start));
        CHECK_CUDA(cudaEventCreate(&stop));
        struct Release {
          cudaStream_t s;
          cudaEvent_t a, b;
          ~Release() {
            cudaEventDestroy(a);
            cudaEventDestroy(b);
            cudaStreamDestroy(s);
          }
        } release{stream, start, stop};
        for (const std::int64_t size : sizes) {
          if (ctx.seconds_left() < 2.0) {
            ctx.failure("memcpy pair " + pair + " from " + std::to_string(size) + " B", "skipped", "time budget");
            break;
          }
          // Alternate between two windows so consecutive copies do not reuse the same lines.
          auto copy = [&](int i) {
            const std::size_t off = static_cast<std::size_t>(i % 2) * max_bytes;
            CHECK_CUDA(cudaMemcpyPeerAsync(static_cast<char*>(bufs[static_cast<std::size_t>(dst)]) + off, ddev,
                                           static_cast<char*>(bufs[static_cast<std::size_t>(src)]) + off, sdev,
                                           static_cast<std::size_t>(size), stream));
          };
          copy(0);
          CHECK_CUDA(cudaStreamSynchronize(stream));
          CHECK_CUDA(cudaEventRecord(start, stream));
          for (int i = 0; i < run.iters; ++i) copy(i);
          CHECK_CUDA(cudaEventRecord(stop, stream));
          CHECK_CUDA(cudaEventSynchronize(stop));
          float ms = 0;
          CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
          const double seconds = ms * 1e-3 / run.iters;
          points.push_back({size, seconds * 1e6, static_cast<double>(size) / 1e9 / seconds, std::nullopt});
        }
      } catch (const HarnessError& e) {
        ctx.failure("memcpy pair " + pair, "failed", e.what());
      }
      if (!points.empty()) ctx.sink.add(Section::P2P, p2p_entry(ctx, src, dst, points, peer));
    }
  }
}

}  // namespace clustersim::harness
