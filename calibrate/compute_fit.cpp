#include "calibrate/compute_fit.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>

#include <Eigen/Dense>

#include "models/compute_parameters.hpp"

namespace clustersim::calibrate {

namespace {

namespace cp = models::compute_params;
using models::Precision;

// ------------------------------------------------------------------ robust least squares

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) {
    m = (m + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
  }
  return m;
}

// Minimises sum_i w_i ((X_i beta - y_i) / y_i)^2, reweighting with Huber's rule (k = 1.345 robust
// standard deviations of the relative residuals, the scale from the median absolute deviation).
Eigen::VectorXd robust_relative_fit(const Eigen::MatrixXd& X, const Eigen::VectorXd& y) {
  const Eigen::Index n = X.rows();
  Eigen::VectorXd w = Eigen::VectorXd::Ones(n);
  Eigen::VectorXd beta = Eigen::VectorXd::Zero(X.cols());
  for (int iter = 0; iter < 50; ++iter) {
    Eigen::VectorXd s(n);
    for (Eigen::Index i = 0; i < n; ++i) s(i) = std::sqrt(w(i)) / std::max(std::abs(y(i)), 1e-300);
    const Eigen::MatrixXd A = s.asDiagonal() * X;
    const Eigen::VectorXd b = s.asDiagonal() * y;
    const Eigen::VectorXd next = A.colPivHouseholderQr().solve(b);
    std::vector<double> r(static_cast<std::size_t>(n));
    for (Eigen::Index i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = std::abs((X.row(i) * next - y(i)) / y(i));
    const double scale = std::max(1.4826 * median(r), 1e-6);
    const double k = 1.345 * scale;
    for (Eigen::Index i = 0; i < n; ++i) {
      const double ri = r[static_cast<std::size_t>(i)];
      w(i) = ri <= k ? 1.0 : k / ri;
    }
    const double change = (next - beta).norm() / std::max(next.norm(), 1e-300);
    beta = next;
    if (iter > 0 && change < 1e-10) break;
  }
  return beta;
}

// ------------------------------------------------------------------ cross-validation

using Params = std::vector<double>;
using FitFn = std::function<std::optional<Params>(const std::vector<std::size_t>&)>;
using PredictFn = std::function<double(const Params&, std::size_t)>;

KindFitError evaluate(const std::string& kind, const std::vector<double>& measured, const std::vector<std::size_t>& order,
                      const FitFn& fit, const PredictFn& predict) {
  KindFitError e;
  e.kind = kind;
  e.samples = static_cast<int>(measured.size());
  std::vector<std::size_t> all(measured.size());
  std::iota(all.begin(), all.end(), 0);
  if (auto p = fit(all)) {
    double sum = 0;
    for (std::size_t i : all) sum += std::abs(predict(*p, i) - measured[i]) / measured[i];
    e.fit_mean_abs = sum / static_cast<double>(all.size());
  }
  const std::size_t k = std::min<std::size_t>(5, measured.size());
  if (k < 2) return e;
  e.folds = static_cast<int>(k);
  double sum = 0, worst = 0;
  std::size_t counted = 0;
  for (std::size_t f = 0; f < k; ++f) {
    std::vector<std::size_t> train, test;
    for (std::size_t j = 0; j < order.size(); ++j) (j % k == f ? test : train).push_back(order[j]);
    const auto p = fit(train);
    if (!p) continue;
    for (std::size_t i : test) {
      const double err = std::abs(predict(*p, i) - measured[i]) / measured[i];
      sum += err;
      worst = std::max(worst, err);
      ++counted;
    }
  }
  if (counted > 0) e.cv_mean_abs = sum / static_cast<double>(counted);
  e.cv_max_abs = worst;
  return e;
}

std::vector<std::size_t> order_by(const std::vector<double>& key) {
  std::vector<std::size_t> idx(key.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return key[a] < key[b]; });
  return idx;
}

// Relative spread of residuals of a fit on all points: the parameter's stated uncertainty.
double spread(const std::vector<double>& measured, const Params& p, const PredictFn& predict) {
  std::vector<double> r;
  for (std::size_t i = 0; i < measured.size(); ++i) r.push_back(std::abs(predict(p, i) - measured[i]) / measured[i]);
  return std::max(0.005, 1.4826 * median(r));
}

// ------------------------------------------------------------------ parameters

hardware::ProfileParameter ratio(std::string name, double v, double unc, int samples) {
  return {.name = std::move(name), .kind = hardware::ProfileParameter::Kind::RATIO, .value = v,
          .text = format_significant(v, 4), .uncertainty = unc, .samples = samples};
}

hardware::ProfileParameter bandwidth(std::string name, double bytes_per_s, double unc, int samples) {
  const Bandwidth b = Bandwidth::bytes_per_second(std::stod(format_significant(bytes_per_s / 1e9, 4)) * 1e9);
  return {.name = std::move(name), .kind = hardware::ProfileParameter::Kind::BANDWIDTH, .value = b.bytes_per_second(),
          .text = format_significant(b.gigabytes_per_second(), 4) + " GB/s", .uncertainty = unc, .samples = samples};
}

hardware::ProfileParameter duration(std::string name, double seconds, double unc, int samples) {
  const double us = std::stod(format_significant(seconds * 1e6, 4));
  return {.name = std::move(name), .kind = hardware::ProfileParameter::Kind::DURATION, .value = us * 1e-6,
          .text = format_significant(us, 4) + " us", .uncertainty = unc, .samples = samples};
}

Precision precision_of(const std::string& s) {
  if (s == "fp8") return Precision::FP8;
  if (s == "fp16") return Precision::FP16;
  if (s == "fp32" || s == "tf32") return Precision::FP32;
  return Precision::BF16;
}

std::optional<double> peak_of(const hardware::GpuSpec& gpu, Precision p) {
  switch (p) {
    case Precision::BF16:
    case Precision::FP16: return gpu.peak_bf16.value.flops_per_second();
    case Precision::FP8:
      if (!gpu.peak_fp8) return std::nullopt;
      return gpu.peak_fp8->value.flops_per_second();
    case Precision::FP32: return gpu.peak_fp32.value.flops_per_second();
  }
  return std::nullopt;
}

// ------------------------------------------------------------------ section records

struct GemmPoint {
  Precision dtype;
  double m, n, k, t;
};
// A "sustained" GEMM entry (the harness's continuous-load test): its phase and time.
struct SustainedPoint {
  std::string phase;
  double m, n, k, t;
};
struct AttentionPoint {
  bool backward;
  bool bf16;
  double flops, seq_kv, bytes, t;
};
struct MemoryPoint {
  std::string kernel;
  double bytes, t;
  double elements = 0;  // strided kernels
};
// A "launch_gap" memory entry: time per empty kernel queued back to back.
struct GapPoint {
  std::string op;
  double t;
  bool queue_full;
};
struct HostPoint {
  bool h2d, pinned;
  int gpus;
  double size, t, per_gpu_bw;
};
struct AdamPoint {
  double threads, params, t;
};

}  // namespace

