// Host <-> device bandwidth, the path of CPU offload (DeepSpeed ZeRO offload of optimizer states and
// parameters): pinned (cudaHostAlloc) and pageable (malloc) host memory, both directions, first on
// each GPU alone, then on all GPUs of the sub-run at once.
//
// Each rank binds itself to the CPUs local to its GPU (sysfs local_cpulist of the GPU's PCI
// device), then allocates and touches its host buffers there, so pinned pages sit on the GPU's
// NUMA node as they would under a NUMA-aware launcher. Each transfer is timed on the host clock
// from cudaMemcpyAsync to the end of cudaStreamSynchronize; the median of --host-iters transfers is
// reported. In the concurrent phase every transfer starts after a barrier; the entry gives the
// mean per-GPU bandwidth, each GPU's, and the aggregate (all bytes / slowest time).

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "calibrate/harness/cuda_checks.hpp"
#include "calibrate/harness/harness_json_writer.hpp"
#include "calibrate/harness/worker_context.hpp"

namespace clustersim::harness {

namespace {

using Clock = std::chrono::steady_clock;

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string pci_bus_id(int device) {
  char buf[64] = {};
  if (cudaDeviceGetPCIBusId(buf, sizeof(buf), device) != cudaSuccess) return "";
  return lower(buf);
}

// Binds the calling thread to the GPU's local CPUs. Returns the NUMA node, or -1 when unknown.
int bind_to_gpu(int device, bool& bound) {
  bound = false;
  const std::string bus = pci_bus_id(device);
  if (bus.empty()) return -1;
  const std::string dir = "/sys/bus/pci/devices/" + bus;
  int numa = -1;
  {
    std::ifstream f(dir + "/numa_node");
    if (f) f >> numa;
  }
  std::ifstream f(dir + "/local_cpulist");
  std::string list;
  if (!f || !std::getline(f, list)) return numa;
  cpu_set_t set;
  CPU_ZERO(&set);
  int count = 0;
  std::stringstream ss(list);
  std::string range;
  while (std::getline(ss, range, ',')) {
    const auto dash = range.find('-');
    const int lo = std::atoi(range.substr(0, dash).c_str());
    const int hi = dash == std::string::npos ? lo : std::atoi(range.substr(dash + 1).c_str());
    for (int c = lo; c <= hi && c < CPU_SETSIZE; ++c) {
      CPU_SET(c, &set);
      ++count;
    }
  }
  if (count > 0 && sched_setaffinity(0, sizeof(set), &set) == 0) bound = true;
  return numa;
}

struct HostBuffers {
  void* pinned = nullptr;
  char* pageable = nullptr;
  void* device = nullptr;
  cudaStream_t stream = nullptr;
  ~HostBuffers() {
    if (pinned) cudaFreeHost(pinned);
    std::free(pageable);
    if (device) cudaFree(device);
    if (stream) cudaStreamDestroy(stream);
  }
};

void touch_random(char* p, std::size_t bytes, std::uint64_t seed) {
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (std::size_t i = 0; i + 8 <= bytes; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(p + i, &x, 8);
  }
}

double one_transfer(const HostBuffers& b, bool h2d, bool pinned, std::size_t size) {
  void* host = pinned ? b.pinned : static_cast<void*>(b.pageable);
  const auto t0 = Clock::now();
  if (h2d) {
    CHECK_CUDA(cudaMemcpyAsync(b.device, host, size, cudaMemcpyHostToDevice, b.stream));
  } else {
    CHECK_CUDA(cudaMemcpyAsync(host, b.device, size, cudaMemcpyDeviceToHost, b.stream));
  }
  CHECK_CUDA(cudaStreamSynchronize(b.stream));
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

void run_host_transfers(WorkerContext& ctx) {
  const int rank = ctx.group.rank();
  const int n = ctx.group.size();
  CHECK_CUDA(cudaSetDevice(ctx.device));
  bool bound = false;
  const int numa = bind_to_gpu(ctx.device, bound);

  std::vector<std::size_t> sizes;
  for (const auto s : ctx.opt.host_sizes) sizes.push_back(static_cast<std::size_t>(std::max<std::int64_t>(s, 16)));
  std::sort(sizes.begin(), sizes.end());
  const std::size_t largest = sizes.back();

  HostBuffers b;
  std::string setup_error;
  try {
    CHECK_CUDA(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc(&b.device, largest));
    CHECK_CUDA(cudaHostAlloc(&b.pinned, largest, cudaHostAllocDefault));
    b.pageable = static_cast<char*>(std::malloc(largest));
    if (b.pageable == nullptr) throw HarnessError("malloc of " + std::to_string(largest) + " bytes failed");
    touch_random(static_cast<char*>(b.pinned), largest, 31 + rank);
    touch_random(b.pageable, largest, 32 + rank);
    CHECK_CUDA(cudaMemcpy(b.device, b.pinned, largest, cudaMemcpyHostToDevice));
  } catch (const HarnessError& e) {
    setup_error = e.what();
  }
  if (any_of(ctx.group, "host-setup", !setup_error.empty())) {
    if (!setup_error.empty()) ctx.failure("host buffers", "failed", setup_error);
    return;
  }
  const int iters = ctx.opt.host_iters;

  auto entry = [&](bool h2d, bool pinned, std::size_t size, double seconds, const std::vector<int>& gpus,
                   const std::vector<double>* per_gpu, double aggregate) {
    JsonWriter w;
    w.begin_object()
        .field("direction", h2d ? "h2d" : "d2h")
        .field("pinned", pinned)
        .field("gpus", gpus)
        .field("size_bytes", static_cast<std::int64_t>(size))
        .field("time_us", seconds * 1e6)
        .field("bandwidth_GBps", static_cast<double>(size) / seconds / 1e9)
        .field("iters", iters)
        .field("concurrent", per_gpu != nullptr)
        .field("numa_bound", bound)
        .field("numa_node", numa);
    if (per_gpu != nullptr) {
      w.field("per_gpu_GBps", *per_gpu);
      w.field("aggregate_GBps", aggregate);
    }
    w.end_object();
    ctx.sink.add(Section::HOST, w.take());
  };

  // Phase 1: one GPU at a time.
  for (int turn = 0; turn < n; ++turn) {
    barrier(ctx.group, "host-turn-" + std::to_string(turn));
    if (turn != rank) continue;
    for (const bool pinned : {true, false}) {
      for (const bool h2d : {true, false}) {
        for (const std::size_t size : sizes) {
          const std::string test = std::string(h2d ? "h2d" : "d2h") + (pinned ? " pinned " : " pageable ") +
                                   std::to_string(size) + " B on GPU " + std::to_string(ctx.device);
          if (ctx.seconds_left() < 2.0) {
            ctx.failure(test, "skipped", "time budget");
            continue;
          }
          try {
            one_transfer(b, h2d, pinned, size);  // warm-up
            std::vector<double> t;
            for (int i = 0; i < iters; ++i) t.push_back(one_transfer(b, h2d, pinned, size));
            entry(h2d, pinned, size, median(t), {ctx.device}, nullptr, 0);
          } catch (const HarnessError& e) {
            ctx.failure(test, "failed", e.what());
          }
        }
      }
    }
  }
  if (n < 2) return;

  // Phase 2: all GPUs at once, largest size only (the offload regime).
  std::vector<int> gpus = ctx.devices;
  for (const bool pinned : {true, false}) {
    for (const bool h2d : {true, false}) {
      const std::size_t size = largest;
      const std::string tag = std::string("host-all-") + (pinned ? "p" : "q") + (h2d ? "h" : "d");
      if (any_of(ctx.group, tag + "-budget", ctx.seconds_left() < 3.0)) {
        if (rank == 0) ctx.failure(tag, "skipped", "time budget");
        continue;
      }
      std::string error;
      std::vector<double> times;
      for (int i = 0; i <= iters; ++i) {
        barrier(ctx.group, tag + "-" + std::to_string(i));
        try {
          if (error.empty()) {
            const double t = one_transfer(b, h2d, pinned, size);
            if (i > 0) times.push_back(t);  // the first is the warm-up
          }
        } catch (const HarnessError& e) {
          error = e.what();
        }
      }
      if (any_of(ctx.group, tag + "-status", !error.empty())) {
        if (!error.empty()) ctx.failure(tag, "failed", error);
        continue;
      }
      const double mine = median(times);
      std::vector<double> per_gpu;
      double slowest = 0;
      for (const auto& blob : tagged_allgather(ctx.group, tag + "-times", json_number(mine))) {
        const double t = std::strtod(blob.c_str(), nullptr);
        per_gpu.push_back(static_cast<double>(size) / t / 1e9);
        slowest = std::max(slowest, t);
      }
      if (rank == 0) {
        double mean_time = 0;
        for (const auto& blob : per_gpu) mean_time += static_cast<double>(size) / (blob * 1e9);
        mean_time /= static_cast<double>(per_gpu.size());
        const double aggregate = static_cast<double>(size) * n / slowest / 1e9;
        entry(h2d, pinned, size, mean_time, gpus, &per_gpu, aggregate);
      }
    }
  }
}

}  // namespace clustersim::harness
