// clustersim-storeprobe: the per-byte cost of one Simple-size block's loads and stores
// (store_probe_kernels.hpp has the kernels and the model), with its outputs in the GPU's own
// memory and, where a second GPU with peer access exists, in that peer's memory.
//
//   clustersim-storeprobe [--device N] [--peer N] [--bytes B] [--reps N] [--warmup N] [--out FILE]
//
// For each output location, unroll (4 and 8; NCCL 2.28 uses 8 from sm80 on) and pattern: the
// outputs are poisoned, one launch is checked against the host's expected values, then `warmup`
// untimed launches and `reps` launches each timed with CUDA events; the median is kept. The fit
// (l, s, f) is solved per location and unroll. Writes one JSON document (to --out, else stdout)
// and prints a short table to stderr. Needs only the CUDA runtime. Exit codes: 0, 1 when a run fails
// or an output word is wrong, 2 on a bad option.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "calibrate/harness/harness_json_writer.hpp"
#include "calibrate/harness/harness_options.hpp"
#include "calibrate/harness/probe_common.hpp"
#include "calibrate/harness/store_probe_kernels.hpp"

namespace {

using clustersim::harness::device_json;
using clustersim::harness::JsonWriter;
using clustersim::harness::StorePattern;
using clustersim::harness::UsageError;
using clustersim::harness::check_cuda;
using clustersim::harness::parse_int;

struct Options {
  int device = 0;
  int peer = 1;  // -1: no peer run
  std::size_t bytes = std::size_t{64} << 20;
  int reps = 15;
  int warmup = 3;
  std::string out;
};

constexpr const char* kUsage =
    "usage: clustersim-storeprobe [--device N] [--peer N|-1] [--bytes B] [--reps N] [--warmup N] [--out FILE]\n";


Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(a + ": expected a value");
      return argv[++i];
    };
    if (a == "--device") o.device = static_cast<int>(parse_int(next(), a, 0, 1023));
    else if (a == "--peer") o.peer = static_cast<int>(parse_int(next(), a, -1, 1023));
    else if (a == "--bytes") o.bytes = static_cast<std::size_t>(parse_int(next(), a, 1, 1LL << 40));
    else if (a == "--reps") o.reps = static_cast<int>(parse_int(next(), a, 1, 1 << 20));
    else if (a == "--warmup") o.warmup = static_cast<int>(parse_int(next(), a, 0, 1 << 20));
    else if (a == "--out") o.out = next();
    else throw UsageError("unknown option '" + a + "'");
  }
  const std::size_t granule = 16 * clustersim::harness::kStoreProbeThreads * 8;
  if (o.bytes % granule != 0) {
    throw UsageError("--bytes: expected a multiple of " + std::to_string(granule) + " (16-byte accesses x " +
                     std::to_string(clustersim::harness::kStoreProbeThreads) + " threads x unroll 8), got " +
                     std::to_string(o.bytes));
  }
  return o;
}

const char* pattern_name(StorePattern p) {
  switch (p) {
    case StorePattern::COPY: return "copy";
    case StorePattern::SUM2: return "sum2";
    case StorePattern::DUAL: return "dual";
  }
  return "?";
}

struct Timing {
  StorePattern pattern;
  int unroll;
  std::string outputs;
  double median_s, min_s, max_s;
  std::int64_t wrong;
};


}  // namespace

