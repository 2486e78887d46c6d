#include "models/step_builder.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>

#include "hardware/errors.hpp"
#include "models/pipeline_schedule.hpp"
#include "models/step_timeline.hpp"
#include "sim/engine/simulation.hpp"
#include "sim/exec/stream_executor.hpp"
#include "sim/nccl/collective_program.hpp"
#include "sim/net/cluster_topology.hpp"
#include "sim/net/flow_network.hpp"

namespace clustersim::models {

namespace nc = sim::nccl;
using sim::Route;
using sim::exec::FlowSpec;
using sim::exec::NO_TASK;
using sim::exec::TaskId;
using sim::exec::TaskSpec;
using sim::exec::WorkKind;

namespace {

enum Stream : int { S_COMPUTE = 0, S_COLL, S_DP_GATHER, S_DP_REDUCE, S_PP, S_H2D, S_D2H, S_CPU, S_COUNT };
constexpr const char* kStreamNames[S_COUNT] = {"compute",        "tp/ep/cp collectives", "dp all-gather",
                                               "dp reduce",      "pp send",              "host-to-device",
                                               "device-to-host", "cpu"};

struct FlowTemplate {
  Route route;
  double share = 1;    // of the collective's bus bytes
  double inflate = 1;  // datasheet rate / NCCL's achieved rate on this hop
};

sim::NetworkOverrides to_overrides(const NetworkOverride& o) {
  sim::NetworkOverrides r;
  r.fabric = o.fabric;
  r.nics = o.nics;
  r.nic_bandwidth = o.nic_bandwidth;
  if (o.topology) {
    r.topology = *o.topology == "single_switch" ? hardware::NetworkTopologyKind::SINGLE_SWITCH
                 : *o.topology == "leaf_spine"  ? hardware::NetworkTopologyKind::LEAF_SPINE
                                                : hardware::NetworkTopologyKind::RAIL_OPTIMIZED;
  }
  r.nodes_per_leaf = o.nodes_per_leaf;
  r.oversubscription = o.oversubscription;
  r.gpudirect_rdma = o.gpudirect_rdma;
  return r;
}

struct PassKey {
  int stage, chunk;
  bool forward;
  std::int64_t mb;
};

class EventBuilder {
 public:
  EventBuilder(const StepPlan& plan, const EventInputs& in, const sim::Topology& topo, sim::FlowNetwork& net)
      : plan_(plan), in_(in), topo_(topo), net_(net), layout_(topo.cluster()) {
    const int p = plan_.pp;
    streams_.assign(p, std::vector<std::uint32_t>(S_COUNT, 0));
    for (int s = 0; s < p; ++s) {
      for (int k = 0; k < S_COUNT; ++k) streams_[s][k] = graph_.add_stream(s, k, kStreamNames[k]);
    }
    marker_label_ = graph_.add_label("marker", "marker");
    const std::size_t passes = static_cast<std::size_t>(plan_.micro_batches * plan_.vp);
    first_compute_.assign(p, std::vector<std::vector<TaskId>>(2, std::vector<TaskId>(passes, NO_TASK)));
    send_.assign(p, std::vector<std::vector<TaskId>>(2, std::vector<TaskId>(passes, NO_TASK)));
    flows_.resize(p);
    stage_state_.resize(p);
  }

  sim::exec::TaskGraph& graph() { return graph_; }
  const std::vector<std::int32_t>& task_comm() const { return task_comm_; }
  std::vector<TaskContext>& context() { return context_; }
  std::vector<std::pair<TaskId, TaskId>>& arrows() { return arrows_; }

  void build() {
    const int p = plan_.pp;
    for (int s = 0; s < p; ++s) {
      start_stage(s);
      for (const PipelinePass& ps : pipeline_order(plan_.schedule, s, p, plan_.micro_batches, plan_.vp)) pass(s, ps);
      finish_backward(s);
    }
    link_pipeline();
    finish_step();
  }

 private:
  struct StageState {
    TaskId last_compute = NO_TASK;
    std::vector<TaskId> pending;     // the next compute task waits for these
    std::vector<TaskId> grad_tasks;  // gradient collectives and copies of the last micro-batch
    std::map<std::pair<int, int>, TaskId> param_bucket_for;  // (chunk, unit position) -> all-gather
    TaskId grads_done = NO_TASK, tied = NO_TASK, norm = NO_TASK;
  };

  // ---- labels and tasks ----
  std::uint32_t label(const std::string& name, std::string_view category) {
    const std::string key = name + '\x1f' + std::string(category);
    auto it = labels_.find(key);
    if (it != labels_.end()) return it->second;
    const std::uint32_t id = graph_.add_label(name, category);
    labels_.emplace(key, id);
    return id;
  }

  TaskId compute(int s, Duration d, const std::string& name, WorkClass cls = WorkClass::COMPUTE, int stream = S_COMPUTE) {
    TaskSpec spec;
    spec.stream = streams_[s][stream];
    spec.work = WorkKind::COMPUTE;
    spec.duration = d;
    spec.kind = static_cast<std::uint16_t>(cls);
    spec.label = label(name, to_string(cls));
    spec.uses_sms = stream == S_COMPUTE;
    const TaskId t = graph_.add(spec);
    task_comm_.push_back(-1);
    context_.push_back(cur_);
    return t;
  }

