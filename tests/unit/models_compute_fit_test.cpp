// The compute fitter on synthetic results generated from known parameters plus noise: it must
// recover the parameters, report cross-validated errors per kind, and resist outliers.

#include <catch2/catch.hpp>

#include <random>

#include "calibrate/compute_fit.hpp"
#include "calibrate/results.hpp"
#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"
#include "models/compute_model.hpp"
#include "models/compute_parameters.hpp"

using namespace clustersim;
namespace cp = clustersim::models::compute_params;

namespace {

const hardware::GpuSpec& h100() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c.gpu("H100-SXM5-80GB");
}

// The truth the synthetic measurements come from.
struct Truth {
  double e_mem = 0.88, t0 = 3e-6;
  double gemm_e = 0.82, gemm_half_k = 90, gemm_half_mn = 40;
  double strided = 1.0 / 180;
  double fwd_e = 0.60, fwd_half = 300, bwd_e = 0.48, bwd_half = 200;
  double h2d = 52e9, d2h = 48e9, latency = 8e-6, concurrent_per_gpu = 40e9;
  double adam_core = 2.5e8, adam_node = 8e9;
};

// Results JSON with the sections the compute fitter reads (and a tool: the format requires one).
nlohmann::json synthetic(const Truth& t, double noise, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-noise, noise);
  auto jitter = [&](double v) { return v * (1 + u(rng)); };
  const double P = 989.4e12, BW = 3.35e12, sms = 132;
  nlohmann::json r = {{"schema_version", 1},
                      {"kind", "clustersim-calibration-results"},
                      {"tool", {{"name", "clustersim-calibrate"}, {"version", "synthetic"}}}};
  r["gemm"] = nlohmann::json::array();
  for (int m : {1024, 2048, 4096, 8192, 16384}) {
    for (int n : {256, 512, 1024, 4096, 14336}) {
      for (int k : {1024, 4096, 8192}) {
        const double eff = cp::gemm_efficiency(m, n, k, 1, t.gemm_e, t.gemm_half_k, t.gemm_half_mn, 128, 128, sms);
        const double flops = 2.0 * m * n * k;
        const double bytes = (1.0 * m * k + 1.0 * k * n + 1.0 * m * n) * 2;
        const double time = t.t0 + std::max(flops / (P * eff), bytes / (BW * t.e_mem));
        r["gemm"].push_back({{"name", "square"}, {"dtype", "bf16"}, {"m", m}, {"n", n}, {"k", k}, {"transa", "T"},
                             {"transb", "N"}, {"time_us", jitter(time) * 1e6}, {"tflops", flops / time / 1e12}});
      }
    }
  }
  r["attention"] = nlohmann::json::array();
  for (const char* dir : {"fwd", "bwd"}) {
    const bool bwd = std::string(dir) == "bwd";
    for (int s : {512, 1024, 2048, 4096, 8192, 16384}) {
      for (int heads : {8, 32}) {
        const double pairs = 1.0 * 2 * heads * s * s * 0.5;  // batch 2, causal
        const double flops = bwd ? 2 * pairs * 5 * 128 : 2 * pairs * 2 * 128;
        const double eff = cp::attention_efficiency(s, bwd ? t.bwd_e : t.fwd_e, bwd ? t.bwd_half : t.fwd_half);
        const double time = t.t0 + flops / (P * eff);
        r["attention"].push_back({{"impl", "cudnn_sdpa"}, {"dtype", "bf16"}, {"batch", 2}, {"heads", heads},
                                  {"kv_heads", heads / 4}, {"seq_len", s}, {"head_dim", 128}, {"causal", true},
                                  {"direction", dir}, {"time_us", jitter(time) * 1e6}, {"tflops", 0.0}});
      }
    }
  }
  r["memory"] = nlohmann::json::array();
  for (double b = 1 << 20; b <= 8.0 * (1 << 30); b *= 2) {
    for (const char* kernel : {"copy", "elementwise"}) {
      const double time = t.t0 + b / (BW * t.e_mem);
      r["memory"].push_back({{"kernel", kernel}, {"bytes_moved", b}, {"time_us", jitter(time) * 1e6},
                             {"bandwidth_GBps", b / time / 1e9}});
    }
  }
  // PyTorch's non-vectorized kernels, 4 B moved per element (a bf16 op reading and writing): bound
  // by N / (P_fp32 r), 2.7 ps per element against 1.4 ps at the HBM rate.
  const double p32 = 66.9e12;
  for (double n = 1 << 24; n <= 1 << 28; n *= 2) {
    const double time = t.t0 + std::max(4 * n / (BW * t.e_mem), n / (p32 * t.strided));
    const double measured = jitter(time);
    r["memory"].push_back({{"kernel", "strided"}, {"op", "mul_transposed"}, {"elements", n}, {"bytes_moved", 4 * n},
                           {"time_us", measured * 1e6}, {"bandwidth_GBps", 4 * n / measured / 1e9}});
  }
  r["host"] = nlohmann::json::array();
  for (bool h2d : {true, false}) {
    for (double s = 1 << 20; s <= 2.0 * (1 << 30); s *= 4) {
      const double time = t.latency + s / (h2d ? t.h2d : t.d2h);
      r["host"].push_back({{"direction", h2d ? "h2d" : "d2h"}, {"pinned", true}, {"gpus", {0}}, {"size_bytes", s},
                           {"time_us", jitter(time) * 1e6}, {"bandwidth_GBps", s / time / 1e9}});
    }
    const double s = 1 << 30;
    const double bw = jitter(t.concurrent_per_gpu);
    r["host"].push_back({{"direction", h2d ? "h2d" : "d2h"}, {"pinned", true}, {"gpus", {0, 1, 2, 3}},
                         {"size_bytes", s}, {"time_us", s / bw * 1e6}, {"bandwidth_GBps", bw / 1e9}});
  }
  r["cpu_adam"] = nlohmann::json::array();
  for (int threads : {1, 2, 4, 8, 16, 32, 48, 64}) {
    const double rate = std::min(t.adam_core * threads, t.adam_node);
    const double params = 1e9;
    r["cpu_adam"].push_back({{"threads", threads}, {"params", params}, {"time_us", jitter(params / rate) * 1e6},
                             {"params_per_second", rate}});
  }
  return r;
}

