// clustersim-hostprobe: what GPUs move through pinned host memory, by kernels (NCCL's SHM
// transport) and by copy engines (CPU offload), one direction or both at once, on one GPU or on
// several together (host_probe_kernels.hpp has the actions).
//
//   clustersim-hostprobe [--bytes SIZE] [--launches N] [--trials N] [--slice SIZE] [--scenario SPEC]... [--out FILE]
//
// A scenario is a set of actions run at once, written "gpu:action[:blocks]" joined by commas:
// "0:store:8,1:load:8" is GPU 0's 8 blocks storing into host memory while GPU 1's 8 blocks load
// from it; "0:h2d,0:d2h" is GPU 0's copy engines both ways. Without --scenario a built-in list runs
// (one GPU's kernels at 1 to 32 blocks and its copy engines, pairs of GPUs, every GPU at once).
// With --slice the kernels copy in steps of that many bytes a block, each synchronised as NCCL's
// Simple steps over SHM are (flag polled, barrier, system-wide fence, flag posted), so that the
// same scenario with and without it gives what the steps' synchronisation costs.
// Each action owns S-byte buffers (pinned host memory, touched by the host; device memory). A
// trial enqueues `launches` launches of every action round-robin on one stream per action, timed by
// events around each action's own launches, so the actions overlap for all but the first and last
// launch; a warm-up trial comes first, the median of `trials` is kept. Each action's first and
// last 4 KiB are checked after the last trial. Writes one JSON document (to --out, else stdout) and
// a table to stderr. Needs only the CUDA runtime. Exit codes: 0, 1 when a run fails or a checked
// word is wrong, 2 on a bad option.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <iterator>
#include <iostream>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "calibrate/harness/harness_json_writer.hpp"
#include "calibrate/harness/harness_options.hpp"
#include "calibrate/harness/host_probe_kernels.hpp"
#include "calibrate/harness/probe_common.hpp"

namespace {

using clustersim::harness::JsonWriter;
using clustersim::harness::UsageError;
using clustersim::harness::check_cuda;
using clustersim::harness::launch_host_probe;
using clustersim::harness::device_json;
using clustersim::harness::parse_int;
using clustersim::harness::parse_size;

enum class Kind { LOAD, STORE, RELAY, H2D, D2H };

struct Action {
  int gpu = 0;
  Kind kind = Kind::LOAD;
  int blocks = 0;  // kernels only
};

struct Scenario {
  std::string spec;
  std::vector<Action> actions;
};

struct Options {
  std::size_t bytes = std::size_t{256} << 20;
  int launches = 6;
  int trials = 3;
  std::size_t slice = 0;  // bytes of a block's step (0: one unsynchronised copy)
  std::vector<std::string> scenarios;
  std::string out;
};

constexpr const char* kUsage =
    "usage: clustersim-hostprobe [--bytes SIZE] [--launches N] [--trials N] [--slice SIZE] "
    "[--scenario GPU:ACTION[:BLOCKS],...]... "
    "[--out FILE]\n  actions: load, store, relay (kernels, BLOCKS 1-1024), h2d, d2h (copy engines)\n";


// The actions' names, in the order of Kind.
constexpr const char* kKindNames[] = {"load", "store", "relay", "h2d", "d2h"};

const char* kind_name(Kind k) { return kKindNames[static_cast<int>(k)]; }

bool is_kernel(Kind k) { return k == Kind::LOAD || k == Kind::STORE || k == Kind::RELAY; }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (;;) {
    const std::size_t at = s.find(sep, from);
    out.push_back(s.substr(from, at == std::string::npos ? std::string::npos : at - from));
    if (at == std::string::npos) return out;
    from = at + 1;
  }
}