  TaskId marker(int s, int stream = S_COMPUTE) {
    TaskSpec spec;
    spec.stream = streams_[s][stream];
    spec.work = WorkKind::MARKER;
    spec.kind = static_cast<std::uint16_t>(WorkClass::MARKER);
    spec.label = marker_label_;
    const TaskId t = graph_.add(spec);
    task_comm_.push_back(-1);
    context_.push_back(cur_);
    return t;
  }

  void depend(TaskId t, TaskId before) {
    if (t != NO_TASK && before != NO_TASK) graph_.depend(t, before);
  }

  // ---- routes ----
  sim::VertexId gpu(int rank) const { return topo_.gpu(in_.grid.node_of(rank), in_.grid.local_of(rank)); }
  int nic_of(int rank, std::uint32_t hint) const {
    const auto& near = layout_.node.near_nics[static_cast<std::size_t>(layout_.node.gpu_vertex(in_.grid.local_of(rank)))];
    if (near.empty()) return -1;
    return near[hint % near.size()];
  }
  int near_nic_count(int rank) const {
    if (!layout_.network.present) return 1;
    const auto& near = layout_.node.near_nics[static_cast<std::size_t>(layout_.node.gpu_vertex(in_.grid.local_of(rank)))];
    return std::max<int>(1, static_cast<int>(near.size()));
  }
  int socket_of(int rank) const {
    return layout_.node.gpu_socket[static_cast<std::size_t>(in_.grid.local_of(rank))];
  }

  Route hop_route(const nc::HopTransport& t, int a, int b, std::uint32_t hint) {
    const int na = in_.grid.node_of(a), nb = in_.grid.node_of(b);
    if (na != nb) return net_.route(gpu(a), gpu(b), hint);
    if (t.kind == nc::TransportKind::P2P && t.over_nvlink) return net_.route(gpu(a), gpu(b), hint);
    if (t.kind == nc::TransportKind::P2P) {
      const int sw = layout_.node.gpu_switch[static_cast<std::size_t>(in_.grid.local_of(a))];
      const sim::VertexId via = sw >= 0 ? topo_.pcie_switch(na, sw) : topo_.cpu_socket(na, socket_of(a));
      Route r = net_.route(gpu(a), via);
      r.append(net_.route(via, gpu(b)));
      return r;
    }
    if (t.kind == nc::TransportKind::NET && layout_.network.present) {
      const int ia = nic_of(a, hint), ib = nic_of(b, hint);
      if (ia >= 0 && ib >= 0) {
        Route r = net_.route(gpu(a), topo_.nic(na, ia));
        if (ia == ib) {
          r.push_back(layout_.nic_uplink(na, ia));
          r.push_back(layout_.nic_downlink(na, ia));
        } else {
          r.append(net_.route(topo_.nic(na, ia), topo_.nic(nb, ib)));
        }
        r.append(net_.route(topo_.nic(nb, ib), gpu(b)));
        return r;
      }
    }
    // SHM (and NET without a network): through the sender's socket memory.
    const sim::VertexId mem = topo_.host_memory(na, socket_of(a));
    Route r = net_.route(gpu(a), mem);
    r.append(net_.route(mem, gpu(b)));
    return r;
  }

  double inflate(const GroupComm& g, const nc::HopTransport& t) const {
    const nc::NcclRates& r = g.predictor->rates();
    double raw = 0, got = 0;
    switch (t.kind) {
      case nc::TransportKind::P2P:
        if (t.over_nvlink) {
          raw = in_.node.nvlink_per_gpu().bytes_per_second();
          got = r.nvlink.bytes_per_second();
        } else {
          raw = in_.node.gpu->pcie.bandwidth.value.bytes_per_second();
          got = r.pcie.bytes_per_second();
        }
        break;
      case nc::TransportKind::SHM: return 1.0;
      case nc::TransportKind::NET: {
        const auto& nics = g.predictor->system().nics();
        if (!nics.empty()) raw = nics.front().bandwidth.bytes_per_second();
        got = r.nic.bytes_per_second();
        break;
      }
    }
    if (raw <= 0 || got <= 0) return 1.0;
    return std::clamp(raw / got, 1.0, 4.0);
  }

  // Peers of `rank` in its stage that share its PCIe switch (they run the same collectives).
  std::vector<int> switch_peers(int rank) const {
    std::vector<int> out;
    const auto& sw = layout_.node.gpu_switch;
    const int mine = sw[static_cast<std::size_t>(in_.grid.local_of(rank))];
    for (int q : in_.grid.stage_peers_on_node(rank)) {
      if (q == rank || (mine >= 0 && sw[static_cast<std::size_t>(in_.grid.local_of(q))] == mine)) out.push_back(q);
    }
    if (std::find(out.begin(), out.end(), rank) == out.end()) out.insert(out.begin(), rank);
    return out;
  }

