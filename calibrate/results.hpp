#pragma once
// Calibration results: what clustersim-calibrate measures on a machine (or what the nccl-tests
// importer reads from logs), as typed structs for the fitters and the validation tests.
//
// The file format is documented in calibrate/README.md ("Results JSON"). Units are fixed by the
// key: times in microseconds (_us), sizes in bytes (_bytes), bandwidths in GB/s (_GBps, 1e9 B/s),
// throughput in TFLOP/s. Every point is a measurement, never smoothed.
//
// Reading is strict (hardware/json_reader.hpp): unknown keys, wrong types and values out of range
// are InputErrors naming the file and the JSON pointer. Keys the harness writes for people (GPU
// names, check results, NUMA placement) are typed where a fitter may use them and otherwise
// accepted and skipped; they are listed in the README.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hardware/json_reader.hpp"

namespace clustersim::calibrate {

inline constexpr int kResultsSchemaVersion = 1;
inline constexpr const char* kResultsKind = "clustersim-calibration-results";

// The vocabulary of the "collectives" section.
const std::vector<std::string>& collective_ops();     // all_reduce, all_gather, ..., sendrecv
const std::vector<std::string>& collective_algos();   // auto, ring, tree, nvls, nvls_tree, pat, collnet_*
const std::vector<std::string>& collective_protos();  // auto, ll, ll128, simple

// nccl-tests' bus-bandwidth factor: busbw = algbw * factor (nccl-tests doc/PERFORMANCE.md).
// all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall (n-1)/n; broadcast, reduce, sendrecv 1.
double busbw_factor(const std::string& op, int nranks);

struct ToolInfo {
  std::string name;  // clustersim-calibrate | nccl-tests | torch-kernel-probe (calibrate/training_probe)
  std::string version;
  std::string command;
  std::optional<std::string> label;
  std::optional<std::string> launcher;  // process | threads | mpi
  std::optional<std::string> nccl_version;
  std::optional<int> nvlink_centric_sched;
  std::optional<std::string> alloc;
  std::optional<bool> nonblocking;
  std::vector<std::string> sources;  // importer: the log files read
};

struct NvlinkInfo {
  int gpu = 0;
  std::optional<int> peer;         // null: links to NVSwitches (see via)
  std::optional<std::string> via;  // nvswitch | direct | none
  int links = 0;                   // active links
  std::optional<int> links_present;
  std::optional<double> link_GBps;  // per link, per direction, as NVML reports it
  std::optional<int> nvlink_version;
};

struct PcieInfo {
  int gpu = 0;
  std::string bus_id;
  std::optional<int> numa_node;
  std::optional<int> gen;
  std::optional<int> width;
  std::optional<int> max_gen;
  std::optional<int> max_width;
  std::optional<std::string> sysfs_link_speed;
  std::optional<std::string> local_cpus;
};

struct NicInfo {
  std::string name;
  std::string provider;  // efa | mlx5 | ...
  std::optional<double> speed_Gbps;
  std::optional<std::string> rate;
  std::optional<std::string> state;
  std::optional<int> numa_node;
};

struct EnvironmentInfo {
  std::optional<std::string> hostname;
  std::optional<std::string> date;
  std::optional<std::string> gpu_name;
  std::optional<int> gpu_count;
  std::optional<std::string> driver;
  std::optional<std::string> cuda_runtime;
  std::optional<std::string> nccl_version;
  std::map<std::string, std::string> nccl_env;
  std::optional<std::string> instance_type;
  std::optional<std::string> fabric_manager;  // running | not running | unknown
  std::optional<std::string> fabric_manager_evidence;
  std::vector<NvlinkInfo> nvlink;
  std::vector<PcieInfo> pcie;
  std::vector<NicInfo> nics;
  std::vector<std::string> warnings;
};

struct CollectivePoint {
  std::int64_t size_bytes = 0;  // nccl-tests' size column: the larger of send and receive buffer
  std::int64_t count = 0;       // nccl-tests' count column (per-rank for all_gather, reduce_scatter, alltoall)
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::optional<std::int64_t> errors;  // null: not checked
};

struct CollectiveSeries {
  std::string op;
  int nodes = 1;
  int gpus_per_node = 1;
  int nranks = 1;
  std::string algo = "auto";
  std::string proto = "auto";
  std::optional<int> channels;
  std::map<std::string, std::string> env;  // the variables set for this sub-run
  std::string dtype = "float";
  std::string redop = "sum";
  int root = -1;
  bool in_place = false;
  std::optional<int> warmup_iters;  // null when a log does not say
  std::optional<int> iters;
  // How nccl-tests launched (-t, -g): threads of one process, each driving gpus_per_thread GPUs.
  // Null when the file does not say (the harness's files say it once, as tool.launcher).
  std::optional<int> threads_per_process;
  std::optional<int> gpus_per_thread;
  std::vector<CollectivePoint> points;
  // Which of the fit's results files (sessions) the series came from, in the order given (set when
  // files are merged; 0 for one file). Not part of the file format.
  int session = 0;
};

struct P2pPoint {
  std::int64_t size_bytes = 0;
  double time_us = 0;
  double bandwidth_GBps = 0;
  std::optional<std::int64_t> errors;
};

struct P2pSeries {
  int src = 0;
  int dst = 0;
  std::optional<int> src_device;
  std::optional<int> dst_device;
  std::string mode;  // nccl_p2p_write | nccl_p2p_read | nccl_shm | cuda_memcpy_peer
  std::map<std::string, std::string> env;
  std::optional<bool> peer_access;
  std::optional<int> iters;
  std::vector<P2pPoint> points;
  int session = 0;  // as CollectiveSeries::session
};

struct GemmResult {
  std::string name;   // qkv | attn_out | mlp_up | mlp_gate | mlp_down | lm_head | square | sustained
  std::string dtype;  // bf16 | fp8
  std::int64_t m = 0, n = 0, k = 0;
  std::string transa, transb;  // cuBLASLt operations (column-major); the forward pass is T, N
  double time_us = 0;
  double tflops = 0;
  std::optional<std::string> pass;  // fwd | dgrad | wgrad
  std::optional<std::string> model;
  std::optional<int> tp;
  std::optional<std::int64_t> tokens;
  std::optional<int> iters;
  std::optional<double> max_rel_error;
  std::optional<int> gpu;
  std::optional<std::string> gpu_name;
  std::optional<bool> fast_accum;
  // "sustained" (one square product under a continuous load, --gemm-sustained): how it was run and
  // the clock and power the GPU held meanwhile.
  std::optional<std::string> phase;  // harness | burst | sustained | mixed (required for "sustained")
  std::optional<int> launches;
  std::optional<double> busy_ms;
  std::optional<double> gemm_share;
  std::optional<double> sm_clock_MHz;
  std::optional<double> power_W;
};

struct AttentionResult {
  std::string impl;
  std::string dtype;
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq_len = 0, head_dim = 0;
  bool causal = true;
  std::string direction;  // fwd | bwd
  double time_us = 0;
  double tflops = 0;
  std::optional<std::string> model;
  std::optional<int> tp;
  std::optional<std::string> layout;
  std::optional<std::int64_t> cudnn_version;
  std::optional<double> max_rel_error;
  std::optional<int> gpu;
  std::optional<std::string> gpu_name;
};

struct MemoryResult {
  // copy | read | write | elementwise | cuda_memcpy | strided | reduce (PyTorch's kernels, from the
  // torch probe) | launch_gap (time per queued empty kernel: no bytes moved)
  std::string kernel;
  std::int64_t bytes_moved = 0;
  double time_us = 0;
  double bandwidth_GBps = 0;
  std::optional<std::string> op;          // which kernel of its kind (add_bf16, one_block, ...)
  std::optional<std::int64_t> elements;   // elements touched (torch kernels; required, >= 1, for strided)
  std::optional<int> kernels, blocks, threads;  // launch_gap: kernels queued, their grid
  std::optional<bool> queue_full;
  std::optional<std::int64_t> buffer_bytes;
  std::optional<int> iters;
  std::optional<std::string> check;
  std::optional<int> gpu;
  std::optional<std::string> gpu_name;
};

struct HostTransferResult {
  std::string direction;  // h2d | d2h
  bool pinned = true;
  std::vector<int> gpus;
  std::int64_t size_bytes = 0;
  double time_us = 0;
  double bandwidth_GBps = 0;  // per GPU (the mean when several run at once); > 0
  std::optional<int> iters;
  std::optional<bool> concurrent;
  std::optional<bool> numa_bound;
  std::optional<int> numa_node;
  std::vector<double> per_gpu_GBps;
  std::optional<double> aggregate_GBps;
};

struct CpuAdamResult {
  int threads = 1;
  std::int64_t params = 0;
  double time_us = 0;
  double params_per_second = 0;
  std::optional<int> bytes_per_param;
  std::optional<int> steps;
  std::optional<int> hardware_threads;
  std::optional<std::string> vector_isa;
};

struct RunRecord {
  std::string section;
  std::string subrun;
  std::string status;  // ok | failed | timeout | skipped
  std::string message;
  double elapsed_s = 0;
  int processes = 0;
  std::map<std::string, std::string> env;
};

struct FailureRecord {
  std::string section;
  std::string subrun;
  std::string test;
  std::string status;  // failed | timeout | unavailable | skipped
  std::string message;
};

struct CalibrationResults {
  int schema_version = kResultsSchemaVersion;
  ToolInfo tool;
  std::optional<EnvironmentInfo> environment;
  std::vector<CollectiveSeries> collectives;
  std::vector<P2pSeries> p2p;
  std::vector<GemmResult> gemm;
  std::vector<AttentionResult> attention;
  std::vector<MemoryResult> memory;
  std::vector<HostTransferResult> host;
  std::vector<CpuAdamResult> cpu_adam;
  std::vector<RunRecord> runs;
  std::vector<FailureRecord> failures;
};

CalibrationResults read_calibration_results(const ValueReader& root);
// Throws InputError naming the file.
CalibrationResults load_calibration_results(const std::string& path);
// The JSON text of `results` (one entry per line in each section), ending with a newline.
std::string format_calibration_results(const CalibrationResults& results);
// format_calibration_results written through write_file_atomically.
void write_calibration_results(const std::string& path, const CalibrationResults& results);

}  // namespace clustersim::calibrate
