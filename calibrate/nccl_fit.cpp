#include "calibrate/nccl_fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <thread>

#include "hardware/errors.hpp"
#include "hardware/statistics.hpp"
#include "sim/nccl/collective_predictor.hpp"
#include "sim/nccl/nccl_parameters.hpp"

namespace clustersim::calibrate {

namespace {

namespace nc = sim::nccl;
using hardware::ProfileParameter;

constexpr double kHuberDelta = 0.05;   // log units: 5%
constexpr double kPriorWeight = 0.01;  // pull towards the fallback, per parameter
constexpr double kSensitivity = 0.02;  // d log t / d log theta that makes a parameter identifiable
constexpr double kStep = 0.02;         // finite-difference step in log units
// Seeds of the NVLink ramp (no fallback): a tenth of the link missing at a launch's start, back
// within about a millisecond (2 x H200 rings at 24 channels: 270 GB/s busbw at 64 MiB, 351 at 8 GiB).
constexpr double kRampDeficitSeed = 0.1;
constexpr double kRampTimeSeed = 1e-3;  // seconds

struct Config {
  int nodes = 1;
  int gpus = 1;
  std::map<std::string, std::string> env;
  bool operator<(const Config& o) const {
    return std::tie(nodes, gpus, env) < std::tie(o.nodes, o.gpus, o.env);
  }
};

struct Point {
  int config = 0;
  nc::CollectiveOp op = nc::CollectiveOp::ALL_REDUCE;
  Bytes size;
  double measured_us = 0;
  int fold = 0;
  std::string op_label;
  std::string transport;
  bool in_place = false;       // matters for one rank (no launch in place)
  int iters = 20;              // -n: the timed loop's launches share its closing wait
  int threads = 1;             // -t: threads of one process launching side by side
  int gpus_per_thread = 1;     // -g
  int pair_src = -1;           // a P2P pair: one send from src to dst, the other ranks idle
  int pair_dst = -1;
  int session = 0;             // the results file it came from (the uncertainties' clusters)
};

std::string text_of(ProfileParameter::Kind k, double v) {
  switch (k) {
    case ProfileParameter::Kind::BANDWIDTH: return format_bandwidth(Bandwidth::bytes_per_second(v));
    case ProfileParameter::Kind::DURATION: return format_duration(Duration::from_seconds(v));
    case ProfileParameter::Kind::BYTES: return format_bytes(Bytes::of(std::llround(v)), Prefix::DECIMAL);
    default: return format_significant(v, 5);
  }
}

class Problem {
 public:
  Problem(const hardware::Catalog& catalog, std::string system, std::string version)
      : node_(hardware::resolve_node(catalog, system)), version_(std::move(version)) {}

  int add_config(const Config& c) {
    auto it = index_.find(c);
    if (it != index_.end()) return it->second;
    const int id = static_cast<int>(configs_.size());
    configs_.push_back(c);
    index_[c] = id;
    return id;
  }
  void add_point(Point p) { points_.push_back(std::move(p)); }
  std::vector<Point>& points() { return points_; }
  const std::vector<Point>& points() const { return points_; }

  std::unique_ptr<nc::CollectivePredictor> predictor(int config, const hardware::CalibrationProfile* profile) const {
    nc::PredictorConfig cfg;
    cfg.node = node_;
    cfg.shape = {configs_[config].nodes, configs_[config].gpus};
    cfg.env = configs_[config].env;
    cfg.version = version_;
    cfg.profile = profile;
    return std::make_unique<nc::CollectivePredictor>(cfg);
  }

