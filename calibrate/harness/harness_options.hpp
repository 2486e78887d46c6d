#pragma once
// Command line of clustersim-calibrate. The vocabulary of the collective sweep is nccl-tests'
// (-b/-e/-f sizes with K/M/G as binary prefixes, -n iterations, -w warm-up, -c check, -r root).
//
// Parsing is by hand (no CLI library: the harness builds with CUDA and the standard library alone).
// A bad option throws UsageError; main() prints it with the usage text and exits 2.

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace clustersim::harness {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// SELFTEST checks the harness's own process plumbing without a GPU; "all" leaves it out.
enum class Section { ENVIRONMENT, COLLECTIVES, P2P, GEMM, ATTENTION, MEMORY, HOST, CPU_ADAM, SELFTEST };

const char* section_name(Section s);         // "environment", "collectives", ... as in the results JSON
const char* section_cli_name(Section s);     // "env", "collectives", "p2p", ..., "cpu-adam"
Section parse_section(const std::string& s);  // either spelling
std::vector<Section> all_sections();  // every section but SELFTEST

enum class Launcher { PROCESS, THREADS, MPI };

struct Options {
  // General.
  std::vector<Section> sections;  // in the order they run
  std::string output = "calibration-results.json";
  std::string label;
  std::vector<int> devices;  // CUDA device ordinals; empty = all visible
  Launcher launcher = Launcher::PROCESS;
  std::map<Section, double> budget_s;  // per-section time budget
  double deadline_s = 0;               // whole run; 0 = none
  double test_timeout_s = 120;
  double subrun_timeout_s = 600;
  std::string nccl_debug_dir;
  std::string command_line;  // as typed, for tool.command

  // Collectives.
  std::int64_t min_bytes = 8;
  std::int64_t max_bytes = 1LL << 30;
  int step_factor = 2;
  std::vector<std::string> ops{"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall",
                               "sendrecv"};
  int iters = 20;
  int warmup_iters = 5;
  int check = 1;
  int root = 0;
  bool run_auto = true;
  std::vector<std::string> algos;   // forced, lower case: ring, tree, ...
  std::vector<std::string> protos;  // forced, lower case: ll, ll128, simple
  std::vector<int> channels;        // forced channel counts
  std::vector<std::string> forced_ops{"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"};
  std::int64_t forced_max_bytes = 1LL << 30;
  int forced_iters = 10;
  int forced_warmup_iters = 2;
  int nvlink_centric_sched = 1;
  std::string alloc = "ncclmem";
  bool nonblocking = false;

  // Point to point.
  std::vector<std::string> p2p_modes{"write", "read", "shm", "memcpy"};
  std::int64_t p2p_min_bytes = 8;
  std::int64_t p2p_max_bytes = 1LL << 30;
  int p2p_step_factor = 4;
  std::int64_t shm_max_bytes = 256LL << 20;
  int p2p_iters = 20;

  // GEMM.
  std::vector<std::string> gemm_models{"llama3-8b", "llama3-70b"};
  std::vector<int> gemm_tp{1, 2, 4, 8};
  std::vector<std::int64_t> gemm_tokens{1024, 4096, 16384};
  std::vector<std::string> gemm_dtypes{"bf16", "fp8"};
  std::vector<std::string> gemm_passes{"fwd", "dgrad", "wgrad"};
  std::int64_t gemm_square = 8192;
  int gemm_iters = 20;
  double gemm_sustained_s = 3;  // gemm_sustained_bench.hpp; 0: not run

  // Attention.
  std::vector<std::string> attn_models{"llama3-8b", "llama3-70b"};
  std::vector<int> attn_tp{1, 8};
  std::vector<std::int64_t> attn_seqlens{1024, 4096, 8192};
  std::int64_t attn_tokens = 16384;  // batch = tokens / seq_len
  std::vector<std::string> attn_directions{"fwd", "bwd"};
  int attn_iters = 10;

  // Memory.
  std::int64_t memory_max_bytes = 2LL << 30;
  int memory_iters = 20;

  // Host transfers.
  std::vector<std::int64_t> host_sizes{64LL << 20, 256LL << 20, 1LL << 30};
  int host_iters = 5;

  // CPU Adam.
  std::int64_t adam_params = 64LL << 20;
  std::vector<int> adam_threads;  // empty = 1, 2, 4, ... up to all cores
  int adam_steps = 3;

  // Self-test: ranks to start, and what they do: ok, fail (rank 1 throws), hang (rank 1 sleeps).
  int selftest_ranks = 4;
  std::string selftest_mode = "ok";

  // Worker side (set by the driver when it starts a worker; not for users).
  bool worker = false;
  std::string worker_hub;
  int worker_rank = 0;
  int worker_nranks = 1;
  int worker_subrun = -1;
  double worker_deadline_unix = 0;
};

Options parse_options(int argc, char** argv);
// The arguments that reproduce `opt` in a worker (everything but the worker_* fields).
std::vector<std::string> forward_arguments(int argc, char** argv);
std::string usage_text();

// nccl-tests sizes: a number with an optional K, M or G (binary: 1K = 1024), optionally followed by
// "B" or "iB" ("64M", "1GiB", "8"). Throws UsageError.
std::int64_t parse_size(const std::string& text, const std::string& option);
std::vector<std::string> split_list(const std::string& text);
// A whole decimal integer in [min, max], else UsageError naming the option.
long long parse_int(const std::string& text, const std::string& option, long long min, long long max);

}  // namespace clustersim::harness
