#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "calibrate/results.hpp"
#include "hardware/calibration_profile.hpp"
#include "hardware/errors.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;
using namespace clustersim::calibrate;

namespace {

// An abridged clustersim-calibrate output: one entry of every section, with the extra keys the
// harness writes for people (gpus, gpu_pairs, host, ...). Numbers are made up.
const char* kHarnessSample = R"({
  "schema_version": 1,
  "kind": "clustersim-calibration-results",
  "tool": {"name": "clustersim-calibrate", "version": "0.1.0", "command": "clustersim-calibrate all", "label": "",
           "launcher": "process", "nccl_version": "2.28.9", "nvlink_centric_sched": 1, "alloc": "ncclmem", "nonblocking": false},
  "environment": {"hostname": "h", "date": "2026-11-21T10:00:00Z", "gpu_name": "NVIDIA H200", "gpu_count": 4,
    "driver": "580.159.04", "cuda_runtime": "13.0", "cuda_driver_api": "13.0", "nccl_version": "2.28.9", "nccl_headers": "22809",
    "nccl_env": {"NCCL_NVLS_ENABLE": "0"}, "other_env": {"NVSHMEM_DISABLE_NVLS": "1"}, "instance_type": null,
    "gpus": [{"index": 0, "name": "NVIDIA H200"}],
    "pcie": [{"gpu": 0, "bus_id": "0000:18:00.0", "numa_node": 0, "gen": 5, "width": 16}],
    "nvlink": [{"gpu": 0, "peer": null, "via": "nvswitch", "links": 18, "links_present": 18, "link_GBps": 26.562}],
    "gpu_pairs": [{"gpu": 0, "peer": 1, "cuda_peer_access": true}],
    "fabric_manager": "running", "fabric_manager_evidence": "NVML GPU fabric state: completed",
    "nics": [], "libfabric": "absent", "kernel": "Linux 6.1", "host": {"cpu_model": "x"}, "warnings": []},
  "collectives": [
    {"op": "all_reduce", "nodes": 1, "gpus_per_node": 4, "nranks": 4, "algo": "ring", "proto": "ll128", "channels": null,
     "env": {"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL128"}, "dtype": "float", "redop": "sum", "root": -1, "in_place": false,
     "warmup_iters": 2, "iters": 10,
     "points": [{"size_bytes": 1048576, "count": 262144, "time_us": 20.0, "algbw_GBps": 52.4288, "busbw_GBps": 78.6432, "errors": 0}]}
  ],
  "p2p": [{"src": 0, "dst": 1, "src_device": 0, "dst_device": 1, "mode": "nccl_p2p_write", "env": {"NCCL_P2P_READ_ENABLE": "0"},
           "iters": 20, "points": [{"size_bytes": 8, "time_us": 9.5, "bandwidth_GBps": 0.00084, "errors": 0}]}],
  "gemm": [{"name": "qkv", "dtype": "bf16", "m": 4096, "n": 6144, "k": 4096, "transa": "T", "transb": "N",
            "time_us": 300.0, "tflops": 687.2, "pass": "fwd", "model": "llama3-8b", "tp": 1, "tokens": 4096, "iters": 20,
            "max_rel_error": 0.002, "gpu": 0, "gpu_name": "NVIDIA H200"}],
  "attention": [{"impl": "cudnn_sdpa", "dtype": "bf16", "batch": 4, "heads": 32, "kv_heads": 8, "seq_len": 4096,
                 "head_dim": 128, "causal": true, "direction": "fwd", "time_us": 1000.0, "tflops": 549.8, "model": "llama3-8b",
                 "tp": 1, "layout": "bshd", "cudnn_version": 91300, "max_rel_error": 0.004, "gpu": 1, "gpu_name": "NVIDIA H200"}],
  "memory": [{"kernel": "copy", "bytes_moved": 4294967296, "time_us": 1000.0, "bandwidth_GBps": 4294.97, "buffer_bytes": 2147483648,
              "iters": 20, "check": "ok", "gpu": 0, "gpu_name": "NVIDIA H200"}],
  "host": [{"direction": "h2d", "pinned": true, "gpus": [0, 1], "size_bytes": 1073741824, "time_us": 20000.0,
            "bandwidth_GBps": 53.7, "iters": 5, "concurrent": true, "numa_bound": true, "numa_node": 0,
            "per_gpu_GBps": [53.7, 53.6], "aggregate_GBps": 107.0}],
  "cpu_adam": [{"threads": 8, "params": 67108864, "time_us": 50000.0, "params_per_second": 1.342e9, "bytes_per_param": 28,
                "steps": 3, "hardware_threads": 64, "vector_isa": "avx512"}],
  "runs": [{"section": "collectives", "subrun": "algo=ring proto=ll128", "status": "ok", "message": "", "elapsed_s": 12.5,
            "processes": 4, "env": {"NCCL_ALGO": "Ring"}}],
  "failures": [{"section": "attention", "subrun": "attention", "test": "attention", "status": "unavailable", "message": "no cuDNN"}]
})";

