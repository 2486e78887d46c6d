#pragma once
// Calibration profiles: the parameters that sim/ and models/ use in place of datasheet guesses,
// fitted by `clustersim calibrate fit` from measurements of a real machine.
//
// A profile is a flat set of named parameters, each a quantity with its unit (or a bare number
// for a dimensionless ratio), the relative uncertainty of the fit (from its residuals), the number
// of samples behind it and where it came from:
//
//   {
//     "schema_version": 1,
//     "name": "hgx-h200-4gpu-2026-11",
//     "provenance": {"machine": "...", "gpu": "NVIDIA H200", "gpu_count": 4, "driver": "580.159.04",
//                    "cuda": "13.0", "nccl": "2.28.9", "date": "2026-11-21",
//                    "results": ["calibrate/results/....json"], "notes": "..."},
//     "parameters": {
//       "nccl.nvlink.simple.channel_bandwidth": {"value": "21.3 GB/s", "uncertainty": 0.03, "samples": 40},
//       "compute.gemm.bf16.large.efficiency":    {"value": 0.79, "uncertainty": 0.02, "samples": 12}
//     },
//     "cross_validation": {...}   // kept as written by the fitter, shown in reports
//   }
//
// Names are dotted paths owned by the model that reads them; each model documents its names at
// the top of its header. A ParameterSet looks names up in a profile and falls back to a default
// derived from the catalog when the profile lacks one; it records every parameter a prediction
// used, so reports can state provenance and widen the uncertainty where nothing was measured.

#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hardware/embedded_file.hpp"
#include "hardware/units.hpp"

namespace clustersim::hardware {

struct ProfileParameter {
  enum class Kind { RATIO, BANDWIDTH, DURATION, FLOP_RATE, BYTES };
  std::string name;
  Kind kind = Kind::RATIO;
  double value = 0;          // SI: ratio, bytes/s, seconds, FLOP/s or bytes
  std::string text;          // as written in the file ("21.3 GB/s", "0.79")
  double uncertainty = 0.1;  // relative, one standard deviation
  int samples = 0;
};

struct ProfileProvenance {
  std::string machine;
  std::string gpu;
  int gpu_count = 0;
  std::string driver;
  std::string cuda;
  std::string nccl;
  std::string date;
  std::vector<std::string> results;
  std::string notes;
};

class CalibrationProfile {
 public:
  // Reads a profile file strictly (InputError names the file and key on bad input).
  static CalibrationProfile load(const std::string& path);
  static CalibrationProfile parse(std::string_view text, const std::string& file);
  // A profile compiled into the binary (calibrate/profiles/NAME.json), or an InputError listing them.
  static CalibrationProfile builtin(std::string_view name);
  static std::vector<std::string> builtin_names();

  const std::string& name() const { return name_; }
  const std::string& file() const { return file_; }
  const ProfileProvenance& provenance() const { return provenance_; }
  const nlohmann::json& cross_validation() const { return cross_validation_; }
  const ProfileParameter* find(std::string_view name) const;
  const std::map<std::string, ProfileParameter, std::less<>>& parameters() const { return parameters_; }

  // Writes the profile back as JSON (the fitter uses this; the parameters keep their text form).
  nlohmann::json to_json() const;
  // Builds a profile from fitted values (the fitter).
  static CalibrationProfile from_parts(std::string name, ProfileProvenance prov,
                                       std::vector<ProfileParameter> params, nlohmann::json cross_validation,
                                       std::string file = "");

 private:
  std::string name_;
  std::string file_;
  ProfileProvenance provenance_;
  std::map<std::string, ProfileParameter, std::less<>> parameters_;
  nlohmann::json cross_validation_ = nlohmann::json::object();
};

// One parameter as a prediction used it.
struct UsedParameter {
  std::string name;
  ProfileParameter::Kind kind = ProfileParameter::Kind::RATIO;  // as the lookup asked for it
  double value = 0;
  std::string text;
  bool calibrated = false;   // from a profile (measured) rather than a default
  std::string provenance;    // "profile hgx-h200-4gpu-2026-11" or the default's derivation
  double uncertainty = 0;    // relative
};

// Parameter lookup with defaults and a record of use. Not thread-safe: one per evaluation.
class ParameterSet {
 public:
  ParameterSet() = default;
  explicit ParameterSet(const CalibrationProfile* profile) : profile_(profile) {}

  // The profile's value of `name`, or `fallback` (derived from the catalog, described by `why`).
  // A default carries `default_uncertainty` (relative); a calibrated value its fit's uncertainty.
  double ratio(std::string_view name, double fallback, std::string_view why, double default_uncertainty = 0.25);
  Bandwidth bandwidth(std::string_view name, Bandwidth fallback, std::string_view why,
                      double default_uncertainty = 0.25);
  Duration duration(std::string_view name, Duration fallback, std::string_view why,
                    double default_uncertainty = 0.5);
  FlopRate flop_rate(std::string_view name, FlopRate fallback, std::string_view why,
                     double default_uncertainty = 0.25);
  Bytes bytes(std::string_view name, Bytes fallback, std::string_view why, double default_uncertainty = 0.25);
  bool has(std::string_view name) const { return profile_ != nullptr && profile_->find(name) != nullptr; }
  // From now on the profile's parameters whose names begin with `prefix` are not used: their
  // lookups take the fallback, whose recorded provenance adds `reason` (a profile fitted where
  // those parameters mean something else, e.g. host costs under another NCCL release).
  void set_profile_excluded(std::string prefix, std::string reason);

  const CalibrationProfile* profile() const { return profile_; }
  // Every parameter looked up so far, by name (the last lookup of a name wins).
  const std::map<std::string, UsedParameter, std::less<>>& used() const { return used_; }
  // True when any parameter used came from a default rather than a measurement.
  bool any_uncalibrated() const;

 private:
  double lookup(std::string_view name, ProfileParameter::Kind kind, double fallback, std::string_view fallback_text,
                std::string_view why, double default_uncertainty);
  const CalibrationProfile* profile_ = nullptr;
  std::vector<std::pair<std::string, std::string>> excluded_;  // (name prefix, reason)
  std::map<std::string, UsedParameter, std::less<>> used_;
};

std::span<const EmbeddedFile> builtin_profile_files();  // generated from calibrate/profiles/*.json

}  // namespace clustersim::hardware
