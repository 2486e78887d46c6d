#include "calibrate/harness/harness_options.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <set>
#include <sstream>

namespace clustersim::harness {

namespace {

struct SectionNames {
  Section section;
  const char* json;
  const char* cli;
};

constexpr SectionNames kSections[] = {
    {Section::ENVIRONMENT, "environment", "env"}, {Section::COLLECTIVES, "collectives", "collectives"},
    {Section::P2P, "p2p", "p2p"},                 {Section::GEMM, "gemm", "gemm"},
    {Section::ATTENTION, "attention", "attention"}, {Section::MEMORY, "memory", "memory"},
    {Section::HOST, "host", "host"},              {Section::CPU_ADAM, "cpu_adam", "cpu-adam"},
    {Section::SELFTEST, "selftest", "selftest"},
};

const std::set<std::string> kOps{"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                 "reduce",     "alltoall",   "sendrecv"};
const std::set<std::string> kAlgos{"ring", "tree", "pat", "nvls", "nvls_tree", "collnet_direct", "collnet_chain"};
const std::set<std::string> kProtos{"ll", "ll128", "simple"};
const std::set<std::string> kP2pModes{"write", "read", "shm", "memcpy"};
const std::set<std::string> kModels{"llama3-8b", "llama3-70b"};
const std::set<std::string> kDtypes{"bf16", "fp8"};
const std::set<std::string> kPasses{"fwd", "dgrad", "wgrad"};
const std::set<std::string> kDirections{"fwd", "bwd"};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::vector<std::string> choices(const std::string& text, const std::string& option, const std::set<std::string>& allowed) {
  std::vector<std::string> out;
  for (auto& item : split_list(text)) {
    item = lower(item);
    if (allowed.count(item) == 0) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw UsageError(option + ": '" + item + "' is not one of " + list);
    }
    out.push_back(item);
  }
  if (out.empty()) throw UsageError(option + ": expected a comma-separated list");
  return out;
}


double parse_seconds(const std::string& text, const std::string& option) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || !(v >= 0) || v > 1e7) {
    throw UsageError(option + ": expected a number of seconds >= 0, got '" + text + "'");
  }
  return v;
}

template <class T>
std::vector<T> parse_list(const std::string& text, const std::string& option, const std::function<T(const std::string&)>& one) {
  std::vector<T> out;
  for (const auto& item : split_list(text)) out.push_back(one(item));
  if (out.empty()) throw UsageError(option + ": expected a comma-separated list");
  return out;
}

}  // namespace

const char* section_name(Section s) {
  for (const auto& n : kSections) {
    if (n.section == s) return n.json;
  }
  return "?";
}

const char* section_cli_name(Section s) {
  for (const auto& n : kSections) {
    if (n.section == s) return n.cli;
  }
  return "?";
}

Section parse_section(const std::string& text) {
  const std::string s = lower(text);
  for (const auto& n : kSections) {
    if (s == n.json || s == n.cli) return n.section;
  }
  if (s == "cpu_adam" || s == "adam") return Section::CPU_ADAM;
  throw UsageError("unknown section '" + text +
                   "': expected all, env, collectives, p2p, gemm, attention, memory, host or cpu-adam");
}

std::vector<Section> all_sections() {
  std::vector<Section> out;
  for (const auto& n : kSections) {
    if (n.section != Section::SELFTEST) out.push_back(n.section);
  }
  return out;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

long long parse_int(const std::string& text, const std::string& option, long long min, long long max) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || end == nullptr || *end != '\0' || v < min || v > max) {
    throw UsageError(option + ": expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                     "], got '" + text + "'");
  }
  return v;
}