  std::vector<int> members_on_node(int rank, GroupKind kind, int node) const {
    std::vector<int> out;
    for (int m : in_.grid.members(rank, kind)) {
      if (in_.grid.node_of(m) == node) out.push_back(m);
    }
    return out;
  }

  std::vector<FlowTemplate> group_flows(int s, const GroupComm& g) {
    std::vector<FlowTemplate> out;
    if (g.single() || g.predictor == nullptr) return out;
    const int rep = plan_.stages[s].rank;
    const nc::NcclSystem& sys = g.predictor->system();
    if (g.kind == GroupKind::PIPELINE) {
      // A send from the representative to the other member (and the same from its switch peers).
      const int other = g.members[0] == rep ? g.members[1] : g.members[0];
      const nc::HopTransport t = sys.transport(0, 1);
      const double inf = inflate(g, t);
      const bool split = t.kind == nc::TransportKind::NET;
      for (int a : switch_peers(rep)) {
        const int b = a + (other - rep);
        if (b < 0 || b >= in_.grid.world()) continue;
        const int n = split ? near_nic_count(a) : 1;
        for (int h = 0; h < n; ++h) out.push_back({hop_route(t, a, b, static_cast<std::uint32_t>(h)), 1.0 / n, inf});
      }
      return out;
    }
    const int node = in_.grid.node_of(rep);
    const std::vector<int> local = members_on_node(rep, g.kind, node);
    const int k = static_cast<int>(local.size());
    if (k >= 2) {
      const nc::HopTransport t = sys.transport(0, 1);
      const double inf = inflate(g, t);
      const double share = g.nodes > 1 ? static_cast<double>(k - 1) / k : 1.0;
      const auto i = static_cast<int>(std::find(local.begin(), local.end(), rep) - local.begin());
      const int next = local[(i + 1) % k], prev = local[(i + k - 1) % k];
      if (t.kind == nc::TransportKind::P2P && t.over_nvlink) {
        out.push_back({hop_route(t, rep, next, 0), share, inf});
        out.push_back({hop_route(t, prev, rep, 0), share, inf});
      } else {
        bool prev_seen = false;
        for (int a : switch_peers(rep)) {
          const std::vector<int> la = members_on_node(a, g.kind, node);
          const auto ia = static_cast<int>(std::find(la.begin(), la.end(), a) - la.begin());
          const int na = la[(ia + 1) % static_cast<int>(la.size())];
          if (na == a) continue;
          out.push_back({hop_route(t, a, na, static_cast<std::uint32_t>(ia)), share, inf});
          prev_seen = prev_seen || a == prev;
        }
        if (!prev_seen && prev != rep) out.push_back({hop_route(t, prev, rep, 0), share, inf});
      }
    }
    if (g.nodes >= 2) {
      const nc::HopTransport t = sys.transport(0, sys.gpus() % sys.nranks());
      const double inf = inflate(g, t);
      for (int a : switch_peers(rep)) {
        const std::vector<int> ma = in_.grid.members(a, g.kind);
        std::vector<int> nodes;
        for (int m : ma) {
          const int nd = in_.grid.node_of(m);
          if (nodes.empty() || nodes.back() != nd) nodes.push_back(nd);
        }
        std::sort(nodes.begin(), nodes.end());
        nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
        const auto j = static_cast<int>(std::find(nodes.begin(), nodes.end(), node) - nodes.begin());
        const int nn = static_cast<int>(nodes.size());
        const std::vector<int> la = members_on_node(a, g.kind, node);
        const auto pos = static_cast<int>(std::find(la.begin(), la.end(), a) - la.begin());
        const std::vector<int> on_next = members_on_node(a, g.kind, nodes[(j + 1) % nn]);
        const std::vector<int> on_prev = members_on_node(a, g.kind, nodes[(j + nn - 1) % nn]);
        if (on_next.empty() || on_prev.empty()) continue;
        const int b = on_next[std::min<std::size_t>(pos, on_next.size() - 1)];
        const int c = on_prev[std::min<std::size_t>(pos, on_prev.size() - 1)];
        const int n = near_nic_count(a);
        const double share = 1.0 / std::max(1, k) / n;
        for (int h = 0; h < n; ++h) {
          out.push_back({hop_route(t, a, b, static_cast<std::uint32_t>(h)), share, inf});
          out.push_back({hop_route(t, c, a, static_cast<std::uint32_t>(h)), share, inf});
        }
      }
    }
    return out;
  }

  const std::vector<FlowTemplate>& flows_for(int s, int group) {
    auto& cache = flows_[s];
    if (cache.size() < plan_.stages[s].groups.size()) cache.resize(plan_.stages[s].groups.size());
    auto& slot = cache[group];
    if (!slot) slot = group_flows(s, plan_.stages[s].groups[group]);
    return *slot;
  }

