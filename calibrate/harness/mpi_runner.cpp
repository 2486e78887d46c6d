// --launcher mpi: every rank of an MPI job (mpirun, srun, the Kubernetes MPI Operator) runs the
// sub-runs in its own process, one GPU per rank (the local rank's device), and rank 0 writes the
// results. Built only where CMake finds MPI (CLUSTERSIM_HARNESS_MPI).
//
// One process lives through every sub-run, so only variables NCCL reads afresh at each
// communicator's creation can change between sub-runs: NCCL_ALGO and NCCL_PROTO (NCCL 2.28
// src/graph/tuning.cc reads them with ncclGetEnv when it builds the tuning tables). Sub-runs that
// need NCCL_MIN/MAX_NCHANNELS, NCCL_P2P_READ_ENABLE or NCCL_P2P_DISABLE (cached on first read) are
// skipped with that reason: start one MPI job per setting, with the variable in its environment.

#include "calibrate/harness/harness_roles.hpp"

#if defined(CLUSTERSIM_HARNESS_MPI)

#include <mpi.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <set>

#include "calibrate/harness/harness_errors.hpp"
#include "calibrate/harness/host_group.hpp"
#include "calibrate/harness/ipc_channel.hpp"
#include "calibrate/harness/results_document.hpp"
#include "calibrate/harness/subrun_plan.hpp"
#include "calibrate/harness/worker_context.hpp"

namespace clustersim::harness {

namespace {

class MpiGroup : public HostGroup {
 public:
  explicit MpiGroup(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<std::string> allgather(const std::string& blob) override {
    long long mine = static_cast<long long>(blob.size());
    std::vector<long long> lens(static_cast<std::size_t>(size_));
    if (MPI_Allgather(&mine, 1, MPI_LONG_LONG, lens.data(), 1, MPI_LONG_LONG, comm_) != MPI_SUCCESS) {
      throw HarnessError("MPI_Allgather failed");
    }
    std::vector<int> counts(static_cast<std::size_t>(size_)), displs(static_cast<std::size_t>(size_));
    long long total = 0;
    for (int r = 0; r < size_; ++r) {
      counts[static_cast<std::size_t>(r)] = static_cast<int>(lens[static_cast<std::size_t>(r)]);
      displs[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += lens[static_cast<std::size_t>(r)];
    }
    std::string all(static_cast<std::size_t>(total), '\0');
    if (MPI_Allgatherv(blob.data(), static_cast<int>(blob.size()), MPI_CHAR, all.data(), counts.data(), displs.data(),
                       MPI_CHAR, comm_) != MPI_SUCCESS) {
      throw HarnessError("MPI_Allgatherv failed");
    }
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r) {
      out.push_back(all.substr(static_cast<std::size_t>(displs[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(counts[static_cast<std::size_t>(r)])));
    }
    return out;
  }

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
};

class SoloGroup : public HostGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::vector<std::string> allgather(const std::string& blob) override { return {blob}; }
};

// Entries and notes of every rank, to rank 0's document.
void collect(MpiGroup& world, MemorySink& sink, ResultsDocument* doc) {
  std::vector<std::string> items;
  for (auto& [section, entry] : sink.take_entries()) items.push_back("R" + encode_result(section, entry));
  for (auto& note : sink.take_notes()) items.push_back("N" + note);
  const auto all = world.allgather(encode_list(items));
  if (doc == nullptr) return;
  for (const auto& blob : all) {
    for (const auto& item : decode_list(blob)) {
      if (item.empty()) continue;
      if (item[0] == 'R') {
        auto [section, entry] = decode_result(std::string_view(item).substr(1));
        doc->add(section, std::move(entry));
      } else {
        doc->add_failure(item.substr(1));
      }
    }
  }
}

}  // namespace

int run_mpi(const Options& opt, int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::string env_note = enforce_safe_environment();
  MpiGroup world(MPI_COMM_WORLD);
  MPI_Comm local_comm;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world.rank(), MPI_INFO_NULL, &local_comm);
  MpiGroup local(local_comm);
  const auto hosts = world.allgather(host_name());
  const int nodes = static_cast<int>(std::set<std::string>(hosts.begin(), hosts.end()).size());

  std::string device_error;
  const std::vector<int> devices = resolve_devices(opt, device_error);
  const int device = devices.empty() ? -1 : devices[static_cast<std::size_t>(local.rank()) % devices.size()];
  const std::vector<SubRun> plan = plan_subruns(opt, world.size());