// The results as the fitter takes them: read strictly, as `calibrate fit` reads its files.
calibrate::CalibrationResults typed(const nlohmann::json& results, const std::string& file = "synthetic.json") {
  return calibrate::read_calibration_results(parse_json_text(results.dump(), file).root());
}

const hardware::ProfileParameter& find(const std::vector<hardware::ProfileParameter>& ps, const std::string& name) {
  for (const auto& p : ps) {
    if (p.name == name) return p;
  }
  FAIL("parameter " << name << " not fitted");
  return ps.front();
}

}  // namespace

TEST_CASE("the compute fitter recovers known parameters from noisy measurements", "[unit][models][fit]") {
  const Truth t;
  calibrate::ComputeFitReport report;
  // +-2% uniform noise on every time.
  const auto ps = calibrate::fit_compute_parameters(typed(synthetic(t, 0.02, 7)), h100(), report);
  // Each fitted value within a few percent of the truth it was generated from.
  CHECK(find(ps, "compute.memory.efficiency").value == Approx(t.e_mem).epsilon(0.02));
  CHECK(find(ps, "compute.kernel_overhead").value == Approx(t.t0).epsilon(0.35));
  CHECK(find(ps, "compute.gemm.bf16.max_efficiency").value == Approx(t.gemm_e).epsilon(0.02));
  CHECK(find(ps, "compute.gemm.bf16.half_k").value == Approx(t.gemm_half_k).epsilon(0.1));
  CHECK(find(ps, "compute.gemm.bf16.half_mn").value == Approx(t.gemm_half_mn).epsilon(0.15));
  CHECK(find(ps, "compute.memory.strided_elements_per_flop").value == Approx(t.strided).epsilon(0.03));
  CHECK(find(ps, "compute.attention.fwd.max_efficiency").value == Approx(t.fwd_e).epsilon(0.02));
  CHECK(find(ps, "compute.attention.fwd.half_seq").value == Approx(t.fwd_half).epsilon(0.1));
  CHECK(find(ps, "compute.attention.bwd.max_efficiency").value == Approx(t.bwd_e).epsilon(0.02));
  CHECK(find(ps, "compute.attention.bwd.half_seq").value == Approx(t.bwd_half).epsilon(0.1));
  CHECK(find(ps, "host.h2d.pinned.bandwidth").value == Approx(t.h2d).epsilon(0.02));
  CHECK(find(ps, "host.d2h.pinned.bandwidth").value == Approx(t.d2h).epsilon(0.02));
  // Aggregate of 4 GPUs at ~40 GB/s each (one run each way, +-2%).
  CHECK(find(ps, "host.h2d.pinned.aggregate_bandwidth").value == Approx(4 * t.concurrent_per_gpu).epsilon(0.025));
  CHECK(find(ps, "host.cpu_adam.params_per_second_per_core").value == Approx(t.adam_core).epsilon(0.03));
  CHECK(find(ps, "host.cpu_adam.node_params_per_second").value == Approx(t.adam_node).epsilon(0.03));
  CHECK(find(ps, "compute.gemm.bf16.max_efficiency").kind == hardware::ProfileParameter::Kind::RATIO);
  CHECK(find(ps, "host.h2d.pinned.bandwidth").kind == hardware::ProfileParameter::Kind::BANDWIDTH);
  // Cross-validated errors are reported per kind and stay near the noise level.
  REQUIRE_FALSE(report.kinds.empty());
  for (const auto& k : report.kinds) {
    INFO(k.kind);
    CHECK(k.folds == 5);
    CHECK(k.cv_mean_abs < 0.03);
    CHECK(k.cv_max_abs < 0.08);
  }
  CHECK_THAT(report.to_text(), Catch::Contains("gemm.bf16") && Catch::Contains("attention.bwd"));
  // The fitted values go into a profile that the compute model reads back.
  hardware::ProfileProvenance prov;
  prov.machine = "synthetic";
  prov.gpu = "H100-SXM5-80GB";
  prov.gpu_count = 1;
  prov.date = "2026-11-21";
  const auto profile = hardware::CalibrationProfile::from_parts("fit", prov, ps, report.to_json());
  const auto again = hardware::CalibrationProfile::parse(profile.to_json().dump(), "fit.json");
  hardware::ParameterSet set(&again);
  const models::ComputeModel cm(h100(), set);
  CHECK(set.used().at("compute.gemm.bf16.max_efficiency").calibrated);
  CHECK(cm.memory_bandwidth().bytes_per_second() == Approx(3.35e12 * t.e_mem).epsilon(0.02));
}

