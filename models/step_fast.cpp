#include "models/step_fast.hpp"

#include <algorithm>
#include <map>

namespace clustersim::models {

namespace {

// Time of one part of a step and what it is made of.
struct Tally {
  double total = 0;    // seconds on the critical path
  double kernels = 0;  // of which compute kernels
  double offload = 0;  // of which waiting for host copies
  double host = 0;     // of which waiting for the rank's CPU thread (framework hooks)
  std::map<int, double> exposed;  // of which waiting for collectives, by account
  struct Busy {
    double calls = 0, seconds = 0, bytes = 0;
  };
  std::map<int, Busy> busy;  // by account (for summaries)
  void add(const Tally& o, double k = 1) {
    total += k * o.total;
    kernels += k * o.kernels;
    offload += k * o.offload;
    host += k * o.host;
    for (const auto& [a, v] : o.exposed) exposed[a] += k * v;
    for (const auto& [a, v] : o.busy) {
      busy[a].calls += k * v.calls;
      busy[a].seconds += k * v.seconds;
      busy[a].bytes += k * v.bytes;
    }
  }
  double comm() const {
    double s = 0;
    for (const auto& [a, v] : exposed) s += v;
    return s;
  }
};

double sec(Duration d) { return d.seconds(); }

class StageFast {
 public:
  StageFast(const StagePlan& st) : st_(st) {
    for (const UnitPlan& u : st.units) host_ = host_ || u.host_forward > Duration::zero() || u.host_backward > Duration::zero();
    for (const UnitPass& p : st.passes) {
      host_ = host_ || p.forward_dispatch > Duration::zero() || p.backward_dispatch > Duration::zero();
    }
  }

  void use(Tally& t, int comm, double calls = 1) const {
    if (comm < 0) return;
    const CommSpec& c = st_.comms[comm];
    t.busy[c.account].calls += calls * c.repeat;
    t.busy[c.account].seconds += calls * sec(c.time());
    t.busy[c.account].bytes += calls * c.repeat * c.size.as_double();
  }
  void expose(Tally& t, int comm, double seconds) const {
    if (comm < 0 || seconds <= 0) return;
    const CommSpec& c = st_.comms[comm];
    t.total += seconds;
    if (c.cls == WorkClass::OFFLOAD) {
      t.offload += seconds;
    } else {
      t.exposed[c.account] += seconds;
    }
  }
  double time(int comm) const { return comm < 0 ? 0.0 : sec(st_.comms[comm].time()); }

  // One list of items.
  Tally items(const std::vector<PassItem>& list) const {
    Tally t;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const PassItem& it = list[i];
      if (!it.is_comm) {
        double slowest_side = 0, share = 0;
        int side = -1;
        for (std::size_t j = i + 1; j < list.size() && list[j].is_comm && list[j].beside == static_cast<int>(i); ++j) {
          if (time(list[j].comm) > slowest_side) {
            slowest_side = time(list[j].comm);
            side = list[j].comm;
            share = st_.comms[list[j].comm].sm_share;
          }
          use(t, list[j].comm);
        }
        const double c = sec(it.time);
        const double T = slowest_side;
        // Kernels beside a collective run on 1 - f of the SMs while it lasts.
        if (c + share * T >= T) {
          t.total += c + share * T;
          t.kernels += c + share * T;
        } else {
          const double k = share < 1 ? c / (1 - share) : c;
          t.total += k;
          t.kernels += k;
          expose(t, side, T - k);
        }
        continue;
      }
      if (it.beside >= 0) continue;  // counted with its compute item
      use(t, it.comm);
      expose(t, it.comm, time(it.comm));
    }
    return t;
  }

  double share(int comm) const { return comm < 0 ? 0.0 : st_.comms[comm].sm_share; }
  double unit_gather(const UnitPlan& u) const { return time(u.gather) + time(u.gather_expert); }
  double unit_gather_bwd(const UnitPlan& u) const { return time(u.gather_bwd) + time(u.gather_expert_bwd); }
  double unit_reduce(const UnitPlan& u) const { return time(u.reduce) + time(u.reduce_expert); }

