#include "models/step_timeline.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "sim/nccl/nccl_types.hpp"

namespace clustersim::models {

void describe_plan(const StepPlan& plan, StepTimeline& timeline) {
  timeline.comms.assign(plan.stages.size(), {});
  timeline.units.assign(plan.stages.size(), {});
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    const StagePlan& st = plan.stages[s];
    for (const CommSpec& c : st.comms) {
      TimelineComm tc;
      tc.name = c.name;
      tc.size = c.size;
      tc.calls = c.repeat;
      tc.channels = c.cost.channels;
      if (c.group < 0) {
        tc.op = "copy";
        tc.algorithm = c.cost.algorithm;
        tc.transport = "PCIe";
        tc.group = "host";
      } else {
        const GroupComm& g = st.groups[static_cast<std::size_t>(c.group)];
        tc.op = std::string(sim::nccl::to_string(c.op));
        // CollectiveCost::algorithm is "algorithm/protocol" (step_comm.cpp).
        const std::size_t slash = c.cost.algorithm.find('/');
        tc.algorithm = c.cost.algorithm.substr(0, slash);
        if (slash != std::string::npos) tc.protocol = c.cost.algorithm.substr(slash + 1);
        tc.transport = g.transport;
        tc.group = std::string(to_string(g.kind));
        tc.ranks = g.members;
      }
      timeline.comms[s].push_back(std::move(tc));
    }
    for (const UnitPlan& u : st.units) timeline.units[s].push_back(TimelineUnit{u.name, u.layer});
  }
}

std::vector<CounterSample> memory_track(const StepPlan& plan, int stage, const StepTimeline& tl) {
  const StagePlan& st = plan.stages[static_cast<std::size_t>(stage)];
  const double peak = st.memory.peak.as_double();
  auto detail = [&](const char* key) {
    auto it = st.memory.details.find(key);
    return it == st.memory.details.end() ? 0.0 : it->second.as_double();
  };
  const bool drawn = st.saved_per_layer.count() > 0 || st.saved_embedding.count() > 0 || st.saved_head.count() > 0;
  const double counted =
      drawn ? detail("activations.layers") + detail("activations.embedding") + detail("activations.head") : 0.0;
  const double base = peak - counted;
  std::vector<CounterSample> out{{Duration::zero(), peak - counted}};
  if (!drawn) {
    out.front().value = peak;
    return out;
  }
  // (micro-batch, chunk, unit) -> first forward start, last backward end.
  struct Life {
    Duration alloc = Duration::max(), free = Duration::zero();
    bool forward = false, backward = false;
  };
  std::map<std::tuple<std::int64_t, int, int>, Life> lives;
  const auto& g = tl.graph;
  for (sim::exec::TaskId t = 0; t < g.size(); ++t) {
    if (g.rank_of(t) != stage || g.work(t) != sim::exec::WorkKind::COMPUTE ||
        static_cast<WorkClass>(g.kind(t)) != WorkClass::COMPUTE) {
      continue;
    }
    const TaskContext& c = tl.context[t];
    if (c.unit < 0 || c.pass == 0) continue;
    Life& l = lives[{c.micro_batch, c.chunk, c.unit}];
    if (c.pass == 1) {
      l.alloc = std::min(l.alloc, tl.timings[t].ready.since_start());
      l.forward = true;
    } else {
      l.free = std::max(l.free, tl.timings[t].end.since_start());
      l.backward = true;
    }
  }
  std::vector<std::pair<Duration, double>> deltas;
  for (const auto& [key, l] : lives) {
    const UnitPlan& u = st.units[static_cast<std::size_t>(std::get<2>(key))];
    const double a = u.layer >= 0          ? st.saved_per_layer.as_double()
                     : u.name == "embedding" ? st.saved_embedding.as_double()
                     : u.name == "head"      ? st.saved_head.as_double()
                                             : 0.0;
    if (a <= 0 || !l.forward) continue;
    deltas.emplace_back(l.alloc, a);
    if (l.backward) deltas.emplace_back(std::max(l.free, l.alloc), -a);
  }
  // Frees before allocations at one instant.
  std::sort(deltas.begin(), deltas.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first < y.first : x.second < y.second;
  });
  double saved = 0;
  for (std::size_t i = 0; i < deltas.size();) {
    const Duration t = deltas[i].first;
    for (; i < deltas.size() && deltas[i].first == t; ++i) saved += deltas[i].second;
    const double v = base + std::max(0.0, saved);
    if (out.back().time == t) {
      out.back().value = v;
    } else if (out.back().value != v) {
      out.push_back({t, v});
    }
  }
  return out;
}

}  // namespace clustersim::models