// Each block's share must be whole trips of its threads (16-byte vectors, 8 in flight each).
Scenario parse_scenario(const std::string& spec, int gpus, std::size_t bytes, std::size_t slice) {
  Scenario sc{spec, {}};
  for (const std::string& a : split(spec, ',')) {
    const std::vector<std::string> f = split(a, ':');
    const std::string what = "--scenario '" + spec + "', action '" + a + "'";
    if (f.size() < 2 || f.size() > 3) throw UsageError(what + ": expected GPU:ACTION[:BLOCKS]");
    Action act;
    act.gpu = static_cast<int>(parse_int(f[0], what + " GPU", 0, gpus - 1));
    const auto* k = std::find(std::begin(kKindNames), std::end(kKindNames), f[1]);
    if (k == std::end(kKindNames)) throw UsageError(what + ": expected an action load, store, relay, h2d or d2h");
    act.kind = static_cast<Kind>(k - std::begin(kKindNames));
    if (is_kernel(act.kind)) {
      if (f.size() != 3) throw UsageError(what + ": a kernel action needs its block count (GPU:ACTION:BLOCKS)");
      act.blocks = static_cast<int>(parse_int(f[2], what + " BLOCKS", 1, 1024));
      const std::size_t granule = clustersim::harness::kHostProbeGranule * clustersim::harness::kHostProbeThreads *
                                  static_cast<std::size_t>(act.blocks);
      if (bytes % granule != 0) {
        throw UsageError(what + ": --bytes must be a multiple of " + std::to_string(granule) +
                         " (16-byte vectors x 8 in flight x 512 threads x " + std::to_string(act.blocks) +
                         " blocks), got " + std::to_string(bytes));
      }
      if (slice > 0 && (bytes / static_cast<std::size_t>(act.blocks)) % slice != 0) {
        throw UsageError(what + ": --slice " + std::to_string(slice) + " must divide each block's share of --bytes (" +
                         std::to_string(bytes / static_cast<std::size_t>(act.blocks)) + ")");
      }
    } else if (f.size() == 3) {
      throw UsageError(what + ": a copy engine action takes no block count");
    }
    sc.actions.push_back(act);
  }
  return sc;
}

std::string action_spec(int gpu, const char* kind, int blocks = 0) {
  return std::to_string(gpu) + ":" + kind + (blocks > 0 ? ":" + std::to_string(blocks) : "");
}

