#pragma once
// A task graph on GPU streams: the work of a few simulated ranks as tasks placed on in-order
// streams (CUDA semantics), with dependencies between them, for StreamExecutor to run on the
// event simulation.
//
// Semantics
//   - A stream belongs to one rank and runs its tasks one at a time, in the order they were added
//     (a CUDA stream; a host thread doing CPU Adam is a stream too).
//   - A task starts when the task before it on its stream has finished and every task it depends
//     on has finished (cudaStreamWaitEvent across streams and ranks).
//   - A task's work is one of
//       compute   a fixed duration (kernels whose time the compute model gave),
//       transfer  a fixed delay, then a set of flows on the flow network that all have to finish
//                 (a collective's traffic on the links of the ranks it stands for, a pipeline send,
//                 a PCIe copy); the delay is the part of the time that does not scale with
//                 bandwidth (launch and protocol latency),
//       marker    nothing (a zero-time join point).
//   - SM sharing: a task may occupy a share of its GPU's streaming multiprocessors while it runs
//     (a NCCL collective: one thread block per channel), and a task may run on them (GPU kernels).
//     While tasks of one rank occupy a total share f (at most kMaxSmShare), that rank's kernels
//     progress at rate 1 - f: a kernel of duration d overlapped with such a collective for its
//     whole length takes d / (1 - f).
//   - Tasks carry a label (name and category, for traces), a kind chosen by the builder (what
//     the time is attributed to in breakdowns: compute, a communication group, offload, ...) and
//     an optional accounting index (which collective pattern it belongs to).
// Storage is flat (struct of arrays with index ranges) so that a graph of 10^5 tasks costs a few
// MiB and no allocation per task.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/units.hpp"
#include "sim/net/router.hpp"

namespace clustersim::sim::exec {

using TaskId = std::uint32_t;
inline constexpr TaskId NO_TASK = UINT32_MAX;

enum class WorkKind : std::uint8_t { COMPUTE, TRANSFER, MARKER };

// One flow of a transfer task: bytes along an explicit route, optionally capped.
struct FlowSpec {
  Route route;
  Bytes bytes;
  std::optional<Bandwidth> cap;
};

// A stream: one in-order queue of one rank.
struct StreamInfo {
  int rank = 0;
  int index = 0;  // the stream's number within its rank (trace thread)
  std::string name;
};

inline constexpr double kMaxSmShare = 0.9;

struct TaskSpec {
  std::uint32_t stream = 0;  // index returned by add_stream
  WorkKind work = WorkKind::COMPUTE;
  Duration duration;          // COMPUTE: the work; TRANSFER: the delay before the flows start
  float sm_share = 0;         // share of the GPU's SMs held while it runs (0..1)
  bool uses_sms = false;      // COMPUTE on the GPU: slowed by others' sm_share
  std::uint16_t kind = 0;     // attribution class (the builder's enum)
  std::uint32_t label = 0;    // index returned by add_label
  std::int32_t account = -1;  // accounting index (the builder's), -1 for none
};

class TaskGraph {
 public:
  std::uint32_t add_stream(int rank, int index, std::string name);
  // Labels are shared by many tasks ("layer 3 fwd attn" is not stored per micro-batch).
  std::uint32_t add_label(std::string_view name, std::string_view category);

  TaskId add(const TaskSpec& spec);
  // A transfer task with its flows.
  TaskId add_transfer(const TaskSpec& spec, std::span<const FlowSpec> flows);
  // `task` starts only after `before` has finished. Duplicates are allowed (and harmless).
  void depend(TaskId task, TaskId before);

  std::size_t size() const { return streams_of_task_.size(); }
  std::size_t stream_count() const { return streams_.size(); }
  std::size_t flow_count() const { return flows_.size(); }
  std::size_t dependency_count() const { return dep_from_.size(); }

  const StreamInfo& stream(std::uint32_t s) const { return streams_[s]; }
  std::uint32_t stream_of(TaskId t) const { return streams_of_task_[t]; }
  int rank_of(TaskId t) const { return streams_[streams_of_task_[t]].rank; }
  WorkKind work(TaskId t) const { return work_[t]; }
  Duration duration(TaskId t) const { return Duration::ps(duration_ps_[t]); }
  std::uint16_t kind(TaskId t) const { return kind_[t]; }
  std::int32_t account(TaskId t) const { return account_[t]; }
  float sm_share(TaskId t) const { return sm_share_[t]; }
  bool uses_sms(TaskId t) const { return uses_sms_[t] != 0; }
  std::string_view name(TaskId t) const { return labels_[label_[t]].name; }
  std::string_view category(TaskId t) const { return labels_[label_[t]].category; }
  std::span<const FlowSpec> flows(TaskId t) const {
    return {flows_.data() + flow_begin_[t], flow_begin_[t + 1] - flow_begin_[t]};
  }
  // Bytes of all flows of a transfer task.
  Bytes flow_bytes(TaskId t) const;

  // Dependencies as (task, before) pairs in the order they were added.
  std::span<const TaskId> dependency_tasks() const { return dep_to_; }
  std::span<const TaskId> dependency_befores() const { return dep_from_; }

  // Memory held by the graph (capacities).
  std::size_t memory_bytes() const;

 private:
  struct Label {
    std::string name;
    std::string category;
  };
  std::vector<StreamInfo> streams_;
  std::vector<Label> labels_;
  std::vector<std::uint32_t> streams_of_task_;
  std::vector<WorkKind> work_;
  std::vector<std::int64_t> duration_ps_;
  std::vector<std::uint16_t> kind_;
  std::vector<std::uint32_t> label_;
  std::vector<std::int32_t> account_;
  std::vector<float> sm_share_;
  std::vector<std::uint8_t> uses_sms_;
  std::vector<std::uint32_t> flow_begin_{0};
  std::vector<FlowSpec> flows_;
  std::vector<TaskId> dep_to_;
  std::vector<TaskId> dep_from_;
};

}  // namespace clustersim::sim::exec