  // Forward of one chunk for one micro-batch.
  Tally forward(const ChunkPlan& ch, bool first_micro_batch_param_wait) const {
    (void)first_micro_batch_param_wait;
    Tally t;
    const auto& units = ch.units;
    const std::size_t n = units.size();
    if (!st_.per_unit_gather) {
      std::vector<double> gpu(host_ ? n : 0);
      for (std::size_t k = 0; k < n; ++k) {
        const double before = t.total;
        t.add(items(st_.passes[st_.units[units[k]].pass].forward));
        if (host_) gpu[k] = t.total - before;
      }
      host_floor(t, units, gpu, false);
      return t;
    }
    for (std::size_t k = 0; k < n; ++k) {
      const UnitPlan& u = st_.units[units[k]];
      use(t, u.gather);
      use(t, u.gather_expert);
      use(t, u.h2d);
    }
    if (!st_.unit_comm_overlapped) {
      std::vector<double> gpu(host_ ? n : 0);
      for (std::size_t k = 0; k < n; ++k) {
        const UnitPlan& u = st_.units[units[k]];
        const double before = t.total;
        expose(t, u.h2d, time(u.h2d));
        expose(t, u.gather, time(u.gather));
        expose(t, u.gather_expert, time(u.gather_expert));
        t.add(items(st_.passes[u.pass].forward));
        if (host_) gpu[k] = t.total - before;
      }
      host_floor(t, units, gpu, false);
      return t;
    }
    // The first unit's fetch is exposed; then each unit's compute hides the next unit's fetch.
    std::vector<double> gpu(host_ ? n : 0);
    {
      const UnitPlan& u0 = st_.units[units[0]];
      expose(t, u0.h2d, time(u0.h2d));
      expose(t, u0.gather, unit_gather(u0));
    }
    for (std::size_t k = 0; k < n; ++k) {
      const double before = k == 0 ? 0.0 : t.total;
      const Tally c = items(st_.passes[st_.units[units[k]].pass].forward);
      t.add(c);
      if (k + 1 < n) {
        const UnitPlan& nx = st_.units[units[k + 1]];
        const double h = time(nx.h2d), g = unit_gather(nx);
        const double slow = share(nx.gather) * std::min(g, c.total);
        t.total += slow;
        t.kernels += slow;
        const double excess = (h + g) - c.total - slow;
        if (excess > 0) {
          // Attribute the wait to whichever copy is the larger part of the fetch.
          if (h > g) {
            expose(t, nx.h2d, excess);
          } else {
            expose(t, nx.gather, excess);
          }
        }
      }
      if (host_) gpu[k] = t.total - before;
    }
    host_floor(t, units, gpu, false);
    return t;
  }

  // The rank's CPU thread runs each unit's host work (UnitPlan::host_forward, host_backward) before
  // the GPU can start the unit's kernels, then issues the kernels (UnitPass::forward_dispatch,
  // backward_dispatch), and runs ahead of the GPU otherwise. With h_k the hooks and d_k the
  // dispatch of unit k, H_k = sum of h_i + d_i for i < k, plus h_k: unit k starts on the GPU at
  // max(end of unit k-1, H_k) and ends at max(start + its GPU time, H_k + d_k) (`gpu`: each unit's
  // time on the GPU, indexed as `units`, run in reverse for the backward). The delay this adds is
  // the host's exposed time.
  void host_floor(Tally& t, const std::vector<int>& units, const std::vector<double>& gpu, bool reverse) const {
    if (!host_) return;
    const std::size_t n = units.size();
    double host = 0, end = 0, sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t k = reverse ? n - 1 - i : i;
      const UnitPlan& u = st_.units[units[k]];
      const UnitPass& p = st_.passes[u.pass];
      host += sec(reverse ? u.host_backward : u.host_forward);
      const double start = std::max(end, host);
      host += sec(reverse ? p.backward_dispatch : p.forward_dispatch);
      end = std::max(start + gpu[k], host);
      sum += gpu[k];
    }
    if (end <= sum) return;
    t.total += end - sum;
    t.host += end - sum;
  }

