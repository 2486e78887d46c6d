#pragma once
// The ranks of one sub-run talking on the host side: handing out NCCL's unique id, barriers,
// averaging times over ranks (as nccl-tests does), agreeing to stop a sweep.
//
// Everything is built on one primitive, an all-gather of byte strings. Three implementations:
// processes started by the harness talk through the driver (ipc_channel.hpp), threads of one
// process share memory (ThreadGroup below), MPI ranks use MPI (mpi_group.hpp).

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::harness {

class HostGroup {
 public:
  virtual ~HostGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Each rank contributes `blob`; every rank gets all contributions in rank order. Throws
  // TestTimeout when the others do not arrive in time.
  virtual std::vector<std::string> allgather(const std::string& blob) = 0;
};

// The helpers below tag each round: a rank that reached a different point of the program (after a
// failure on one rank only) makes every rank throw "out of step" instead of pairing wrong values.
std::vector<std::string> tagged_allgather(HostGroup& g, std::string_view tag, const std::string& blob);
void barrier(HostGroup& g, std::string_view tag);
std::string broadcast(HostGroup& g, std::string_view tag, int root, const std::string& blob);
double allreduce_sum(HostGroup& g, std::string_view tag, double v);
double allreduce_max(HostGroup& g, std::string_view tag, double v);
double allreduce_min(HostGroup& g, std::string_view tag, double v);
std::int64_t allreduce_sum(HostGroup& g, std::string_view tag, std::int64_t v);
// True on every rank when any rank passes true.
bool any_of(HostGroup& g, std::string_view tag, bool v);

// Ranks that are threads of one process. Create one ThreadGroupState for all threads, then one
// ThreadGroup per thread.
class ThreadGroupState {
 public:
  ThreadGroupState(int size, double timeout_s) : size_(size), timeout_s_(timeout_s), slots_(size) {}

 private:
  friend class ThreadGroup;
  int size_;
  double timeout_s_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::string> slots_;
  int arrived_ = 0;
  int departed_ = 0;
  std::uint64_t generation_ = 0;
  std::vector<std::string> result_;
  bool broken_ = false;
};

class ThreadGroup : public HostGroup {
 public:
  ThreadGroup(ThreadGroupState& state, int rank) : state_(state), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return state_.size_; }
  std::vector<std::string> allgather(const std::string& blob) override;
  // Wakes the other threads with an error (a thread that failed will not arrive).
  void break_group();

 private:
  ThreadGroupState& state_;
  int rank_;
};

}  // namespace clustersim::harness