  // ---- collective tasks ----
  TaskId comm_task(int s, int comm, int stream) {
    const StagePlan& st = plan_.stages[s];
    const CommSpec& c = st.comms[comm];
    TaskSpec spec;
    spec.stream = streams_[s][stream];
    spec.kind = static_cast<std::uint16_t>(c.cls);
    spec.label = label(c.name, to_string(c.cls));
    spec.account = c.account;
    spec.sm_share = static_cast<float>(c.sm_share);
    scratch_.clear();
    if (c.group < 0) {
      // Host copies: every GPU of the stage on the node copies at once.
      const Bandwidth one = in_.host.copy_bandwidth(c.host_to_device, c.pinned, 1);
      const int rep = st.rank;
      for (int a : in_.grid.stage_peers_on_node(rep)) {
        const sim::VertexId mem = topo_.host_memory(in_.grid.node_of(a), socket_of(a));
        FlowSpec f;
        f.route = c.host_to_device ? net_.route(mem, gpu(a)) : net_.route(gpu(a), mem);
        f.bytes = Bytes::of(std::max<std::int64_t>(1, c.size.count() * c.repeat));
        f.cap = one;
        scratch_.push_back(f);
      }
      spec.duration = Duration::zero();
    } else {
      const Duration total = c.time();
      const Duration bw = c.bandwidth_time();
      spec.duration = total - bw;
      if (bw > Duration::zero()) {
        for (const FlowTemplate& ft : flows_for(s, c.group)) {
          const double bytes = c.cost.bus_bytes * c.repeat * ft.share * ft.inflate;
          if (bytes < 1) continue;
          FlowSpec f;
          f.route = ft.route;
          f.bytes = Bytes::from_double(bytes);
          f.cap = Bandwidth::bytes_per_second(bytes / bw.seconds());
          scratch_.push_back(f);
        }
        if (scratch_.empty()) spec.duration = total;
      }
    }
    const TaskId t = graph_.add_transfer(spec, scratch_);
    task_comm_.push_back(comm);
    context_.push_back(cur_);
    context_.back().comm = comm;
    return t;
  }

  // ---- passes ----
  void start_stage(int s) {
    const StagePlan& st = plan_.stages[s];
    StageState& ss = stage_state_[s];
    if (st.param_gather_next_forward) {
      for (const BucketPlan& b : st.param_buckets) {
        const TaskId t = comm_task(s, b.comm, S_DP_GATHER);
        // Units up to the bucket's last unit need it (the first bucket that reaches them).
        for (int q = 0; q <= b.after_unit; ++q) ss.param_bucket_for.try_emplace({b.chunk, q}, t);
      }
    }
  }

  void run_items(int s, const std::vector<PassItem>& items, TaskId& first_compute) {
    StageState& ss = stage_state_[s];
    std::vector<TaskId> deps_of_last;  // what the last compute item waited for (beside collectives share it)
    TaskId before_last = NO_TASK;
    for (const PassItem& it : items) {
      if (!it.is_comm) {
        before_last = ss.last_compute;
        deps_of_last = ss.pending;
        const TaskId t = compute(s, it.time, it.name);
        for (TaskId d : ss.pending) depend(t, d);
        ss.pending.clear();
        if (first_compute == NO_TASK) first_compute = t;
        ss.last_compute = t;
        continue;
      }
      const TaskId c = comm_task(s, it.comm, S_COLL);
      if (it.beside >= 0) {
        depend(c, before_last);
        for (TaskId d : deps_of_last) depend(c, d);
        ss.pending.push_back(c);
      } else {
        depend(c, ss.last_compute);
        for (TaskId d : ss.pending) depend(c, d);
        ss.pending.assign(1, c);
      }
    }
  }

  std::size_t pass_index(std::int64_t mb, int chunk) const {
    return static_cast<std::size_t>(mb * plan_.vp + chunk);
  }

