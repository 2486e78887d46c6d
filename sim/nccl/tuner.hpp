#pragma once
// NCCL's choice of algorithm, protocol and channels for one collective of one size, as its
// built-in tuner makes it (src/graph/tuning.cc ncclTopoTuneModel and ncclTopoGetAlgoTime,
// src/enqueue.cc topoGetAlgoInfo), with the constants of a named NCCL release.
//
// The model NCCL uses (times in microseconds, bandwidths in GB/s):
//   busBw(a, p)  = nChannels(graph a) * bw(graph a), refined per algorithm and protocol
//                  (Ring LL: min(llMaxBw, busBw * f); Ring LL128: min(0.92 busBw, nCh * perChLL128);
//                  Tree: min(0.92 busBw, nCh * perChTree), /3.8 for LL, * 7/9 or 120/128 for LL128;
//                  NVLS: see NcclVersion's bandwidth_model), then converted to an algorithm bandwidth
//                  (Ring: nRanks / nSteps, Tree and CollNet: 1/2, NVLS: per release).
//   lat(a, p)    = baseLat + steps * hwLat[link class] (+ network latency per inter-node step)
//   time(S)      = lat * (1.4 plateau for multi-node Ring Simple all-reduce) + S / (1000 * bw),
//                  with a per-size correction for Tree all-reduce (treeCorrectionFactor).
// The smallest time wins among the algorithms and protocols enabled (NCCL_ALGO / NCCL_PROTO,
// LL128 only on links NCCL trusts it on, NVLS only where supported, EFA forcing Simple).
// Then the channel count for this size: ring and tree drop channels while
// S < nChannels * nThreads * threadThreshold; NVLS uses its own channels.
//
// How the data is spread over those channels. Up to 2.20 a collective's count is split evenly
// (countPerChannel = ceil(count / nChannels)). From 2.23 on (the releases pinned here: 2.26 and
// 2.28) the planner (enqueue.cc scheduleCollTasksToPlan) cuts it into cells and fills channels
// with a traffic budget each; for one collective alone in its launch, with T = count x elemSize,
// t = traffic per byte (all-reduce 2, all-gather and reduce-scatter nRanks, others 1; x 4 for LL)
// and N = nMaxChannels above (C: the communicator's channels of that kind):
//   cell        = ceil(ceil(16 KiB / t) / 16) x 16 bytes;   cells = ceil(T / cell)
//   budget      = max(16 KiB, max(16 KiB, T t) / N)          traffic a channel takes
//   per channel = min(cells, ceil(budget / (cell t)))        cells of a full channel
//   the first channel takes `per channel` cells, the following ones as many, the last the rest;
//   should that need more than C channels, C - 2 middle ones take (cells - first) / (C - 1) each
//   and the last the remainder besides; a last channel left empty takes a middle one's share.
// So the channels used (NCCL_DEBUG_SUBSYS=TUNING prints them as channel{Lo..Hi}) can be fewer
// than N, and the busiest carries more than T / N: 2 MiB broadcast with Simple on 24 channels
// (t = 1): cell 16 KiB, 128 cells, budget 87,381 bytes, 6 cells a channel: 6 + 20 x 6 + 2 cells
// on 22 channels, the busiest 96 KiB where an even split gives 85.3 KiB (12.5% longer). Measured
// on 4 x H200 with NCCL 2.28.9 (calibrate/results/lent-4xh200-2026-11-27-tuning): every choice of
// algorithm, protocol and channels used, for the five tuned collectives over P2P write, P2P
// read, SHM and NET, 8 B to 128 MiB, as this tuner makes it. CollNet (and NVLS across nodes,
// which NCCL schedules as CollNet) still splits evenly over its channels.
//
// This is NCCL's estimate, used only to decide what NCCL runs. The time the simulator predicts
// comes from the step pipeline of sim/nccl/collective_program.hpp with measured or catalog rates.

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "sim/nccl/channel_search.hpp"
#include "sim/nccl/nccl_env.hpp"
#include "sim/nccl/nccl_system.hpp"
#include "sim/nccl/nccl_version.hpp"