std::vector<std::string> default_scenarios(int gpus) {
  std::vector<std::string> s;
  for (const int b : {1, 2, 4, 8, 16, 32}) {
    s.push_back(action_spec(0, "load", b));
    s.push_back(action_spec(0, "store", b));
    s.push_back(action_spec(0, "relay", b));
    s.push_back(action_spec(0, "load", b) + "," + action_spec(0, "store", b));
  }
  s.push_back("0:h2d");
  s.push_back("0:d2h");
  s.push_back("0:h2d,0:d2h");
  std::vector<std::pair<int, int>> pairs;
  for (int j = 1; j < gpus; ++j) pairs.emplace_back(0, j);
  if (gpus >= 4) pairs.emplace_back(2, 3);
  for (const auto& [a, b] : pairs) {
    s.push_back(action_spec(a, "store", 8) + "," + action_spec(b, "load", 8));
    s.push_back(action_spec(a, "relay", 4) + "," + action_spec(b, "relay", 4));
    s.push_back(action_spec(a, "load", 8) + "," + action_spec(a, "store", 8) + "," + action_spec(b, "load", 8) + "," +
                action_spec(b, "store", 8));
    s.push_back(action_spec(a, "load", 8) + "," + action_spec(b, "load", 8));
    s.push_back(action_spec(a, "store", 8) + "," + action_spec(b, "store", 8));
  }
  if (gpus >= 3) {
    // Every GPU at once: one action each (two for "both"), joined by commas.
    auto every_gpu = [&](const std::vector<std::pair<const char*, int>>& actions) {
      std::string all;
      for (int g = 0; g < gpus; ++g) {
        for (const auto& [kind, blocks] : actions) {
          if (!all.empty()) all.push_back(',');
          all.append(action_spec(g, kind, blocks));
        }
      }
      return all;
    };
    s.push_back(every_gpu({{"load", 8}}));
    s.push_back(every_gpu({{"store", 8}}));
    s.push_back(every_gpu({{"relay", 4}}));
    s.push_back(every_gpu({{"load", 8}, {"store", 8}}));
    s.push_back(every_gpu({{"h2d", 0}}));
    s.push_back(every_gpu({{"d2h", 0}}));
  }
  return s;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(a + ": expected a value");
      return argv[++i];
    };
    if (a == "--bytes") o.bytes = static_cast<std::size_t>(parse_size(next(), a));
    else if (a == "--launches") o.launches = static_cast<int>(parse_int(next(), a, 1, 1000));
    else if (a == "--trials") o.trials = static_cast<int>(parse_int(next(), a, 1, 1000));
    else if (a == "--slice") o.slice = static_cast<std::size_t>(parse_size(next(), a));
    else if (a == "--scenario") o.scenarios.push_back(next());
    else if (a == "--out") o.out = next();
    else throw UsageError("unknown option '" + a + "'");
  }
  // Whole trips of one block (kernel actions check their own block counts), and room for the
  // checked 4 KiB at each end.
  const std::size_t trip = clustersim::harness::kHostProbeGranule * clustersim::harness::kHostProbeThreads;
  if (o.bytes == 0 || o.bytes % trip != 0 || o.bytes > (std::size_t{1} << 36)) {
    throw UsageError("--bytes: expected a multiple of " + std::to_string(trip) +
                     " (16-byte vectors x 8 in flight x 512 threads) up to 64G, got " + std::to_string(o.bytes));
  }
  if (o.slice % trip != 0 || o.slice > o.bytes) {
    throw UsageError("--slice: expected a multiple of " + std::to_string(trip) + " up to --bytes, got " +
                     std::to_string(o.slice));
  }
  return o;
}

// An action's buffers and stream, kept for the next scenario that gives the same GPU as many
// actions (the k-th action on a GPU reuses that GPU's k-th set).
struct Buffers {
  int gpu = 0;
  void* host_a = nullptr;
  void* host_b = nullptr;
  void* device = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
};