  // Backward of one chunk for one micro-batch; `reduce_tail`: wait for the last reduce-scatter.
  Tally backward(const ChunkPlan& ch, bool reduce_tail) const {
    Tally t;
    const auto& units = ch.units;
    const int n = static_cast<int>(units.size());
    if (!st_.per_unit_gather && !st_.per_unit_reduce) {
      std::vector<double> gpu(host_ ? static_cast<std::size_t>(n) : 0);
      for (int k = n - 1; k >= 0; --k) {
        const double before = t.total;
        t.add(items(st_.passes[st_.units[units[k]].pass].backward));
        if (host_) gpu[static_cast<std::size_t>(k)] = t.total - before;
      }
      host_floor(t, units, gpu, true);
      return t;
    }
    for (int k = 0; k < n; ++k) {
      const UnitPlan& u = st_.units[units[k]];
      if (st_.gather_for_backward) {
        use(t, u.gather_bwd);
        use(t, u.gather_expert_bwd);
        use(t, u.h2d_bwd);
      }
      use(t, u.reduce);
      use(t, u.reduce_expert);
      use(t, u.d2h);
    }
    auto g_of = [&](int k) { return st_.gather_for_backward && k >= 0 ? unit_gather_bwd(st_.units[units[k]]) : 0.0; };
    auto h_of = [&](int k) { return st_.gather_for_backward && k >= 0 ? time(st_.units[units[k]].h2d_bwd) : 0.0; };
    auto r_of = [&](int k) { return k < n ? unit_reduce(st_.units[units[k]]) : 0.0; };
    auto d_of = [&](int k) { return k < n ? time(st_.units[units[k]].d2h) : 0.0; };
    if (!st_.unit_comm_overlapped) {
      std::vector<double> gpu(host_ ? static_cast<std::size_t>(n) : 0);
      for (int k = n - 1; k >= 0; --k) {
        const UnitPlan& u = st_.units[units[k]];
        const double before = t.total;
        if (st_.gather_for_backward) {
          expose(t, u.h2d_bwd, time(u.h2d_bwd));
          expose(t, u.gather_bwd, unit_gather_bwd(u));
        }
        t.add(items(st_.passes[u.pass].backward));
        expose(t, u.reduce, r_of(k));
        expose(t, u.d2h, d_of(k));
        if (host_) gpu[static_cast<std::size_t>(k)] = t.total - before;
      }
      host_floor(t, units, gpu, true);
      return t;
    }
    if (st_.gather_for_backward) {
      const UnitPlan& last = st_.units[units[n - 1]];
      expose(t, last.h2d_bwd, h_of(n - 1));
      expose(t, last.gather_bwd, g_of(n - 1));
    }
    std::vector<double> gpu(host_ ? static_cast<std::size_t>(n) : 0);
    for (int k = n - 1; k >= 0; --k) {
      const double before = k == n - 1 ? 0.0 : t.total;
      const Tally c = items(st_.passes[st_.units[units[k]].pass].backward);
      t.add(c);
      const double net = g_of(k - 1) + r_of(k + 1);
      const double pcie = h_of(k - 1) + d_of(k + 1);
      const double fetch = h_of(k - 1) + g_of(k - 1);
      const double need = std::max({net, pcie, fetch});
      const UnitPlan* pu = k - 1 >= 0 ? &st_.units[units[k - 1]] : nullptr;
      const UnitPlan* nu = k + 1 < n ? &st_.units[units[k + 1]] : nullptr;
      const double slow = (pu && st_.gather_for_backward ? share(pu->gather_bwd) * std::min(g_of(k - 1), c.total) : 0.0) +
                          (nu ? share(nu->reduce) * std::min(r_of(k + 1), c.total) : 0.0);
      t.total += slow;
      t.kernels += slow;
      const double excess = need - c.total - slow;
      if (excess > 0) {
        const UnitPlan* prev = k - 1 >= 0 ? &st_.units[units[k - 1]] : nullptr;
        const UnitPlan* next = k + 1 < n ? &st_.units[units[k + 1]] : nullptr;
        if (pcie >= net && pcie >= fetch) {
          expose(t, prev && prev->h2d_bwd >= 0 ? prev->h2d_bwd : (next ? next->d2h : -1), excess);
        } else if (net >= fetch) {
          expose(t, prev && prev->gather_bwd >= 0 ? prev->gather_bwd : (next ? next->reduce : -1), excess);
        } else {
          expose(t, prev ? prev->gather_bwd : -1, excess);
        }
      }
      if (host_) gpu[static_cast<std::size_t>(k)] = t.total - before;
    }
    host_floor(t, units, gpu, true);
    if (reduce_tail) {
      const UnitPlan& first = st_.units[units[0]];
      expose(t, first.reduce, r_of(0));
      expose(t, first.d2h, d_of(0));
    }
    return t;
  }

