#pragma once
// Where each global rank sits: its coordinates in the parallel dimensions, its node and its GPU,
// and the members of each communication group, for a rank order such as Megatron's default
// "tp-cp-ep-dp-pp" (innermost first).
//
// Coordinates. The order names five dimensions from the fastest-varying to the slowest; their
// sizes are tp, cp, ep, dp / ep and pp (expert parallelism is carved out of data parallelism as
// Megatron-Core does: an expert group is ep consecutive data-parallel ranks; when ep does not
// divide dp the EP dimension is folded into DP, an approximation for placement only). Then
//   rank = c_0 + n_0 (c_1 + n_1 (c_2 + n_2 (c_3 + n_3 c_4)))
// with c_i, n_i the coordinate and size of the i-th dimension of the order. Ranks are placed
// node-major: rank r runs on GPU r mod G of node r div G (G GPUs per node), which is how torchrun
// and mpirun number processes.
//
// Groups (members vary the listed dimensions, the others fixed):
//   tensor {tp}  context {cp}  expert {ep}  data {cp, ep, dp} (gradients of dense parameters are
//   reduced over data x context)  expert-data {cp, dp}  pipeline {pp}.

#include <array>
#include <string>
#include <vector>

#include "models/parallel_layout.hpp"

namespace clustersim::models {

enum class Dim { TP = 0, CP = 1, EP = 2, DP = 3, PP = 4 };
inline constexpr int kNumDims = 5;

enum class GroupKind { TENSOR, CONTEXT, EXPERT, DATA, EXPERT_DATA, PIPELINE };
std::string_view to_string(GroupKind g);  // "tensor", "context", ...

using RankCoord = std::array<int, kNumDims>;  // indexed by Dim

class RankGrid {
 public:
  // `rank_order` as validated by the scenario reader ("tp-cp-ep-dp-pp").
  RankGrid(const ParallelLayout& layout, const std::string& rank_order, int gpus_per_node);

  int world() const { return world_; }
  int gpus_per_node() const { return gpus_per_node_; }
  int size(Dim d) const { return size_[static_cast<int>(d)]; }
  int rank(const RankCoord& c) const;
  RankCoord coord(int rank) const;
  int node_of(int rank) const { return rank / gpus_per_node_; }
  int local_of(int rank) const { return rank % gpus_per_node_; }

  // The representative rank of a pipeline stage: every other coordinate 0.
  int stage_rank(int stage) const;
  // Members of `rank`'s group, in global rank order.
  std::vector<int> members(int rank, GroupKind group) const;
  // Ranks on `rank`'s node that belong to the same pipeline stage (they run symmetric work at the
  // same time), in GPU order.
  std::vector<int> stage_peers_on_node(int rank) const;

 private:
  std::array<int, kNumDims> size_{};
  std::array<int, kNumDims> stride_{};
  int world_ = 1;
  int gpus_per_node_ = 1;
};

}  // namespace clustersim::models