TEST_CASE("the launch gap sets the kernel overhead; the continuous-load product the sustained ratio",
          "[unit][models][fit]") {
  const Truth t;
  auto results = synthetic(t, 0.01, 5);
  // The harness's launch-gap test: empty full-grid kernels at t0 each (a one-block entry beside it,
  // and a full-grid one whose host could not keep the queue full: both ignored).
  results["memory"].push_back({{"kernel", "launch_gap"}, {"op", "full_grid"}, {"kernels", 512}, {"blocks", 1056},
                               {"threads", 256}, {"time_us", t.t0 * 1e6}, {"queue_full", true}});
  results["memory"].push_back({{"kernel", "launch_gap"}, {"op", "one_block"}, {"kernels", 512}, {"blocks", 1},
                               {"threads", 32}, {"time_us", 0.5 * t.t0 * 1e6}, {"queue_full", true}});
  results["memory"].push_back({{"kernel", "launch_gap"}, {"op", "full_grid"}, {"kernels", 512}, {"blocks", 1056},
                               {"threads", 256}, {"time_us", 4 * t.t0 * 1e6}, {"queue_full", false}});
  // The continuous-load test: 8192^3 at 0.93 of the truth's curve between HBM passes ("mixed"),
  // 0.90 back to back ("sustained"), faster in a burst: mixed is the one used.
  const double P = 989.4e12, f = 2.0 * 8192 * 8192 * 8192;
  const double busy = f / (P * cp::gemm_efficiency(8192, 8192, 8192, 1, t.gemm_e, t.gemm_half_k, t.gemm_half_mn, 128,
                                                     128, 132));
  for (const auto& [phase, r] : {std::pair{"burst", 1.1}, std::pair{"sustained", 0.90}, std::pair{"mixed", 0.93}}) {
    results["gemm"].push_back({{"name", "sustained"}, {"phase", phase}, {"dtype", "bf16"}, {"m", 8192}, {"n", 8192},
                               {"k", 8192}, {"transa", "T"}, {"transb", "N"}, {"time_us", (t.t0 + busy / r) * 1e6},
                               {"tflops", f / (t.t0 + busy / r) / 1e12}, {"launches", 100}, {"busy_ms", 2000.0}, {"gemm_share", 0.7}, {"sm_clock_MHz", 1545},
                               {"power_W", 695.0}});
  }
  calibrate::ComputeFitReport report;
  const auto ps = calibrate::fit_compute_parameters(typed(results), h100(), report);
  // t0 is the full-grid entry with a full queue, exactly (the memory fit keeps it).
  CHECK(find(ps, "compute.kernel_overhead").value == Approx(t.t0).epsilon(1e-3));
  CHECK(find(ps, "compute.memory.efficiency").value == Approx(t.e_mem).epsilon(0.02));
  // The ratio against the fitted curve (within its ~1% error of the truth at this shape).
  CHECK(find(ps, "compute.sustained_ratio").value == Approx(0.93).epsilon(0.02));
  // The sustained entries are not shape points: the curve is the truth's.
  CHECK(find(ps, "compute.gemm.bf16.max_efficiency").value == Approx(t.gemm_e).epsilon(0.02));
  CHECK_THAT(report.to_text(), Catch::Contains("compute.sustained_ratio"));
}

