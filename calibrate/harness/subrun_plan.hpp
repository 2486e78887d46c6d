#pragma once
// The work of a run, cut into sub-runs. A sub-run is one set of fresh worker processes (one per GPU,
// or one) started with its own environment. NCCL reads most of its variables once per process and
// caches them (NCCL 2.28 src/include/param.h: NCCL_PARAM keeps the first value in a static;
// NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS, NCCL_P2P_READ_ENABLE and NCCL_NVLS_ENABLE are such
// parameters; NCCL_P2P_DISABLE is kept in a static of src/graph/paths.cc), so a test that forces a
// variable needs processes of its own: setting it between two communicators of one process would be
// silently ignored.
//
// The plan is a pure function of the options and the device count: the driver and every worker
// compute the same list, and a worker is told only the index of its sub-run.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/harness/harness_options.hpp"

namespace clustersim::harness {

struct SubRun {
  Section section = Section::ENVIRONMENT;
  std::string label;                                      // "auto", "algo=ring proto=ll", "write", ...
  std::vector<std::pair<std::string, std::string>> env;  // variables set for this sub-run only
  bool one_per_gpu = true;                                // false: a single worker (env, memcpy, cpu-adam)
  bool uses_gpu = true;
  std::string skip_reason;  // non-empty: recorded as skipped, never started

  // Collectives.
  std::string algo = "auto";
  std::string proto = "auto";
  int channels = 0;  // 0: not forced
  std::vector<std::string> ops;
  std::vector<std::pair<std::string, std::string>> skipped_ops;  // op, reason (not supported by the algo)
  std::int64_t min_bytes = 8;
  std::int64_t max_bytes = 8;
  int step_factor = 2;
  int iters = 20;
  int warmup_iters = 5;

  // Point to point: write, read, shm, memcpy.
  std::string p2p_mode;
};

std::vector<SubRun> plan_subruns(const Options& opt, int ndevices);

// NCCL's spelling of NCCL_ALGO / NCCL_PROTO values (NCCL 2.28 src/graph/tuning.cc parses these,
// case-insensitively): ring -> Ring, nvls_tree -> NVLSTree, ll128 -> LL128.
std::string nccl_algo_name(const std::string& algo);
std::string nccl_proto_name(const std::string& proto);

// Ops NCCL 2.28 implements with an algorithm (src/device/generate.py, algos_of_coll): Ring all but
// the point-to-point ones (AlltoAll and SendRecv ignore NCCL_ALGO); Tree, NVLS_TREE and
// COLLNET_CHAIN AllReduce only; PAT AllGather and ReduceScatter; NVLS and COLLNET_DIRECT these
// two and AllReduce.
bool algo_supports(const std::string& algo, const std::string& op);

}  // namespace clustersim::harness
