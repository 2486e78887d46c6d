#pragma once
// The step time's prediction band: a stated probability, with widths from validation residuals.
//
// Scores. Every committed training-step measurement i (step_residuals.hpp) gives its residual
// r_i = ln(measured_i / predicted_i), signed: a model that is biased one way has its bias in the
// band.
//
// Band (split conformal prediction: Vovk, Gammerman and Shafer 2005; Lei et al. 2018). For a new
// step T whose cell holds n residuals r_(1) <= ... <= r_(n), the central band of coverage c = 1 - a
// is
//   [T exp(r_(kl)), T exp(r_(kh))],  kl = floor((n + 1) a / 2),  kh = ceil((n + 1)(1 - a / 2)),
// and the one-sided q-quantile (the planner's deadline at a confidence) T exp(r_(ceil((n+1) q))).
// When the new step and the n scored ones are exchangeable, each side misses with probability at
// most a / 2, so the band holds with probability at least c, whatever the residuals' distribution.
// A cell with too few residuals for the asked level (kl < 1 or kh > n: 90% needs n >= 19, 68%
// n >= 6) takes its parent's.
//
// Cells: the basis, then every residual. Basis: "calibrated" when most parameters of the step's
// regime family (compute.*, nccl.*, host.*) came from a calibration profile, else "catalog
// defaults", so a calibrated machine's band comes from calibrated steps. Regime: the part that
// moves the step, from the breakdown's shares of T: host (CPU optimizer, offload copies, the GPU
// waiting for its CPU thread) when it is at least kRegimeShare and not below the communication
// share; communication (exposed) likewise; compute otherwise. The regime names the family and is
// reported with the coverage, but it does not split the cells: on the committed sets a split by
// predicted regime made the bands cover less (DeepSpeed's 2021 ZeRO-3 steps, predicted
// compute-bound, missed by 31 to 53% among Megatron steps that miss by 0 to 10%; their
// communication-bound cell would have 2 residuals). The model's own scale (prior_sigma, from the
// parameters' uncertainties) is reported beside the band, not used for its width: on the committed
// sets it is 0.25 to 0.42 for steps whose errors run from 0.1% to 53%, and dividing by it made the
// bands no better.
//
// Scores measured on steps a parameter was fitted on (in_sample) are kept: here they miss by more
// than the others, and leaving them out would narrow the band below what the model does. Coverage
// is reported for in- and out-of-sample steps apart. The table is data
// (models/data/step_band_scores.json, written by `clustersim validate training --record-bands`);
// `validate training` checks its coverage with each measurement's own residual left out.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/embedded_file.hpp"
#include "models/step_estimate.hpp"

namespace clustersim::models {

std::span<const EmbeddedFile> builtin_band_files();  // models/data/*.json, generated at build time

enum class StepRegime { COMPUTE, COMMUNICATION, HOST };
std::string_view to_string(StepRegime r);

inline constexpr double kRegimeShare = 0.25;  // of the step, for communication or host to lead

// The step's regime (above), from its breakdown and host summary.
StepRegime step_regime(const StepEstimate& e);
// Whether most used parameters of the regime's family are calibrated (above).
bool step_calibrated(const StepEstimate& e, StepRegime r);
// The parameters' relative uncertainty of the step: the root of the sum of squares of each part's
// share of the step times the root-mean-square relative uncertainty of its parameters (compute:
// compute, bubble and a GPU optimizer; communication: exposed; host: the rest).
double prior_sigma(const StepEstimate& e);

struct BandScore {
  std::string set, row;
  StepRegime regime = StepRegime::COMPUTE;
  bool calibrated = false;
  bool in_sample = false;
  double residual = 0;  // ln(measured / predicted)
};

// Where a band's scores came from.
struct BandCell {
  std::string name;  // "calibrated", "catalog defaults" or "all"
  int scores = 0;
};

class StepBandTable {
 public:
  // The table compiled into the binary (models/data/step_band_scores.json).
  static const StepBandTable& builtin();
  static StepBandTable parse(std::string_view text, const std::string& file);
  explicit StepBandTable(std::vector<BandScore> scores) : scores_(std::move(scores)) {}

  const std::vector<BandScore>& scores() const { return scores_; }
  // The score quantiles for a step of `regime` and basis: the central band of `coverage`
  // (low, high scores) and the cell they came from. `leave_out` (set, row) drops one score: the
  // coverage check's own measurement. Nullopt when even every score is too few.
  struct Interval {
    double low = 0, high = 0;
    BandCell cell;
  };
  std::optional<Interval> central(StepRegime regime, bool calibrated, double coverage,
                                  const BandScore* leave_out = nullptr) const;
  // The one-sided q-quantile score (q in (0, 1)).
  std::optional<Interval> upper(StepRegime regime, bool calibrated, double q, const BandScore* leave_out = nullptr) const;

  // The JSON text of the table (the format parse reads).
  std::string to_json(const std::string& note) const;

 private:
  std::vector<BandScore> scores_;
};

// The score of a measured step against its estimate.
BandScore band_score(const std::string& set, const std::string& row, const StepEstimate& e, double measured_s,
                     bool in_sample);

// The band an estimate carries: 68% and 90% central bands from `table`, or the prior scale as a
// normal band where the table cannot answer (an empty table). Fills e.band.
void apply_step_band(StepEstimate& e, const StepBandTable& table = StepBandTable::builtin());
// The step time at one-sided probability q (the planner's confidence): T exp(r_q).
double step_time_quantile(const StepEstimate& e, double q, const StepBandTable& table = StepBandTable::builtin());

}  // namespace clustersim::models