class BufferPool {
 public:
  explicit BufferPool(std::size_t bytes) : bytes_(bytes) {}
  ~BufferPool() {
    for (Buffers& b : sets_) {
      cudaSetDevice(b.gpu);
      cudaStreamDestroy(b.stream);
      cudaEventDestroy(b.start);
      cudaEventDestroy(b.stop);
      cudaFree(b.device);
      cudaFreeHost(b.host_a);
      cudaFreeHost(b.host_b);
    }
  }
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  Buffers& get(int gpu, int k) {
    const auto key = std::make_pair(gpu, k);
    const auto it = index_.find(key);
    if (it != index_.end()) return sets_[it->second];
    Buffers b;
    b.gpu = gpu;
    check_cuda(cudaSetDevice(gpu), "cudaSetDevice");
    // Pinned, portable (any GPU may use it), touched by the host with random bytes first.
    check_cuda(cudaHostAlloc(&b.host_a, bytes_, cudaHostAllocPortable), "cudaHostAlloc");
    check_cuda(cudaHostAlloc(&b.host_b, bytes_, cudaHostAllocPortable), "cudaHostAlloc");
    std::mt19937_64 rng(static_cast<std::uint64_t>(gpu * 97 + k));
    auto* words = static_cast<std::uint64_t*>(b.host_a);
    for (std::size_t i = 0; i < bytes_ / 8; ++i) words[i] = rng();
    std::memset(b.host_b, 0, bytes_);
    check_cuda(cudaMalloc(&b.device, bytes_), "cudaMalloc");
    check_cuda(cudaMemcpy(b.device, b.host_a, bytes_, cudaMemcpyHostToDevice), "cudaMemcpy");
    check_cuda(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check_cuda(cudaEventCreate(&b.start), "cudaEventCreate");
    check_cuda(cudaEventCreate(&b.stop), "cudaEventCreate");
    sets_.push_back(b);
    index_[key] = sets_.size() - 1;
    return sets_.back();
  }

 private:
  std::size_t bytes_;
  std::deque<Buffers> sets_;  // a deque: the references get() hands out stay valid
  std::map<std::pair<int, int>, std::size_t> index_;
};

void enqueue(const Action& a, const Buffers& b, std::size_t bytes, std::size_t slice) {
  check_cuda(cudaSetDevice(a.gpu), "cudaSetDevice");
  switch (a.kind) {
    case Kind::LOAD: check_cuda(launch_host_probe(a.blocks, b.device, b.host_a, bytes, b.stream, slice), "launch"); break;
    case Kind::STORE: check_cuda(launch_host_probe(a.blocks, b.host_b, b.device, bytes, b.stream, slice), "launch"); break;
    case Kind::RELAY: check_cuda(launch_host_probe(a.blocks, b.host_b, b.host_a, bytes, b.stream, slice), "launch"); break;
    case Kind::H2D: check_cuda(cudaMemcpyAsync(b.device, b.host_a, bytes, cudaMemcpyHostToDevice, b.stream), "copy"); break;
    case Kind::D2H: check_cuda(cudaMemcpyAsync(b.host_b, b.device, bytes, cudaMemcpyDeviceToHost, b.stream), "copy"); break;
  }
}

// Seconds per launch of each action, all run at once.
std::vector<double> trial(const Scenario& sc, std::vector<Buffers*>& sets, std::size_t bytes, int launches,
                          std::size_t slice) {
  for (std::size_t i = 0; i < sc.actions.size(); ++i) {
    check_cuda(cudaSetDevice(sc.actions[i].gpu), "cudaSetDevice");
    check_cuda(cudaEventRecord(sets[i]->start, sets[i]->stream), "cudaEventRecord");
  }
  for (int l = 0; l < launches; ++l) {
    for (std::size_t i = 0; i < sc.actions.size(); ++i) enqueue(sc.actions[i], *sets[i], bytes, slice);
  }
  std::vector<double> secs;
  for (std::size_t i = 0; i < sc.actions.size(); ++i) {
    check_cuda(cudaSetDevice(sc.actions[i].gpu), "cudaSetDevice");
    check_cuda(cudaEventRecord(sets[i]->stop, sets[i]->stream), "cudaEventRecord");
  }
  for (std::size_t i = 0; i < sc.actions.size(); ++i) {
    check_cuda(cudaEventSynchronize(sets[i]->stop), "cudaEventSynchronize");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, sets[i]->start, sets[i]->stop), "cudaEventElapsedTime");
    secs.push_back(ms * 1e-3 / launches);
  }
  return secs;
}

// Words of the action's output that differ from its input, in the first and last 4 KiB.
std::int64_t wrong_words(const Action& a, const Buffers& b, std::size_t bytes) {
  const void* out = a.kind == Kind::LOAD || a.kind == Kind::H2D ? b.device : b.host_b;
  std::vector<unsigned char> got(4096), want(4096);
  std::int64_t wrong = 0;
  for (const std::size_t at : {std::size_t{0}, bytes - 4096}) {
    check_cuda(cudaSetDevice(a.gpu), "cudaSetDevice");
    check_cuda(cudaMemcpy(got.data(), static_cast<const char*>(out) + at, 4096, cudaMemcpyDefault), "cudaMemcpy");
    std::memcpy(want.data(), static_cast<const char*>(b.host_a) + at, 4096);
    for (std::size_t i = 0; i < 4096; i += 8) wrong += std::memcmp(&got[i], &want[i], 8) != 0 ? 1 : 0;
  }
  return wrong;
}


}  // namespace

