#include "models/step_comm.hpp"

#include <algorithm>

#include "hardware/errors.hpp"
#include "sim/nccl/collective_program.hpp"

namespace clustersim::models {

namespace nc = sim::nccl;

namespace {

std::string config_key(const nc::PredictorConfig& c) {
  std::string k = c.node.name + "|" + std::to_string(c.shape.nodes) + "x" + std::to_string(c.shape.gpus_per_node) +
                  "|pod" + std::to_string(c.placement.gpus_per_pod) + (c.placement.host_ipc ? "i" : "-") +
                  std::string(nc::to_string(c.placement.p2p)) + (c.placement.fabric_manager ? "f" : "-") + "|" +
                  c.version + "|";
  for (const auto& [name, value] : c.env) k += name + "=" + value + ";";
  k += "|" + std::to_string(reinterpret_cast<std::uintptr_t>(c.profile));
  return k;
}

// Effective payload rate (bytes/s) of one hop of `t` for one GPU, from NCCL's rates.
double hop_rate(const nc::CollectivePredictor& p, const nc::HopTransport& t) {
  const nc::NcclRates& r = p.rates();
  switch (t.kind) {
    case nc::TransportKind::P2P: return (t.over_nvlink ? r.nvlink : r.pcie).bytes_per_second();
    case nc::TransportKind::SHM: return r.shm.bytes_per_second();
    case nc::TransportKind::NET: break;
  }
  const nc::ProgramContext ctx{p.system(), p.channels(), p.version(), p.env(), p.rates()};
  return r.nic.bytes_per_second() * std::max(1, nc::nic_devices_used(ctx.system));
}

}  // namespace

const nc::CollectivePredictor& PredictorCache::get(const nc::PredictorConfig& config) {
  const std::string key = config_key(config);
  auto it = predictors_.find(key);
  if (it != predictors_.end()) return *it->second;
  auto p = std::make_unique<nc::CollectivePredictor>(config);
  const auto& ref = *p;
  predictors_.emplace(key, std::move(p));
  return ref;
}

CollectiveCost PredictorCache::cost(const nc::CollectivePredictor& p, nc::CollectiveOp op, Bytes size) {
  const auto key = std::make_tuple(static_cast<const void*>(&p), static_cast<int>(op), size.count());
  if (auto it = costs_.find(key); it != costs_.end()) return it->second;
  CollectiveCost c;
  const nc::NcclSystem& sys = p.system();
  const int n = sys.nranks();
  if (n > 1 && size.count() > 0) {
    const nc::CollectivePrediction pr = p.predict(op, size);
    c.time = pr.gpu_time;
    c.algorithm = std::string(nc::to_string(pr.algorithm)) + "/" + std::string(nc::to_string(pr.protocol));
    c.channels = pr.channels;
    const double factor = op == nc::CollectiveOp::SENDRECV ? 1.0 : nc::busbw_factor(op, n);
    c.bus_bytes = size.as_double() * factor;
    // The slowest hop bounds the bandwidth-bound part (see the header).
    double t_bw = 0;
    const int g = sys.gpus();
    if (g > 1) {
      const double share = sys.nodes() > 1 ? static_cast<double>(g - 1) / g : 1.0;
      const double rate = hop_rate(p, sys.transport(0, 1));
      if (rate > 0) t_bw = std::max(t_bw, c.bus_bytes * share / rate);
    }
    if (sys.nodes() > 1 || sys.ranks_per_host() < g) {
      const int other = sys.nodes() > 1 ? g % n : std::max(1, sys.ranks_per_host()) % n;
      const double rate = hop_rate(p, sys.transport(0, other));
      if (rate > 0) t_bw = std::max(t_bw, c.bus_bytes / rate);
    }
    c.bandwidth_time = std::min(Duration::from_seconds(t_bw), c.time);
  }
  costs_.emplace(key, c);
  return c;
}

nc::Placement nccl_placement(const ClusterSpec& cluster, int members_per_node, int pods) {
  nc::Placement pl;
  pods = std::max(1, pods);
  pl.gpus_per_pod = std::max(1, members_per_node / pods);
  pl.host_ipc = cluster.host_ipc;
  pl.p2p = cluster.p2p == P2pMode::WRITE  ? nc::PlatformP2p::WRITE
           : cluster.p2p == P2pMode::READ ? nc::PlatformP2p::READ
                                          : nc::PlatformP2p::DISABLED;
  pl.fabric_manager = cluster.fabric_manager.value_or(true);
  return pl;
}

namespace {

GroupComm build_group(const CommContext& ctx, PredictorCache& cache, GroupKind kind, int rank, std::vector<int> members) {
  GroupComm g;
  g.kind = kind;
  g.members = std::move(members);
  g.size = static_cast<int>(g.members.size());
  if (g.size <= 1) return g;
  const RankGrid& grid = ctx.grid;
  std::vector<int> nodes;
  std::vector<int> pods;
  int on_node = 0;
  const int my_node = grid.node_of(rank);
  const int per_pod = std::max(1, ctx.scenario.cluster.gpus_per_pod);
  nodes.reserve(g.members.size());
  for (int m : g.members) {
    const int nd = grid.node_of(m);
    if (nodes.empty() || nodes.back() != nd) nodes.push_back(nd);
    if (nd == my_node) {
      ++on_node;
      pods.push_back(grid.local_of(m) / per_pod);
    }
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  std::sort(pods.begin(), pods.end());
  pods.erase(std::unique(pods.begin(), pods.end()), pods.end());
  g.nodes = static_cast<int>(nodes.size());
  g.ranks_per_node = std::max(1, on_node);
  nc::PredictorConfig config;
  config.node = ctx.node;
  config.shape = nc::CommShape{.nodes = g.nodes, .gpus_per_node = g.ranks_per_node};
  config.placement = nccl_placement(ctx.scenario.cluster, g.ranks_per_node, static_cast<int>(pods.size()));
  config.env = ctx.scenario.nccl.env;
  config.env_location = "/nccl/env";
  config.version = ctx.scenario.nccl.version;
  config.profile = ctx.profile;
  try {
    g.predictor = &cache.get(config);
  } catch (const InputError& e) {
    throw e.located(ctx.scenario.file, "/nccl/env");
  }
  const bool crosses = g.nodes > 1 || g.predictor->system().ranks_per_host() < g.ranks_per_node;
  g.transport = crosses ? g.predictor->inter_transport() : g.predictor->intra_transport();
  if (g.transport.empty()) g.transport = g.predictor->intra_transport();
  return g;
}

}  // namespace

GroupComm make_group(const CommContext& ctx, PredictorCache& cache, int rank, GroupKind kind) {
  return build_group(ctx, cache, kind, rank, ctx.grid.members(rank, kind));
}

GroupComm make_pair_group(const CommContext& ctx, PredictorCache& cache, int from, int to) {
  std::vector<int> m{std::min(from, to), std::max(from, to)};
  return build_group(ctx, cache, GroupKind::PIPELINE, from, std::move(m));
}

CollectiveCost collective_cost(PredictorCache& cache, const GroupComm& group, nc::CollectiveOp op, Bytes size) {
  if (group.single() || group.predictor == nullptr) return {};
  return cache.cost(*group.predictor, op, size);
}

}  // namespace clustersim::models
