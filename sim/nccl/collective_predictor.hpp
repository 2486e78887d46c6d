#pragma once
// Predicts what nccl-tests would report for one collective on a cluster of identical nodes: the
// public entry point of sim/nccl for the CLI and the planner (the fast path; the event-simulated
// path for concurrent traffic is sim/nccl/collective_sim.hpp).
//
// One prediction:
//   1. NCCL's view of the nodes (NcclSystem), its channels (search_channels) and its tuner choose
//      the algorithm, protocol and channels for the size (Tuner::choose).
//   2. The collective becomes NCCL's step program (build_program); its uncontended pass gives the
//      GPU time T_gpu = base latency + pipeline of transfers.
//   3. nccl-tests' measurement (src/common.cu): `iters` back-to-back launches timed on the host and
//      averaged, so an iteration costs max(T_loop, T_host + T_sync / iters) with T_loop the
//      program's time per launch back to back (ProgramTiming::loop: a chain's upstream ranks run ahead into the next
//      launch; T_gpu otherwise, and T_gpu for -n 1), T_host = GPUs per thread (-g) x the
//      host cost of one NCCL call (nccl.host.call_overhead), plus for -g N > 1 N x the group
//      launch's cost per communicator (nccl.host.group_comm_overhead: NCCL 2.28 src/group.cc
//      doLaunches prepares, launches and finishes each communicator in turn from the one thread,
//      switching device for each), plus, for -t T > 1 threads of one process, (T - 1) x g x the
//      part of a call no other thread of the process overlaps (nccl.host.process_serial_overhead,
//      with, for g > 1, the group's cost per communicator: the threads start together and queue
//      there, the last waiting for the other T - 1; 4 x H200 run small all-reduces at 7.1, 10 and
//      10-13 us an iteration with -t 2, 3 and 4, where one process per GPU runs 4 GPUs at 9, and
//      at 19 us with -t 2 -g 2, 24-25 with -t 1 -g 4), and T_sync the wait that closes the timed loop
//      (nccl.host.sync_overhead: completeColl's stream query and the clock read, once for the
//      `iters` launches; it overlaps the GPU's work when the GPU is behind, and shows where the
//      GPU has nothing to do: 4 x H200 time one rank's in-place calls, which launch nothing, at
//      0.21-0.23 us over 2,000 launches, 0.22 or 0.30 us over 20); algbw = size / time, busbw = algbw x the test's factor
//      (2(n-1)/n all-reduce, (n-1)/n all-gather, reduce-scatter and alltoall, 1 otherwise).
//   One rank (enqueue.cc: ncclLaunchOneRank, src/device/onerank.cu): no communication; out of
//   place NCCL copies the input to the output with cudaMemcpyAsync, T_gpu = copy fixed time +
//   size / local copy rate (nccl_parameters.hpp); in place it enqueues nothing and the call costs
//   its host time only (nccl.host.empty_call_overhead). A PreMulSum op (avg of a floating type,
//   mulsum) instead runs a kernel that scales every element, in place too; it reads and writes
//   what the copy does, priced as the copy. Send/recv to itself copies out of place
//   through the P2P kernel (NCCL's base latency + the same copy rate); in place the group's end
//   drops it (enqueue.cc scheduleP2pTasksToPlan: "Skip send to self in-place"): nccl-tests' group
//   start, send and recv cost an empty call each, its group end nccl.host.empty_group_overhead.
//   4. The uncertainty (relative, one standard deviation of the time nccl-tests would report) adds
//      two parts in quadrature: the root mean square of the relative uncertainties of the
//      parameters the prediction used (calibrated ones carry their fit's, defaults their wider
//      default), and, where the profile's fit held out points of the same op over the same
//      transport (its cross-validation: fit on alternate sizes, predict the others; at least
//      kMinHeldOutPoints of them), the model's own miss there, 1.4826 x their median absolute
//      error (the standard deviation of normal errors with that median). The first says how well
//      the data pin the parameters; the second how far the model's shape and the sessions behind
//      the fit leave the measurements from it: 4 x H200, held-out median 2.7% for the all-reduce over
//      P2P (1,636 points), 14% for the all-reduce over sockets (318), whose sessions differ by
//      10 to 40%. A point-to-point pair (predict_pair) takes the fit's "p2p" entry.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"
#include "sim/nccl/channel_search.hpp"
#include "sim/nccl/collective_program.hpp"
#include "sim/nccl/nccl_env.hpp"
#include "sim/nccl/nccl_parameters.hpp"
#include "sim/nccl/nccl_system.hpp"
#include "sim/nccl/nccl_version.hpp"
#include "sim/nccl/tuner.hpp"

