#pragma once
// Runs a TaskGraph (task_graph.hpp) on a Simulation: tasks on in-order streams, dependencies
// across streams and ranks, transfers as flows on a FlowNetwork that every concurrently running
// transfer shares (max-min; flow_network.hpp), so a TP all-reduce and an FSDP all-gather on one
// NVLink, or pipeline sends and data-parallel reduce-scatters on one EFA rail, slow each other.
//
// Execution
//   pending(t) = (dependencies of t not yet finished) + (1 if the previous task of t's stream is
//   not yet finished). When it reaches 0 at time T the task starts:
//     compute   finishes at T + duration;
//     transfer  waits `duration`, starts all of its flows at once (one rate recomputation), and
//               finishes when the last flow completes; a transfer without flows is a delay;
//     marker    finishes at T.
//   SM sharing (task_graph.hpp): while tasks of a rank holding SM shares run, that rank's GPU
//   kernels progress at rate 1 - min(sum of shares, kMaxSmShare); when the sum changes, each running
//   kernel's remaining work is brought up to date and its completion rescheduled.
//   A finished task decrements its successors (its stream's next task and its dependents), in
//   the order the dependencies were added, so equal inputs give equal event orders.
//   The binding predecessor of a task is the one whose completion made it ready (the stream's
//   previous task or a dependency); breakdowns use it to say what a stream waited for.
// After run(), every task must have run: a cycle or a dependency on a task that never starts is a
// RuntimeError naming a task left waiting (describe_unfinished, Simulation::check_all_handled).

#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine/simulation.hpp"
#include "sim/exec/task_graph.hpp"
#include "sim/net/flow_network.hpp"

namespace clustersim::sim::exec {

struct TaskTiming {
  TimePoint ready;  // when its last predecessor finished (its start, since streams are in order)
  TimePoint start;  // when its work began (after the transfer delay for transfers)
  TimePoint end;
  TaskId binding = NO_TASK;  // the predecessor that finished last (NO_TASK: ready at t = 0)
  bool done = false;
};

// Told of each task as it finishes (traces, progress). Optional.
class ExecutionObserver {
 public:
  virtual void on_task_finished(const TaskGraph& graph, TaskId task, const TaskTiming& timing) = 0;

 protected:
  ~ExecutionObserver() = default;
};

class StreamExecutor final : public Model, private EventHandler, private FlowHandler {
 public:
  // The graph, the simulation and the network (may be null when no task has flows) must outlive
  // the executor.
  StreamExecutor(Simulation& sim, const TaskGraph& graph, FlowNetwork* network, ExecutionObserver* observer = nullptr);

  // Schedules the tasks that are ready at the current time; then run the simulation.
  void start();
  // start(), sim.run(), check that everything ran.
  void run();

  const TaskTiming& timing(TaskId t) const { return timing_[t]; }
  const std::vector<TaskTiming>& timings() const { return timing_; }
  std::size_t finished() const { return finished_; }
  // The latest end of any task.
  TimePoint makespan() const { return makespan_; }
  std::size_t memory_bytes() const;

  std::string_view model_name() const override { return "stream executor"; }
  void describe_unfinished(std::vector<std::string>& out) const override;

 private:
  enum : std::uint64_t { EV_COMPUTE_DONE = 0, EV_TRANSFER_DELAY = 1 };
  void handle_event(Simulation& sim, std::uint64_t tag) override;
  void on_flow_complete(const FlowCompletion& done) override;
  void make_ready(TaskId t, TaskId binding);
  void begin(TaskId t);
  void start_flows(TaskId t);
  void finish(TaskId t);
  struct Running {  // a GPU kernel that SM sharing can slow
    TaskId task = NO_TASK;
    double left_ps = 0;  // work left at full rate, as of `since`
    TimePoint since;
    EventId event;
  };
  double rate(int rank) const;
  void change_share(int rank, double delta);
  void schedule_running(Running& r, double rate);

  Simulation& sim_;
  const TaskGraph& graph_;
  FlowNetwork* network_;
  ExecutionObserver* observer_;
  // Successors in CSR form (next on stream first, then dependents in insertion order).
  std::vector<std::uint32_t> succ_begin_;
  std::vector<TaskId> succ_;
  std::vector<std::uint32_t> pending_;
  std::vector<std::uint32_t> flows_left_;
  std::vector<TaskTiming> timing_;
  std::vector<FlowNetwork::BulkTransfer> bulk_;  // scratch
  std::vector<TaskId> work_;                     // ready tasks not yet begun
  std::vector<double> share_;                    // per rank: SM share held by running tasks
  std::vector<std::vector<Running>> running_;    // per rank: kernels that sharing slows
  bool draining_ = false;
  std::size_t finished_ = 0;
  TimePoint makespan_;
  bool started_ = false;
};

}  // namespace clustersim::sim::exec