  void pass(int s, const PipelinePass& ps) {
    const StagePlan& st = plan_.stages[s];
    StageState& ss = stage_state_[s];
    const ChunkPlan& ch = st.chunks[ps.chunk];
    const int n = static_cast<int>(ch.units.size());
    const TaskId at_start = ss.last_compute;
    std::vector<TaskId> unit_last(n, NO_TASK);
    TaskId first = NO_TASK;
    const bool last_mb = ps.micro_batch == plan_.micro_batches - 1;
    cur_ = TaskContext{.micro_batch = ps.micro_batch, .chunk = ps.chunk, .pass = std::int8_t(ps.forward ? 1 : 2)};
    auto gather = [&](const UnitPlan& u, TaskId window) {
      const bool fwd = ps.forward;
      const int copy = fwd ? u.h2d : u.h2d_bwd;
      const int dense = fwd ? u.gather : u.gather_bwd;
      TaskId h = NO_TASK;
      if (copy >= 0) {
        h = comm_task(s, copy, S_H2D);
        depend(h, window);
      }
      for (int g : {dense, fwd ? u.gather_expert : u.gather_expert_bwd}) {
        if (g < 0) continue;
        const TaskId t = comm_task(s, g, S_DP_GATHER);
        depend(t, window);
        depend(t, h);
        ss.pending.push_back(t);
      }
      if (dense < 0 && h != NO_TASK) ss.pending.push_back(h);
    };
    // The rank's CPU thread: a unit's host work (module hooks) before its kernels can start; the
    // thread runs ahead of the GPU otherwise (the cpu stream keeps its order).
    auto host = [&](const UnitPlan& u) {
      const Duration d = ps.forward ? u.host_forward : u.host_backward;
      if (d <= Duration::zero()) return;
      ss.pending.push_back(compute(s, d, "module hooks", WorkClass::HOST, S_CPU));
    };
    // Then it issues the unit's kernels: the unit ends no earlier than its last launch.
    auto dispatch = [&](const UnitPlan& u) {
      const UnitPass& p = st.passes[u.pass];
      const Duration d = ps.forward ? p.forward_dispatch : p.backward_dispatch;
      if (d <= Duration::zero()) return;
      const TaskId issued = compute(s, d, "kernel dispatch", WorkClass::HOST, S_CPU);
      const TaskId m = marker(s);
      depend(m, issued);
      depend(m, ss.last_compute);
      ss.last_compute = m;
    };
    if (ps.forward) {
      for (int k = 0; k < n; ++k) {
        const UnitPlan& u = st.units[ch.units[k]];
        cur_.unit = ch.units[k];
        host(u);
        if (st.per_unit_gather) gather(u, k >= 2 ? unit_last[k - 2] : at_start);
        if (ps.micro_batch == 0) {
          auto it = ss.param_bucket_for.find({ps.chunk, k});
          if (it != ss.param_bucket_for.end()) ss.pending.push_back(it->second);
        }
        run_items(s, st.passes[u.pass].forward, first);
        dispatch(u);
        unit_last[k] = ss.last_compute;
      }
    } else {
      for (int k = n - 1; k >= 0; --k) {
        const UnitPlan& u = st.units[ch.units[k]];
        const int j = n - 1 - k;
        cur_.unit = ch.units[k];
        host(u);
        if (st.per_unit_gather && st.gather_for_backward) gather(u, j >= 2 ? unit_last[k + 2] : at_start);
        run_items(s, st.passes[u.pass].backward, first);
        dispatch(u);
        unit_last[k] = ss.last_compute;
        if (st.per_unit_reduce) {
          TaskId last_rs = NO_TASK;
          for (int r : {u.reduce, u.reduce_expert}) {
            if (r < 0) continue;
            const TaskId t = comm_task(s, r, S_DP_REDUCE);
            depend(t, ss.last_compute);
            arrows_.push_back({ss.last_compute, t});
            last_rs = t;
            if (!st.unit_comm_overlapped) ss.pending.push_back(t);
            if (last_mb) ss.grad_tasks.push_back(t);
          }
          if (u.d2h >= 0) {
            const TaskId t = comm_task(s, u.d2h, S_D2H);
            depend(t, last_rs != NO_TASK ? last_rs : ss.last_compute);
            if (!st.unit_comm_overlapped) ss.pending.push_back(t);
            if (last_mb) ss.grad_tasks.push_back(t);
          }
        }
        const bool buckets_now = (st.grad_sync == GradSync::LAST_MICRO_BATCH_OVERLAPPED && last_mb) ||
                                 st.grad_sync == GradSync::EVERY_MICRO_BATCH;
        if (buckets_now) {
          for (const BucketPlan& b : st.grad_buckets) {
            if (b.chunk != ps.chunk || b.after_unit != k) continue;
            const TaskId t = comm_task(s, b.comm, S_DP_REDUCE);
            depend(t, ss.last_compute);
            arrows_.push_back({ss.last_compute, t});
            if (st.grad_sync == GradSync::EVERY_MICRO_BATCH && !st.unit_comm_overlapped) ss.pending.push_back(t);
            if (last_mb) ss.grad_tasks.push_back(t);
          }
        }
      }
    }
    cur_.unit = -1;
    const std::size_t idx = pass_index(ps.micro_batch, ps.chunk);
    first_compute_[s][ps.forward ? 0 : 1][idx] = first;
    // Sends to the stage that continues this micro-batch.
    const int p = plan_.pp;
    const bool sends = p > 1 && (ps.forward ? !(s == p - 1 && ps.chunk == plan_.vp - 1) : !(s == 0 && ps.chunk == 0));
    if (sends) {
      const int comm = ps.forward ? st.pp_send_next : st.pp_send_prev;
      if (comm >= 0) {
        const TaskId t = comm_task(s, comm, S_PP);
        depend(t, ss.last_compute);
        for (TaskId d : ss.pending) depend(t, d);
        send_[s][ps.forward ? 0 : 1][idx] = t;
        if (plan_.blocking_p2p) ss.pending.push_back(t);
      } else {
        send_[s][ps.forward ? 0 : 1][idx] = ss.last_compute;
      }
    }
    cur_ = TaskContext{};
  }