  // Fallback values of every parameter the points use; records each one's kind as its lookup
  // asked for it (kind()).
  std::map<std::string, double> fallbacks() {
    std::map<std::string, double> out;
    for (std::size_t c = 0; c < configs_.size(); ++c) {
      const auto p = predictor(static_cast<int>(c), nullptr);
      // The compute model's memory parameters (one rank's copy) are fitted by the compute fitter.
      for (const auto& [name, used] : p->parameters().used()) {
        if (name.rfind("nccl.", 0) != 0) continue;
        out.emplace(name, used.value);
        kinds_.emplace(name, used.kind);
      }
    }
    // Parameters without a fallback (off unless a profile sets them), offered to the fit from a
    // seed where the points could show them: the NVLink ramp within a launch where they run P2P
    // over NVLink (sim/nccl/step_program.hpp).
    if (out.count("nccl.nvlink.efficiency") != 0 && out.count("nccl.nvlink.ramp_deficit") == 0) {
      out.emplace("nccl.nvlink.ramp_deficit", kRampDeficitSeed);
      kinds_.emplace("nccl.nvlink.ramp_deficit", ProfileParameter::Kind::RATIO);
      out.emplace("nccl.nvlink.ramp_time", kRampTimeSeed);
      kinds_.emplace("nccl.nvlink.ramp_time", ProfileParameter::Kind::DURATION);
    }
    return out;
  }
  ProfileParameter::Kind kind(const std::string& name) const { return kinds_.at(name); }

  // Log residuals of the selected points under the given parameter values.
  Eigen::VectorXd residuals(const std::map<std::string, double>& values, const std::vector<int>& sel) const {
    std::vector<ProfileParameter> params;
    for (const auto& [name, v] : values) {
      ProfileParameter p;
      p.name = name;
      p.kind = kind(name);
      p.value = v;
      p.text = text_of(p.kind, v);
      params.push_back(p);
    }
    const auto profile = hardware::CalibrationProfile::from_parts("fit", {}, params, nlohmann::json::object());
    std::vector<std::unique_ptr<nc::CollectivePredictor>> preds(configs_.size());
    Eigen::VectorXd r(static_cast<Eigen::Index>(sel.size()));
    for (std::size_t k = 0; k < sel.size(); ++k) {
      const Point& pt = points_[sel[k]];
      if (!preds[pt.config]) preds[pt.config] = predictor(pt.config, &profile);
      nc::NcclTestsMethod m;
      m.in_place = pt.in_place;
      m.iters = pt.iters;
      m.threads_per_process = pt.threads;
      m.gpus_per_thread = pt.gpus_per_thread;
      const double t = (pt.pair_src >= 0 ? preds[pt.config]->predict_pair(pt.size, pt.pair_src, pt.pair_dst, m)
                                         : preds[pt.config]->predict(pt.op, pt.size, m))
                           .time.microseconds();
      r(static_cast<Eigen::Index>(k)) = std::log(t) - std::log(pt.measured_us);
    }
    return r;
  }