TEST_CASE("the compute fitter resists outliers", "[unit][models][fit]") {
  const Truth t;
  auto results = synthetic(t, 0.01, 11);
  // Three GEMMs disturbed 3x slower (a throttled clock, a busy neighbour).
  for (int i : {3, 17, 40}) results["gemm"][static_cast<std::size_t>(i)]["time_us"] =
      results["gemm"][static_cast<std::size_t>(i)]["time_us"].get<double>() * 3;
  calibrate::ComputeFitReport report;
  const auto ps = calibrate::fit_compute_parameters(typed(results), h100(), report);
  CHECK(find(ps, "compute.gemm.bf16.max_efficiency").value == Approx(t.gemm_e).epsilon(0.02));
}

TEST_CASE("the compute fitter fits nothing from absent sections; the results it takes are read strictly",
          "[unit][models][fit][bad-input]") {
  calibrate::ComputeFitReport report;
  SECTION("absent sections fit nothing") {
    const auto ps = calibrate::fit_compute_parameters(calibrate::CalibrationResults{}, h100(), report);
    CHECK(ps.empty());
  }
  nlohmann::json r = {{"schema_version", 1},
                      {"kind", "clustersim-calibration-results"},
                      {"tool", {{"name", "clustersim-calibrate"}, {"version", "synthetic"}}}};
  SECTION("a malformed entry names the file and pointer") {
    r["gemm"] = {{{"name", "square"}, {"dtype", "bf16"}, {"m", 64}, {"n", 64}, {"k", 0}, {"transa", "T"},
                  {"transb", "N"}, {"time_us", 1.0}, {"tflops", 1.0}}};
    CHECK_THROWS_WITH(typed(r, "run.json"), Catch::Contains("run.json") && Catch::Contains("/gemm/0/k"));
  }
  SECTION("a misspelt field is caught") {
    r["memory"] = {{{"kernel", "copy"}, {"bytes_moved", 1e6}, {"time_usec", 5.0}, {"bandwidth_GBps", 200.0}}};
    CHECK_THROWS_AS(typed(r, "run.json"), InputError);
  }
}