int main(int argc, char** argv) {
  try {
    const Options opt = parse(argc, argv);
    int gpus = 0;
    check_cuda(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount");
    if (gpus < 1) throw std::runtime_error("no CUDA device");
    std::vector<Scenario> scenarios;
    for (const std::string& s : opt.scenarios.empty() ? default_scenarios(gpus) : opt.scenarios) {
      scenarios.push_back(parse_scenario(s, gpus, opt.bytes, opt.slice));
    }
    int driver = 0, runtime = 0;
    check_cuda(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
    check_cuda(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");

    BufferPool pool(opt.bytes);
    JsonWriter w;
    w.begin_object()
        .field("tool", "clustersim-hostprobe")
        .field("version", CLUSTERSIM_HARNESS_VERSION)
        .field("time_utc", static_cast<long long>(std::time(nullptr)))
        .field("cuda_driver", driver)
        .field("cuda_runtime", runtime)
        .field("bytes", static_cast<long long>(opt.bytes))
        .field("launches", opt.launches)
        .field("trials", opt.trials)
        .field("slice_bytes", static_cast<long long>(opt.slice))
        .key("devices")
        .begin_array();
    for (int d = 0; d < gpus; ++d) w.raw(device_json(d));
    w.end_array().key("scenarios").begin_array();
    std::fprintf(stderr, "%-64s %s\n", "scenario", "GB/s per action (payload), total");
    std::int64_t total_wrong = 0;
    for (const Scenario& sc : scenarios) {
      std::vector<Buffers*> sets;
      std::map<int, int> per_gpu;
      for (const Action& a : sc.actions) sets.push_back(&pool.get(a.gpu, per_gpu[a.gpu]++));
      trial(sc, sets, opt.bytes, 1, opt.slice);  // warm-up
      std::vector<std::vector<double>> runs;
      for (int t = 0; t < opt.trials; ++t) runs.push_back(trial(sc, sets, opt.bytes, opt.launches, opt.slice));
      w.begin_object().field("spec", sc.spec).key("actions").begin_array();
      std::string line;
      double total = 0;
      for (std::size_t i = 0; i < sc.actions.size(); ++i) {
        std::vector<double> s;
        for (const auto& r : runs) s.push_back(r[i]);
        std::sort(s.begin(), s.end());
        const double gbps = static_cast<double>(opt.bytes) / s[s.size() / 2] * 1e-9;
        const std::int64_t wrong = wrong_words(sc.actions[i], *sets[i], opt.bytes);
        total_wrong += wrong;
        total += gbps;
        w.begin_object()
            .field("gpu", sc.actions[i].gpu)
            .field("action", kind_name(sc.actions[i].kind))
            .field("blocks", sc.actions[i].blocks)
            .field("median_s", s[s.size() / 2])
            .field("min_s", s.front())
            .field("max_s", s.back())
            .field("GBps", gbps)
            .field("wrong_words", wrong)
            .end_object();
        char buf[32];
        std::snprintf(buf, sizeof buf, " %.1f", gbps);
        line += buf;
      }
      w.end_array().field("total_GBps", total).end_object();
      std::fprintf(stderr, "%-64s%s | %.1f\n", sc.spec.c_str(), line.c_str(), total);
    }
    w.end_array().field("wrong_words", total_wrong).end_object();
    const std::string doc = w.take();
    if (opt.out.empty()) {
      std::cout << doc << "\n";
    } else {
      std::ofstream f(opt.out + ".tmp");
      f << doc << "\n";
      f.close();
      if (!f || std::rename((opt.out + ".tmp").c_str(), opt.out.c_str()) != 0) {
        throw std::runtime_error("cannot write " + opt.out);
      }
    }
    return total_wrong == 0 ? 0 : 1;
  } catch (const UsageError& e) {
    std::cerr << "clustersim-hostprobe: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "clustersim-hostprobe: " << e.what() << "\n";
    return 1;
  }
}
