#include "calibrate/harness/worker_context.hpp"

#include <unistd.h>

#include <chrono>
#include <iostream>
#include <sstream>

namespace clustersim::harness {

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

double WorkerContext::seconds_left() const {
  if (deadline_unix <= 0) return 1e9;
  return deadline_unix - now_unix();
}

void WorkerContext::log(const std::string& message) const {
  std::ostringstream line;
  line << "[calibrate " << section_cli_name(run.section) << " " << run.label << " rank " << group.rank() << "] "
       << message << '\n';
  std::cerr << line.str() << std::flush;
}

void WorkerContext::failure(const std::string& test, const std::string& status, const std::string& message) const {
  log(status + ": " + test + ": " + message);
  sink.note(failure_json(run.section, run.label, test, status, message));
}

void run_subrun(WorkerContext& ctx) {
  switch (ctx.run.section) {
    case Section::ENVIRONMENT: return run_environment(ctx);
    case Section::COLLECTIVES: return run_collectives(ctx);
    case Section::P2P: return ctx.run.p2p_mode == "memcpy" ? run_p2p_memcpy(ctx) : run_p2p_nccl(ctx);
    case Section::GEMM: return run_gemm(ctx);
    case Section::ATTENTION: return run_attention(ctx);
    case Section::MEMORY: return run_memory(ctx);
    case Section::HOST: return run_host_transfers(ctx);
    case Section::CPU_ADAM: return run_cpu_adam(ctx);
    case Section::SELFTEST: return run_selftest(ctx);
  }
}

}  // namespace clustersim::harness
