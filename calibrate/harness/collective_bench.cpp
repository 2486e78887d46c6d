// Collectives timed the way nccl-tests times them (nccl-tests src/common.cu), so the two agree on
// the same machine:
//   - buffers of the largest size, from ncclMemAlloc; each iteration shifts its window by the
//     message size (startColl: "change offset for each iteration so that we avoid cache effects");
//   - warm-up: every size from -b to -e doubling, -w launches each, out-of-place (TimeTest);
//   - per size and per placement (out-of-place, then in-place): one launch and a wait, a barrier,
//     then -n launches back to back timed by the host clock from the first launch to the end of a
//     polling stream wait, divided by -n (BenchTime, completeColl, testStreamSynchronize);
//   - the time averaged over ranks (Allreduce with average=1), then algbw and busbw by the
//     per-op factors of nccl-tests' src/*.cu GetBw;
//   - sizes and counts from nccl-tests' GetCollByteCount (per-rank counts of all_gather,
//     reduce_scatter and alltoall rounded down to 16 bytes); a size whose count rounds to zero is
//     not measured;
//   - with -c 1 a separate launch on fresh data is checked element by element (CheckData), except
//     in-place alltoall and sendrecv, whose result NCCL leaves undefined (nccl-tests: N/A).
//
// busbw = algbw * factor (nccl-tests doc/PERFORMANCE.md):
//   all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall (n-1)/n; broadcast, reduce, sendrecv 1.
// algbw = S / t with S the "size" column: count*4 for all_reduce, broadcast, reduce, sendrecv and
// count*4*n (the whole gathered/scattered buffer) for all_gather, reduce_scatter and alltoall.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/harness/collective_kernels.hpp"
#include "calibrate/harness/cuda_checks.hpp"
#include "calibrate/harness/harness_json_writer.hpp"
#include "calibrate/harness/nccl_comm.hpp"
#include "calibrate/harness/worker_context.hpp"

namespace clustersim::harness {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kElt = sizeof(float);

struct OpSpec {
  std::string name;
  CollectiveKind kind;
  bool reduces;
  bool rooted;
};

OpSpec op_spec(const std::string& name) {
  if (name == "all_reduce") return {name, CollectiveKind::ALL_REDUCE, true, false};
  if (name == "all_gather") return {name, CollectiveKind::ALL_GATHER, false, false};
  if (name == "reduce_scatter") return {name, CollectiveKind::REDUCE_SCATTER, true, false};
  if (name == "broadcast") return {name, CollectiveKind::BROADCAST, false, true};
  if (name == "reduce") return {name, CollectiveKind::REDUCE, true, true};
  if (name == "alltoall") return {name, CollectiveKind::ALLTOALL, false, false};
  if (name == "sendrecv") return {name, CollectiveKind::SENDRECV, true, false};
  throw HarnessError("unknown collective " + name);
}

// Element counts of one size, as nccl-tests' <op>GetCollByteCount.
struct Counts {
  std::size_t send = 0, recv = 0, param = 0, send_inplace = 0, recv_inplace = 0;
};

Counts counts_for(CollectiveKind kind, std::size_t count, int nranks) {
  const std::size_t n = static_cast<std::size_t>(nranks);
  const std::size_t align_mask = ~(16 / kElt - 1);
  Counts c;
  switch (kind) {
    case CollectiveKind::ALL_REDUCE:
    case CollectiveKind::BROADCAST:
    case CollectiveKind::REDUCE:
    case CollectiveKind::SENDRECV:
      c.send = c.recv = c.param = count;
      break;
    case CollectiveKind::ALL_GATHER: {
      const std::size_t base = (count / n) & align_mask;
      c.send = base;
      c.recv = base * n;
      c.param = base;
      c.send_inplace = base;
      break;
    }
    case CollectiveKind::REDUCE_SCATTER: {
      const std::size_t base = (count / n) & align_mask;
      c.send = base * n;
      c.recv = base;
      c.param = base;
      c.recv_inplace = base;
      break;
    }
    case CollectiveKind::ALLTOALL: {
      const std::size_t base = (count / n) & align_mask;
      c.param = base;
      c.send = c.recv = base * n;
      break;
    }
  }
  return c;
}

double bus_factor(CollectiveKind kind, int nranks) {
  const double n = nranks;
  switch (kind) {
    case CollectiveKind::ALL_REDUCE: return 2 * (n - 1) / n;
    case CollectiveKind::ALL_GATHER:
    case CollectiveKind::REDUCE_SCATTER:
    case CollectiveKind::ALLTOALL: return (n - 1) / n;
    default: return 1;
  }
}

// nccl-tests' size column: the larger of the send and receive buffers.
std::size_t size_bytes(const Counts& c) { return std::max(c.send, c.recv) * kElt; }

struct Point {
  std::size_t size_bytes = 0;
  std::size_t count = 0;
  double time_us = 0;
  double algbw = 0;
  double busbw = 0;
  std::optional<std::int64_t> errors;
};

struct Series {
  std::vector<Point> out_of_place;
  std::vector<Point> in_place;
};

class CollectiveRunner {
 public:
  CollectiveRunner(WorkerContext& ctx, std::size_t buffer_bytes)
      : ctx_(ctx), buffer_bytes_(buffer_bytes), n_(ctx.group.size()), rank_(ctx.group.rank()) {}

