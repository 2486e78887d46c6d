// The driver: plans sub-runs, starts worker processes, relays their messages, enforces deadlines,
// and writes the results after every sub-run (harness_roles.hpp).

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "calibrate/harness/cuda_checks.hpp"
#include "calibrate/harness/harness_json_writer.hpp"
#include "calibrate/harness/harness_roles.hpp"
#include "calibrate/harness/ipc_channel.hpp"
#include "calibrate/harness/results_document.hpp"
#include "calibrate/harness/subrun_plan.hpp"
#include "calibrate/harness/worker_context.hpp"

extern char** environ;

namespace clustersim::harness {

namespace {

using Clock = std::chrono::steady_clock;

// Set by SIGINT/SIGTERM. A signal handler can only reach static storage: this flag is the one
// piece of state outside any object, and only the driver's loops read it.
volatile sig_atomic_t g_stop_requested = 0;

void on_signal(int) { g_stop_requested = 1; }

void say(const std::string& line) { std::cerr << "[calibrate] " << line << '\n' << std::flush; }

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string fixed1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

std::string self_exe() {
  char buf[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

std::string sanitize(const std::string& s) {
  std::string out;
  for (const char c : s) out.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out;
}

class Hub {
 public:
  Hub() {
    char tmpl[] = "/tmp/clustersim-calibrate-XXXXXX";
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = (tmp != nullptr && std::strlen(tmp) < 60) ? std::string(tmp) + "/clustersim-calibrate-XXXXXX" : tmpl;
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) throw HarnessError(std::string("mkdtemp: ") + std::strerror(errno));
    dir_ = buf.data();
    path_ = dir_ + "/hub.sock";
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw HarnessError(std::string("socket: ") + std::strerror(errno));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path_.size() >= sizeof(addr.sun_path)) throw HarnessError("socket path too long: " + path_);
    std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd_, 256) != 0) {
      throw HarnessError("cannot listen on " + path_ + ": " + std::strerror(errno));
    }
  }
  ~Hub() {
    if (fd_ >= 0) ::close(fd_);
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  Hub(const Hub&) = delete;
  Hub& operator=(const Hub&) = delete;
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }

 private:
  std::string dir_;
  std::string path_;
  int fd_ = -1;
};

struct Worker {
  pid_t pid = -1;
  bool exited = false;
  int status = 0;
};

struct Connection {
  int fd = -1;
  int rank = -1;
  bool done = false;
  bool closed = false;
};

std::vector<std::string> child_environment(const Options& opt, const SubRun& run) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : run.env) env[k] = v;
  if (!opt.nccl_debug_dir.empty() && env.count("NCCL_DEBUG") == 0) {
    env["NCCL_DEBUG"] = "INFO";
    env["NCCL_DEBUG_SUBSYS"] = "INIT,ENV,GRAPH,TUNING";
    env["NCCL_DEBUG_FILE"] =
        opt.nccl_debug_dir + "/nccl-" + section_cli_name(run.section) + "-" + sanitize(run.label) + ".%h.%p.log";
  }
  // Last, so nothing above can turn them back on.
  env["NCCL_NVLS_ENABLE"] = "0";
  env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1";
  env["NVSHMEM_DISABLE_NVLS"] = "1";
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

pid_t spawn(const std::string& exe, const std::vector<std::string>& args, const std::vector<std::string>& env) {
  std::vector<char*> argv, envp;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw HarnessError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    execve(exe.c_str(), argv.data(), envp.data());
    std::fprintf(stderr, "[calibrate] cannot start %s: %s\n", exe.c_str(), std::strerror(errno));
    _exit(127);
  }
  return pid;
}

void kill_all(std::vector<Worker>& workers) {
  for (auto& w : workers) {
    if (!w.exited) ::kill(w.pid, SIGTERM);
  }
  const auto t0 = Clock::now();
  while (seconds_since(t0) < 3) {
    bool all = true;
    for (auto& w : workers) {
      if (w.exited) continue;
      int st = 0;
      if (waitpid(w.pid, &st, WNOHANG) == w.pid) {
        w.exited = true;
        w.status = st;
      } else {
        all = false;
      }
    }
    if (all) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& w : workers) {
    if (w.exited) continue;
    ::kill(w.pid, SIGKILL);
    int st = 0;
    waitpid(w.pid, &st, 0);
    w.exited = true;
    w.status = st;
  }
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + std::to_string(WTERMSIG(status));
  return "ended";
}