  std::unique_ptr<ResultsDocument> doc;
  int rc = 0;
  if (world.rank() == 0) {
    doc = std::make_unique<ResultsDocument>(opt, "mpi");
    if (!env_note.empty()) std::cerr << "[calibrate] " << env_note << '\n';
    try {
      doc->write(opt.output);
    } catch (const HarnessError& e) {
      std::cerr << "clustersim-calibrate: " << e.what() << '\n';
      rc = 1;
    }
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rc != 0) {
    MPI_Finalize();
    return rc;
  }

  const double start = now_unix();
  const std::set<std::string> cached{"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_P2P_READ_ENABLE",
                                     "NCCL_P2P_DISABLE"};
  for (const auto& run : plan) {
    RunRecord rec;
    rec.section = run.section;
    rec.label = run.label;
    rec.env = run.env;
    rec.processes = run.one_per_gpu ? world.size() : 1;
    std::string skip = run.skip_reason;
    for (const auto& [k, v] : run.env) {
      const char* have = std::getenv(k.c_str());
      if (skip.empty() && cached.count(k) && (have == nullptr || v != have)) {
        skip = k + " is read once per process by NCCL: start an MPI job with " + k + "=" + v + " for this test";
      }
    }
    if (skip.empty() && run.uses_gpu && devices.empty() && run.section != Section::ENVIRONMENT) skip = device_error;
    if (skip.empty() && opt.deadline_s > 0 && now_unix() > start + opt.deadline_s - 5) skip = "time budget used up";
    if (!skip.empty()) {
      if (doc) {
        rec.status = "skipped";
        rec.message = skip;
        doc->add_run(rec);
      }
      continue;
    }
    for (const auto& [k, v] : run.env) ::setenv(k.c_str(), v.c_str(), 1);
    MemorySink sink;
    const double t0 = now_unix();
    std::string error;
    try {
      if (run.one_per_gpu) {
        WorkerContext ctx{opt, run, world, sink};
        ctx.device = run.uses_gpu ? device : -1;
        for (const auto& h : world.allgather(std::to_string(device))) ctx.devices.push_back(std::atoi(h.c_str()));
        ctx.hostname = host_name();
        ctx.nodes = nodes;
        ctx.gpus_per_node = local.size();
        ctx.deadline_unix = opt.deadline_s > 0 ? start + opt.deadline_s : 0;
        run_subrun(ctx);
      } else if (world.rank() == 0) {
        SoloGroup solo;
        WorkerContext ctx{opt, run, solo, sink};
        ctx.device = run.uses_gpu && !devices.empty() ? devices.front() : -1;
        ctx.devices = devices;
        ctx.hostname = host_name();
        ctx.nodes = 1;
        ctx.gpus_per_node = static_cast<int>(devices.size());
        ctx.deadline_unix = opt.deadline_s > 0 ? start + opt.deadline_s : 0;
        run_subrun(ctx);
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
    for (const auto& [k, v] : run.env) ::unsetenv(k.c_str());
    if (!error.empty() && run.one_per_gpu) {
      // The other ranks may be stuck in NCCL: write what exists, then end the job.
      std::cerr << "[calibrate] rank " << world.rank() << ": " << error << '\n';
      if (doc) {
        rec.status = "failed";
        rec.message = error;
        doc->add_run(rec);
        try {
          doc->write(opt.output);
        } catch (const HarnessError&) {
        }
      }
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (!error.empty()) sink.note(failure_json(run.section, run.label, "rank 0", "failed", error));
    collect(world, sink, doc.get());
    if (doc) {
      rec.status = error.empty() ? "ok" : "failed";
      rec.message = error;
      rec.elapsed_s = now_unix() - t0;
      doc->add_run(rec);
      try {
        doc->write(opt.output);
      } catch (const HarnessError& e) {
        std::cerr << "[calibrate] " << e.what() << '\n';
        rc = 1;
      }
    }
  }
  MPI_Comm_free(&local_comm);
  MPI_Finalize();
  return rc;
}

}  // namespace clustersim::harness

#else

#include <iostream>

namespace clustersim::harness {

int run_mpi(const Options&, int, char**) {
  std::cerr << "clustersim-calibrate: --launcher mpi needs a build with MPI (CMake found none); use --launcher "
               "process on one node\n";
  return 2;
}

}  // namespace clustersim::harness

#endif