  void open(int attempt) {
    comm_ = std::make_unique<NcclComm>(ctx_.group, ctx_.device, ctx_.opt, "coll-init-" + std::to_string(attempt));
    if (!send_.get()) {
      const bool nccl_alloc = ctx_.opt.alloc == "ncclmem";
      send_ = DeviceBuffer(buffer_bytes_, nccl_alloc);
      recv_ = DeviceBuffer(buffer_bytes_, nccl_alloc);
      CHECK_CUDA(cudaMalloc(&wrong_, sizeof(unsigned long long)));
      // Pinned, so reading the count back is asynchronous and stays under the test timeout.
      CHECK_CUDA(cudaMallocHost(&wrong_host_, sizeof(unsigned long long)));
      // Never time zeros: the timed buffers hold the same integer pattern as the checks.
      fill_pattern(send_.as<float>(), buffer_bytes_ / kElt, 1, rank_, 0, comm_->stream());
      fill_pattern(recv_.as<float>(), buffer_bytes_ / kElt, 2, rank_, 0, comm_->stream());
      comm_->wait(ctx_.opt.test_timeout_s);
    }
  }

  void close_after_failure() {
    if (comm_) comm_->abort();
    comm_.reset();
  }

  ~CollectiveRunner() {
    comm_.reset();
    if (wrong_ != nullptr) cudaFree(wrong_);
    if (wrong_host_ != nullptr) cudaFreeHost(wrong_host_);
  }

  // Measures one op over the sweep; points land in `series` as they are measured.
  void run_op(const OpSpec& op, Series& series) {
    const SubRun& run = ctx_.run;
    const double timeout = ctx_.opt.test_timeout_s;
    const std::size_t max_bytes = std::min<std::size_t>(static_cast<std::size_t>(run.max_bytes), buffer_bytes_);
    const std::size_t min_bytes = std::min<std::size_t>(static_cast<std::size_t>(run.min_bytes), max_bytes);

    // Warm-up over every size, doubling, out-of-place (nccl-tests TimeTest).
    for (std::size_t size = std::max<std::size_t>(min_bytes, 1); size <= max_bytes; size *= 2) {
      const Counts c = counts_for(op.kind, size / kElt, n_);
      if (c.param == 0) continue;
      for (int w = 0; w < run.warmup_iters; ++w) launch(op, c, false, w, size_bytes(c));
      comm_->wait(timeout);
    }

    double last_time_s = 0;
    std::size_t last_size = 0;
    for (std::size_t size = min_bytes; size <= max_bytes;
         size = run.step_factor > 1 ? std::max<std::size_t>(size * run.step_factor, size + 1) : size + 1) {
      const Counts c = counts_for(op.kind, size / kElt, n_);
      if (c.param == 0) continue;
      const std::size_t bytes = size_bytes(c);
      // Stop before a point that would not fit the budget: the last point scaled by size, twice
      // (out-of-place and in-place), over the timed and untimed launches.
      const double estimate =
          last_size == 0 ? 0 : last_time_s * static_cast<double>(bytes) / last_size * 2 * (run.iters + 3);
      if (any_of(ctx_.group, "coll-budget", ctx_.seconds_left() < estimate + 2.0)) {
        if (rank_ == 0) {
          ctx_.failure(op.name + " from " + std::to_string(bytes) + " B", "skipped",
                       "the rest of the sweep does not fit the time budget");
        }
        break;
      }
      for (const bool in_place : {false, true}) {
        Point p = measure(op, c, in_place);
        last_time_s = p.time_us * 1e-6;
        last_size = bytes;
        (in_place ? series.in_place : series.out_of_place).push_back(p);
      }
      if (size >= max_bytes) break;
    }
  }