  // Buckets completed by the last backward of each chunk (chunks in cooldown order v-1 .. 0),
  // run back to back on one stream: how far the last one ends after the backward does.
  double bucket_tail(const std::vector<BucketPlan>& buckets, Tally& t) const {
    if (buckets.empty()) return 0;
    std::vector<double> unit_done(st_.units.size(), 0.0);
    double clock = 0;
    for (int c = static_cast<int>(st_.chunks.size()) - 1; c >= 0; --c) {
      const auto& units = st_.chunks[c].units;
      for (int k = static_cast<int>(units.size()) - 1; k >= 0; --k) {
        clock += items(st_.passes[st_.units[units[k]].pass].backward).total;
        unit_done[units[k]] = clock;
      }
    }
    // Order the buckets by readiness (as they would be issued).
    std::vector<std::pair<double, int>> order;
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      const BucketPlan& b = buckets[i];
      const int unit = st_.chunks[b.chunk].units[std::max(0, b.after_unit)];
      order.push_back({unit_done[unit], static_cast<int>(i)});
    }
    std::stable_sort(order.begin(), order.end());
    double finish = 0, slow = 0;
    for (const auto& [ready, i] : order) {
      const double start = std::max(finish, ready);
      finish = start + time(buckets[i].comm);
      use(t, buckets[i].comm);
      // Kernels of the backward that still runs beside this bucket lose its SMs.
      slow += share(buckets[i].comm) * std::max(0.0, std::min(finish, clock) - start);
    }
    t.total += slow;
    t.kernels += slow;
    return std::max(0.0, finish - clock - slow);
  }

  const StagePlan& st_;
  bool host_ = false;  // some unit has CPU-thread work (host_floor applies)
};

}  // namespace

