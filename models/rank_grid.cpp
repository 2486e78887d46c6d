#include "models/rank_grid.hpp"

#include <algorithm>
#include <stdexcept>

namespace clustersim::models {

namespace {

Dim parse_dim(const std::string& s) {
  if (s == "tp") return Dim::TP;
  if (s == "cp") return Dim::CP;
  if (s == "ep") return Dim::EP;
  if (s == "dp") return Dim::DP;
  if (s == "pp") return Dim::PP;
  throw std::logic_error("RankGrid: unknown dimension '" + s + "' in rank order");
}

std::vector<Dim> group_dims(GroupKind g) {
  switch (g) {
    case GroupKind::TENSOR: return {Dim::TP};
    case GroupKind::CONTEXT: return {Dim::CP};
    case GroupKind::EXPERT: return {Dim::EP};
    case GroupKind::DATA: return {Dim::CP, Dim::EP, Dim::DP};
    case GroupKind::EXPERT_DATA: return {Dim::CP, Dim::DP};
    case GroupKind::PIPELINE: return {Dim::PP};
  }
  return {};
}

}  // namespace

std::string_view to_string(GroupKind g) {
  switch (g) {
    case GroupKind::TENSOR: return "tensor";
    case GroupKind::CONTEXT: return "context";
    case GroupKind::EXPERT: return "expert";
    case GroupKind::DATA: return "data";
    case GroupKind::EXPERT_DATA: return "expert-data";
    case GroupKind::PIPELINE: return "pipeline";
  }
  return "?";
}

RankGrid::RankGrid(const ParallelLayout& layout, const std::string& rank_order, int gpus_per_node)
    : gpus_per_node_(std::max(1, gpus_per_node)) {
  int ep = layout.ep();
  int dp = layout.dp();
  if (ep > 1 && dp % ep != 0) ep = 1;  // folded into DP (see the header)
  size_[static_cast<int>(Dim::TP)] = layout.tp();
  size_[static_cast<int>(Dim::CP)] = layout.cp();
  size_[static_cast<int>(Dim::EP)] = ep;
  size_[static_cast<int>(Dim::DP)] = dp / ep;
  size_[static_cast<int>(Dim::PP)] = layout.pp();
  std::vector<Dim> order;
  std::string cur;
  for (char c : rank_order + "-") {
    if (c == '-') {
      if (!cur.empty()) order.push_back(parse_dim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (order.size() != kNumDims) throw std::logic_error("RankGrid: rank order needs five dimensions");
  int stride = 1;
  for (Dim d : order) {
    stride_[static_cast<int>(d)] = stride;
    stride *= size_[static_cast<int>(d)];
  }
  world_ = stride;
}

int RankGrid::rank(const RankCoord& c) const {
  int r = 0;
  for (int d = 0; d < kNumDims; ++d) r += c[d] * stride_[d];
  return r;
}

RankCoord RankGrid::coord(int r) const {
  RankCoord c{};
  for (int d = 0; d < kNumDims; ++d) c[d] = (r / stride_[d]) % size_[d];
  return c;
}

int RankGrid::stage_rank(int stage) const {
  RankCoord c{};
  c[static_cast<int>(Dim::PP)] = stage;
  return rank(c);
}

std::vector<int> RankGrid::members(int r, GroupKind g) const {
  const RankCoord base = coord(r);
  std::vector<int> out{r};
  for (Dim d : group_dims(g)) {
    const int di = static_cast<int>(d);
    std::vector<int> next;
    next.reserve(out.size() * static_cast<std::size_t>(size_[di]));
    for (int m : out) {
      const int without = m - base[di] * stride_[di];
      for (int i = 0; i < size_[di]; ++i) next.push_back(without + i * stride_[di]);
    }
    out = std::move(next);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> RankGrid::stage_peers_on_node(int r) const {
  const int node = node_of(r);
  const int stage = coord(r)[static_cast<int>(Dim::PP)];
  std::vector<int> out;
  for (int g = 0; g < gpus_per_node_; ++g) {
    const int q = node * gpus_per_node_ + g;
    if (q < world_ && coord(q)[static_cast<int>(Dim::PP)] == stage) out.push_back(q);
  }
  return out;
}

}  // namespace clustersim::models
