#pragma once
// The communication groups of a training step as NCCL sees them, and what one collective of a
// group costs when it runs alone (sim/nccl's predictor: NCCL's transports, channels, tuner and
// step pipeline for the group's shape and placement).
//
// A group's shape (CommShape) comes from its members' placement (rank_grid.hpp): the number of
// nodes it spans and its ranks per node. Its Placement follows the scenario's pods: the members
// on one node are spread over the pods of gpus_per_pod consecutive GPUs they occupy, so a TP group
// inside one pod shares the pod's IPC, and a data-parallel group of one GPU per pod (seed 004's
// "4 pods x 1 GPU") is four hosts to NCCL.
//
// Cost of one collective of `size` bytes (nccl-tests' size convention):
//   time            the predictor's GPU time alone on the links (NCCL base latency + step pipeline)
//   bus_bytes       size x the nccl-tests bus factor (2(n-1)/n all-reduce, (n-1)/n all-gather,
//                   reduce-scatter and all-to-all, 1 send/receive): what each rank moves over its
//                   busiest link, the load the event simulation puts on the network
//   bandwidth_time  bus_bytes over the effective rate of the group's slowest hop (NVLink, PCIe,
//                   SHM, or the NIC devices NCCL uses, each at NCCL's achieved rate), at most
//                   `time`; the rest of `time` is latency, which contention does not stretch.
//   channels        the channels NCCL's tuner picks for the size: NCCL launches one thread block
//                   per channel (src/enqueue.cc), so a running collective holds that many SMs.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"
#include "models/rank_grid.hpp"
#include "models/scenario.hpp"
#include "sim/nccl/collective_predictor.hpp"

namespace clustersim::models {

struct CollectiveCost {
  Duration time;
  Duration bandwidth_time;
  double bus_bytes = 0;
  std::string algorithm;  // "ring/simple"
  int channels = 0;       // NCCL channels: thread blocks, one per channel, held on each GPU's SMs
};

// Predictors and predictions, kept across evaluations (the planner evaluates thousands of
// layouts that share a handful of group shapes). Not thread-safe.
class PredictorCache {
 public:
  // The predictor for a configuration (built on first use). InputError from the NCCL environment
  // propagates.
  const sim::nccl::CollectivePredictor& get(const sim::nccl::PredictorConfig& config);
  CollectiveCost cost(const sim::nccl::CollectivePredictor& predictor, sim::nccl::CollectiveOp op, Bytes size);
  std::size_t predictors() const { return predictors_.size(); }

 private:
  std::map<std::string, std::unique_ptr<sim::nccl::CollectivePredictor>> predictors_;
  std::map<std::tuple<const void*, int, std::int64_t>, CollectiveCost> costs_;
};

// One group of the representative rank of a pipeline stage.
struct GroupComm {
  GroupKind kind = GroupKind::TENSOR;
  int size = 1;
  int nodes = 1;
  int ranks_per_node = 1;
  std::vector<int> members;  // global ranks, ascending
  const sim::nccl::CollectivePredictor* predictor = nullptr;  // null for a group of one
  std::string transport;  // how its slowest hop moves data ("P2P/CUMEM/read", "NET/Libfabric/0/GDRDMA")
  bool single() const { return size <= 1; }
};

// What the groups need from the scenario.
struct CommContext {
  const Scenario& scenario;
  const hardware::NodeSpec& node;
  const hardware::CalibrationProfile* profile = nullptr;
  const RankGrid& grid;
};

// The group of kind `kind` around global rank `rank`, with its predictor (from `cache`).
GroupComm make_group(const CommContext& ctx, PredictorCache& cache, int rank, GroupKind kind);
// A two-rank group for pipeline sends between `from` and `to`.
GroupComm make_pair_group(const CommContext& ctx, PredictorCache& cache, int from, int to);

// The cost of `op` over `size` bytes on `group` (zero on a group of one).
CollectiveCost collective_cost(PredictorCache& cache, const GroupComm& group, sim::nccl::CollectiveOp op, Bytes size);

// The scenario's pod placement and P2P mode as NCCL's Placement, for `members_per_node` ranks of
// a communicator on one node occupying `pods` pods.
sim::nccl::Placement nccl_placement(const ClusterSpec& cluster, int members_per_node, int pods);

}  // namespace clustersim::models
