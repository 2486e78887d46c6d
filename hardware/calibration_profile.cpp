#include "hardware/calibration_profile.hpp"

#include <filesystem>

#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"

namespace clustersim::hardware {

namespace {

// Reads a quantity written with its unit, deciding its kind from the unit; a bare number is a ratio.
ProfileParameter read_parameter(const std::string& name, ValueReader v) {
  return v.read_object([&](ObjectReader& o) {
    ProfileParameter p;
    p.name = name;
    auto val = o.at("value");
    if (val.raw().is_number()) {
      p.kind = ProfileParameter::Kind::RATIO;
      p.value = val.as_number({.min = -1e12, .max = 1e12});
      p.text = format_number(p.value);
    } else {
      p.text = val.as_string();
      // Try each quantity kind in turn; the unit decides which one parses.
      try {
        p.value = parse_bandwidth(p.text).bytes_per_second();
        p.kind = ProfileParameter::Kind::BANDWIDTH;
      } catch (const InputError&) {
        try {
          p.value = parse_duration(p.text).seconds();
          p.kind = ProfileParameter::Kind::DURATION;
        } catch (const InputError&) {
          try {
            p.value = parse_flop_rate(p.text).flops_per_second();
            p.kind = ProfileParameter::Kind::FLOP_RATE;
          } catch (const InputError&) {
            try {
              p.value = parse_bytes(p.text).as_double();
              p.kind = ProfileParameter::Kind::BYTES;
            } catch (const InputError&) {
              val.fail("a ratio (number) or a quantity with a unit: bandwidth ('21 GB/s'), duration ('5 us'), "
                       "FLOP rate ('790 TFLOP/s') or size ('4 MiB')");
            }
          }
        }
      }
    }
    p.uncertainty = o.get_or("uncertainty", 0.1, {.min = 0, .max = 10});
    p.samples = static_cast<int>(o.get_or("samples", 0, {.min = 0, .max = 1'000'000'000}));
    return p;
  });
}

const char* kind_name(ProfileParameter::Kind k) {
  switch (k) {
    case ProfileParameter::Kind::RATIO: return "a ratio";
    case ProfileParameter::Kind::BANDWIDTH: return "a bandwidth";
    case ProfileParameter::Kind::DURATION: return "a duration";
    case ProfileParameter::Kind::FLOP_RATE: return "a FLOP rate";
    case ProfileParameter::Kind::BYTES: return "a size";
  }
  return "a value";
}

}  // namespace

static CalibrationProfile profile_from_document(const JsonDocument& doc) {
  std::string name;
  ProfileProvenance provenance;
  std::vector<ProfileParameter> params_out;
  nlohmann::json cv = nlohmann::json::object();
  doc.root().read_object([&](ObjectReader& o) {
    o.at("schema_version").as_int({.min = 1, .max = 1});
    name = o.at("name").as_string();
    provenance = o.at("provenance").read_object([](ObjectReader& p) {
      ProfileProvenance x;
      x.machine = p.at("machine").as_string();
      x.gpu = p.at("gpu").as_string();
      x.gpu_count = static_cast<int>(p.at("gpu_count").as_int({.min = 1, .max = 1 << 20}));
      x.driver = p.get_or("driver", "");
      x.cuda = p.get_or("cuda", "");
      x.nccl = p.get_or("nccl", "");
      x.date = p.at("date").as_string();
      if (auto r = p.maybe("results")) {
        for (auto& e : r->as_array()) x.results.push_back(e.as_string());
      }
      x.notes = p.get_or("notes", "");
      return x;
    });
    ObjectReader params = o.at("parameters").as_object();
    for (const auto& key : params.keys()) params_out.push_back(read_parameter(key, params.at(key)));
    if (auto x = o.maybe("cross_validation")) cv = x->raw();
  });
  return CalibrationProfile::from_parts(std::move(name), std::move(provenance), std::move(params_out), std::move(cv),
                                        doc.file());
}

CalibrationProfile CalibrationProfile::parse(std::string_view text, const std::string& file) {
  return profile_from_document(parse_json_text(text, file));
}

CalibrationProfile CalibrationProfile::load(const std::string& path) {
  return profile_from_document(load_json_file(path));
}

CalibrationProfile CalibrationProfile::builtin(std::string_view name) {
  for (const auto& f : builtin_profile_files()) {
    if (std::filesystem::path(std::string(f.path)).stem().string() == name) {
      return parse(f.text, "calibrate/profiles/" + std::string(f.path));
    }
  }
  std::string known;
  for (const auto& n : builtin_names()) known += (known.empty() ? "" : ", ") + n;
  std::string msg = "unknown calibration profile '" + std::string(name) + "'";
  if (auto near = nearest_word(name, builtin_names())) msg += "; did you mean '" + *near + "'?";
  throw InputError(msg + " (built in: " + (known.empty() ? "none" : known) + "; or give a profile file path)");
}

std::vector<std::string> CalibrationProfile::builtin_names() {
  std::vector<std::string> out;
  for (const auto& f : builtin_profile_files()) out.push_back(std::filesystem::path(std::string(f.path)).stem().string());
  return out;
}

const ProfileParameter* CalibrationProfile::find(std::string_view name) const {
  auto it = parameters_.find(name);
  return it == parameters_.end() ? nullptr : &it->second;
}

nlohmann::json CalibrationProfile::to_json() const {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["name"] = name_;
  j["provenance"] = {{"machine", provenance_.machine}, {"gpu", provenance_.gpu},       {"gpu_count", provenance_.gpu_count},
                     {"driver", provenance_.driver},   {"cuda", provenance_.cuda},     {"nccl", provenance_.nccl},
                     {"date", provenance_.date},       {"results", provenance_.results}, {"notes", provenance_.notes}};
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [n, p] : parameters_) {
    nlohmann::json v;
    if (p.kind == ProfileParameter::Kind::RATIO) {
      v["value"] = p.value;
    } else {
      v["value"] = p.text;
    }
    v["uncertainty"] = p.uncertainty;
    v["samples"] = p.samples;
    params[n] = v;
  }
  j["parameters"] = params;
  j["cross_validation"] = cross_validation_;
  return j;
}

CalibrationProfile CalibrationProfile::from_parts(std::string name, ProfileProvenance prov,
                                                  std::vector<ProfileParameter> params, nlohmann::json cv,
                                                  std::string file) {
  CalibrationProfile p;
  p.name_ = std::move(name);
  p.file_ = std::move(file);
  p.provenance_ = std::move(prov);
  for (auto& x : params) p.parameters_[x.name] = std::move(x);
  p.cross_validation_ = std::move(cv);
  return p;
}

double ParameterSet::lookup(std::string_view name, ProfileParameter::Kind kind, double fallback,
                            std::string_view fallback_text, std::string_view why, double default_uncertainty) {
  UsedParameter u;
  u.name = std::string(name);
  u.kind = kind;
  std::string_view excluded_because;
  for (const auto& [prefix, reason] : excluded_) {
    if (name.starts_with(prefix)) excluded_because = reason;
  }
  if (profile_ != nullptr && excluded_because.empty()) {
    if (const ProfileParameter* p = profile_->find(name)) {
      if (p->kind != kind) {
        throw InputError(profile_->file(), "/parameters/" + json_pointer_token(name),
                         std::string("expected ") + kind_name(kind) + ", got '" + p->text + "'");
      }
      u.value = p->value;
      u.text = p->text;
      u.calibrated = true;
      u.provenance = "profile " + profile_->name();
      u.uncertainty = p->uncertainty;
      used_[u.name] = u;
      return u.value;
    }
  }
  u.value = fallback;
  u.text = std::string(fallback_text);
  u.calibrated = false;
  u.provenance = std::string(why);
  if (!excluded_because.empty() && profile_ != nullptr && profile_->find(name) != nullptr) {
    u.provenance += " (profile " + profile_->name() + "'s value not used: " + std::string(excluded_because) + ")";
  }
  u.uncertainty = default_uncertainty;
  used_[u.name] = u;
  return fallback;
}

double ParameterSet::ratio(std::string_view name, double fallback, std::string_view why, double unc) {
  return lookup(name, ProfileParameter::Kind::RATIO, fallback, format_significant(fallback, 4), why, unc);
}

Bandwidth ParameterSet::bandwidth(std::string_view name, Bandwidth fallback, std::string_view why, double unc) {
  return Bandwidth::bytes_per_second(lookup(name, ProfileParameter::Kind::BANDWIDTH, fallback.bytes_per_second(),
                                            format_bandwidth(fallback), why, unc));
}

Duration ParameterSet::duration(std::string_view name, Duration fallback, std::string_view why, double unc) {
  return Duration::from_seconds(
      lookup(name, ProfileParameter::Kind::DURATION, fallback.seconds(), format_duration(fallback), why, unc));
}

FlopRate ParameterSet::flop_rate(std::string_view name, FlopRate fallback, std::string_view why, double unc) {
  return FlopRate::flops_per_second(lookup(name, ProfileParameter::Kind::FLOP_RATE, fallback.flops_per_second(),
                                           format_flop_rate(fallback), why, unc));
}

Bytes ParameterSet::bytes(std::string_view name, Bytes fallback, std::string_view why, double unc) {
  return Bytes::from_double(
      lookup(name, ProfileParameter::Kind::BYTES, fallback.as_double(), format_bytes(fallback), why, unc));
}

void ParameterSet::set_profile_excluded(std::string prefix, std::string reason) {
  for (auto& [p, r] : excluded_) {
    if (p == prefix) {
      r = std::move(reason);
      return;
    }
  }
  excluded_.emplace_back(std::move(prefix), std::move(reason));
}

bool ParameterSet::any_uncalibrated() const {
  for (const auto& [n, u] : used_) {
    if (!u.calibrated) return true;
  }
  return false;
}

}  // namespace clustersim::hardware
