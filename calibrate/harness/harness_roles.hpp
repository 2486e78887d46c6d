#pragma once
// The three roles of the clustersim-calibrate binary.
//   driver: what a user starts. Plans the sub-runs, starts fresh worker processes for each (with
//           the sub-run's environment), relays their host-side messages, kills what hangs, and
//           writes the results file after every sub-run.
//   worker: started by the driver (--worker-hub ...); runs one sub-run as one rank (or as all
//           ranks, one thread each, with --launcher threads).
//   mpi:    every rank of an MPI job runs the sub-runs in its own process (--launcher mpi).
// Each returns the process exit code: 0 done (failed tests are in the results), 1 failure, 2 usage.

#include "calibrate/harness/harness_options.hpp"

namespace clustersim::harness {

int run_driver(const Options& opt, int argc, char** argv);
int run_worker(const Options& opt);
int run_mpi(const Options& opt, int argc, char** argv);

// The devices a run uses: --devices, or every device CUDA sees. Sets `error` when CUDA cannot
// enumerate devices (the run goes on with the sections that need no GPU).
std::vector<int> resolve_devices(const Options& opt, std::string& error);

// The variables every process of the harness runs with: NVLink multicast (NVLink SHARP) off in
// NCCL, PyTorch and NVSHMEM. Applied to the calling process; returns a note when a user value was
// overridden.
std::string enforce_safe_environment();

}  // namespace clustersim::harness