  void link_pipeline() {
    const int p = plan_.pp;
    if (p <= 1) return;
    const int v = plan_.vp;
    for (int s = 0; s < p; ++s) {
      for (std::int64_t mb = 0; mb < plan_.micro_batches; ++mb) {
        for (int c = 0; c < v; ++c) {
          const std::size_t idx = pass_index(mb, c);
          // Forward: from stage s-1 chunk c, or (stage 0) from the last stage's chunk c-1.
          if (!(s == 0 && c == 0)) {
            const int from_s = s == 0 ? p - 1 : s - 1;
            const int from_c = s == 0 ? c - 1 : c;
            const TaskId snd = send_[from_s][0][pass_index(mb, from_c)];
            const TaskId dst = first_compute_[s][0][idx];
            depend(dst, snd);
            if (snd != NO_TASK && dst != NO_TASK) arrows_.push_back({snd, dst});
          }
          // Backward: from stage s+1 chunk c, or (last stage) from stage 0's chunk c+1.
          if (!(s == p - 1 && c == v - 1)) {
            const int from_s = s == p - 1 ? 0 : s + 1;
            const int from_c = s == p - 1 ? c + 1 : c;
            const TaskId snd = send_[from_s][1][pass_index(mb, from_c)];
            const TaskId dst = first_compute_[s][1][idx];
            depend(dst, snd);
            if (snd != NO_TASK && dst != NO_TASK) arrows_.push_back({snd, dst});
          }
        }
      }
    }
  }

  void finish_backward(int s) {
    const StagePlan& st = plan_.stages[s];
    StageState& ss = stage_state_[s];
    if (st.grad_sync == GradSync::AFTER_BACKWARD) {
      for (const BucketPlan& b : st.grad_buckets) {
        const TaskId t = comm_task(s, b.comm, S_DP_REDUCE);
        depend(t, ss.last_compute);
        for (TaskId d : ss.pending) depend(t, d);
        ss.grad_tasks.push_back(t);
      }
    }
    ss.grads_done = marker(s);
    depend(ss.grads_done, ss.last_compute);
    for (TaskId d : ss.pending) depend(ss.grads_done, d);
    ss.pending.clear();
    for (TaskId d : ss.grad_tasks) depend(ss.grads_done, d);
    if (st.tied_embedding_comm >= 0) {
      ss.tied = comm_task(s, st.tied_embedding_comm, S_DP_REDUCE);
      depend(ss.tied, ss.grads_done);
    }
  }

  void finish_step() {
    const int p = plan_.pp;
    // Tied embeddings: the first and last stages reduce together.
    if (p > 1 && stage_state_[0].tied != NO_TASK && stage_state_[p - 1].tied != NO_TASK) {
      depend(stage_state_[0].tied, stage_state_[p - 1].grads_done);
      depend(stage_state_[p - 1].tied, stage_state_[0].grads_done);
    }
    for (int s = 0; s < p; ++s) {
      const StagePlan& st = plan_.stages[s];
      StageState& ss = stage_state_[s];
      // Gradient norm: a barrier over every stage (and the data-parallel peers, by symmetry).
      if (st.grad_norm_comm >= 0) {
        ss.norm = comm_task(s, st.grad_norm_comm, S_COMPUTE);
      } else {
        ss.norm = marker(s);
      }
      for (int q = 0; q < p; ++q) {
        depend(ss.norm, stage_state_[q].grads_done);
        depend(ss.norm, stage_state_[q].tied);
      }
      TaskId last = ss.norm;
      if (st.optimizer.gpu_time > Duration::zero()) {
        last = compute(s, st.optimizer.gpu_time, "optimizer step", WorkClass::OPTIMIZER);
      }
      if (st.optimizer.cpu_time > Duration::zero() || st.optimizer.d2h >= 0) {
        TaskId d2h = NO_TASK;
        if (st.optimizer.d2h >= 0) {
          d2h = comm_task(s, st.optimizer.d2h, S_D2H);
          depend(d2h, ss.norm);
        }
        const TaskId cpu = compute(s, st.optimizer.cpu_time, "CPU Adam", WorkClass::CPU_OPTIMIZER, S_CPU);
        depend(cpu, ss.norm);
        depend(cpu, d2h);
        last = cpu;
      }
      if (st.optimizer.h2d >= 0) {
        const TaskId h = comm_task(s, st.optimizer.h2d, S_H2D);
        depend(h, last);
        last = h;
      }
      if (!st.param_gather_next_forward) {
        for (const BucketPlan& b : st.param_buckets) {
          const TaskId t = comm_task(s, b.comm, S_DP_GATHER);
          depend(t, last);
          last = t;
        }
      }
      const TaskId end = marker(s);
      depend(end, last);
    }
  }

  const StepPlan& plan_;
  const EventInputs& in_;
  const sim::Topology& topo_;
  sim::FlowNetwork& net_;
  const sim::ClusterLayout& layout_;
  sim::exec::TaskGraph graph_;
  std::vector<std::vector<std::uint32_t>> streams_;
  std::map<std::string, std::uint32_t> labels_;
  std::uint32_t marker_label_ = 0;
  std::vector<std::int32_t> task_comm_;
  TaskContext cur_;                    // what the tasks being added stand for
  std::vector<TaskContext> context_;   // per task
  std::vector<std::vector<std::vector<TaskId>>> first_compute_, send_;
  std::vector<std::vector<std::optional<std::vector<FlowTemplate>>>> flows_;
  std::vector<StageState> stage_state_;
  std::vector<FlowSpec> scratch_;
  std::vector<std::pair<TaskId, TaskId>> arrows_;
};

// ---- attribution ----
class Attribution {
 public:
  Attribution(const sim::exec::TaskGraph& g, const std::vector<sim::exec::TaskTiming>& tm, int rank)
      : g_(g), tm_(tm), rank_(rank) {}