// Runs one sub-run: starts `nprocs` workers, serves them until they finish, fail or run out of
// time. Returns the status and a message for the "runs" record.
std::pair<std::string, std::string> serve_subrun(const Options& opt, const SubRun& run, int index, int nprocs,
                                                 const std::vector<int>& devices, double worker_deadline_unix,
                                                 Clock::time_point kill_at, Hub& hub, ResultsDocument& doc,
                                                 const std::vector<std::string>& base_args) {
  const std::string exe = self_exe();
  if (exe.empty()) throw HarnessError("cannot find this executable (/proc/self/exe)");
  std::string device_list;
  for (const int d : devices) device_list += (device_list.empty() ? "" : ",") + std::to_string(d);
  const auto env = child_environment(opt, run);

  std::vector<Worker> workers;
  const int ranks = opt.launcher == Launcher::THREADS ? 1 : nprocs;
  for (int r = 0; r < ranks; ++r) {
    std::vector<std::string> args = base_args;
    if (!device_list.empty()) args.insert(args.end(), {"--devices", device_list});
    args.insert(args.end(), {"--worker-hub", hub.path(), "--worker-rank", std::to_string(r), "--worker-nranks",
                             std::to_string(nprocs), "--worker-subrun", std::to_string(index), "--worker-deadline",
                             json_number(worker_deadline_unix)});
    workers.push_back({spawn(exe, args, env), false, 0});
  }

  std::vector<Connection> conns;
  std::map<int, std::string> pending;  // rank -> blob of the current all-gather round
  std::string status = "ok", message;
  bool failed = false;

  auto reap = [&]() {
    for (auto& w : workers) {
      if (w.exited) continue;
      int st = 0;
      if (waitpid(w.pid, &st, WNOHANG) == w.pid) {
        w.exited = true;
        w.status = st;
      }
    }
  };
  auto all_exited = [&]() {
    return std::all_of(workers.begin(), workers.end(), [](const Worker& w) { return w.exited; });
  };

  while (true) {
    if (g_stop_requested) {
      status = "failed";
      message = "interrupted";
      failed = true;
      break;
    }
    if (Clock::now() > kill_at) {
      status = "timeout";
      message = "workers still running at the sub-run deadline; killed";
      failed = true;
      break;
    }
    std::vector<pollfd> fds;
    fds.push_back({hub.fd(), POLLIN, 0});
    for (const auto& c : conns) fds.push_back({c.fd, static_cast<short>(c.closed ? 0 : POLLIN), 0});
    const int pr = ::poll(fds.data(), fds.size(), 200);
    if (pr < 0 && errno != EINTR) throw HarnessError(std::string("poll: ") + std::strerror(errno));
    if (pr > 0 && (fds[0].revents & POLLIN)) {
      const int cfd = ::accept4(hub.fd(), nullptr, nullptr, SOCK_CLOEXEC);
      if (cfd >= 0) conns.push_back({cfd, -1, false, false});
    }
    for (std::size_t i = 1; pr > 0 && i < fds.size(); ++i) {
      Connection& c = conns[i - 1];
      if (c.closed || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      std::optional<Message> m;
      try {
        m = receive_message(c.fd, 10.0);
      } catch (const HarnessError& e) {
        m.reset();
      }
      if (!m) {
        c.closed = true;
        ::close(c.fd);
        if (!c.done && !failed) {
          failed = true;
          status = "failed";
          message = "worker rank " + std::to_string(c.rank) + " ended without finishing";
        }
        continue;
      }
      switch (m->type) {
        case MessageType::HELLO:
          c.rank = std::atoi(m->payload.c_str());
          break;
        case MessageType::GATHER:
          pending[c.rank] = std::move(m->payload);
          if (static_cast<int>(pending.size()) == nprocs) {
            std::vector<std::string> all;
            for (auto& [rank, blob] : pending) all.push_back(std::move(blob));
            const std::string reply = encode_list(all);
            pending.clear();
            for (const auto& cc : conns) {
              if (!cc.closed && cc.rank >= 0) {
                try {
                  send_message(cc.fd, MessageType::GATHER_REPLY, reply);
                } catch (const HarnessError&) {
                  // That worker is gone; its socket closing is reported on its own.
                }
              }
            }
          }
          break;
        case MessageType::RESULT: {
          auto [section, entry] = decode_result(m->payload);
          doc.add(section, std::move(entry));
          break;
        }
        case MessageType::NOTE:
          doc.add_failure(std::move(m->payload));
          break;
        case MessageType::DONE:
          c.done = true;
          break;
        case MessageType::GATHER_REPLY:
          break;
      }
    }
    reap();
    if (failed) break;
    if (all_exited()) {
      // Drain what the workers wrote before they exited.
      bool open = false;
      for (const auto& c : conns) open = open || !c.closed;
      if (!open) break;
    }
  }
  kill_all(workers);
  for (auto& c : conns) {
    if (!c.closed) ::close(c.fd);
  }
  for (const auto& w : workers) {
    if (WIFSIGNALED(w.status) || (WIFEXITED(w.status) && WEXITSTATUS(w.status) != 0)) {
      if (status == "ok") status = "failed";
      if (message.find(describe_exit(w.status)) == std::string::npos && status != "timeout") {
        message += (message.empty() ? "" : "; ") + std::string("a worker ended with ") + describe_exit(w.status);
      }
    }
  }
  return {status, message};
}

}  // namespace