nlohmann::json ComputeFitReport::to_json() const {
  nlohmann::json kinds_json = nlohmann::json::array();
  for (const auto& k : kinds) {
    kinds_json.push_back({{"kind", k.kind},
                          {"samples", k.samples},
                          {"folds", k.folds},
                          {"fit_mean_abs_error", k.fit_mean_abs},
                          {"cv_mean_abs_error", k.cv_mean_abs},
                          {"cv_max_abs_error", k.cv_max_abs}});
  }
  return {{"compute", kinds_json}, {"compute_notes", notes}};
}

std::string ComputeFitReport::to_text() const {
  std::ostringstream out;
  out << "kind                     samples  folds  fit mean  cv mean  cv max\n";
  for (const auto& k : kinds) {
    char line[160];
    std::snprintf(line, sizeof line, "%-24s %7d %6d %8.1f%% %7.1f%% %6.1f%%\n", k.kind.c_str(), k.samples, k.folds,
                  100 * k.fit_mean_abs, 100 * k.cv_mean_abs, 100 * k.cv_max_abs);
    out << line;
  }
  for (const auto& n : notes) out << "note: " << n << "\n";
  return out.str();
}

std::vector<hardware::ProfileParameter> fit_compute_parameters(const CalibrationResults& results,
                                                               const hardware::GpuSpec& gpu, ComputeFitReport& report) {
  using D = cp::Defaults;
  std::vector<hardware::ProfileParameter> out;
  const double hbm = gpu.hbm_bandwidth.value.bytes_per_second();
  const double sms = gpu.sm_count;

  // ---------------------------------------------------------------- the points, in seconds
  std::vector<GemmPoint> gemms;
  std::vector<SustainedPoint> sustained;
  std::vector<GapPoint> gaps;
  std::vector<AttentionPoint> attns;
  std::vector<MemoryPoint> mems;
  std::vector<MemoryPoint> strided;
  std::vector<HostPoint> hosts;
  std::vector<AdamPoint> adams;
  for (const GemmResult& e : results.gemm) {
    GemmPoint g;
    g.dtype = precision_of(e.dtype);
    g.m = static_cast<double>(e.m);
    g.n = static_cast<double>(e.n);
    g.k = static_cast<double>(e.k);
    g.t = e.time_us * 1e-6;
    if (e.name == "sustained") {
      // The continuous-load test (gemm_sustained_bench.hpp): not a point of the shape curve.
      if (g.dtype == Precision::BF16) sustained.push_back({*e.phase, g.m, g.n, g.k, g.t});
      continue;
    }
    gemms.push_back(g);
  }
  for (const AttentionResult& e : results.attention) {
    const double b = static_cast<double>(e.batch);
    const double heads = static_cast<double>(e.heads);
    const double kv = static_cast<double>(e.kv_heads);
    const double s_len = static_cast<double>(e.seq_len);
    const double d = static_cast<double>(e.head_dim);
    AttentionPoint a;
    a.backward = e.direction == "bwd";
    a.bf16 = e.dtype != "fp8";
    // Counted as models/kernel_op.hpp counts flash attention (FlashAttention-2 accounting).
    const double pairs = b * heads * s_len * s_len * (e.causal ? 0.5 : 1.0);
    a.flops = a.backward ? 2 * pairs * 5 * d : 2 * pairs * 2 * d;
    const double q = b * s_len * heads * d * 2, kvb = b * s_len * kv * d * 2;
    a.bytes = a.backward ? 2 * (q + 2 * kvb) + 2 * q : q + 2 * kvb + q;
    a.seq_kv = s_len;
    a.t = e.time_us * 1e-6;
    attns.push_back(a);
  }
  for (const MemoryResult& e : results.memory) {
    if (e.kernel == "launch_gap") {
      gaps.push_back({*e.op, e.time_us * 1e-6, e.queue_full.value_or(true)});
      continue;
    }
    MemoryPoint mp;
    mp.kernel = e.kernel;
    mp.bytes = static_cast<double>(e.bytes_moved);
    mp.t = e.time_us * 1e-6;
    if (e.kernel == "strided") {
      mp.elements = static_cast<double>(*e.elements);
      strided.push_back(mp);
      continue;
    }
    // cudaMemcpy's copy-engine path is not a kernel the model times, nor is a reduction's
    // pattern the streaming one: kept as references only.
    if (e.kernel != "cuda_memcpy" && e.kernel != "reduce") mems.push_back(mp);
  }
  for (const HostTransferResult& e : results.host) {
    HostPoint h;
    h.h2d = e.direction == "h2d";
    h.pinned = e.pinned;
    h.gpus = static_cast<int>(e.gpus.size());
    h.size = static_cast<double>(e.size_bytes);
    h.t = e.time_us * 1e-6;
    h.per_gpu_bw = e.bandwidth_GBps * 1e9;
    hosts.push_back(h);
  }
  for (const CpuAdamResult& e : results.cpu_adam) {
    adams.push_back({static_cast<double>(e.threads), static_cast<double>(e.params), e.time_us * 1e-6});
  }

  // ---------------------------------------------------------------- memory: e_mem and t0
  // t0 is measured directly where the launch-gap test ran (empty full-grid kernels queued back to
  // back); the memory fit then has one unknown. Otherwise t0 is the intercept of the memory fit.
  double e_mem = D::memory_efficiency;
  double t0 = D::kernel_overhead_us * 1e-6;
  std::optional<double> gap_t0;
  {
    std::vector<double> g;
    for (const auto& p : gaps) {
      if (p.op == "full_grid" && p.queue_full) g.push_back(p.t);
    }
    if (!g.empty()) {
      gap_t0 = median(g);
      t0 = *gap_t0;
      std::vector<double> dev;
      for (double v : g) dev.push_back(std::abs(v - t0) / t0);
      out.push_back(duration(std::string(cp::kKernelOverhead), t0, std::max(0.1, 1.4826 * median(dev)),
                             static_cast<int>(g.size())));
    } else if (!gaps.empty()) {
      report.notes.push_back("launch_gap: no full-grid entry with a full queue; compute.kernel_overhead from the memory fit");
    }
  }
  if (mems.size() >= 2) {
    std::vector<double> measured, key;
    for (const auto& p : mems) {
      measured.push_back(p.t);
      key.push_back(p.bytes);
    }
    const bool free_intercept = !gap_t0;
    FitFn fit = [&](const std::vector<std::size_t>& idx) -> std::optional<Params> {
      if (idx.size() < 2) return std::nullopt;
      const Eigen::Index cols = free_intercept ? 2 : 1;
      Eigen::MatrixXd X(static_cast<Eigen::Index>(idx.size()), cols);
      Eigen::VectorXd y(static_cast<Eigen::Index>(idx.size()));
      for (std::size_t r = 0; r < idx.size(); ++r) {
        const auto row = static_cast<Eigen::Index>(r);
        if (free_intercept) X(row, 0) = 1;
        X(row, cols - 1) = mems[idx[r]].bytes;
        y(row) = mems[idx[r]].t - (free_intercept ? 0.0 : t0);
      }
      const Eigen::VectorXd b = robust_relative_fit(X, y);
      const double slope = b(cols - 1);
      if (!(slope > 0)) return std::nullopt;
      return Params{free_intercept ? std::max(0.0, b(0)) : t0, slope};
    };
    PredictFn predict = [&](const Params& p, std::size_t i) { return p[0] + p[1] * mems[i].bytes; };
    report.kinds.push_back(evaluate("memory", measured, order_by(key), fit, predict));
    if (auto p = fit(order_by(key))) {
      e_mem = 1.0 / ((*p)[1] * hbm);
      const double u = spread(measured, *p, predict);
      out.push_back(ratio(std::string(cp::kMemoryEfficiency), e_mem, u, static_cast<int>(mems.size())));
      if (free_intercept) {
        t0 = (*p)[0];
        out.push_back(duration(std::string(cp::kKernelOverhead), t0, std::max(u, 0.2), static_cast<int>(mems.size())));
      }
    }
  } else {
    report.notes.push_back("memory: fewer than 2 points; compute.memory.efficiency not fitted" +
                           std::string(gap_t0 ? "" : ", nor compute.kernel_overhead"));
  }
  const double mem_bw = hbm * e_mem;

  // ---------------------------------------------------------------- strided element-wise kernels
  // t - t0 = max(B / mem_bw, N / (P_fp32 r)): r from the element-bound points (median of
  // N / ((t - t0) P_fp32)), robust to the few that the bandwidth bounds.
  const double p32 = gpu.peak_fp32.value.flops_per_second();
  if (strided.size() >= 2 && p32 > 0) {
    std::vector<double> measured, key;
    for (const auto& p : strided) {
      measured.push_back(p.t);
      key.push_back(p.elements);
    }
    FitFn fit = [&](const std::vector<std::size_t>& idx) -> std::optional<Params> {
      std::vector<double> r;
      for (std::size_t i : idx) {
        const MemoryPoint& p = strided[i];
        const double busy = p.t - t0;
        if (busy > 0 && busy > 1.2 * p.bytes / mem_bw) r.push_back(p.elements / (busy * p32));
      }
      if (r.empty()) return std::nullopt;
      return Params{median(r)};
    };
    PredictFn predict = [&](const Params& q, std::size_t i) {
      const MemoryPoint& p = strided[i];
      return t0 + std::max(p.bytes / mem_bw, p.elements / (p32 * q[0]));
    };
    report.kinds.push_back(evaluate("memory.strided", measured, order_by(key), fit, predict));
    if (auto q = fit(order_by(key))) {
      out.push_back(ratio(std::string(cp::kStridedElementsPerFlop), (*q)[0], spread(measured, *q, predict),
                          static_cast<int>(strided.size())));
    } else {
      report.notes.push_back("memory.strided: no element-bound point; compute.memory.strided_elements_per_flop not fitted");
    }
  } else if (!strided.empty()) {
    report.notes.push_back("memory.strided: fewer than 2 points; not fitted");
  }

  // ---------------------------------------------------------------- GEMMs per dtype
  std::optional<Params> bf16_curve;  // e_max, k_half, mn_half
  for (Precision p : {Precision::BF16, Precision::FP16, Precision::FP8, Precision::FP32}) {
    std::vector<GemmPoint> pts;
    const auto peak = peak_of(gpu, p);
    int memory_bound = 0;
    for (const auto& g : gemms) {
      if (g.dtype != p) continue;
      if (!peak) continue;
      const double flops = 2 * g.m * g.n * g.k;
      const double bytes = (g.m * g.k + g.k * g.n) * models::bytes_per_element(p) + g.m * g.n * 2;
      // Leave out shapes the roofline puts on the memory side: they say nothing about e_max.
      if (bytes / mem_bw > 0.5 * flops / (*peak * D::gemm_max_efficiency_bf16)) {
        ++memory_bound;
        continue;
      }
      pts.push_back(g);
    }
    const std::string dt(cp::dtype_name(p));
    if (!peak && std::any_of(gemms.begin(), gemms.end(), [&](const GemmPoint& g) { return g.dtype == p; })) {
      report.notes.push_back("gemm." + dt + ": the catalog GPU has no " + dt + " peak; points left out");
    }
    if (memory_bound > 0) {
      report.notes.push_back("gemm." + dt + ": " + std::to_string(memory_bound) + " memory-bound shapes left out");
    }
    if (pts.size() < 2) {
      if (!pts.empty()) report.notes.push_back("gemm." + dt + ": fewer than 2 compute-bound points; not fitted");
      continue;
    }
    const double P = *peak;
    std::vector<double> measured, key, ks, mns;
    for (const auto& g : pts) {
      measured.push_back(g.t);
      key.push_back(g.m * g.n * g.k);
      ks.push_back(std::max(1.0, g.k));
      mns.push_back(std::max(1.0, std::min(g.m, g.n)));
    }
    auto varies = [](const std::vector<double>& v) {
      return *std::max_element(v.begin(), v.end()) > *std::min_element(v.begin(), v.end());
    };
    // Columns: 1/e_max, k_half/e_max (when k varies), mn_half/e_max (when min(m, n) varies).
    const bool fit_k = varies(ks), fit_mn = varies(mns);
    FitFn fit = [&](const std::vector<std::size_t>& idx) -> std::optional<Params> {
      if (idx.size() < 3) return std::nullopt;
      bool use_k = fit_k, use_mn = fit_mn;
      for (int attempt = 0; attempt < 3; ++attempt) {
        const Eigen::Index cols = 1 + (use_k ? 1 : 0) + (use_mn ? 1 : 0);
        Eigen::MatrixXd X(static_cast<Eigen::Index>(idx.size()), cols);
        Eigen::VectorXd y(static_cast<Eigen::Index>(idx.size()));
        for (std::size_t r = 0; r < idx.size(); ++r) {
          const GemmPoint& g = pts[idx[r]];
          const auto row = static_cast<Eigen::Index>(r);
          y(row) = std::max(g.t - t0, 1e-9) * P / (2 * g.m * g.n * g.k);
          Eigen::Index c = 0;
          X(row, c++) = 1;
          if (use_k) X(row, c++) = 1.0 / ks[idx[r]];
          if (use_mn) X(row, c++) = 1.0 / mns[idx[r]];
        }
        const Eigen::VectorXd b = robust_relative_fit(X, y);
        const double a0 = b(0);
        const double sk = use_k ? b(1) : 0;
        const double smn = use_mn ? b(use_k ? 2 : 1) : 0;
        // Efficiency cannot rise as a dimension shrinks: drop a negative term and refit.
        if (use_k && sk < 0) {
          use_k = false;
          continue;
        }
        if (use_mn && smn < 0) {
          use_mn = false;
          continue;
        }
        if (!(a0 > 0)) return std::nullopt;
        return Params{1 / a0, sk / a0, smn / a0};
      }
      return std::nullopt;
    };
    PredictFn predict = [&](const Params& q, std::size_t i) {
      const GemmPoint& g = pts[i];
      const double eff = cp::gemm_efficiency(g.m, g.n, g.k, 1, q[0], q[1], q[2], D::gemm_tile_m, D::gemm_tile_n, sms);
      const double bytes = (g.m * g.k + g.k * g.n) * models::bytes_per_element(p) + g.m * g.n * 2;
      return t0 + std::max(2 * g.m * g.n * g.k / (P * eff), bytes / mem_bw);
    };
    report.kinds.push_back(evaluate("gemm." + dt, measured, order_by(key), fit, predict));
    if (auto q = fit(order_by(key))) {
      if (p == Precision::BF16) bf16_curve = *q;
      const double u = spread(measured, *q, predict);
      const int n = static_cast<int>(pts.size());
      out.push_back(ratio(cp::gemm_max_efficiency(p), (*q)[0], u, n));
      if (fit_k) {
        out.push_back(ratio(cp::gemm_half_k(p), (*q)[1], std::max(u, 0.1), n));
      } else {
        report.notes.push_back("gemm." + dt + ": every shape has the same k; half_k not fitted");
      }
      if (fit_mn) {
        out.push_back(ratio(cp::gemm_half_mn(p), (*q)[2], std::max(u, 0.1), n));
      } else {
        report.notes.push_back("gemm." + dt + ": every shape has the same min(m, n); half_mn not fitted");
      }
    }
  }

  // ---------------------------------------------------------------- sustained load
  // r = (t_curve - t0) / (t_load - t0) for the square bf16 product of the continuous-load test
  // under the training-like load ("mixed": products between HBM passes; else "sustained"), t_curve
  // the bf16 curve's time for that shape (the fit above, else the defaults): the ratio of the
  // matrix units' throughput in a training step to the throughput the sweep's curve describes.
  if (!sustained.empty()) {
    const bool any_mixed = std::any_of(sustained.begin(), sustained.end(), [](const SustainedPoint& p) {
      return p.phase == "mixed";
    });
    const std::string use = any_mixed ? "mixed" : "sustained";
    const Params curve = bf16_curve.value_or(Params{D::gemm_max_efficiency_bf16, D::gemm_half_k, D::gemm_half_mn});
    const double P = gpu.peak_bf16.value.flops_per_second();
    std::vector<double> r, sweep;
    double tflops = 0;
    for (const auto& p : sustained) {
      const double f = 2 * p.m * p.n * p.k;
      const double eff = cp::gemm_efficiency(p.m, p.n, p.k, 1, curve[0], curve[1], curve[2], D::gemm_tile_m,
                                             D::gemm_tile_n, sms);
      const double busy = f / (P * eff);
      if (p.phase == use && p.t > t0) {
        r.push_back(busy / (p.t - t0));
        tflops = f / p.t / 1e12;
      }
      if (p.phase == "harness" && p.t > t0) sweep.push_back(busy / (p.t - t0));
    }
    if (!r.empty() && P > 0) {
      const double v = median(r);
      std::vector<double> dev;
      for (double x : r) dev.push_back(std::abs(x - v) / v);
      out.push_back(ratio(std::string(cp::kSustainedRatio), v, std::max(0.03, 1.4826 * median(dev)),
                          static_cast<int>(r.size())));
      std::string note = "gemm.bf16 under a continuous load (" + use + "): " + format_significant(tflops, 4) +
                         " TFLOP/s, " + format_significant(v, 3) + " of what the " +
                         (bf16_curve ? "fitted" : "default") + " curve gives: compute.sustained_ratio";
      if (!sweep.empty()) {
        note += " (the sweep's method in the same test: " + format_significant(median(sweep), 3) + " of the curve)";
      }
      report.notes.push_back(note);
    } else {
      report.notes.push_back("gemm.sustained: no " + use + " entry; compute.sustained_ratio not fitted");
    }
  }

  // ---------------------------------------------------------------- attention per direction
  for (bool backward : {false, true}) {
    std::vector<AttentionPoint> pts;
    for (const auto& a : attns) {
      if (a.backward == backward && a.bf16) pts.push_back(a);
    }
    const std::string kind = std::string("attention.") + (backward ? "bwd" : "fwd");
    if (pts.size() < 2) {
      if (!pts.empty()) report.notes.push_back(kind + ": fewer than 2 points; not fitted");
      continue;
    }
    const double P = gpu.peak_bf16.value.flops_per_second();
    std::vector<double> measured, key;
    for (const auto& a : pts) {
      measured.push_back(a.t);
      key.push_back(a.flops);
    }
    const bool identifiable = std::any_of(pts.begin(), pts.end(), [&](const AttentionPoint& a) {
      return a.seq_kv != pts.front().seq_kv;
    });
    FitFn fit = [&](const std::vector<std::size_t>& idx) -> std::optional<Params> {
      if (idx.size() < 2) return std::nullopt;
      const Eigen::Index cols = identifiable ? 2 : 1;
      Eigen::MatrixXd X(static_cast<Eigen::Index>(idx.size()), cols);
      Eigen::VectorXd y(static_cast<Eigen::Index>(idx.size()));
      for (std::size_t r = 0; r < idx.size(); ++r) {
        const AttentionPoint& a = pts[idx[r]];
        const auto row = static_cast<Eigen::Index>(r);
        y(row) = std::max(a.t - t0, 1e-9) * P / a.flops;
        X(row, 0) = 1;
        if (identifiable) X(row, 1) = 1.0 / a.seq_kv;
      }
      Eigen::VectorXd b = robust_relative_fit(X, y);
      double a0 = b(0), slope = identifiable ? b(1) : 0;
      if (identifiable && slope < 0) {
        a0 = robust_relative_fit(X.leftCols(1), y)(0);
        slope = 0;
      }
      if (!(a0 > 0)) return std::nullopt;
      return Params{1 / a0, identifiable ? slope / a0 : D::attention_half_seq};
    };
    PredictFn predict = [&](const Params& q, std::size_t i) {
      const AttentionPoint& a = pts[i];
      return t0 + std::max(a.flops / (P * cp::attention_efficiency(a.seq_kv, q[0], q[1])), a.bytes / mem_bw);
    };
    report.kinds.push_back(evaluate(kind, measured, order_by(key), fit, predict));
    if (auto q = fit(order_by(key))) {
      const double u = spread(measured, *q, predict);
      out.push_back(ratio(cp::attention_max_efficiency(backward), (*q)[0], u, static_cast<int>(pts.size())));
      if (identifiable) {
        out.push_back(ratio(cp::attention_half_seq(backward), (*q)[1], std::max(u, 0.1), static_cast<int>(pts.size())));
      } else {
        report.notes.push_back(kind + ": one sequence length only; half_seq not fitted");
      }
    }
  }

  // ---------------------------------------------------------------- host copies
  for (bool h2d : {true, false}) {
    for (bool pinned : {true, false}) {
      const std::string kind = std::string("host.") + (h2d ? "h2d" : "d2h") + (pinned ? ".pinned" : ".pageable");
      std::vector<HostPoint> single, multi;
      for (const auto& h : hosts) {
        if (h.h2d != h2d || h.pinned != pinned) continue;
        (h.gpus == 1 ? single : multi).push_back(h);
      }
      if (single.size() >= 2) {
        std::vector<double> measured, key;
        for (const auto& h : single) {
          measured.push_back(h.t);
          key.push_back(h.size);
        }
        FitFn fit = [&](const std::vector<std::size_t>& idx) -> std::optional<Params> {
          if (idx.size() < 2) return std::nullopt;
          Eigen::MatrixXd X(static_cast<Eigen::Index>(idx.size()), 2);
          Eigen::VectorXd y(static_cast<Eigen::Index>(idx.size()));
          for (std::size_t r = 0; r < idx.size(); ++r) {
            const auto row = static_cast<Eigen::Index>(r);
            X(row, 0) = 1;
            X(row, 1) = single[idx[r]].size;
            y(row) = single[idx[r]].t;
          }
          const Eigen::VectorXd b = robust_relative_fit(X, y);
          if (!(b(1) > 0)) return std::nullopt;
          return Params{std::max(0.0, b(0)), 1 / b(1)};
        };
        PredictFn predict = [&](const Params& q, std::size_t i) { return q[0] + single[i].size / q[1]; };
        report.kinds.push_back(evaluate(kind, measured, order_by(key), fit, predict));
        if (auto q = fit(order_by(key))) {
          out.push_back(bandwidth(cp::host_copy_bandwidth(h2d, pinned), (*q)[1], spread(measured, *q, predict),
                                  static_cast<int>(single.size())));
        }
      } else if (!single.empty()) {
        report.notes.push_back(kind + ": fewer than 2 single-GPU points; not fitted");
      }
      if (pinned && !multi.empty()) {
        // The aggregate of the largest concurrent runs: GPUs x the bandwidth each got, at the
        // largest size measured (latency negligible).
        int most = 0;
        double largest = 0;
        for (const auto& h : multi) most = std::max(most, h.gpus);
        for (const auto& h : multi) {
          if (h.gpus == most) largest = std::max(largest, h.size);
        }
        std::vector<double> totals;
        for (const auto& h : multi) {
          if (h.gpus == most && h.size == largest) totals.push_back(h.per_gpu_bw * h.gpus);
        }
        const double agg = median(totals);
        std::vector<double> dev;
        for (double v : totals) dev.push_back(std::abs(v - agg) / agg);
        out.push_back(bandwidth(cp::host_aggregate_bandwidth(h2d), agg, std::max(0.02, 1.4826 * median(dev)),
                                static_cast<int>(totals.size())));
        report.notes.push_back(kind + ": aggregate over " + std::to_string(most) + " GPUs from " +
                               std::to_string(totals.size()) + " runs");
      }
    }
  }

  // ---------------------------------------------------------------- CPU Adam
  if (adams.size() >= 2) {
    std::vector<double> measured, key;
    for (const auto& a : adams) {
      measured.push_back(a.t);
      key.push_back(a.threads);
    }
    FitFn fit = [&](const std::vector<std::size_t>& idx) -> std::optional<Params> {
      if (idx.empty()) return std::nullopt;
      std::vector<double> threads;
      for (std::size_t i : idx) threads.push_back(adams[i].threads);
      const double mid = median(threads);
      std::vector<double> per_core;
      double best = 0, best_threads = 0;
      for (std::size_t i : idx) {
        const double rate = adams[i].params / adams[i].t;
        if (adams[i].threads <= mid) per_core.push_back(rate / adams[i].threads);
        if (adams[i].threads > best_threads || (adams[i].threads == best_threads && rate > best)) {
          best_threads = adams[i].threads;
          best = rate;
        }
      }
      if (per_core.empty()) return std::nullopt;
      const double pc = median(per_core);
      // A plateau: the largest run gets clearly less than linear scaling would give.
      const double node = best < 0.85 * pc * best_threads ? best : 0;
      return Params{pc, node};
    };
    PredictFn predict = [&](const Params& q, std::size_t i) {
      double rate = q[0] * adams[i].threads;
      if (q[1] > 0) rate = std::min(rate, q[1]);
      return adams[i].params / rate;
    };
    report.kinds.push_back(evaluate("cpu_adam", measured, order_by(key), fit, predict));
    if (auto q = fit(order_by(key))) {
      const double u = spread(measured, *q, predict);
      out.push_back(ratio(std::string(cp::kCpuAdamPerCore), (*q)[0], u, static_cast<int>(adams.size())));
      if ((*q)[1] > 0) {
        out.push_back(ratio(std::string(cp::kCpuAdamNode), (*q)[1], u, static_cast<int>(adams.size())));
      } else {
        report.notes.push_back("cpu_adam: no saturation seen; host.cpu_adam.node_params_per_second not fitted");
      }
    }
  } else if (!adams.empty()) {
    report.notes.push_back("cpu_adam: fewer than 2 points; not fitted");
  }
  return out;
}

}  // namespace clustersim::calibrate