StepOutcome evaluate_fast(const StepPlan& plan) {
  const int p = plan.pp;
  const double m = static_cast<double>(plan.micro_batches);
  const double v = plan.vp;
  std::vector<Tally> per_mb(p), last_mb(p), once(p);
  std::vector<double> T(p, 0), backward_chunk(p, 0);
  std::vector<double> send(p, 0);
  for (int s = 0; s < p; ++s) {
    const StagePlan& st = plan.stages[s];
    StageFast f(st);
    Tally mb;
    for (const auto& ch : st.chunks) mb.add(f.forward(ch, false));
    Tally bw;
    for (int c = static_cast<int>(st.chunks.size()) - 1; c >= 0; --c) bw.add(f.backward(st.chunks[c], true));
    mb.add(bw);
    backward_chunk[s] = bw.total / v;
    // Buckets reduced in every micro-batch (DeepSpeed ZeRO-2) stretch each backward.
    if (st.grad_sync == GradSync::EVERY_MICRO_BATCH) {
      Tally b;
      double total = 0;
      for (const auto& bk : st.grad_buckets) {
        total += f.time(bk.comm);
        f.use(b, bk.comm);
      }
      double slow = 0;
      if (st.unit_comm_overlapped) {
        for (const auto& bk : st.grad_buckets) slow += f.share(bk.comm) * f.time(bk.comm);
        slow = std::min(slow, 0.5 * bw.total);
        b.total += slow;
        b.kernels += slow;
      }
      const double extra = st.unit_comm_overlapped ? std::max(0.0, total - bw.total - slow) : total;
      if (!st.grad_buckets.empty()) f.expose(b, st.grad_buckets.back().comm, extra);
      mb.add(b);
    }
    per_mb[s] = mb;
    T[s] = mb.total;
    if (st.pp_send_next >= 0) send[s] = f.time(st.pp_send_next);
  }
  int crit = 0;
  for (int s = 1; s < p; ++s) {
    if (T[s] > T[crit]) crit = s;
  }
  // Pipeline.
  double pipe = m * T[crit];
  double bubble = 0;
  double blocking = 0;
  double t_send = 0;
  for (int s = 0; s < p; ++s) t_send = std::max(t_send, send[s]);
  if (p > 1) {
    for (int s = 0; s < p; ++s) {
      if (s != crit) bubble += T[s] / v;
    }
    bubble += 2.0 * (p - 1) * t_send;
    if (plan.blocking_p2p) blocking = (crit == 0 || crit == p - 1 ? 1.0 : 2.0) * m * t_send;
  }
  pipe += bubble + blocking;

  // End of the step on each stage, relative to the end of the pipeline.
  Tally tail_tally;
  double param_wait = 0;
  double end_extra = 0;
  int end_stage = crit;
  for (int s = 0; s < p; ++s) {
    const StagePlan& st = plan.stages[s];
    StageFast f(st);
    Tally t;
    double offset = 0;  // stage s finishes its last backward this much before stage 0
    for (int j = 0; j < s; ++j) offset += backward_chunk[j];
    double grad = 0;
    if (st.grad_sync == GradSync::LAST_MICRO_BATCH_OVERLAPPED) {
      grad = f.bucket_tail(st.grad_buckets, t);
    } else if (st.grad_sync == GradSync::AFTER_BACKWARD) {
      for (const auto& b : st.grad_buckets) {
        grad += f.time(b.comm);
        f.use(t, b.comm);
      }
    }
    double extra = std::max(0.0, grad - offset);
    if (extra > 0 && !st.grad_buckets.empty()) f.expose(t, st.grad_buckets.back().comm, extra);
    const double tied = f.time(st.tied_embedding_comm);
    f.use(t, st.tied_embedding_comm);
    f.expose(t, st.tied_embedding_comm, tied);
    f.use(t, st.grad_norm_comm);
    f.expose(t, st.grad_norm_comm, f.time(st.grad_norm_comm));
    // Optimizer.
    t.total += sec(st.optimizer.gpu_time) + sec(st.optimizer.cpu_time);
    f.use(t, st.optimizer.d2h);
    f.expose(t, st.optimizer.d2h, f.time(st.optimizer.d2h));
    f.use(t, st.optimizer.h2d);
    f.expose(t, st.optimizer.h2d, f.time(st.optimizer.h2d));
    if (!st.param_gather_next_forward) {
      for (const auto& b : st.param_buckets) {
        f.use(t, b.comm);
        f.expose(t, b.comm, f.time(b.comm));
      }
    } else if (!st.param_buckets.empty()) {
      // The first forward of the step waits for buckets that arrive after the unit needing them.
      std::vector<double> unit_start(st.units.size(), 0.0);
      double clock = 0;
      for (const auto& ch : st.chunks) {
        for (int u : ch.units) {
          unit_start[u] = clock;
          clock += f.items(st.passes[st.units[u].pass].forward).total;
        }
      }
      double finish = 0, wait = 0;
      for (const auto& b : st.param_buckets) {
        finish += f.time(b.comm);
        f.use(t, b.comm);
        const int unit = st.chunks[b.chunk].units[std::max(0, b.after_unit)];
        wait = std::max(wait, finish - unit_start[unit]);
      }
      // Later stages wait for the pipeline to fill anyway.
      double fill = 0;
      for (int j = 0; j < s; ++j) fill += T[j] / 2 / v;
      wait = std::max(0.0, wait - fill);
      if (wait > param_wait) {
        param_wait = wait;
        if (!st.param_buckets.empty()) {
          Tally w;
          f.expose(w, st.param_buckets.back().comm, wait);
          t.add(w);
        }
      }
    }
    // Time after the pipeline ends: stage s's own extras minus how early it finished.
    const double stage_extra = t.total;
    if (stage_extra > end_extra || s == 0) {
      if (stage_extra >= end_extra) {
        end_extra = stage_extra;
        end_stage = s;
        tail_tally = t;
      }
    }
  }
  StepOutcome out;
  out.critical_stage = crit;
  out.step_s = pipe + end_extra;
  // Breakdown on the critical stage: its micro-batches, the pipeline bubble, then the stage that
  // ends last's extras (optimizer, exposed gradient and parameter collectives).
  Tally all;
  all.add(per_mb[crit], m);
  all.add(tail_tally);
  const double optimizer = sec(plan.stages[end_stage].optimizer.gpu_time) + sec(plan.stages[end_stage].optimizer.cpu_time);
  out.breakdown.compute_s = all.kernels;
  out.breakdown.optimizer_s = optimizer;
  out.breakdown.offload_s = all.offload;
  out.breakdown.host_s = all.host;
  out.breakdown.exposed_comm_s = all.comm() + blocking;
  out.breakdown.pipeline_bubble_s = bubble;
  // Summaries (the critical stage's collectives over the step).
  Tally busy;
  busy.add(per_mb[crit], m);
  busy.add(tail_tally);
  std::map<int, CommSummary> by_account;
  for (const auto& [a, b] : busy.busy) {
    CommSummary& c = by_account[a];
    c.calls = static_cast<std::int64_t>(b.calls + 0.5);
    c.time_s = b.seconds;
    c.bytes = Bytes::from_double(b.bytes);
  }
  for (const auto& [a, e] : all.exposed) by_account[a].exposed_s += e;
  for (auto& [a, c] : by_account) {
    const CommAccount& acc = plan.accounts[static_cast<std::size_t>(a)];
    c.name = acc.name;
    c.group = acc.group;
    c.algorithm = acc.algorithm;
    c.transport = acc.transport;
    out.comms.push_back(c);
  }
  return out;
}

}  // namespace clustersim::models