  void run(StepBreakdown& b, std::map<int, double>& exposed_by_account) {
    TimePointLike prev_end = 0;
    for (TaskId t = 0; t < g_.size(); ++t) {
      if (g_.rank_of(t) != rank_ || g_.stream(g_.stream_of(t)).index != S_COMPUTE) continue;
      const double ready = tm_[t].ready.seconds();
      const double end = tm_[t].end.seconds();
      if (ready > prev_end) gap(prev_end, ready, tm_[t].binding, 0, b, exposed_by_account);
      own(t, ready, end, b, exposed_by_account);
      prev_end = std::max(prev_end, end);
    }
  }

 private:
  using TimePointLike = double;

  void charge(WorkClass cls, int comm_account, bool other_rank, double d, StepBreakdown& b,
              std::map<int, double>& ex) const {
    if (d <= 0) return;
    if (other_rank) {
      b.pipeline_bubble_s += d;
      return;
    }
    switch (cls) {
      case WorkClass::COMPUTE: b.compute_s += d; break;
      case WorkClass::OPTIMIZER:
      case WorkClass::CPU_OPTIMIZER: b.optimizer_s += d; break;
      case WorkClass::OFFLOAD: b.offload_s += d; break;
      case WorkClass::HOST: b.host_s += d; break;
      case WorkClass::MARKER: b.pipeline_bubble_s += d; break;
      default:
        b.exposed_comm_s += d;
        if (comm_account >= 0) ex[comm_account] += d;
        break;
    }
  }

  void own(TaskId t, double a, double e, StepBreakdown& b, std::map<int, double>& ex) const {
    charge(static_cast<WorkClass>(g_.kind(t)), g_.account(t), false, e - a, b, ex);
  }

  void gap(double a, double e, TaskId x, int depth, StepBreakdown& b, std::map<int, double>& ex) const {
    if (e <= a) return;
    if (x == NO_TASK || depth > 64) {
      b.pipeline_bubble_s += e - a;
      return;
    }
    const bool other = g_.rank_of(x) != rank_;
    if (other) {
      b.pipeline_bubble_s += e - a;
      return;
    }
    const double ready = tm_[x].ready.seconds();
    const double from = std::max(a, ready);
    charge(static_cast<WorkClass>(g_.kind(x)), g_.account(x), false, e - from, b, ex);
    if (ready > a) gap(a, std::min(ready, e), tm_[x].binding, depth + 1, b, ex);
  }

  const sim::exec::TaskGraph& g_;
  const std::vector<sim::exec::TaskTiming>& tm_;
  int rank_;
};

// Samples the utilisation of a few links at every recomputation of rates (trace counters).
class LinkSampler final : public sim::RateObserver {
 public:
  LinkSampler(const sim::Topology& topo, const std::vector<sim::LinkId>& links) : topo_(topo), links_(links) {
    series_.assign(links.size(), std::vector<CounterSample>{{Duration::zero(), 0.0}});
  }

  void on_rates_changed(const sim::FlowNetwork& net, sim::TimePoint now) override {
    const Duration t = now.since_start();
    for (std::size_t i = 0; i < links_.size(); ++i) {
      const double cap = topo_.link(links_[i]).bandwidth.bytes_per_second();
      // Max-min rates never load a link past its bandwidth; the clamp absorbs rounding.
      const double u = std::clamp(net.link_usage(links_[i]).load / cap, 0.0, 1.0);
      auto& v = series_[i];
      if (v.back().time == t) {
        v.back().value = u;
        if (v.size() >= 2 && v[v.size() - 2].value == u) v.pop_back();
      } else if (v.back().value != u) {
        v.push_back({t, u});
      }
    }
  }

  std::vector<std::vector<CounterSample>>& series() { return series_; }