std::int64_t parse_size(const std::string& text, const std::string& option) {
  char* end = nullptr;
  errno = 0;
  const double number = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || errno != 0 || !(number >= 0)) {
    throw UsageError(option + ": expected a size such as 8, 64K, 1M, 8G (binary prefixes, as nccl-tests), got '" +
                     text + "'");
  }
  std::string suffix = lower(std::string(end));
  double unit = 1;
  if (!suffix.empty() && (suffix[0] == 'k' || suffix[0] == 'm' || suffix[0] == 'g' || suffix[0] == 't')) {
    const char p = suffix[0];
    unit = p == 'k' ? 1024.0 : p == 'm' ? 1048576.0 : p == 'g' ? 1073741824.0 : 1099511627776.0;
    suffix.erase(0, 1);
    if (!suffix.empty() && suffix[0] == 'i') suffix.erase(0, 1);
  }
  if (!suffix.empty() && suffix != "b") {
    throw UsageError(option + ": unknown size suffix in '" + text + "' (use K, M, G: binary, as nccl-tests)");
  }
  const double bytes = number * unit;
  if (bytes > 9.0e18) throw UsageError(option + ": size too large: '" + text + "'");
  return static_cast<std::int64_t>(bytes);
}

std::string usage_text() {
  return R"(clustersim-calibrate: measure a GPU machine for clustersim and write calibration results JSON.

Usage: clustersim-calibrate [SECTION...] [options]
  SECTION: all (default), env, collectives, p2p, gemm, attention, memory, host, cpu-adam

Every test runs in fresh processes (one per GPU) that the harness starts with the NCCL variables of
the test set; a test that fails or hangs is recorded and the run goes on with the next one. The
results file is rewritten atomically after every sub-run, so an interrupted run keeps what finished.
NVLink multicast stays off: NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
NVSHMEM_DISABLE_NVLS=1 are set in every process the harness starts.

General
  -o, --output PATH          results JSON [calibration-results.json]
  --devices LIST             CUDA devices, e.g. 0,1,2,3 [all visible]
  --launcher KIND            process (one process per GPU, default), threads (one process, one thread
                             per GPU, like nccl-tests -t), mpi (ranks started by mpirun/srun/MPI
                             Operator; needs a build with MPI)
  -t, --threads              same as --launcher threads
  --budget SECTION=SECONDS   time budget of one section (repeatable); sweeps stop early to fit it
  --deadline SECONDS         start no new work after this many seconds from the start
  --test-timeout SECONDS     abort a test (one size of one collective, one GEMM) after this [120]
  --subrun-timeout SECONDS   kill a set of worker processes after this [600]
  --nccl-debug-dir DIR       NCCL_DEBUG=INFO, one log file per process in DIR
  --label TEXT               free text stored in tool.label
  -h, --help

Collectives (each op out-of-place and in-place, as nccl-tests)
  -b, --minbytes SIZE        smallest size [8]            -e, --maxbytes SIZE   largest [1G]
  -f, --stepfactor N         size multiplier [2]          --ops LIST  [all_reduce,all_gather,
                             reduce_scatter,broadcast,reduce,alltoall,sendrecv]
  -n, --iters N              timed iterations [20]        -w, --warmup-iters N  [5]
  -c, --check 0|1            check results (error counts) [1]
  -r, --root N               root of broadcast and reduce [0]
  --algos LIST               forced algorithms, one sub-run each with NCCL_ALGO set:
                             ring, tree, pat, nvls, nvls_tree, collnet_direct, collnet_chain
  --protos LIST              forced protocols (NCCL_PROTO): ll, ll128, simple; crossed with --algos
  --channels LIST            forced channel counts (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS)
  --forced-ops LIST          ops of forced sub-runs [all_reduce,all_gather,reduce_scatter,broadcast,reduce]
  --forced-maxbytes SIZE     largest size of forced sub-runs [1G]
  --forced-iters N / --forced-warmup-iters N   [10 / 2]
  --no-auto                  skip the sub-run where NCCL chooses
  --nvlink-centric-sched 0|1 ncclConfig_t.nvlinkCentricSched, set to 1 by nccl-tests with NCCL 2.28 [1]
  --alloc ncclmem|cuda       buffer allocation, ncclMemAlloc as nccl-tests or cudaMalloc [ncclmem]
  --nonblocking              non-blocking communicators (every call polled against the timeout;
                             small sizes then time slower than nccl-tests)

Point to point (every ordered GPU pair)
  --p2p-modes LIST           write (NCCL_P2P_READ_ENABLE=0), read (=1), shm (NCCL_P2P_DISABLE=1),
                             memcpy (cudaMemcpyPeer) [write,read,shm,memcpy]
  --p2p-minbytes SIZE [8]  --p2p-maxbytes SIZE [1G]  --p2p-stepfactor N [4]  --shm-maxbytes SIZE [256M]
  --p2p-iters N [20]

GEMM (cuBLASLt, transformer-layer shapes)
  --gemm-models LIST [llama3-8b,llama3-70b]   --gemm-tp LIST [1,2,4,8]   --gemm-tokens LIST [1024,4096,16384]
  --gemm-dtypes LIST [bf16,fp8]   --gemm-passes LIST [fwd,dgrad,wgrad]   --gemm-square N [8192, 0 = none]
  --gemm-iters N [20]   --gemm-sustained SECONDS [3, 0 = none]: the square bf16 product under a
                             continuous load (alone, and between HBM passes) against the sweep's method

Attention (cuDNN scaled dot-product attention, causal)
  --attn-models LIST [llama3-8b,llama3-70b]   --attn-tp LIST [1,8]   --attn-seqlens LIST [1024,4096,8192]
  --attn-tokens N [16384] (batch = tokens / seq_len)   --attn-directions LIST [fwd,bwd]   --attn-iters N [10]

Memory (HBM)      --memory-maxbytes SIZE [2G]   --memory-iters N [20]
Host transfers    --host-sizes LIST [64M,256M,1G]   --host-iters N [5]
CPU Adam          --adam-params N [64M]   --adam-threads LIST [1,2,4,... all cores]   --adam-steps N [3]

Self-test (not part of "all"): the section "selftest" starts --selftest-ranks N [4] processes that
exercise the harness's host-side plumbing without a GPU; --selftest-mode ok|fail|hang [ok] makes
rank 1 fail or hang, to see the failure handling.
)";
}