std::string error_of(const std::string& text) {
  try {
    read_calibration_results(parse_json_text(text, "r.json").root());
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("calibration results: the harness's output reads into typed sections", "[unit][calibrate]") {
  const auto r = read_calibration_results(parse_json_text(kHarnessSample, "r.json").root());
  CHECK(r.tool.name == "clustersim-calibrate");
  CHECK(r.tool.launcher == "process");
  REQUIRE(r.environment);
  CHECK(r.environment->fabric_manager == "running");
  CHECK_FALSE(r.environment->instance_type);
  REQUIRE(r.environment->nvlink.size() == 1);
  CHECK_FALSE(r.environment->nvlink[0].peer);
  // 18 links of 26.562 GB/s per direction (NVML's figure on H100/H200).
  CHECK(r.environment->nvlink[0].links == 18);
  CHECK(*r.environment->nvlink[0].link_GBps == Approx(26.562));
  REQUIRE(r.collectives.size() == 1);
  const auto& c = r.collectives[0];
  CHECK(c.algo == "ring");
  CHECK(c.proto == "ll128");
  CHECK(c.env.at("NCCL_PROTO") == "LL128");
  CHECK_FALSE(c.channels);
  // 1 MiB in 20 us: algbw = 1048576 / (20 * 1e3) = 52.4288 GB/s; all_reduce on 4 ranks: busbw = 1.5 x algbw.
  CHECK(c.points[0].busbw_GBps == Approx(c.points[0].algbw_GBps * busbw_factor("all_reduce", 4)));
  CHECK(r.p2p.at(0).mode == "nccl_p2p_write");
  // qkv of Llama-3-8B at TP 1: n = (32 + 2 x 8) x 128 = 6144; 2mnk / t = 2 x 4096 x 6144 x 4096 / 300e-6 = 687.2 TFLOP/s.
  CHECK(r.gemm.at(0).n == 6144);
  CHECK(r.gemm.at(0).tflops == Approx(2.0 * 4096 * 6144 * 4096 / 300e-6 / 1e12).epsilon(1e-4));
  CHECK(r.attention.at(0).kv_heads == 8);
  CHECK(r.memory.at(0).kernel == "copy");
  CHECK(r.host.at(0).per_gpu_GBps.size() == 2);
  CHECK(r.cpu_adam.at(0).threads == 8);
  CHECK(r.runs.at(0).status == "ok");
  CHECK(r.failures.at(0).status == "unavailable");
}

TEST_CASE("calibration results: written and read back unchanged", "[unit][calibrate]") {
  const auto a = read_calibration_results(parse_json_text(kHarnessSample, "r.json").root());
  const std::string text = format_calibration_results(a);
  const auto b = read_calibration_results(parse_json_text(text, "again.json").root());
  // Formatting the re-read results gives the same text: nothing was lost or added.
  CHECK(format_calibration_results(b) == text);
  CHECK(b.collectives.at(0).points.at(0).time_us == a.collectives.at(0).points.at(0).time_us);
  testing::TempDir dir;
  const auto path = (dir.path() / "out.json").string();
  write_calibration_results(path, a);
  CHECK(format_calibration_results(load_calibration_results(path)) == text);
}

TEST_CASE("calibration results: bad files are InputErrors with the JSON pointer", "[unit][calibrate]") {
  CHECK_THAT(error_of(replace(kHarnessSample, "\"iters\": 10,", "\"iterz\": 10,")),
             Catch::Contains("r.json") && Catch::Contains("/collectives/0/iterz") && Catch::Contains("did you mean 'iters'"));
  CHECK_THAT(error_of(replace(kHarnessSample, "\"proto\": \"ll128\"", "\"proto\": \"ll64\"")),
             Catch::Contains("/collectives/0/proto"));
  // 2 nodes x 4 GPUs is not 4 ranks.
  CHECK_THAT(error_of(replace(kHarnessSample, "\"nodes\": 1,", "\"nodes\": 2,")),
             Catch::Contains("/collectives/0") && Catch::Contains("nodes x gpus_per_node"));
  CHECK_THAT(error_of(replace(kHarnessSample, "\"time_us\": 20.0", "\"time_us\": -1")),
             Catch::Contains("/collectives/0/points/0/time_us"));
  CHECK_THAT(error_of(replace(kHarnessSample, "\"schema_version\": 1", "\"schema_version\": 2")),
             Catch::Contains("/schema_version"));
  CHECK_THAT(error_of(replace(kHarnessSample, "\"mode\": \"nccl_p2p_write\"", "\"mode\": \"p2p\"")),
             Catch::Contains("/p2p/0/mode"));
  // What the compute fitter needs of an entry: the continuous-load test's phase, a strided kernel's
  // element count, a host copy's (positive) bandwidth.
  CHECK_THAT(error_of(replace(kHarnessSample, "\"name\": \"qkv\"", "\"name\": \"sustained\"")),
             Catch::Contains("/gemm/0") && Catch::Contains("phase"));
  CHECK_THAT(error_of(replace(kHarnessSample, "\"kernel\": \"copy\"", "\"kernel\": \"strided\"")),
             Catch::Contains("/memory/0") && Catch::Contains("elements"));
  CHECK_THAT(error_of(replace(kHarnessSample, "\"bandwidth_GBps\": 53.7", "\"bandwidth_GBps\": 0")),
             Catch::Contains("/host/0/bandwidth_GBps") && Catch::Contains("> 0"));
}

TEST_CASE("nccl-tests bus bandwidth factors", "[unit][calibrate]") {
  // all_reduce 2(n-1)/n: 8 ranks -> 14/8 = 1.75.
  CHECK(busbw_factor("all_reduce", 8) == Approx(1.75));
  // all_gather, reduce_scatter, alltoall (n-1)/n: 8 ranks -> 0.875.
  CHECK(busbw_factor("all_gather", 8) == Approx(0.875));
  CHECK(busbw_factor("reduce_scatter", 8) == Approx(0.875));
  CHECK(busbw_factor("alltoall", 8) == Approx(0.875));
  // broadcast, reduce, sendrecv 1.
  CHECK(busbw_factor("broadcast", 8) == 1.0);
  CHECK(busbw_factor("reduce", 8) == 1.0);
  CHECK(busbw_factor("sendrecv", 8) == 1.0);
  // One rank moves nothing over the bus.
  CHECK(busbw_factor("all_reduce", 1) == 0.0);
}

TEST_CASE("every built-in profile's results files are committed and read strictly", "[unit][calibrate]") {
  // A profile must be re-fittable from what it names: every results file a built-in profile lists
  // exists, and the harness's results (`clustersim calibrate fit` reads each strictly first) load.
  // The host profile's other files (CPU optimizer benchmarks, training steps) are read by the
  // script its provenance names (calibrate/training_probe/fit_host_offload.py).
  REQUIRE_FALSE(hardware::builtin_profile_files().empty());
  for (const auto& f : hardware::builtin_profile_files()) {
    const auto profile = hardware::CalibrationProfile::parse(f.text, std::string(f.path));
    INFO(f.path);
    CHECK_FALSE(profile.provenance().results.empty());
    for (const auto& r : profile.provenance().results) {
      INFO(r);
      const auto path = testing::source_dir() / r;
      REQUIRE(std::filesystem::exists(path));
      std::ifstream in(path);
      const auto kind = nlohmann::json::parse(in).value("kind", std::string());
      if (kind == "clustersim-calibration-results") CHECK_NOTHROW(load_calibration_results(path.string()));
    }
  }
}
