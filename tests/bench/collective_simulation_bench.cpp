// Speed of the NCCL model: the event simulation of a large ring all-reduce, every chunk as flows,
// and the fast path over a full nccl-tests sweep.
//
//   BM_RingAllReduceEvent/128     1,024 ranks (128 x p5.48xlarge), 8 GiB, NCCL_ALGO=Ring: every
//                                 slice of every step of the representative ranks and NIC lanes
//                                 simulated as flows on the cluster's network (target < 1 s)
//   BM_SweepOneNode               all_reduce -b 8 -e 8G -f 2 (31 sizes) on one 8-GPU node through
//                                 the fast path, predictor set-up included (target < 1 s)
//   BM_PredictorSetup             NCCL's view, channel search and tuner for one cluster shape
//   BM_RingAllReduceAnalytic/128  the same 1,024-rank all-reduce through the analytic pass

#include <benchmark/benchmark.h>

#include "hardware/catalog.hpp"
#include "sim/nccl/collective_sim.hpp"
#include "sim/net/cluster_topology.hpp"

namespace {

using namespace clustersim;
using namespace clustersim::sim;
using namespace clustersim::sim::nccl;

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

PredictorConfig config(const std::string& system, int nodes, int gpus, std::map<std::string, std::string> env) {
  PredictorConfig cfg;
  cfg.node = hardware::resolve_node(catalog(), system);
  cfg.shape = {nodes, gpus};
  cfg.env = std::move(env);
  return cfg;
}

void BM_RingAllReduceEvent(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const CollectivePredictor pred(config("p5.48xlarge", nodes, 8, {{"NCCL_ALGO", "Ring"}}));
  ClusterConfig cc;
  cc.node = pred.config().node;
  cc.nodes = nodes;
  cc.gpus_per_node = 8;
  const Topology topo = build_topology(catalog(), cc);
  CollectiveSpec spec;
  spec.size = Bytes::gib(8);
  std::size_t flows = 0;
  double simulated_us = 0;
  for (auto _ : state) {
    const CollectiveResult r = simulate_collective(topo, pred, spec);
    flows = r.flows;
    simulated_us = r.elapsed().microseconds();
  }
  state.counters["flows"] = static_cast<double>(flows);
  state.counters["simulated_us"] = simulated_us;
}
BENCHMARK(BM_RingAllReduceEvent)->Arg(2)->Arg(16)->Arg(128)->Unit(benchmark::kMillisecond);

void BM_RingAllReduceAnalytic(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const CollectivePredictor pred(config("p5.48xlarge", nodes, 8, {{"NCCL_ALGO", "Ring"}}));
  for (auto _ : state) benchmark::DoNotOptimize(pred.predict(CollectiveOp::ALL_REDUCE, Bytes::gib(8)));
}
BENCHMARK(BM_RingAllReduceAnalytic)->Arg(2)->Arg(128)->Unit(benchmark::kMillisecond);

void BM_SweepOneNode(benchmark::State& state) {
  for (auto _ : state) {
    const CollectivePredictor pred(config("hgx-h100", 1, 8, {}));
    for (long long s = 8; s <= (8LL << 30); s *= 2) {
      benchmark::DoNotOptimize(pred.predict(CollectiveOp::ALL_REDUCE, Bytes::of(s)));
    }
  }
}
BENCHMARK(BM_SweepOneNode)->Unit(benchmark::kMillisecond);

void BM_PredictorSetup(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(CollectivePredictor(config("p5.48xlarge", 16, 8, {})));
}
BENCHMARK(BM_PredictorSetup)->Unit(benchmark::kMillisecond);

void BM_SingleNodeEvent(benchmark::State& state) {
  const CollectivePredictor pred(config("hgx-h100", 1, 8, {}));
  ClusterConfig cc;
  cc.node = pred.config().node;
  cc.nodes = 1;
  cc.gpus_per_node = 8;
  const Topology topo = build_topology(catalog(), cc);
  CollectiveSpec spec;
  spec.size = Bytes::gib(8);
  for (auto _ : state) benchmark::DoNotOptimize(simulate_collective(topo, pred, spec));
}
BENCHMARK(BM_SingleNodeEvent)->Unit(benchmark::kMillisecond);

}  // namespace