std::string enforce_safe_environment() {
  std::string note;
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  if (nvls != nullptr && std::string(nvls) != "0") {
    note = std::string("NCCL_NVLS_ENABLE=") + nvls + " overridden to 0 (NVLink SHARP stays off)";
  }
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);
  ::setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 1);
  ::setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
  return note;
}

std::vector<int> resolve_devices(const Options& opt, std::string& error) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    error = std::string("CUDA reports no usable GPU: ") + cudaGetErrorString(rc);
    if (rc == cudaErrorSystemNotReady) error += " (on an NVSwitch system: is nvidia-fabricmanager running?)";
    return {};
  }
  std::vector<int> out;
  if (opt.devices.empty()) {
    for (int i = 0; i < count; ++i) out.push_back(i);
  } else {
    for (const int d : opt.devices) {
      if (d >= count) throw UsageError("--devices: device " + std::to_string(d) + " does not exist (CUDA sees " +
                                       std::to_string(count) + ")");
      out.push_back(d);
    }
  }
  return out;
}

int run_driver(const Options& opt, int argc, char** argv) {
  const auto t_start = Clock::now();
  const double unix_start = now_unix();
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  const std::string env_note = enforce_safe_environment();
  if (!env_note.empty()) say(env_note);
  if (!opt.nccl_debug_dir.empty()) ::mkdir(opt.nccl_debug_dir.c_str(), 0755);

  std::string device_error;
  const std::vector<int> devices = resolve_devices(opt, device_error);
  if (!device_error.empty()) say(device_error);
  const int ndev = static_cast<int>(devices.size());

  const char* launcher = opt.launcher == Launcher::THREADS ? "threads" : "process";
  ResultsDocument doc(opt, launcher);
  try {
    doc.write(opt.output);  // fail now, not after an hour, when the output cannot be written
  } catch (const HarnessError& e) {
    std::cerr << "clustersim-calibrate: " << e.what() << '\n';
    return 1;
  }

  const std::vector<SubRun> plan = plan_subruns(opt, ndev);
  const std::vector<std::string> base_args = forward_arguments(argc, argv);
  Hub hub;
  say("output " + opt.output + "; " + std::to_string(ndev) + " GPU(s); " + std::to_string(plan.size()) +
      " sub-runs; launcher " + launcher);

  const double global_deadline = opt.deadline_s > 0 ? unix_start + opt.deadline_s : 0;
  std::map<Section, double> section_deadline;
  std::map<Section, Clock::time_point> section_start;
  std::map<Section, double> section_elapsed;
  Section current = plan.empty() ? Section::ENVIRONMENT : plan.front().section;
  bool write_failed = false;

  auto finish_section = [&](Section s) {
    if (section_start.count(s) == 0) return;
    section_elapsed[s] = seconds_since(section_start[s]);
    say("section " + std::string(section_name(s)) + " done in " + fixed1(section_elapsed[s]) + " s (total " +
        fixed1(seconds_since(t_start)) + " s)");
  };

  for (std::size_t i = 0; i < plan.size() && !g_stop_requested; ++i) {
    const SubRun& run = plan[i];
    if (section_start.count(run.section) == 0) {
      if (i > 0) finish_section(current);
      current = run.section;
      section_start[run.section] = Clock::now();
      double deadline = global_deadline;
      const auto b = opt.budget_s.find(run.section);
      if (b != opt.budget_s.end()) {
        const double d = now_unix() + b->second;
        deadline = deadline > 0 ? std::min(deadline, d) : d;
      }
      section_deadline[run.section] = deadline;
    }
    const double deadline = section_deadline[run.section];
    RunRecord rec;
    rec.section = run.section;
    rec.label = run.label;
    rec.env = run.env;
    const int nprocs = !run.one_per_gpu ? 1 : run.uses_gpu ? ndev : std::max(ndev, opt.selftest_ranks);
    rec.processes = opt.launcher == Launcher::THREADS ? 1 : nprocs;
    const std::string name = std::string(section_name(run.section)) + " " + run.label;

    std::string skip = run.skip_reason;
    if (skip.empty() && run.uses_gpu && ndev == 0 && run.section != Section::ENVIRONMENT) {
      skip = device_error.empty() ? "no GPU" : device_error;
    }
    if (skip.empty() && deadline > 0 && deadline - now_unix() < 5) skip = "time budget used up";
    if (!skip.empty()) {
      rec.status = "skipped";
      rec.message = skip;
      rec.processes = 0;
      doc.add_run(rec);
      say(name + ": skipped (" + skip + ")");
      continue;
    }

    say(name + ": starting " + std::to_string(rec.processes) + " process(es)");
    const auto t0 = Clock::now();
    auto kill_at = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.subrun_timeout_s));
    if (deadline > 0) {
      const auto by_budget = t0 + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(deadline - now_unix() + 30.0));
      kill_at = std::min(kill_at, by_budget);
    }
    try {
      const auto [status, message] =
          serve_subrun(opt, run, static_cast<int>(i), nprocs, devices, deadline, kill_at, hub, doc, base_args);
      rec.status = status;
      rec.message = message;
    } catch (const std::exception& e) {
      rec.status = "failed";
      rec.message = e.what();
    }
    rec.elapsed_s = seconds_since(t0);
    doc.add_run(rec);
    say(name + ": " + rec.status + " in " + fixed1(rec.elapsed_s) + " s" + (rec.message.empty() ? "" : " (" + rec.message + ")"));
    try {
      doc.write(opt.output);
    } catch (const HarnessError& e) {
      say(e.what());
      write_failed = true;
    }
  }
  if (!plan.empty()) finish_section(current);
  try {
    doc.write(opt.output);
  } catch (const HarnessError& e) {
    say(e.what());
    write_failed = true;
  }

  std::ostringstream summary;
  summary << "clustersim-calibrate: wrote " << opt.output << " in " << fixed1(seconds_since(t_start)) << " s:";
  for (const Section s : all_sections()) {
    if (s == Section::ENVIRONMENT) continue;
    summary << ' ' << section_name(s) << '=' << doc.count(s);
  }
  summary << " failures=" << doc.failure_count();
  std::cout << summary.str() << std::endl;
  for (const auto& [s, secs] : section_elapsed) std::cout << "  " << section_name(s) << ": " << fixed1(secs) << " s\n";
  return write_failed ? 1 : 0;
}

}  // namespace clustersim::harness
