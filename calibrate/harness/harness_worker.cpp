// The worker: one rank of one sub-run (or, with --launcher threads, every rank as a thread).

#include <signal.h>

#include <exception>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "calibrate/harness/cuda_checks.hpp"
#include "calibrate/harness/harness_roles.hpp"
#include "calibrate/harness/ipc_channel.hpp"
#include "calibrate/harness/subrun_plan.hpp"
#include "calibrate/harness/worker_context.hpp"

namespace clustersim::harness {

namespace {

// How long a rank waits for the others at a host-side meeting point: longer than any single test
// may run, so a slow rank is not mistaken for a dead one.
double meeting_timeout(const Options& opt) { return opt.test_timeout_s * 2 + 60; }

void run_one_rank(const Options& opt, const SubRun& run, HostGroup& group, ResultSink& sink, int device,
                  const std::vector<int>& devices) {
  WorkerContext ctx{opt, run, group, sink};
  ctx.device = device;
  ctx.devices = devices;
  ctx.hostname = host_name();
  ctx.nodes = 1;
  ctx.gpus_per_node = run.one_per_gpu ? group.size() : static_cast<int>(devices.size());
  ctx.deadline_unix = opt.worker_deadline_unix;
  run_subrun(ctx);
}

}  // namespace

int run_worker(const Options& opt) {
  ::signal(SIGPIPE, SIG_IGN);
  const std::vector<int> devices = opt.devices;  // the driver passes the resolved list
  const std::vector<SubRun> plan = plan_subruns(opt, static_cast<int>(devices.size()));
  if (opt.worker_subrun < 0 || opt.worker_subrun >= static_cast<int>(plan.size())) {
    std::cerr << "clustersim-calibrate worker: no sub-run " << opt.worker_subrun << '\n';
    return 2;
  }
  const SubRun& run = plan[static_cast<std::size_t>(opt.worker_subrun)];
  std::unique_ptr<HubClient> hub;
  try {
    hub = std::make_unique<HubClient>(opt.worker_hub, opt.worker_rank, meeting_timeout(opt));
  } catch (const std::exception& e) {
    std::cerr << "clustersim-calibrate worker: " << e.what() << '\n';
    return 1;
  }
  HubSink sink(*hub);
  const int nranks = opt.worker_nranks;
  const bool threads = opt.launcher == Launcher::THREADS && run.one_per_gpu && nranks > 1;
  if (opt.launcher == Launcher::THREADS && opt.worker_rank != 0) return 2;

  auto report = [&](int rank, const std::string& what) {
    std::cerr << "[calibrate " << section_cli_name(run.section) << " " << run.label << " rank " << rank
              << "] failed: " << what << '\n';
    try {
      sink.note(failure_json(run.section, run.label, "rank " + std::to_string(rank), "failed", what));
    } catch (const std::exception&) {
      // The driver is gone; nothing more to tell.
    }
  };

  bool ok = true;
  if (!threads) {
    try {
      ProcessGroup group(*hub, opt.worker_rank, nranks);
      int device = -1;
      if (run.uses_gpu) {
        device = run.one_per_gpu ? devices.at(static_cast<std::size_t>(opt.worker_rank))
                                 : (devices.empty() ? -1 : devices.front());
      }
      run_one_rank(opt, run, group, sink, device, devices);
    } catch (const std::exception& e) {
      report(opt.worker_rank, e.what());
      ok = false;
    }
  } else {
    ThreadGroupState state(nranks, meeting_timeout(opt));
    std::vector<std::thread> pool;
    std::vector<int> failed(static_cast<std::size_t>(nranks), 0);
    for (int r = 0; r < nranks; ++r) {
      pool.emplace_back([&, r] {
        ThreadGroup group(state, r);
        try {
          const int device = run.uses_gpu ? devices.at(static_cast<std::size_t>(r)) : -1;
          run_one_rank(opt, run, group, sink, device, devices);
        } catch (const std::exception& e) {
          report(r, e.what());
          failed[static_cast<std::size_t>(r)] = 1;
          group.break_group();
        }
      });
    }
    for (auto& t : pool) t.join();
    for (const int f : failed) ok = ok && f == 0;
  }
  try {
    if (ok) hub->send(MessageType::DONE, "");
  } catch (const std::exception&) {
    return 1;
  }
  return ok ? 0 : 1;
}

}  // namespace clustersim::harness