 private:
  void launch(const OpSpec& op, const Counts& c, bool in_place, int iter, std::size_t total_bytes) {
    // nccl-tests startColl: shift the window by one message per iteration, wrapping in the buffer.
    const std::size_t steps = total_bytes ? buffer_bytes_ / total_bytes : 1;
    const std::size_t shift = total_bytes * (static_cast<std::size_t>(iter) % std::max<std::size_t>(steps, 1));
    char* recv = recv_.as<char>() + shift;
    char* send = send_.as<char>() + shift;
    const void* sendbuf = in_place ? recv + c.send_inplace * kElt * rank_ : send;
    void* recvbuf = recv + (in_place ? c.recv_inplace * kElt * rank_ : 0);
    issue(op, c, sendbuf, recvbuf);
  }

  void issue(const OpSpec& op, const Counts& c, const void* sendbuf, void* recvbuf) {
    ncclComm_t comm = comm_->get();
    cudaStream_t s = comm_->stream();
    const int root = std::min(ctx_.opt.root, n_ - 1);
    switch (op.kind) {
      case CollectiveKind::ALL_REDUCE:
        comm_->check(ncclAllReduce(sendbuf, recvbuf, c.param, ncclFloat, ncclSum, comm, s), "ncclAllReduce");
        break;
      case CollectiveKind::ALL_GATHER:
        comm_->check(ncclAllGather(sendbuf, recvbuf, c.param, ncclFloat, comm, s), "ncclAllGather");
        break;
      case CollectiveKind::REDUCE_SCATTER:
        comm_->check(ncclReduceScatter(sendbuf, recvbuf, c.param, ncclFloat, ncclSum, comm, s), "ncclReduceScatter");
        break;
      case CollectiveKind::BROADCAST:
        comm_->check(ncclBroadcast(sendbuf, recvbuf, c.param, ncclFloat, root, comm, s), "ncclBroadcast");
        break;
      case CollectiveKind::REDUCE:
        comm_->check(ncclReduce(sendbuf, recvbuf, c.param, ncclFloat, ncclSum, root, comm, s), "ncclReduce");
        break;
      case CollectiveKind::ALLTOALL: {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
        comm_->check(ncclAlltoAll(sendbuf, recvbuf, c.param, ncclFloat, comm, s), "ncclAlltoAll");
#else
        comm_->check(ncclGroupStart(), "ncclGroupStart");
        for (int r = 0; r < n_; ++r) {
          comm_->check(ncclSend(static_cast<const char*>(sendbuf) + r * c.param * kElt, c.param, ncclFloat, r, comm, s),
                       "ncclSend");
          comm_->check(ncclRecv(static_cast<char*>(recvbuf) + r * c.param * kElt, c.param, ncclFloat, r, comm, s),
                       "ncclRecv");
        }
        comm_->check(ncclGroupEnd(), "ncclGroupEnd");
#endif
        break;
      }
      case CollectiveKind::SENDRECV: {
        // nccl-tests sendrecv: a ring, send to rank+1 and receive from rank-1, grouped.
        comm_->check(ncclGroupStart(), "ncclGroupStart");
        comm_->check(ncclSend(sendbuf, c.param, ncclFloat, (rank_ + 1) % n_, comm, s), "ncclSend");
        comm_->check(ncclRecv(recvbuf, c.param, ncclFloat, (rank_ - 1 + n_) % n_, comm, s), "ncclRecv");
        comm_->check(ncclGroupEnd(), "ncclGroupEnd");
        break;
      }
    }
  }

