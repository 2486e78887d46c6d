#include "reports/step_trace.hpp"

#include <algorithm>

namespace clustersim::reports {

namespace {

std::string join_ranks(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(ranks[i]);
  }
  return out;
}

void add_context(TraceArgs& args, const models::StepTimeline& tl, int rank, const models::TaskContext& c) {
  if (c.micro_batch >= 0) args.add({"micro_batch", c.micro_batch});
  if (c.chunk >= 0) args.add({"chunk", static_cast<std::int64_t>(c.chunk)});
  if (c.unit >= 0 && static_cast<std::size_t>(rank) < tl.units.size()) {
    const auto& units = tl.units[static_cast<std::size_t>(rank)];
    if (static_cast<std::size_t>(c.unit) < units.size()) {
      const models::TimelineUnit& u = units[static_cast<std::size_t>(c.unit)];
      args.add({"unit", u.name});
      if (u.layer >= 0) args.add({"layer", u.layer});
    }
  }
  if (c.pass != 0) args.add({"pass", c.pass == 1 ? "forward" : "backward"});
  if (c.comm >= 0 && static_cast<std::size_t>(rank) < tl.comms.size()) {
    const auto& comms = tl.comms[static_cast<std::size_t>(rank)];
    if (static_cast<std::size_t>(c.comm) < comms.size()) {
      const models::TimelineComm& m = comms[static_cast<std::size_t>(c.comm)];
      args.add({"collective", m.op});
      args.add({"bytes", m.size.count()});
      args.add({"calls", static_cast<std::int64_t>(m.calls)});
      args.add({"algorithm", m.algorithm});
      if (!m.protocol.empty()) args.add({"protocol", m.protocol});
      if (m.channels > 0) args.add({"channels", static_cast<std::int64_t>(m.channels)});
      args.add({"transport", m.transport});
      args.add({"group", m.group});
      if (!m.ranks.empty()) args.add({"group_ranks", join_ranks(m.ranks)});
    }
  }
}

}  // namespace

PerfettoTrace step_trace(const models::Scenario& s, const models::StepTimeline& tl) {
  PerfettoTrace trace;
  trace.set_metadata("scenario", s.name);
  trace.set_metadata("generator", "clustersim simulate");
  const auto& g = tl.graph;
  const int ranks = static_cast<int>(tl.rank_names.size());
  for (int r = 0; r < ranks; ++r) trace.add_process(r, tl.rank_names[static_cast<std::size_t>(r)]);
  std::vector<bool> used(g.stream_count(), false);
  for (sim::exec::TaskId t = 0; t < g.size(); ++t) {
    if (g.work(t) != sim::exec::WorkKind::MARKER) used[g.stream_of(t)] = true;
  }
  for (std::uint32_t st = 0; st < g.stream_count(); ++st) {
    if (used[st]) trace.add_thread(g.stream(st).rank, g.stream(st).index, g.stream(st).name);
  }
  for (sim::exec::TaskId t = 0; t < g.size(); ++t) {
    if (g.work(t) == sim::exec::WorkKind::MARKER) continue;
    const auto& tm = tl.timings[t];
    const auto& st = g.stream(g.stream_of(t));
    TraceArgs args;
    if (t < tl.context.size()) add_context(args, tl, st.rank, tl.context[t]);
    if (g.work(t) == sim::exec::WorkKind::TRANSFER) {
      args.add({"flows", static_cast<std::int64_t>(g.flows(t).size())});
      args.add({"wire_bytes", g.flow_bytes(t).count()});
    }
    trace.slice(st.rank, st.index, g.name(t), g.category(t), tm.ready.since_start(), tm.end - tm.ready, args);
  }
  for (const auto& [from, to] : tl.arrows) {
    if (g.work(from) == sim::exec::WorkKind::MARKER || g.work(to) == sim::exec::WorkKind::MARKER) continue;
    const auto& a = g.stream(g.stream_of(from));
    const auto& b = g.stream(g.stream_of(to));
    const Duration ta = tl.timings[from].ready.since_start();
    const Duration tb = std::max(ta, tl.timings[to].ready.since_start());
    trace.flow({a.rank, a.index, ta}, {b.rank, b.index, tb},
               g.category(from) == std::string_view("pipeline") ? "send" : "collective");
  }
  for (std::size_t r = 0; r < tl.memory.size(); ++r) {
    for (const models::CounterSample& c : tl.memory[r]) trace.counter(static_cast<int>(r), "memory", c.time, c.value, "bytes");
  }
  if (!tl.links.empty()) {
    const int network = ranks;
    trace.add_process(network, "network (busiest links)");
    for (const models::LinkSeries& l : tl.links) {
      for (const models::CounterSample& c : l.utilisation) trace.counter(network, "util " + l.name, c.time, c.value);
    }
  }
  return trace;
}

}  // namespace clustersim::reports