 private:
  hardware::NodeSpec node_;
  std::string version_;
  std::vector<Config> configs_;
  std::map<Config, int> index_;
  std::vector<Point> points_;
  std::map<std::string, ProfileParameter::Kind> kinds_;  // filled by fallbacks()
};

struct FitResult {
  std::map<std::string, double> values;
  std::map<std::string, double> uncertainty;
  std::vector<std::string> fitted;
  int iterations = 0;
  double rms_before = 0, rms_after = 0;
};

// Runs f(0) .. f(n - 1) on the machine's hardware threads. Each call writes only its own
// outputs, so the result is the same as a loop's; the first exception is rethrown.
template <class F>
void parallel_for(int n, const F& f) {
  const int threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, std::max(1, n));
  if (threads <= 1) {
    for (int i = 0; i < n; ++i) f(i);
    return;
  }
  std::atomic<int> next{0};
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (int i = next++; i < n && !failed; i = next++) {
      try {
        f(i);
      } catch (...) {
        if (!failed.exchange(true)) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

// The session-clustered (sandwich) covariance of the header: G / (G - 1) A^-1 (sum_g u_g u_g') A^-1
// with u_g = J_g' W_g r_g; zero with fewer than two sessions.
Eigen::MatrixXd session_covariance_of(const Eigen::MatrixXd& a_inv, const Eigen::MatrixXd& jac,
                                      const Eigen::VectorXd& w, const Eigen::VectorXd& r,
                                      const std::vector<int>& session) {
  const Eigen::Index m = a_inv.rows();
  std::map<int, Eigen::VectorXd> score;
  for (Eigen::Index i = 0; i < jac.rows(); ++i) {
    auto it = score.find(session[static_cast<std::size_t>(i)]);
    if (it == score.end()) it = score.emplace(session[static_cast<std::size_t>(i)], Eigen::VectorXd::Zero(m)).first;
    it->second += jac.row(i).transpose() * (w(i) * r(i));
  }
  const auto sessions = static_cast<double>(score.size());
  if (score.size() < 2) return Eigen::MatrixXd::Zero(m, m);
  Eigen::MatrixXd meat = Eigen::MatrixXd::Zero(m, m);
  for (const auto& [g, u] : score) meat += u * u.transpose();
  return a_inv * meat * a_inv * (sessions / (sessions - 1.0));
}

double huber_weight(double r) { return std::fabs(r) <= kHuberDelta ? 1.0 : kHuberDelta / std::fabs(r); }

double rms(const Eigen::VectorXd& r) { return r.size() == 0 ? 0.0 : std::sqrt(r.squaredNorm() / r.size()); }

FitResult fit(const Problem& prob, const std::map<std::string, double>& fallbacks, const std::vector<int>& sel) {
  FitResult out;
  out.values = fallbacks;
  const Eigen::VectorXd r0 = prob.residuals(fallbacks, sel);
  out.rms_before = rms(r0);
  // Identifiable parameters: those that move some prediction.
  {
    std::vector<std::string> names;
    for (const auto& [name, v] : fallbacks) {
      if (v > 0) names.push_back(name);
    }
    std::vector<char> moves(names.size(), 0);
    parallel_for(static_cast<int>(names.size()), [&](int j) {
      auto trial = fallbacks;
      trial[names[j]] *= std::exp(kStep);
      const Eigen::VectorXd r1 = prob.residuals(trial, sel);
      moves[j] = ((r1 - r0) / kStep).cwiseAbs().maxCoeff() > kSensitivity;
    });
    for (std::size_t j = 0; j < names.size(); ++j) {
      if (moves[j]) out.fitted.push_back(names[j]);
    }
  }
  const int m = static_cast<int>(out.fitted.size());
  const int n = static_cast<int>(sel.size());
  Eigen::VectorXd phi0(m), phi(m);
  for (int j = 0; j < m; ++j) phi0(j) = phi(j) = std::log(fallbacks.at(out.fitted[j]));
  auto values_of = [&](const Eigen::VectorXd& x) {
    auto v = fallbacks;
    for (int j = 0; j < m; ++j) v[out.fitted[j]] = std::exp(x(j));
    return v;
  };
  auto cost = [&](const Eigen::VectorXd& r, const Eigen::VectorXd& x) {
    double c = 0;
    for (int i = 0; i < r.size(); ++i) {
      const double a = std::fabs(r(i));
      c += a <= kHuberDelta ? 0.5 * a * a : kHuberDelta * (a - 0.5 * kHuberDelta);
    }
    return c + 0.5 * kPriorWeight * (x - phi0).squaredNorm();
  };
  Eigen::VectorXd r = r0;
  double lambda = 1e-2;
  Eigen::MatrixXd jac(n, m);
  Eigen::VectorXd w(n);
  for (int it = 0; it < 30 && m > 0; ++it) {
    out.iterations = it + 1;
    parallel_for(m, [&](int j) {
      Eigen::VectorXd x = phi;
      x(j) += kStep;
      jac.col(j) = (prob.residuals(values_of(x), sel) - r) / kStep;
    });
    for (int i = 0; i < n; ++i) w(i) = huber_weight(r(i));
    const Eigen::MatrixXd jtwj = jac.transpose() * w.asDiagonal() * jac;
    const Eigen::VectorXd grad = jac.transpose() * w.asDiagonal() * r + kPriorWeight * (phi - phi0);
    bool improved = false;
    for (int attempt = 0; attempt < 8; ++attempt) {
      Eigen::MatrixXd a = jtwj + kPriorWeight * Eigen::MatrixXd::Identity(m, m);
      a.diagonal() += lambda * jtwj.diagonal().cwiseMax(1e-9);
      const Eigen::VectorXd step = a.ldlt().solve(-grad);
      const Eigen::VectorXd x = phi + step.cwiseMax(-2.0).cwiseMin(2.0);
      const Eigen::VectorXd rx = prob.residuals(values_of(x), sel);
      if (cost(rx, x) < cost(r, phi)) {
        const double moved = (x - phi).cwiseAbs().maxCoeff();
        phi = x;
        r = rx;
        lambda = std::max(1e-6, lambda / 3);
        improved = true;
        if (moved < 1e-4) it = 1000;
        break;
      }
      lambda *= 4;
    }
    if (!improved) break;
  }
  out.values = values_of(phi);
  out.rms_after = rms(r);
  // Uncertainties (of the log of each value) at the solution, the larger of two estimates:
  //  * independent residuals: cov = A^-1 s^2, A = J'WJ + prior, s^2 = sum w r^2 / (n - m);
  //  * residuals correlated within a session (a results file: one machine on one day, whose host
  //    may run every host-bound series 10 to 35% slower than another's): the cluster-robust
  //    (sandwich) estimate cov = G / (G - 1) A^-1 (sum over sessions g of u_g u_g') A^-1, with
  //    u_g = J_g' W_g r_g the session's share of the gradient. With thousands of points the first
  //    shrinks as 1 / sqrt(n) even where the sessions disagree; the second stays as wide as their
  //    disagreement. With one informative session the second vanishes, hence the larger of the two.
  if (m > 0 && n > m) {
    for (int i = 0; i < n; ++i) w(i) = huber_weight(r(i));
    double s2 = 0;
    for (int i = 0; i < n; ++i) s2 += w(i) * r(i) * r(i);
    s2 /= (n - m);
    const Eigen::MatrixXd a_inv =
        (jac.transpose() * w.asDiagonal() * jac + kPriorWeight * Eigen::MatrixXd::Identity(m, m)).inverse();
    const Eigen::MatrixXd cov = a_inv * s2;
    std::vector<int> session(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      const auto point = static_cast<std::size_t>(sel[static_cast<std::size_t>(i)]);
      session[static_cast<std::size_t>(i)] = prob.points()[point].session;
    }
    const Eigen::MatrixXd cluster = session_covariance_of(a_inv, jac, w, r, session);
    for (int j = 0; j < m; ++j) {
      out.uncertainty[out.fitted[j]] = std::sqrt(std::max({0.0, cov(j, j), cluster(j, j)}));
    }
  }
  return out;
}

std::string system_from(const CalibrationResults& results, const hardware::Catalog& catalog) {
  if (!results.environment) {
    throw InputError("", "/environment", "expected the environment of the run (instance_type or gpu_name)");
  }
  const EnvironmentInfo& env = *results.environment;
  if (env.instance_type && catalog.has_instance(*env.instance_type)) return *env.instance_type;
  if (!env.gpu_name) {
    throw InputError("", "/environment/gpu_name", "expected a GPU name when the instance type is not in the catalog");
  }
  const std::string_view token = hardware::gpu_model_word(*env.gpu_name);
  for (const auto& [sys_name, sys] : catalog.systems()) {
    if (sys.gpu.rfind(token, 0) == 0) return sys_name;
  }
  throw InputError("", "/environment/gpu_name", "no catalog system has a GPU named like '" + *env.gpu_name + "'");
}

}  // namespace

nlohmann::json FitReport::to_json() const {
  nlohmann::json j;
  j["system"] = system;
  j["points"] = points;
  j["iterations"] = iterations;
  j["rms_log_residual_before"] = rms_log_residual_before;
  j["rms_log_residual_after"] = rms_log_residual_after;
  nlohmann::json ps = nlohmann::json::array();
  for (const auto& p : parameters) {
    ps.push_back({{"name", p.name}, {"fallback", p.fallback}, {"value", p.value}, {"uncertainty", p.uncertainty}});
  }
  j["parameters"] = ps;
  nlohmann::json cv = nlohmann::json::array();
  for (const auto& c : cross_validation) {
    cv.push_back({{"op", c.op},
                  {"transport", c.transport},
                  {"points", c.points},
                  {"median_abs_error", c.median_abs_error},
                  {"worst_abs_error", c.worst_abs_error}});
  }
  j["cross_validation"] = cv;
  j["notes"] = notes;
  return j;
}

std::vector<ProfileParameter> fit_nccl_parameters(const CalibrationResults& results, FitReport& report) {
  const hardware::Catalog catalog = hardware::Catalog::load();
  return fit_nccl_parameters(results, report, catalog, system_from(results, catalog));
}

std::vector<ProfileParameter> fit_nccl_parameters(const CalibrationResults& results, FitReport& report,
                                                  const hardware::Catalog& catalog, const std::string& system) {
  report = FitReport{};
  report.system = system;
  std::string version = "2.28";
  if (results.environment && results.environment->nccl_version) {
    const std::string& v = *results.environment->nccl_version;
    try {
      version = nc::NcclVersion::builtin(v).name;
    } catch (const InputError&) {
      report.notes.push_back("no table for NCCL " + v + "; using " + version);
    }
  }
  Problem prob(catalog, system, version);
  // load_fit_input rejects zero-byte points naming the file; this guards callers that bypass it.
  auto bytes_of = [](std::int64_t b, const char* section) {
    if (b < 1) throw InputError("", std::string("/") + section, "expected points of at least 1 byte");
    return Bytes::of(b);
  };
  // Collectives.
  for (const CollectiveSeries& c : results.collectives) {
    const auto op = nc::parse_op(c.op);
    // results.hpp reads only the ops the model has: a miss is this program's fault, not the input's.
    if (!op) throw RuntimeError("the NCCL model has no collective '" + c.op + "'");
    const int id = prob.add_config({c.nodes, c.gpus_per_node, c.env});
    int index = 0;
    for (const CollectivePoint& pt : c.points) {
      Point p;
      p.config = id;
      p.op = *op;
      p.in_place = c.in_place;
      p.iters = c.iters.value_or(20);
      p.threads = c.threads_per_process.value_or(1);
      p.gpus_per_thread = c.gpus_per_thread.value_or(1);
      p.size = bytes_of(pt.size_bytes, "collectives");
      p.measured_us = pt.time_us;
      p.fold = index++ % 2;
      p.op_label = c.op;
      p.session = c.session;
      prob.add_point(p);
    }
  }
  // P2P pairs as send/recv between two GPUs.
  const int p2p_ranks = results.environment ? results.environment->gpu_count.value_or(2) : 2;
  for (const P2pSeries& s : results.p2p) {
    if (s.mode == "cuda_memcpy_peer") {
      report.notes.push_back("cuda_memcpy_peer points are not NCCL transfers; skipped");
      continue;
    }
    // A send between two GPUs of a communicator of all the run's GPUs, as the harness runs it.
    Config cfg;
    cfg.nodes = 1;
    cfg.gpus = std::max({p2p_ranks, s.src + 1, s.dst + 1});
    cfg.env = s.mode == "nccl_shm" ? std::map<std::string, std::string>{{"NCCL_P2P_DISABLE", "1"}}
              : s.mode == "nccl_p2p_read" ? std::map<std::string, std::string>{{"NCCL_P2P_READ_ENABLE", "1"}}
                                         : std::map<std::string, std::string>{{"NCCL_P2P_READ_ENABLE", "0"}};
    const int id = prob.add_config(cfg);
    int index = 0;
    for (const P2pPoint& pt : s.points) {
      Point p;
      p.config = id;
      p.op = nc::CollectiveOp::SENDRECV;
      p.pair_src = s.src;
      p.pair_dst = s.dst;
      p.iters = s.iters.value_or(20);
      p.size = bytes_of(pt.size_bytes, "p2p");
      p.measured_us = pt.time_us;
      p.fold = index++ % 2;
      p.op_label = "p2p";
      p.session = s.session;
      prob.add_point(p);
    }
  }
  auto& points = prob.points();
  if (points.empty()) throw InputError("", "/collectives", "expected measured points to fit");
  // Transport labels for the report.
  {
    std::map<int, std::string> label;
    for (auto& p : points) {
      if (label.find(p.config) == label.end()) {
        const auto pred = prob.predictor(p.config, nullptr);
        label[p.config] = pred->system().nodes() > 1 ? pred->inter_transport() : pred->intra_transport();
      }
      p.transport = label[p.config];
    }
  }
  report.points = static_cast<int>(points.size());
  const auto fallbacks = prob.fallbacks();
  std::vector<int> all(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) all[i] = static_cast<int>(i);
  const FitResult full = fit(prob, fallbacks, all);
  report.iterations = full.iterations;
  report.rms_log_residual_before = full.rms_before;
  report.rms_log_residual_after = full.rms_after;

  // Cross-validation: fit on one fold, predict the other.
  std::map<std::pair<std::string, std::string>, std::vector<double>> errors;
  for (int f = 0; f < 2; ++f) {
    std::vector<int> train, test;
    for (std::size_t i = 0; i < points.size(); ++i) (points[i].fold == f ? test : train).push_back(static_cast<int>(i));
    if (train.empty() || test.empty()) continue;
    const FitResult part = fit(prob, fallbacks, train);
    const Eigen::VectorXd r = prob.residuals(part.values, test);
    for (std::size_t k = 0; k < test.size(); ++k) {
      const Point& p = points[test[k]];
      errors[{p.op_label, p.transport}].push_back(std::fabs(std::exp(r(static_cast<Eigen::Index>(k))) - 1));
    }
  }
  for (auto& [key, e] : errors) {
    CrossValidationEntry c;
    c.op = key.first;
    c.transport = key.second;
    c.points = static_cast<int>(e.size());
    c.median_abs_error = median(e);
    c.worst_abs_error = *std::max_element(e.begin(), e.end());
    report.cross_validation.push_back(c);
  }

  std::vector<ProfileParameter> out;
  for (const std::string& name : full.fitted) {
    ProfileParameter p;
    p.name = name;
    p.kind = prob.kind(name);
    p.value = full.values.at(name);
    p.text = text_of(p.kind, p.value);
    const auto u = full.uncertainty.find(name);
    p.uncertainty = u == full.uncertainty.end() ? 0.1 : std::max(0.005, u->second);
    p.samples = report.points;
    out.push_back(p);
    report.parameters.push_back({name, fallbacks.at(name), p.value, p.uncertainty});
  }
  for (const auto& [name, v] : fallbacks) {
    if (std::find(full.fitted.begin(), full.fitted.end(), name) == full.fitted.end()) {
      report.notes.push_back(name + " not identifiable from these points; keeps its fallback");
    }
  }
  return out;
}

std::vector<double> session_covariance(int m, const std::vector<double>& a_inv, const std::vector<double>& jac,
                                       const std::vector<double>& w, const std::vector<double>& r,
                                       const std::vector<int>& session) {
  const auto n = static_cast<Eigen::Index>(r.size());
  if (m < 1 || a_inv.size() != static_cast<std::size_t>(m) * static_cast<std::size_t>(m) ||
      jac.size() != static_cast<std::size_t>(n) * static_cast<std::size_t>(m) || w.size() != r.size() ||
      session.size() != r.size()) {
    throw std::invalid_argument("session_covariance: sizes do not match");
  }
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::MatrixXd a = Eigen::Map<const RowMajor>(a_inv.data(), m, m);
  const Eigen::MatrixXd j = Eigen::Map<const RowMajor>(jac.data(), n, m);
  const Eigen::VectorXd wv = Eigen::Map<const Eigen::VectorXd>(w.data(), n);
  const Eigen::VectorXd rv = Eigen::Map<const Eigen::VectorXd>(r.data(), n);
  const RowMajor c = session_covariance_of(a, j, wv, rv, session);
  return {c.data(), c.data() + c.size()};
}

}  // namespace clustersim::calibrate