namespace clustersim::sim::nccl {

struct TunerChoice {
  Algorithm algorithm = Algorithm::RING;
  Protocol protocol = Protocol::SIMPLE;
  int channels = 1;    // channels the collective runs on (nMaxChannels, or fewer: see the split above)
  int max_channels = 1;  // nMaxChannels: what the size allows
  // nBytes of the busiest channel (all-gather/reduce-scatter: over all ranks' pieces); 0 where
  // the data is split evenly over `channels`.
  long long channel_bytes = 0;
  int threads = 512;   // threads per channel (block)
  double estimated_us = 0;  // NCCL's own estimate
  bool fell_back = false;   // the requested algorithm/protocol was not available
  std::vector<std::string> notes;
};

class Tuner {
 public:
  Tuner(const NcclSystem& system, const ChannelPlan& channels, const NcclVersion& version, const NcclEnv& env);

  // NCCL's choice for `op` (a tuned collective: all_reduce, all_gather, reduce_scatter,
  // broadcast, reduce) moving `bytes` (NCCL's nBytes: the all-reduce/broadcast/reduce buffer, the
  // total of all ranks for all-gather/reduce-scatter) of `r`'s type with its op. The type and op
  // decide what may run (enqueue.cc topoGetAlgoInfo): NVLS and NVLSTree only for the pairs
  // nvls_supported() lists (all-gather, which reduces nothing, exempt from the check for NVLS in
  // 2.19 and for both from 2.22; 2.20 and 2.21 check it for all-gather too); PAT not for a
  // reduce-scatter whose op is PreMulSum or SumPostDiv (2.23+); an fp8 ring of more than 8 ranks
  // costed 1024 times its estimate, last resort (2.24+, "reduction trees of sufficient depth that
  // they incur precision loss"). InputError for fp8 before 2.24 or on GPUs before sm90.
  TunerChoice choose(CollectiveOp op, Bytes bytes, Reduction r = {}) const;

  // NCCL's table entries (0 bandwidth: disabled), for reports and tests.
  double bandwidth(CollectiveOp op, Algorithm a, Protocol p) const;
  double latency(CollectiveOp op, Algorithm a, Protocol p) const;
  // NCCL's estimated time for one entry, or nullopt when disabled.
  std::optional<double> algo_time_us(CollectiveOp op, Algorithm a, Protocol p, Bytes bytes) const;
  // The rows of the tuning table as NCCL_DEBUG_SUBSYS=TUNING prints them.
  std::string table_text() const;

  int max_threads(Algorithm a, Protocol p) const { return max_threads_[static_cast<int>(a)][static_cast<int>(p)]; }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  static int fn(CollectiveOp op);  // NCCL function index 0..4, -1 for untuned ops
  void build_tables();
  void apply_enables();

  const NcclSystem* sys_;
  const ChannelPlan* ch_;
  const NcclVersion* ver_;
  const NcclEnv* env_;
  int nnodes_ = 1;
  int nranks_ = 1;
  std::array<std::array<std::array<double, kNumProtocols>, kNumAlgorithms>, 5> bw_{};
  std::array<std::array<std::array<double, kNumProtocols>, kNumAlgorithms>, 5> lat_{};
  std::array<std::array<double, kNumProtocols>, 5> ring_backup_{};
  std::array<std::array<int, kNumProtocols>, kNumAlgorithms> max_threads_{};
  std::array<std::array<int, kNumProtocols>, kNumAlgorithms> thread_threshold_{};
  std::array<bool, 5> requested_unavailable_{};
  std::vector<std::string> notes_;
};

const TopoGraph& graph_for(const ChannelPlan& plan, Algorithm a);

}  // namespace clustersim::sim::nccl