  Point measure(const OpSpec& op, const Counts& c, bool in_place) {
    const SubRun& run = ctx_.run;
    const double timeout = ctx_.opt.test_timeout_s;
    const std::size_t total = size_bytes(c);
    const std::string tag = op.name + (in_place ? "-ip-" : "-oop-") + std::to_string(total);

    // BenchTime: one launch to synchronize, a barrier, then the timed launches back to back.
    launch(op, c, in_place, 0, total);
    comm_->wait(timeout);
    barrier(ctx_.group, tag + "-start");
    const auto t0 = Clock::now();
    for (int iter = 0; iter < run.iters; ++iter) launch(op, c, in_place, iter, total);
    comm_->wait(timeout);
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count() / run.iters;
    const double mean_seconds = allreduce_sum(ctx_.group, tag + "-time", seconds) / n_;

    Point p;
    p.size_bytes = total;
    p.count = c.param;
    p.time_us = mean_seconds * 1e6;
    p.algbw = static_cast<double>(total) / 1e9 / mean_seconds;
    p.busbw = p.algbw * bus_factor(op.kind, n_);
    // In-place alltoall and sendrecv overwrite data a peer may still be reading: NCCL defines no
    // result for them, and nccl-tests reports no error count there (alltoall.cu, sendrecv.cu:
    // reportErrors = in_place ? 0 : 1). They are timed, and their errors left unknown.
    const bool defined_in_place = op.kind != CollectiveKind::ALLTOALL && op.kind != CollectiveKind::SENDRECV;
    if (ctx_.opt.check && (!in_place || defined_in_place)) p.errors = check(op, c, in_place, tag);
    return p;
  }

  // One launch on fresh data, every output element compared with its expected value (CheckData).
  std::int64_t check(const OpSpec& op, const Counts& c, bool in_place, const std::string& tag) {
    cudaStream_t s = comm_->stream();
    const int root = std::min(ctx_.opt.root, n_ - 1);
    const std::uint64_t seed = 1000 + (++check_round_);
    float* recv = recv_.as<float>();
    float* send_base = send_.as<float>();
    float* out = recv + (in_place ? c.recv_inplace * rank_ : 0);
    const float* in = in_place ? recv + c.send_inplace * rank_ : send_base;

    fill_poison(out, c.recv, s);
    const bool has_input = !(op.kind == CollectiveKind::BROADCAST && rank_ != root);
    if (has_input) fill_pattern(const_cast<float*>(in), c.send, seed, rank_, 0, s);
    CHECK_CUDA(cudaMemsetAsync(wrong_, 0, sizeof(unsigned long long), s));
    issue(op, c, in, out);

    CollectiveCheck k{op.kind, seed, rank_, n_, root, c.param, c.recv};
    if (op.kind == CollectiveKind::REDUCE && rank_ != root) k.out_elements = 0;
    verify_collective(k, out, wrong_, s);
    CHECK_CUDA(cudaMemcpyAsync(wrong_host_, wrong_, sizeof(*wrong_host_), cudaMemcpyDeviceToHost, s));
    comm_->wait(ctx_.opt.test_timeout_s);
    return allreduce_sum(ctx_.group, tag + "-check", static_cast<std::int64_t>(*wrong_host_));
  }