int main(int argc, char** argv) {
  try {
    const Options opt = parse(argc, argv);
    const std::size_t n_words = opt.bytes / sizeof(float);
    int n_dev = 0;
    check_cuda(cudaGetDeviceCount(&n_dev), "cudaGetDeviceCount");
    check_cuda(cudaSetDevice(opt.device), "cudaSetDevice");
    bool peer_ok = false;
    if (opt.peer >= 0 && opt.peer < n_dev && opt.peer != opt.device) {
      int can = 0;
      check_cuda(cudaDeviceCanAccessPeer(&can, opt.device, opt.peer), "cudaDeviceCanAccessPeer");
      if (can) {
        const cudaError_t e = cudaDeviceEnablePeerAccess(opt.peer, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) check_cuda(e, "cudaDeviceEnablePeerAccess");
        (void)cudaGetLastError();
        peer_ok = true;
      }
    }
    // Inputs: random floats (never zeros), drawn on the host, which also computes the expected sums.
    std::vector<float> h_a(n_words), h_b(n_words), h_out(n_words);
    std::mt19937 rng(12345);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (auto& x : h_a) x = dist(rng);
    for (auto& x : h_b) x = dist(rng);
    void *in0 = nullptr, *in1 = nullptr, *loc0 = nullptr, *loc1 = nullptr, *rem0 = nullptr, *rem1 = nullptr;
    check_cuda(cudaMalloc(&in0, opt.bytes), "cudaMalloc");
    check_cuda(cudaMalloc(&in1, opt.bytes), "cudaMalloc");
    check_cuda(cudaMalloc(&loc0, opt.bytes), "cudaMalloc");
    check_cuda(cudaMalloc(&loc1, opt.bytes), "cudaMalloc");
    check_cuda(cudaMemcpy(in0, h_a.data(), opt.bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    check_cuda(cudaMemcpy(in1, h_b.data(), opt.bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    if (peer_ok) {
      check_cuda(cudaSetDevice(opt.peer), "cudaSetDevice");
      check_cuda(cudaMalloc(&rem0, opt.bytes), "cudaMalloc");
      check_cuda(cudaMalloc(&rem1, opt.bytes), "cudaMalloc");
      check_cuda(cudaSetDevice(opt.device), "cudaSetDevice");
    }
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check_cuda(cudaEventCreate(&start), "cudaEventCreate");
    check_cuda(cudaEventCreate(&stop), "cudaEventCreate");

    std::vector<Timing> timings;
    const StorePattern patterns[] = {StorePattern::COPY, StorePattern::SUM2, StorePattern::DUAL};
    for (int loc = 0; loc < (peer_ok ? 2 : 1); ++loc) {
      void* o0 = loc == 0 ? loc0 : rem0;
      void* o1 = loc == 0 ? loc1 : rem1;
      for (const int unroll : {4, 8}) {
        for (const StorePattern p : patterns) {
          auto launch = [&]() {
            check_cuda(clustersim::harness::launch_store_probe(p, unroll, o0, o1, in0, in1, opt.bytes, stream), "launch");
          };
          // Correctness: poison, one launch, compare every word of each output written.
          std::int64_t wrong = 0;
          // On the kernel's own stream: a non-blocking stream does not wait for plain cudaMemset.
          check_cuda(cudaMemsetAsync(o0, 0xff, opt.bytes, stream), "cudaMemsetAsync");
          check_cuda(cudaMemsetAsync(o1, 0xff, opt.bytes, stream), "cudaMemsetAsync");
          launch();
          check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
          for (int k = 0; k < (p == StorePattern::DUAL ? 2 : 1); ++k) {
            check_cuda(cudaMemcpy(h_out.data(), k == 0 ? o0 : o1, opt.bytes, cudaMemcpyDefault), "cudaMemcpy");
            for (std::size_t i = 0; i < n_words; ++i) {
              const float want = p == StorePattern::SUM2 ? h_a[i] + h_b[i] : h_a[i];
              if (std::memcmp(&h_out[i], &want, sizeof want) != 0) ++wrong;
            }
          }
          for (int i = 0; i < opt.warmup; ++i) launch();
          std::vector<double> secs;
          for (int i = 0; i < opt.reps; ++i) {
            check_cuda(cudaEventRecord(start, stream), "cudaEventRecord");
            launch();
            check_cuda(cudaEventRecord(stop, stream), "cudaEventRecord");
            check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
            float ms = 0;
            check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
            secs.push_back(ms * 1e-3);
          }
          std::sort(secs.begin(), secs.end());
          timings.push_back({p, unroll, loc == 0 ? "local" : "peer", secs[secs.size() / 2], secs.front(), secs.back(),
                             wrong});
        }
      }
    }

    int driver = 0, runtime = 0;
    check_cuda(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
    check_cuda(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    JsonWriter w;
    w.begin_object()
        .field("probe", "store_probe")
        .field("harness_version", CLUSTERSIM_HARNESS_VERSION)
        .field("date_utc", std::string(date))
        .field("cuda_driver_version", driver)
        .field("cuda_runtime_version", runtime)
        .key("device")
        .raw(device_json(opt.device));
    if (peer_ok) {
      w.key("peer_device").raw(device_json(opt.peer));
    } else {
      w.field_null("peer_device");
    }
    w.field("threads", static_cast<int>(clustersim::harness::kStoreProbeThreads))
        .field("blocks", 1)
        .field("vector_bytes", 16)
        .field("bytes", static_cast<long long>(opt.bytes))
        .field("warmup", opt.warmup)
        .field("reps", opt.reps);
    w.key("timings").begin_array();
    for (const auto& t : timings) {
      w.begin_object()
          .field("pattern", pattern_name(t.pattern))
          .field("outputs", t.outputs)
          .field("unroll", t.unroll)
          .field("loads", t.pattern == StorePattern::SUM2 ? 2 : 1)
          .field("stores", t.pattern == StorePattern::DUAL ? 2 : 1)
          .field("time_us_median", t.median_s * 1e6)
          .field("time_us_min", t.min_s * 1e6)
          .field("time_us_max", t.max_s * 1e6)
          .field("ps_per_byte", t.median_s * 1e12 / static_cast<double>(opt.bytes))
          .field("wrong_words", static_cast<long long>(t.wrong))
          .end_object();
    }
    w.end_array();
    // The fit per location and unroll (store_probe_kernels.hpp gives the least-squares solution).
    std::fprintf(stderr, "%-6s %-6s %9s %9s %9s %9s %9s %7s %9s\n", "outs", "unroll", "copy", "sum2", "dual", "load",
                 "store", "f", "resid");
    w.key("fits").begin_array();
    for (const std::string loc : {"local", "peer"}) {
      for (const int unroll : {4, 8}) {
        double c = -1, r = -1, d = -1;
        for (const auto& t : timings) {
          if (t.outputs != loc || t.unroll != unroll) continue;
          const double ps = t.median_s * 1e12 / static_cast<double>(opt.bytes);
          (t.pattern == StorePattern::COPY ? c : t.pattern == StorePattern::SUM2 ? r : d) = ps;
        }
        if (c < 0) continue;
        const double l = (c + 7 * r - 4 * d) / 11, s = (c - 4 * r + 7 * d) / 11;
        const double e1 = c - (l + s), e2 = r - (2 * l + s), e3 = d - (l + 2 * s);
        const double resid = std::sqrt((e1 * e1 + e2 * e2 + e3 * e3) / 3);
        w.begin_object()
            .field("outputs", loc)
            .field("unroll", unroll)
            .field("load_ps_per_byte", l)
            .field("store_ps_per_byte", s)
            .field("store_share", s / (l + s))
            .field("rms_residual_ps_per_byte", resid)
            .end_object();
        std::fprintf(stderr, "%-6s %-6d %9.2f %9.2f %9.2f %9.2f %9.2f %7.3f %9.2f\n", loc.c_str(), unroll, c, r, d, l, s,
                     s / (l + s), resid);
      }
    }
    w.end_array().end_object();
    const std::string text = w.take() + "\n";
    if (opt.out.empty()) {
      std::cout << text;
    } else {
      clustersim::harness::write_text_file(opt.out, text);
    }
    std::int64_t wrong_total = 0;
    for (const auto& t : timings) wrong_total += t.wrong;
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaStreamDestroy(stream);
    for (void* b : {in0, in1, loc0, loc1}) cudaFree(b);
    if (peer_ok) {
      cudaSetDevice(opt.peer);
      cudaFree(rem0);
      cudaFree(rem1);
    }
    if (wrong_total != 0) {
      std::fprintf(stderr, "clustersim-storeprobe: %lld wrong output words\n", static_cast<long long>(wrong_total));
      return 1;
    }
    return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "clustersim-storeprobe: %s\n%s", e.what(), kUsage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "clustersim-storeprobe: %s\n", e.what());
    return 1;
  }
}
