#pragma once
// Fits the NCCL model's "nccl.*" parameters (sim/nccl/nccl_parameters.hpp) to measured nccl-tests
// results (the "collectives" and "p2p" sections of calibration results JSON).
//
// Model: every measured point i (op, nodes, GPUs, variables, size) has a predicted time t_i(theta)
// from the fast path with the parameters theta. The fit works on log times, so that a 10% miss
// counts alike at 8 bytes and at 8 GiB, and on log parameters, so that they stay positive:
//   r_i(phi) = log t_i(exp(phi)) - log m_i
//   minimise sum_i rho(r_i) + sum_j w0 (phi_j - phi0_j)^2
// with rho the Huber loss (quadratic within delta = 0.05, linear beyond: a few wild points do not
// drag the fit), solved by iteratively reweighted Gauss-Newton (Levenberg-Marquardt damping) on a
// finite-difference Jacobian (Eigen), its columns computed on the machine's hardware threads (the
// same result as one at a time). phi0 are the catalog fallbacks, and for the parameters that have
// none (the NVLink ramp, off without a profile) a seed; the weak prior w0 = 0.01 keeps parameters
// the data cannot see where the fallback puts them.
// Parameters enter the fit only where the data moves the prediction (|d log t / d phi| > 0.02 for
// some point); the others keep their fallbacks and are not written.
// Uncertainty of a fitted parameter (relative): the square root of the larger diagonal entry of
// two covariances, with A = J^T W J + w0 I at the solution:
//  * independent residuals: s^2 A^-1, s^2 the weighted residual variance sum w r^2 / (n - m);
//  * residuals correlated within a session (one results file: one machine on one day; a host may
//    run every host-bound series 10 to 35% slower than another day's): the cluster-robust sandwich
//    G / (G - 1) A^-1 (sum over the G sessions of u_g u_g^T) A^-1, u_g = J_g^T W_g r_g.
// The first shrinks as 1 / sqrt(n) with thousands of points even where sessions disagree; the
// second stays as wide as their disagreement allows (two sessions of 50 points each, all +10% and
// all -10% off a fitted level: 1% and 10%), and vanishes with one session, hence the larger.
// Cross-validation: the points are split by size (alternate sizes of each sweep); the fit on one
// half predicts the other and the other way round; the report gives the median and worst
// absolute time error per operation and transport.
//
// P2P points ("p2p": src, dst, mode) are predicted as a send/recv between two GPUs of one node
// with the transport the mode names (nccl_p2p_write, nccl_p2p_read, nccl_shm); cuda_memcpy_peer
// points are not NCCL's and are skipped.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/results.hpp"
#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"

namespace clustersim::calibrate {

struct FittedParameter {
  std::string name;
  double fallback = 0;  // SI
  double value = 0;     // SI
  double uncertainty = 0;  // relative
};

struct CrossValidationEntry {
  std::string op;         // "all_reduce", ..., "p2p"
  std::string transport;  // "P2P/CUMEM", "NET/IB/0/GDRDMA", ...
  int points = 0;
  double median_abs_error = 0;
  double worst_abs_error = 0;
};

struct FitReport {
  std::string system;
  int points = 0;
  int iterations = 0;
  double rms_log_residual_before = 0;
  double rms_log_residual_after = 0;
  std::vector<FittedParameter> parameters;
  std::vector<CrossValidationEntry> cross_validation;
  std::vector<std::string> notes;
  nlohmann::json to_json() const;
};

// Fits from calibration results (typically merged, fit_input.hpp); the catalog system comes from
// environment.instance_type, else from the GPU name and count (an HGX board of that GPU).
// InputError on results the model cannot place.
std::vector<hardware::ProfileParameter> fit_nccl_parameters(const CalibrationResults& results, FitReport& report);
// The same with the catalog and the system named.
std::vector<hardware::ProfileParameter> fit_nccl_parameters(const CalibrationResults& results, FitReport& report,
                                                            const hardware::Catalog& catalog, const std::string& system);

// The session-clustered covariance above, for m parameters and n points: a_inv = A^-1 (m x m) and
// the Jacobian (n x m), both row-major; the weights, residuals and session of each point. Returns
// the m x m covariance, row-major (zeros with fewer than two sessions).
std::vector<double> session_covariance(int m, const std::vector<double>& a_inv, const std::vector<double>& jac,
                                       const std::vector<double>& w, const std::vector<double>& r,
                                       const std::vector<int>& session);

}  // namespace clustersim::calibrate