  WorkerContext& ctx_;
  std::size_t buffer_bytes_;
  int n_;
  int rank_;
  std::unique_ptr<NcclComm> comm_;
  DeviceBuffer send_;
  DeviceBuffer recv_;
  unsigned long long* wrong_ = nullptr;
  unsigned long long* wrong_host_ = nullptr;
  std::uint64_t check_round_ = 0;
};

std::string entry_json(const WorkerContext& ctx, const OpSpec& op, bool in_place, const std::vector<Point>& points) {
  const SubRun& run = ctx.run;
  JsonWriter w;
  w.begin_object()
      .field("op", op.name)
      .field("nodes", ctx.nodes)
      .field("gpus_per_node", ctx.gpus_per_node)
      .field("nranks", ctx.group.size())
      .field("algo", run.algo)
      .field("proto", run.proto);
  w.key("channels");
  if (run.channels > 0) {
    w.value(run.channels);
  } else {
    w.null();
  }
  w.key("env").begin_object();
  for (const auto& [k, v] : run.env) w.field(k, v);
  w.end_object();
  w.field("dtype", "float")
      .field("redop", op.reduces ? "sum" : "none")
      .field("root", op.rooted ? std::min(ctx.opt.root, ctx.group.size() - 1) : -1)
      .field("in_place", in_place)
      .field("warmup_iters", run.warmup_iters)
      .field("iters", run.iters);
  w.key("points").begin_array();
  for (const auto& p : points) {
    w.begin_object()
        .field("size_bytes", static_cast<std::int64_t>(p.size_bytes))
        .field("count", static_cast<std::int64_t>(p.count))
        .field("time_us", p.time_us)
        .field("algbw_GBps", p.algbw)
        .field("busbw_GBps", p.busbw)
        .field("errors", p.errors)
        .end_object();
  }
  w.end_array().end_object();
  return w.take();
}

void emit(WorkerContext& ctx, const OpSpec& op, const Series& s) {
  if (ctx.group.rank() != 0) return;
  if (!s.out_of_place.empty()) ctx.sink.add(Section::COLLECTIVES, entry_json(ctx, op, false, s.out_of_place));
  if (!s.in_place.empty()) ctx.sink.add(Section::COLLECTIVES, entry_json(ctx, op, true, s.in_place));
}

}  // namespace

void run_collectives(WorkerContext& ctx) {
  const SubRun& run = ctx.run;
  const int rank = ctx.group.rank();
  if (rank == 0) {
    for (const auto& [op, why] : run.skipped_ops) ctx.failure(op, "skipped", why);
  }
  CHECK_CUDA(cudaSetDevice(ctx.device));

  // Buffers of the largest size (send and receive); if they do not fit, the sweep stops lower, as
  // nccl-tests reduces maxBytes "due to memory limitation". Every rank uses the smallest limit.
  std::size_t free_bytes = 0, total_bytes = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  const double reserve = 2.0 * (1ULL << 30);
  const double fit = std::max(0.0, (static_cast<double>(free_bytes) - reserve) / 2);
  double buffer = std::min(static_cast<double>(run.max_bytes), fit);
  buffer = allreduce_min(ctx.group, "coll-memory", buffer);
  std::size_t buffer_bytes = static_cast<std::size_t>(buffer) & ~static_cast<std::size_t>(4095);
  if (buffer_bytes < static_cast<std::size_t>(run.max_bytes) && rank == 0) {
    ctx.failure("sizes above " + std::to_string(buffer_bytes) + " B", "skipped", "not enough free GPU memory");
  }
  buffer_bytes = std::max<std::size_t>(buffer_bytes, 4096);

  CollectiveRunner runner(ctx, buffer_bytes);
  int attempt = 0;
  try {
    runner.open(attempt);
  } catch (const HarnessError& e) {
    if (rank == 0) ctx.failure("communicator", "failed", e.what());
    throw;
  }

  for (std::size_t i = 0; i < run.ops.size(); ++i) {
    const OpSpec op = op_spec(run.ops[i]);
    if (ctx.seconds_left() < 3) {
      if (rank == 0) ctx.failure(op.name, "skipped", "no time left in the budget");
      continue;
    }
    Series series;
    std::string error;
    bool timed_out = false;
    try {
      runner.run_op(op, series);
    } catch (const TestTimeout& e) {
      error = e.what();
      timed_out = true;
    } catch (const HarnessError& e) {
      error = e.what();
    }
    // What was measured before a failure is kept.
    emit(ctx, op, series);
    // Every rank learns whether any rank failed; then all abort and start a new communicator, so a
    // failure in one op does not leave the next one mismatched.
    const bool failed = any_of(ctx.group, "coll-status-" + op.name, !error.empty());
    if (failed) {
      if (!error.empty()) ctx.failure(op.name, timed_out ? "timeout" : "failed", error);
      runner.close_after_failure();
      if (i + 1 < run.ops.size()) runner.open(++attempt);
    }
  }
}

}  // namespace clustersim::harness
