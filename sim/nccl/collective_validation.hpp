#pragma once
// Predicted against measured for collectives: published nccl-tests results (CSV files with a
// set description, tests/validation/data/) and this project's calibration results JSON
// (calibration results schema: "collectives" entries with their points).
//
// For every measured point the prediction runs under the conditions the set states (catalog
// system, nodes, GPUs per node, NCCL release, NCCL variables, nccl-tests -g and -n); nothing is
// fitted to the measurement. The error of a point is (predicted - measured) / measured time; a
// set's figures are the median and the worst absolute error over its points of 64 KB and more
// (smaller sizes are reported but not counted: they measure launch and synchronisation costs that
// depend on the host).

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"
#include "sim/nccl/collective_predictor.hpp"

namespace clustersim::sim::nccl {

struct ValidationPoint {
  std::string system;       // catalog system or instance
  int nodes = 1;
  CollectiveOp op = CollectiveOp::ALL_REDUCE;
  Bytes size;
  double measured_time_us = 0;
  double measured_busbw_GBps = 0;
  // A point-to-point point: one send from pair_src to pair_dst, the other ranks idle (-1: the op).
  int pair_src = -1, pair_dst = -1;
};

// The smallest size a set's median and worst error count (the published sets' "64 KB and up").
inline constexpr long long kCountedFromBytes = 64 * 1024;

struct ValidationSet {
  std::string name;
  std::string description;
  std::string provenance;
  int gpus_per_node = 8;
  std::string nccl_version = "2.28";
  std::map<std::string, std::string> env;
  int threads_per_process = 1;  // nccl-tests -t (1: a process per GPU, or -g N in one thread)
  int gpus_per_thread = 1;
  int iters = 20;
  bool in_place = false;  // nccl-tests' in-place columns
  // Points below this size are shown but not in the median and worst error: kCountedFromBytes,
  // unless the set's entry says otherwise ("counted_from_bytes": a set about small sizes).
  long long counted_from_bytes = kCountedFromBytes;
  // The machine that measured it, when its family names one ("machine"): its groups are that
  // machine's (group_results); otherwise the system's.
  std::string machine;
  std::vector<ValidationPoint> points;
};

struct PointResult {
  ValidationPoint point;
  CollectivePrediction prediction;
  double error = 0;  // (predicted - measured) / measured time
  bool counted = false;
};

struct SetResult {
  const ValidationSet* set = nullptr;
  // Where the set's parameters came from: the profile (when it was fitted on the GPU of the set's
  // systems) or NCCL's and the catalog's fallbacks, and why.
  std::string parameters;
  bool profile_applied = false;  // the profile was used for at least one of the set's points
  const hardware::CalibrationProfile* profile = nullptr;  // the profile the set was given (may be null)
  std::vector<PointResult> points;
  int counted = 0;
  double median_abs_error = 0;
  double worst_abs_error = 0;
};

// The size bands of GroupResult::by_size: [from, to) in bytes, by factors of 16 from 1 MiB (the
// first band takes everything counted below 1 MiB, the last everything from 4 GiB).
struct SizeBand {
  long long from_bytes;
  long long to_bytes;  // exclusive; 0: no upper bound
  const char* label;
};
inline constexpr std::array<SizeBand, 5> kSizeBands{{{0, 1LL << 20, "< 1 MiB"},
                                                     {1LL << 20, 16LL << 20, "1-16 MiB"},
                                                     {16LL << 20, 256LL << 20, "16-256 MiB"},
                                                     {256LL << 20, 4LL << 30, "256 MiB-4 GiB"},
                                                     {4LL << 30, 0, ">= 4 GiB"}}};
// The band of a size, an index into kSizeBands.
int size_band(long long bytes);

// The figures the lent machines are judged by: a machine's own measurements pooled by what the
// model has to get right. Every set whose name holds a '/' (one made from calibration results or
// imported nccl-tests logs) adds its counted points to the group of (its machine: the family's
// "machine" where it names one, else its system; the transport its
// NCCL variables leave, op, forced algorithm, forced protocol), and the group's figure is the
// median absolute error of the pool: repeats and in-place columns pool with the rest, so a group
// answers for every run of its kind. Transport, as NCCL picks it inside one node: "local" for one
// rank; "NET" across nodes or with NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1 (over a host's own
// interface, NCCL's socket transport); "SHM" with NCCL_P2P_DISABLE=1; "P2P read" with
// NCCL_P2P_READ_ENABLE=1; else "P2P". Algorithm and protocol are NCCL_ALGO and NCCL_PROTO as given
// (lower case), "auto" when NCCL chose; a point-to-point pair's op is "pair". A published set (no
// '/' in its name) is a group of its own, named after it.
//
// How far the measurement itself moves: sets that measured the same configuration (the same name
// once its second part, the results file, a trailing "runN", and NCCL_BUFFSIZE, NCCL_LL_BUFFSIZE or
// NCCL_LL128_BUFFSIZE set to the release's own default are left out, and the same nccl-tests
// -n, -t and -g: a repeat in the same session or the same command in another) give, at each counted size they share, their times t_i
// with median m; each |t_i / m - 1| is a deviation, and the group's repeat spread is the median of
// its deviations. It is what a model that predicted every configuration's median exactly would
// score against the runs, so a group's error near its spread is the measurement's, not the model's.
// Within one session runs agree more closely than sessions do, and a session with many repeats
// outweighs one with a single run, so the session spread looks at sessions alone: where sets of
// one configuration come from two or more results files, each file's runs give a session median
// s_j at each counted size they share, m is the median of the s_j, and the group's session spread
// is the median of the |s_j / m - 1| (with two sessions, |a - b| / (a + b) each). A model fitted
// across sessions can do no better than about that against each of them.
//
// Whether the predictions' bands hold what they claim: a counted point is inside the 68% band when
// its measured time lies within the predicted time x (1 +- u), u the prediction's relative
// uncertainty (CollectivePrediction::uncertainty, one standard deviation), that is |m / p - 1| <= u,
// and inside the 90% band within kBandZ90 u. Far fewer than 68% and 90% says the prediction claims
// more than it knows (a host unlike the profile's, or a model that misses its shape), far more that
// it claims too little.
struct GroupResult {
  std::string source;     // "<machine or system> measured", or the published set's name
  std::string transport;  // see above ("" for a published set)
  std::string op;
  std::string algo;
  std::string proto;
  int sets = 0;
  int points = 0;  // counted points pooled
  double median_abs_error = 0;
  // The same against each configuration's typical time: where a configuration (as for the repeat
  // spread, below) was measured more than once, its points count once, as the median of their
  // measured times against the median of their predictions; the median of those |errors| over the
  // group's configurations (each counted size one).
  int configurations = 0;
  double config_median_abs_error = 0;
  int repeated = 0;  // deviations behind the repeat spread (0: no configuration measured twice)
  double repeat_spread = 0;
  int session_compared = 0;  // deviations behind the session spread (0: no configuration in two sessions)
  double session_spread = 0;
  double within68 = 0;  // share of the counted points inside the 68% band (above)
  double within90 = 0;  // and inside the 90% band
  // The signed error (predicted - measured, over measured) by size band (kSizeBands): its median
  // and the points behind it (0: none in the band). A level shared by every band is the host's or
  // the session's (a calibration moves it); a median that changes sign or size from band to band
  // is the model's shape.
  struct Band {
    int points = 0;
    double median_error = 0;
  };
  std::array<Band, kSizeBands.size()> by_size{};
};
// The groups of `results`, ordered by source, transport, op, algorithm, protocol.
std::vector<GroupResult> group_results(const std::vector<SetResult>& results);

struct Threshold {
  double median_abs_error = 0;
  double worst_abs_error = 0;
};

// The errors a run of the validation may reach before it counts as a regression, for one source
// of parameters: each set's median and worst absolute error, and each group's median (groups by
// group_key). The thresholds file (collective_thresholds.json) holds one such record for NCCL's
// and the catalog's fallbacks ("sets") and one per calibration profile ("profiles": {name:
// {"sets", "groups"}}), since a profile moves every prediction of the GPU it was fitted on.
struct Thresholds {
  std::map<std::string, Threshold> sets;
  std::map<std::string, double> groups;  // median absolute error
};
struct ThresholdFile {
  Thresholds fallbacks;
  std::map<std::string, Thresholds> profiles;  // by profile name
};
// A group's name in the thresholds file: "<source> | <transport> | <op> | <algo> | <proto>", the
// transport "-" for a published set ("hgx-h200 measured | NET | all_reduce | tree | simple").
std::string group_key(const GroupResult& g);

// How a record is made from a run (record_thresholds): what the model scores now, plus a margin
// that leaves room for rounding and for compilers' floating point, rounded up to the places the
// file keeps. A set may reach its median + 3 points and its worst + 5 (two decimals); a group its
// median + 2 points (three decimals), but a group within the 10% target may not leave it: its
// threshold is at most kGroupTarget.
inline constexpr double kGroupTarget = 0.10;
inline constexpr double kSetMedianMargin = 0.03;
inline constexpr double kSetWorstMargin = 0.05;
inline constexpr double kGroupMargin = 0.02;
// The record of a run: {"sets": {name: {median_abs_error, worst_abs_error}}, "groups": {key:
// {median_abs_error}}}, sets in the run's order, groups in group_results' order.
nlohmann::ordered_json record_thresholds(const std::vector<SetResult>& results, const std::vector<GroupResult>& groups);
// The thresholds file `text` (read from `file`, checked as load_thresholds checks it) with
// `record` in place of the section of `profile` ("": the fallbacks' "sets"), everything else as
// it was; the JSON text to write.
std::string replace_threshold_section(std::string_view text, const std::string& file, const std::string& profile,
                                      const nlohmann::ordered_json& record);
// Reads the set descriptions; `read_file(name)` returns the text of a data file beside them. An
// entry with "results" (a list of calibration results files), "system" and optionally "env" (the
// variables of the runs that a file does not record) instead of "csv" adds those files' sets
// (load_results_sets), named "<entry name>/<file stem less "<entry name>-">/...".
std::vector<ValidationSet> load_published_sets(std::string_view sets_json, const std::string& file,
                                               const std::function<std::string(const std::string&)>& read_file);
// One set per "collectives" entry of a calibration results file (named <file stem>/op/<n>ranks/
// algo/proto/<channels>ch/in-place or out-of-place), and one per NCCL "p2p" mode (nccl_p2p_write,
// nccl_p2p_read, nccl_shm: every pair's send in a communicator of all the run's GPUs; the mode's
// variables implied). Every set runs under the file's environment.nccl_env with the entry's own
// variables over it. The catalog system is `system`, else environment.instance_type.
std::vector<ValidationSet> load_results_sets(const nlohmann::json& results, const std::string& file,
                                             const hardware::Catalog& catalog, const std::string& system);
// Reads a thresholds file (schema 1: the fallbacks' "sets" alone; 2: with "profiles").
ThresholdFile load_thresholds(std::string_view text, const std::string& file);

// Whether a profile fitted on the GPU `fitted_gpu` (its provenance's gpu, as the driver names it:
// "NVIDIA H200") describes the catalog GPU `catalog_gpu` ("H200-SXM-141GB"): its model word
// (hardware::gpu_model_word, as `calibrate fit` finds a results file's system) begins the catalog
// name. A profile that names no GPU matches every GPU (nothing tells them apart).
bool profile_gpu_matches(std::string_view fitted_gpu, std::string_view catalog_gpu);

// Predicts every point of `set`; `profile` (may be null) is used only for points on systems whose
// GPU it was fitted on (profile_gpu_matches), NCCL's and the catalog's fallbacks elsewhere.
SetResult run_validation(const ValidationSet& set, const hardware::Catalog& catalog,
                         const hardware::CalibrationProfile* profile);

// The profile a set runs on when several are given (validate collectives --calibration, repeated):
// a further profile (after the first) whose provenance's machine is the machine the set's family
// names (ValidationSet::machine) answers for it, since a host's own costs (a call, a launch) are
// that host's; every other set takes the first. Null when `profiles` is empty.
const hardware::CalibrationProfile* profile_for_set(const std::vector<hardware::CalibrationProfile>& profiles,
                                                    const ValidationSet& set);

// The name the thresholds file records a run's parameters under: the profiles' names joined by
// " + " in the order given ("hgx-h200-4gpu-2026-11 + lent-1xh200-2026-12"); empty for none (the
// fallbacks' section).
std::string profiles_record_name(const std::vector<hardware::CalibrationProfile>& profiles);

}  // namespace clustersim::sim::nccl
