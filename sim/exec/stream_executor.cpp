#include "sim/exec/stream_executor.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "hardware/errors.hpp"

namespace clustersim::sim::exec {

namespace {
constexpr std::uint64_t kTaskShift = 1;  // event tag = task << 1 | event kind
}

StreamExecutor::StreamExecutor(Simulation& sim, const TaskGraph& graph, FlowNetwork* network,
                               ExecutionObserver* observer)
    : sim_(sim), graph_(graph), network_(network), observer_(observer) {
  const std::size_t n = graph_.size();
  pending_.assign(n, 0);
  flows_left_.assign(n, 0);
  timing_.assign(n, TaskTiming{});
  // Stream order: the previous task of each stream.
  std::vector<TaskId> last_on_stream(graph_.stream_count(), NO_TASK);
  std::vector<TaskId> next_on_stream(n, NO_TASK);
  std::vector<std::uint32_t> count(n + 1, 0);
  for (TaskId t = 0; t < n; ++t) {
    TaskId& prev = last_on_stream[graph_.stream_of(t)];
    if (prev != NO_TASK) {
      next_on_stream[prev] = t;
      ++pending_[t];
      ++count[prev];
    }
    prev = t;
    if (graph_.work(t) == WorkKind::TRANSFER && !graph_.flows(t).empty() && network_ == nullptr) {
      throw std::logic_error("StreamExecutor: a transfer task has flows but no network was given");
    }
  }
  int ranks = 0;
  for (std::uint32_t st = 0; st < graph_.stream_count(); ++st) ranks = std::max(ranks, graph_.stream(st).rank + 1);
  share_.assign(static_cast<std::size_t>(ranks), 0.0);
  running_.resize(static_cast<std::size_t>(ranks));
  const auto to = graph_.dependency_tasks();
  const auto from = graph_.dependency_befores();
  for (std::size_t i = 0; i < to.size(); ++i) {
    ++pending_[to[i]];
    ++count[from[i]];
  }
  succ_begin_.assign(n + 1, 0);
  for (std::size_t t = 0; t < n; ++t) succ_begin_[t + 1] = succ_begin_[t] + count[t];
  succ_.assign(succ_begin_[n], NO_TASK);
  std::vector<std::uint32_t> fill(succ_begin_.begin(), succ_begin_.end() - 1);
  for (TaskId t = 0; t < n; ++t) {
    if (next_on_stream[t] != NO_TASK) succ_[fill[t]++] = next_on_stream[t];
  }
  for (std::size_t i = 0; i < to.size(); ++i) succ_[fill[from[i]]++] = to[i];
}

void StreamExecutor::start() {
  if (started_) throw std::logic_error("StreamExecutor::start called twice");
  started_ = true;
  // Collect first: tasks that become ready while these run must not be started twice.
  std::vector<TaskId> roots;
  for (TaskId t = 0; t < graph_.size(); ++t) {
    if (pending_[t] == 0) roots.push_back(t);
  }
  for (TaskId t : roots) make_ready(t, NO_TASK);
}

void StreamExecutor::run() {
  start();
  sim_.run();
  if (finished_ != graph_.size()) {
    std::vector<std::string> lines;
    describe_unfinished(lines);
    throw RuntimeError("task graph did not finish: " + (lines.empty() ? std::string("?") : lines.front()));
  }
}

void StreamExecutor::make_ready(TaskId t, TaskId binding) {
  TaskTiming& tm = timing_[t];
  tm.ready = sim_.now();
  tm.binding = binding;
  // Tasks that finish at once (markers, zero-time work) would recurse through their successors;
  // a work list keeps the stack flat on long chains.
  work_.push_back(t);
  if (draining_) return;
  draining_ = true;
  for (std::size_t i = 0; i < work_.size(); ++i) begin(work_[i]);  // in the order they became ready
  work_.clear();
  draining_ = false;
}

void StreamExecutor::begin(TaskId t) {
  const std::uint64_t tag = static_cast<std::uint64_t>(t) << kTaskShift;
  if (graph_.sm_share(t) > 0 && graph_.work(t) != WorkKind::MARKER) change_share(graph_.rank_of(t), graph_.sm_share(t));
  switch (graph_.work(t)) {
    case WorkKind::MARKER:
      timing_[t].start = sim_.now();
      finish(t);
      break;
    case WorkKind::COMPUTE:
      timing_[t].start = sim_.now();
      if (graph_.duration(t) == Duration::zero()) {
        finish(t);
      } else if (graph_.uses_sms(t)) {
        const int rank = graph_.rank_of(t);
        Running r;
        r.task = t;
        r.left_ps = static_cast<double>(graph_.duration(t).picoseconds());
        r.since = sim_.now();
        schedule_running(r, rate(rank));
        running_[static_cast<std::size_t>(rank)].push_back(r);
      } else {
        sim_.schedule_after(graph_.duration(t), *this, tag | EV_COMPUTE_DONE);
      }
      break;
    case WorkKind::TRANSFER:
      if (graph_.duration(t) == Duration::zero()) {
        start_flows(t);
      } else {
        sim_.schedule_after(graph_.duration(t), *this, tag | EV_TRANSFER_DELAY);
      }
      break;
  }
}

double StreamExecutor::rate(int rank) const {
  return 1.0 - std::min(share_[static_cast<std::size_t>(rank)], kMaxSmShare);
}

void StreamExecutor::schedule_running(Running& r, double rt) {
  const double ps = std::max(0.0, r.left_ps) / rt;
  const std::uint64_t tag = (static_cast<std::uint64_t>(r.task) << kTaskShift) | EV_COMPUTE_DONE;
  r.event = sim_.schedule_after(Duration::ps(static_cast<std::int64_t>(std::llround(ps))), *this, tag);
}

void StreamExecutor::change_share(int rank, double delta) {
  const double old_rate = rate(rank);
  double& sh = share_[static_cast<std::size_t>(rank)];
  sh += delta;
  if (sh < 1e-9) sh = 0;
  const double new_rate = rate(rank);
  if (new_rate == old_rate) return;
  for (Running& r : running_[static_cast<std::size_t>(rank)]) {
    r.left_ps -= static_cast<double>((sim_.now() - r.since).picoseconds()) * old_rate;
    r.since = sim_.now();
    sim_.cancel(r.event);
    schedule_running(r, new_rate);
  }
}

void StreamExecutor::start_flows(TaskId t) {
  timing_[t].start = sim_.now();
  const auto flows = graph_.flows(t);
  if (flows.empty()) {
    finish(t);
    return;
  }
  flows_left_[t] = static_cast<std::uint32_t>(flows.size());
  bulk_.clear();
  for (const auto& f : flows) {
    FlowNetwork::BulkTransfer b;
    b.route = &f.route;
    b.bytes = f.bytes;
    b.options.rate_cap = f.cap;
    b.options.tag = t;
    bulk_.push_back(b);
  }
  network_->transfer_many(bulk_, *this);
}

void StreamExecutor::handle_event(Simulation&, std::uint64_t tag) {
  const auto t = static_cast<TaskId>(tag >> kTaskShift);
  if ((tag & 1) == EV_TRANSFER_DELAY) {
    start_flows(t);
  } else {
    finish(t);
  }
}

void StreamExecutor::on_flow_complete(const FlowCompletion& done) {
  const auto t = static_cast<TaskId>(done.tag);
  if (--flows_left_[t] == 0) finish(t);
}

void StreamExecutor::finish(TaskId t) {
  const int rank = graph_.rank_of(t);
  if (graph_.uses_sms(t)) {
    auto& list = running_[static_cast<std::size_t>(rank)];
    list.erase(std::remove_if(list.begin(), list.end(), [t](const Running& r) { return r.task == t; }), list.end());
  }
  if (graph_.sm_share(t) > 0 && graph_.work(t) != WorkKind::MARKER) change_share(rank, -graph_.sm_share(t));
  TaskTiming& tm = timing_[t];
  tm.end = sim_.now();
  tm.done = true;
  ++finished_;
  if (tm.end > makespan_) makespan_ = tm.end;
  if (observer_ != nullptr) observer_->on_task_finished(graph_, t, tm);
  for (std::uint32_t i = succ_begin_[t]; i < succ_begin_[t + 1]; ++i) {
    const TaskId s = succ_[i];
    if (--pending_[s] == 0) make_ready(s, t);
  }
}

void StreamExecutor::describe_unfinished(std::vector<std::string>& out) const {
  if (!started_) return;
  std::size_t shown = 0;
  for (TaskId t = 0; t < graph_.size() && shown < 3; ++t) {
    if (timing_[t].done) continue;
    const auto& s = graph_.stream(graph_.stream_of(t));
    out.push_back("task '" + std::string(graph_.name(t)) + "' on rank " + std::to_string(s.rank) + " stream '" +
                  s.name + "' never finished (" + std::to_string(pending_[t]) + " predecessors left)");
    ++shown;
  }
}

std::size_t StreamExecutor::memory_bytes() const {
  return succ_begin_.capacity() * 4 + succ_.capacity() * sizeof(TaskId) + pending_.capacity() * 4 +
         flows_left_.capacity() * 4 + timing_.capacity() * sizeof(TaskTiming) +
         bulk_.capacity() * sizeof(FlowNetwork::BulkTransfer);
}

}  // namespace clustersim::sim::exec
