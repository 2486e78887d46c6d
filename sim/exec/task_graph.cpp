#include "sim/exec/task_graph.hpp"

#include <algorithm>
#include <stdexcept>

namespace clustersim::sim::exec {

std::uint32_t TaskGraph::add_stream(int rank, int index, std::string name) {
  if (rank < 0 || index < 0) throw std::logic_error("TaskGraph::add_stream: negative rank or stream index");
  streams_.push_back(StreamInfo{.rank = rank, .index = index, .name = std::move(name)});
  return static_cast<std::uint32_t>(streams_.size() - 1);
}

std::uint32_t TaskGraph::add_label(std::string_view name, std::string_view category) {
  labels_.push_back(Label{std::string(name), std::string(category)});
  return static_cast<std::uint32_t>(labels_.size() - 1);
}

TaskId TaskGraph::add(const TaskSpec& spec) {
  if (spec.stream >= streams_.size()) throw std::logic_error("TaskGraph::add: unknown stream");
  if (spec.label >= labels_.size()) throw std::logic_error("TaskGraph::add: unknown label");
  if (spec.duration < Duration::zero()) throw std::logic_error("TaskGraph::add: negative duration");
  const auto id = static_cast<TaskId>(streams_of_task_.size());
  streams_of_task_.push_back(spec.stream);
  work_.push_back(spec.work);
  duration_ps_.push_back(spec.duration.picoseconds());
  kind_.push_back(spec.kind);
  label_.push_back(spec.label);
  account_.push_back(spec.account);
  sm_share_.push_back(std::clamp(spec.sm_share, 0.0f, 1.0f));
  uses_sms_.push_back(spec.uses_sms && spec.work == WorkKind::COMPUTE ? 1 : 0);
  flow_begin_.push_back(static_cast<std::uint32_t>(flows_.size()));
  return id;
}

TaskId TaskGraph::add_transfer(const TaskSpec& spec, std::span<const FlowSpec> flows) {
  TaskSpec s = spec;
  s.work = WorkKind::TRANSFER;
  const TaskId id = add(s);
  flows_.insert(flows_.end(), flows.begin(), flows.end());
  flow_begin_.back() = static_cast<std::uint32_t>(flows_.size());
  return id;
}

void TaskGraph::depend(TaskId task, TaskId before) {
  if (task >= size() || before >= size()) throw std::logic_error("TaskGraph::depend: unknown task");
  if (task == before) throw std::logic_error("TaskGraph::depend: a task cannot wait for itself");
  dep_to_.push_back(task);
  dep_from_.push_back(before);
}

Bytes TaskGraph::flow_bytes(TaskId t) const {
  std::int64_t sum = 0;
  for (const auto& f : flows(t)) sum += f.bytes.count();
  return Bytes::of(sum);
}

std::size_t TaskGraph::memory_bytes() const {
  std::size_t b = streams_.capacity() * sizeof(StreamInfo) + labels_.capacity() * sizeof(Label);
  for (const auto& l : labels_) b += l.name.capacity() + l.category.capacity();
  b += streams_of_task_.capacity() * sizeof(std::uint32_t) + work_.capacity() * sizeof(WorkKind) +
       duration_ps_.capacity() * sizeof(std::int64_t) + kind_.capacity() * sizeof(std::uint16_t) +
       label_.capacity() * sizeof(std::uint32_t) + account_.capacity() * sizeof(std::int32_t) +
       sm_share_.capacity() * sizeof(float) + uses_sms_.capacity() +
       flow_begin_.capacity() * sizeof(std::uint32_t) + flows_.capacity() * sizeof(FlowSpec) +
       (dep_to_.capacity() + dep_from_.capacity()) * sizeof(TaskId);
  return b;
}

}  // namespace clustersim::sim::exec