std::vector<std::string> forward_arguments(int argc, char** argv) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i) out.emplace_back(argv[i]);
  return out;
}

Options parse_options(int argc, char** argv) {
  Options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (int i = 0; i < argc; ++i) o.command_line += (i ? " " : "") + std::string(argv[i]);

  std::set<Section> chosen;
  bool all = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    std::string inline_value;
    bool has_inline = false;
    if (a.rfind("--", 0) == 0) {
      const auto eq = a.find('=');
      if (eq != std::string::npos) {
        inline_value = a.substr(eq + 1);
        a = a.substr(0, eq);
        has_inline = true;
      }
    }
    auto next = [&]() -> std::string {
      if (has_inline) return inline_value;
      if (i + 1 >= args.size()) throw UsageError(a + ": expected a value");
      return args[++i];
    };
    auto int_opt = [&](long long min, long long max) { return static_cast<int>(parse_int(next(), a, min, max)); };

    if (a == "-h" || a == "--help") {
      throw UsageError("");
    } else if (!a.empty() && a[0] != '-') {
      if (lower(a) == "all") {
        all = true;
      } else {
        const Section s = parse_section(a);
        if (chosen.insert(s).second) o.sections.push_back(s);
      }
    } else if (a == "-o" || a == "--output") {
      o.output = next();
    } else if (a == "--label") {
      o.label = next();
    } else if (a == "--devices") {
      o.devices = parse_list<int>(next(), a, [&](const std::string& s) { return static_cast<int>(parse_int(s, a, 0, 1023)); });
    } else if (a == "--launcher") {
      const std::string v = lower(next());
      if (v == "process") o.launcher = Launcher::PROCESS;
      else if (v == "threads") o.launcher = Launcher::THREADS;
      else if (v == "mpi") o.launcher = Launcher::MPI;
      else throw UsageError("--launcher: expected process, threads or mpi, got '" + v + "'");
    } else if (a == "-t" || a == "--threads") {
      o.launcher = Launcher::THREADS;
    } else if (a == "--budget") {
      const std::string v = next();
      const auto eq = v.find('=');
      if (eq == std::string::npos) throw UsageError("--budget: expected SECTION=SECONDS, got '" + v + "'");
      o.budget_s[parse_section(v.substr(0, eq))] = parse_seconds(v.substr(eq + 1), "--budget");
    } else if (a == "--deadline") {
      o.deadline_s = parse_seconds(next(), a);
    } else if (a == "--test-timeout") {
      o.test_timeout_s = parse_seconds(next(), a);
    } else if (a == "--subrun-timeout") {
      o.subrun_timeout_s = parse_seconds(next(), a);
    } else if (a == "--nccl-debug-dir") {
      o.nccl_debug_dir = next();
    } else if (a == "-b" || a == "--minbytes") {
      o.min_bytes = parse_size(next(), a);
    } else if (a == "-e" || a == "--maxbytes") {
      o.max_bytes = parse_size(next(), a);
    } else if (a == "-f" || a == "--stepfactor") {
      o.step_factor = int_opt(2, 1024);
    } else if (a == "--ops") {
      o.ops = choices(next(), a, kOps);
    } else if (a == "-n" || a == "--iters") {
      o.iters = int_opt(1, 100000);
    } else if (a == "-w" || a == "--warmup-iters") {
      o.warmup_iters = int_opt(0, 100000);
    } else if (a == "-c" || a == "--check") {
      o.check = int_opt(0, 1);
    } else if (a == "-r" || a == "--root") {
      o.root = int_opt(0, 1 << 20);
    } else if (a == "--algos") {
      o.algos = choices(next(), a, kAlgos);
    } else if (a == "--protos") {
      o.protos = choices(next(), a, kProtos);
    } else if (a == "--channels") {
      o.channels = parse_list<int>(next(), a, [&](const std::string& s) { return static_cast<int>(parse_int(s, a, 1, 64)); });
    } else if (a == "--forced-ops") {
      o.forced_ops = choices(next(), a, kOps);
    } else if (a == "--forced-maxbytes") {
      o.forced_max_bytes = parse_size(next(), a);
    } else if (a == "--forced-iters") {
      o.forced_iters = int_opt(1, 100000);
    } else if (a == "--forced-warmup-iters") {
      o.forced_warmup_iters = int_opt(0, 100000);
    } else if (a == "--no-auto") {
      o.run_auto = false;
    } else if (a == "--nvlink-centric-sched") {
      o.nvlink_centric_sched = int_opt(0, 1);
    } else if (a == "--alloc") {
      o.alloc = lower(next());
      if (o.alloc != "ncclmem" && o.alloc != "cuda") throw UsageError("--alloc: expected ncclmem or cuda");
    } else if (a == "--nonblocking") {
      o.nonblocking = true;
    } else if (a == "--p2p-modes") {
      o.p2p_modes = choices(next(), a, kP2pModes);
    } else if (a == "--p2p-minbytes") {
      o.p2p_min_bytes = parse_size(next(), a);
    } else if (a == "--p2p-maxbytes") {
      o.p2p_max_bytes = parse_size(next(), a);
    } else if (a == "--p2p-stepfactor") {
      o.p2p_step_factor = int_opt(2, 1024);
    } else if (a == "--shm-maxbytes") {
      o.shm_max_bytes = parse_size(next(), a);
    } else if (a == "--p2p-iters") {
      o.p2p_iters = int_opt(1, 100000);
    } else if (a == "--gemm-models") {
      o.gemm_models = choices(next(), a, kModels);
    } else if (a == "--gemm-tp") {
      o.gemm_tp = parse_list<int>(next(), a, [&](const std::string& s) { return static_cast<int>(parse_int(s, a, 1, 64)); });
    } else if (a == "--gemm-tokens") {
      o.gemm_tokens = parse_list<std::int64_t>(next(), a, [&](const std::string& s) { return parse_size(s, a); });
    } else if (a == "--gemm-dtypes") {
      o.gemm_dtypes = choices(next(), a, kDtypes);
    } else if (a == "--gemm-passes") {
      o.gemm_passes = choices(next(), a, kPasses);
    } else if (a == "--gemm-square") {
      o.gemm_square = parse_int(next(), a, 0, 65536);
    } else if (a == "--gemm-iters") {
      o.gemm_iters = int_opt(1, 100000);
    } else if (a == "--gemm-sustained") {
      o.gemm_sustained_s = static_cast<double>(parse_int(next(), a, 0, 60));
    } else if (a == "--attn-models") {
      o.attn_models = choices(next(), a, kModels);
    } else if (a == "--attn-tp") {
      o.attn_tp = parse_list<int>(next(), a, [&](const std::string& s) { return static_cast<int>(parse_int(s, a, 1, 64)); });
    } else if (a == "--attn-seqlens") {
      o.attn_seqlens = parse_list<std::int64_t>(next(), a, [&](const std::string& s) { return parse_size(s, a); });
    } else if (a == "--attn-tokens") {
      o.attn_tokens = parse_size(next(), a);
    } else if (a == "--attn-directions") {
      o.attn_directions = choices(next(), a, kDirections);
    } else if (a == "--attn-iters") {
      o.attn_iters = int_opt(1, 100000);
    } else if (a == "--memory-maxbytes") {
      o.memory_max_bytes = parse_size(next(), a);
    } else if (a == "--memory-iters") {
      o.memory_iters = int_opt(1, 100000);
    } else if (a == "--host-sizes") {
      o.host_sizes = parse_list<std::int64_t>(next(), a, [&](const std::string& s) { return parse_size(s, a); });
    } else if (a == "--host-iters") {
      o.host_iters = int_opt(1, 100000);
    } else if (a == "--adam-params") {
      o.adam_params = parse_size(next(), a);
    } else if (a == "--adam-threads") {
      o.adam_threads = parse_list<int>(next(), a, [&](const std::string& s) { return static_cast<int>(parse_int(s, a, 1, 4096)); });
    } else if (a == "--adam-steps") {
      o.adam_steps = int_opt(1, 1000);
    } else if (a == "--selftest-ranks") {
      o.selftest_ranks = int_opt(1, 256);
    } else if (a == "--selftest-mode") {
      o.selftest_mode = lower(next());
      if (o.selftest_mode != "ok" && o.selftest_mode != "fail" && o.selftest_mode != "hang") {
        throw UsageError("--selftest-mode: expected ok, fail or hang");
      }
    } else if (a == "--worker-hub") {
      o.worker = true;
      o.worker_hub = next();
    } else if (a == "--worker-rank") {
      o.worker_rank = int_opt(0, 1 << 20);
    } else if (a == "--worker-nranks") {
      o.worker_nranks = int_opt(1, 1 << 20);
    } else if (a == "--worker-subrun") {
      o.worker_subrun = int_opt(0, 1 << 20);
    } else if (a == "--worker-deadline") {
      // An absolute time (seconds since the epoch), not a duration.
      const std::string v = next();
      char* end = nullptr;
      o.worker_deadline_unix = std::strtod(v.c_str(), &end);
      if (v.empty() || end == nullptr || *end != '\0' || !(o.worker_deadline_unix >= 0)) {
        throw UsageError("--worker-deadline: expected seconds since the epoch, got '" + v + "'");
      }
    } else {
      throw UsageError("unknown option '" + a + "'");
    }
  }
  if (all || o.sections.empty()) o.sections = all_sections();
  if (o.min_bytes > o.max_bytes) throw UsageError("-b/--minbytes is larger than -e/--maxbytes");
  if (o.p2p_min_bytes > o.p2p_max_bytes) throw UsageError("--p2p-minbytes is larger than --p2p-maxbytes");
  if (o.adam_params < 1024) throw UsageError("--adam-params: expected at least 1024");
  for (const auto t : o.gemm_tokens) {
    if (t < 1) throw UsageError("--gemm-tokens: expected sizes >= 1");
  }
  for (const auto s : o.attn_seqlens) {
    if (s < 16) throw UsageError("--attn-seqlens: expected lengths >= 16");
  }
  if (o.launcher == Launcher::MPI && o.worker) throw UsageError("--launcher mpi does not start workers");
  return o;
}

}  // namespace clustersim::harness