 private:
  const sim::Topology& topo_;
  const std::vector<sim::LinkId>& links_;
  std::vector<std::vector<CounterSample>> series_;
};

constexpr std::size_t kTracedLinks = 8;

// The busiest links' utilisation over the step: the graph is run again on a fresh network with a
// sampler on them (the busiest are known only once the step has run); the same inputs give the
// same events, which the makespan check confirms.
void sample_links(const sim::Topology& topo, const sim::FlowNetwork& first, const sim::exec::TaskGraph& graph,
                  sim::TimePoint makespan, StepTimeline& timeline) {
  std::vector<sim::LinkId> links;
  for (sim::LinkId l : first.busiest_links(kTracedLinks)) {
    if (first.link_usage(l).bytes > 0) links.push_back(l);
  }
  if (links.empty()) return;
  sim::Simulation sim;
  auto& net = sim.emplace_model<sim::FlowNetwork>(sim, topo);
  LinkSampler sampler(topo, links);
  net.set_rate_observer(&sampler);
  auto& exec = sim.emplace_model<sim::exec::StreamExecutor>(sim, graph, &net);
  exec.run();
  sim.check_all_handled();
  if (exec.makespan() != makespan) throw std::logic_error("the traced rerun of the step took a different time");
  for (std::size_t i = 0; i < links.size(); ++i) {
    timeline.links.push_back(
        LinkSeries{topo.describe_link(links[i]), first.link_usage(links[i]).bytes, std::move(sampler.series()[i])});
  }
}

}  // namespace

StepOutcome simulate_step(const StepPlan& plan, const EventInputs& in, StepTimeline* timeline) {
  sim::ClusterConfig config;
  config.node = in.node;
  config.nodes = in.scenario.cluster.nodes;
  config.gpus_per_node = in.scenario.cluster.gpus_per_node;
  config.network = to_overrides(in.scenario.cluster.network);
  sim::Topology topo;
  try {
    topo = sim::build_topology(in.catalog, config, &in.params);
  } catch (const InputError& e) {
    throw e.located(in.scenario.file, "/cluster");
  }
  sim::Simulation sim;
  auto& net = sim.emplace_model<sim::FlowNetwork>(sim, topo);
  EventBuilder builder(plan, in, topo, net);
  builder.build();
  sim::exec::TaskGraph& graph = builder.graph();
  auto& exec = sim.emplace_model<sim::exec::StreamExecutor>(sim, graph, &net);
  exec.run();
  sim.check_all_handled();

  StepOutcome out;
  out.step_s = exec.makespan().seconds();
  // The critical rank: the stage that finishes last (ties: the most compute).
  const int p = plan.pp;
  std::vector<double> end(p, 0), kernels(p, 0);
  for (TaskId t = 0; t < graph.size(); ++t) {
    const int r = graph.rank_of(t);
    end[r] = std::max(end[r], exec.timing(t).end.seconds());
    if (static_cast<WorkClass>(graph.kind(t)) == WorkClass::COMPUTE) kernels[r] += graph.duration(t).seconds();
  }
  int crit = 0;
  for (int s = 1; s < p; ++s) {
    if (end[s] > end[crit] + 1e-12 || (std::abs(end[s] - end[crit]) <= 1e-12 && kernels[s] > kernels[crit])) crit = s;
  }
  out.critical_stage = crit;
  std::map<int, double> exposed;
  Attribution(graph, exec.timings(), crit).run(out.breakdown, exposed);
  // Summaries on the critical rank.
  const StagePlan& st = plan.stages[crit];
  std::map<int, CommSummary> by_account;
  for (TaskId t = 0; t < graph.size(); ++t) {
    if (graph.rank_of(t) != crit) continue;
    const int ci = builder.task_comm()[t];
    if (ci < 0) continue;
    const CommSpec& c = st.comms[ci];
    CommSummary& s = by_account[c.account];
    s.calls += c.repeat;
    s.bytes += Bytes::of(c.size.count() * c.repeat);
    s.time_s += (exec.timing(t).end - exec.timing(t).ready).seconds();
  }
  for (const auto& [a, e] : exposed) by_account[a].exposed_s += e;
  for (auto& [a, c] : by_account) {
    const CommAccount& acc = plan.accounts[static_cast<std::size_t>(a)];
    c.name = acc.name;
    c.group = acc.group;
    c.algorithm = acc.algorithm;
    c.transport = acc.transport;
    out.comms.push_back(c);
  }
  // The busiest link.
  const auto busiest = net.busiest_links(1);
  if (!busiest.empty() && out.step_s > 0) {
    const sim::LinkUsage u = net.link_usage(busiest.front());
    if (u.bytes > 0) {
      const double sat = static_cast<double>(u.saturated_ps) / 1e12 / out.step_s;
      char buf[96];
      std::snprintf(buf, sizeof buf, " (saturated %.0f%% of the step, %.3g GB carried)", 100 * sat, u.bytes / 1e9);
      out.link_note = "busiest link: " + topo.describe_link(busiest.front()) + buf;
    }
  }
  if (timeline != nullptr) {
    timeline->timings = exec.timings();
    timeline->arrows = std::move(builder.arrows());
    timeline->context = std::move(builder.context());
    describe_plan(plan, *timeline);
    timeline->links.clear();
    sample_links(topo, net, graph, exec.makespan(), *timeline);
    timeline->rank_names.clear();
    for (int s = 0; s < p; ++s) {
      timeline->rank_names.push_back("stage " + std::to_string(s) + " (rank " + std::to_string(plan.stages[s].rank) + ")");
    }
    timeline->graph = std::move(graph);
    timeline->memory.clear();
    timeline->memory_peak.clear();
    for (int s = 0; s < p; ++s) {
      timeline->memory.push_back(memory_track(plan, s, *timeline));
      timeline->memory_peak.push_back(plan.stages[s].memory.peak);
    }
  }
  return out;
}

}  // namespace clustersim::models