namespace clustersim::sim::nccl {

// A prediction's bands: time x (1 +- u) holds the measurement with 68% probability (one standard
// deviation of a normal error), time x (1 +- kBandZ90 u) with 90%.
inline constexpr double kBandZ90 = 1.6449;

struct PredictorConfig {
  hardware::NodeSpec node;
  CommShape shape;
  Placement placement;
  std::map<std::string, std::string> env;
  std::string env_location = "--env";  // where the variables came from, for errors
  std::string version = "2.28";
  const hardware::CalibrationProfile* profile = nullptr;  // null: catalog fallbacks only
};

// How nccl-tests measured (its flags). The wait that closes the timed loop is paid once over
// `iters` launches where the host is the slower side (T_sync above). The first launch of the loop is not overlapped either; its
// share, a launch over `iters` iterations, is below the model's resolution and left out.
struct NcclTestsMethod {
  int threads_per_process = 1;  // -t: threads of one process (1 with a process per GPU, as with MPI)
  int gpus_per_thread = 1;  // -g
  int iters = 20;           // -n
  bool in_place = false;    // the in-place columns (matter for one rank only)
  Reduction reduction{};    // -d, -o: what NCCL may run (Tuner::choose) and one rank's kernel
  // -z B (src/common.cu startColl): from 1, each call waits for its stream before the next
  // (1 adds a barrier across ranks, 3 leaves it out of the time): an iteration costs
  // T_host + T_gpu + T_sync, no launch overlapping another. The barrier of -z 1 is not priced.
  int blocking = 0;
  // -G L: the `iters` launches captured once in a CUDA graph and replayed L times, timed from
  // the first replay: the host issues L graph launches (one call's host cost each, per GPU of the
  // thread) and one closing wait, so an iteration costs
  // max(T_loop, (L x g x T_host_call + T_sync) / (iters x L)).
  int graph_launches = 0;
};

// The threads of one process in a calibration harness run (its results' tool.launcher, said once
// for the file): "threads" runs a thread per GPU in one process per node, as nccl-tests -t N -g 1;
// "process" (or "mpi") a process per GPU.
inline int harness_threads_per_process(std::string_view launcher, int gpus_per_node) {
  return launcher == "threads" ? gpus_per_node : 1;
}

struct CollectivePrediction {
  CollectiveOp op = CollectiveOp::ALL_REDUCE;
  Bytes size;               // nccl-tests' size column
  Duration time;            // per iteration, as nccl-tests reports it
  Duration gpu_time;        // the collective on the GPUs
  Duration host_time;       // host cost of one iteration
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  Algorithm algorithm = Algorithm::RING;
  Protocol protocol = Protocol::SIMPLE;
  int channels = 1;
  double uncertainty = 0;   // relative, one standard deviation: the 68% band is time x (1 +- u)
  bool calibrated = false;  // every parameter came from a calibration profile
  std::vector<std::string> notes;
};

class CollectivePredictor {
 public:
  explicit CollectivePredictor(PredictorConfig config);

  CollectivePrediction predict(CollectiveOp op, Bytes size, const NcclTestsMethod& method = {}) const;
  // One send of `size` bytes from rank src to rank dst of the communicator, the other ranks idle
  // (the calibration harness's point-to-point measurement). InputError unless 0 <= src, dst <
  // nranks and src != dst.
  CollectivePrediction predict_pair(Bytes size, int src, int dst, const NcclTestsMethod& method = {}) const;

  // NCCL's choice and the step program for a size (the event simulation runs the same program).
  TunerChoice choice(CollectiveOp op, Bytes size, Reduction r = {}) const;
  StepProgram program(CollectiveOp op, Bytes size, const TunerChoice& choice, bool in_place = false) const;

  const PredictorConfig& config() const { return config_; }
  const NcclVersion& version() const { return version_; }
  const NcclEnv& env() const { return env_; }
  const NcclSystem& system() const { return *system_; }
  const ChannelPlan& channels() const { return plan_; }
  const Tuner& tuner() const { return *tuner_; }
  const NcclRates& rates() const { return rates_; }
  const hardware::ParameterSet& parameters() const { return params_; }
  // Transports of the ring inside a node and between nodes ("P2P/CUMEM/read", "NET/IB/0/GDRDMA").
  std::string intra_transport() const;
  std::string inter_transport() const;
  // Notes from the system, the search and the tuner (what NCCL decided and why).
  std::vector<std::string> notes() const;

 private:
  ProgramContext context() const;
  Bytes nccl_bytes(CollectiveOp op, Bytes size) const;
  CollectivePrediction finish(CollectivePrediction out, const NcclTestsMethod& method, Duration host,
                              std::optional<Duration> loop = std::nullopt, bool launches = true) const;

  PredictorConfig config_;
  NcclVersion version_;
  NcclEnv env_;
  std::unique_ptr<NcclSystem> system_;
  ChannelPlan plan_;
  std::unique_ptr<Tuner> tuner_;
  hardware::ParameterSet params_;
  NcclRates rates_;
  double uncertainty_ = 0;                       // the parameters' part (header, 4)
  std::map<std::string, double, std::less<>> held_out_;  // op label -> 1.4826 x held-out median |error|
  double uncertainty_for(std::string_view op_label) const;
};

// Held-out points an op and transport need in a profile's cross-validation before their median
// error widens a prediction (a median of fewer is itself too uncertain).
inline constexpr int kMinHeldOutPoints = 20;

}  // namespace clustersim::sim::nccl
