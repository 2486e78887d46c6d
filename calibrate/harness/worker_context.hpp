#pragma once
// What one rank of a sub-run works with, and the entry point of each section's tests.
//
// Rules every section follows: check every return code; a failed or timed-out test is reported
// through failure() and the section goes on with its next test where the failure left the GPU
// usable; measured entries go to the sink as soon as they exist; sweeps stop early, rather than
// overrun, when seconds_left() says the next point does not fit the budget.

#include <string>
#include <vector>

#include "calibrate/harness/harness_options.hpp"
#include "calibrate/harness/host_group.hpp"
#include "calibrate/harness/result_sink.hpp"
#include "calibrate/harness/subrun_plan.hpp"

namespace clustersim::harness {

struct WorkerContext {
  WorkerContext(const Options& o, const SubRun& r, HostGroup& g, ResultSink& s) : opt(o), run(r), group(g), sink(s) {}

  const Options& opt;
  const SubRun& run;
  HostGroup& group;
  ResultSink& sink;
  int device = -1;           // this rank's CUDA device ordinal; -1 when the sub-run uses no GPU
  std::vector<int> devices;  // the device of every rank (single-worker sub-runs: every device)
  std::string hostname;
  int nodes = 1;
  int gpus_per_node = 1;
  double deadline_unix = 0;  // 0: no deadline

  // Seconds to the deadline (a large number when there is none).
  double seconds_left() const;
  // One line on stderr, prefixed with the sub-run and rank.
  void log(const std::string& message) const;
  // Records a test that did not produce a measurement: status "failed", "timeout", "unavailable"
  // or "skipped". A failure every rank sees is reported by rank 0 alone.
  void failure(const std::string& test, const std::string& status, const std::string& message) const;
};

double now_unix();
std::string host_name();

void run_environment(WorkerContext& ctx);
void run_collectives(WorkerContext& ctx);
void run_p2p_nccl(WorkerContext& ctx);
void run_p2p_memcpy(WorkerContext& ctx);
void run_gemm(WorkerContext& ctx);
void run_attention(WorkerContext& ctx);
void run_memory(WorkerContext& ctx);
void run_host_transfers(WorkerContext& ctx);
void run_cpu_adam(WorkerContext& ctx);
void run_selftest(WorkerContext& ctx);

// Dispatches on ctx.run.section (and the p2p mode).
void run_subrun(WorkerContext& ctx);

}  // namespace clustersim::harness
