// clustersim validate collectives: predictions beside published (and this project's) nccl-tests
// measurements, per set: every point's measurement (the expectation) with the prediction and the
// error, then the median and worst absolute time error over sizes of 64 KB and more.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/app.hpp"
#include "hardware/atomic_file.hpp"
#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"
#include "hardware/embedded_file.hpp"
#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"
#include "reports/text_table.hpp"
#include "sim/nccl/collective_validation.hpp"

namespace clustersim::cli {

std::span<const EmbeddedFile> builtin_validation_files();  // generated from tests/validation/data/*

namespace {

namespace nc = sim::nccl;

struct ValidateArgs {
  std::vector<std::string> results;
  std::string system;
  std::string data_dir;
  std::vector<std::string> calibrations;  // profiles: the first for every set, the others for their own machine's
  std::string format = "text";
  bool check = false;
  std::string record_thresholds;  // thresholds file to update with this run's errors
  std::string sets_pattern;       // only the sets whose name this regular expression finds
  bool summary = false;           // text: the summaries alone, not every set's points
};

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw InputError(p.string(), "", "cannot read the file");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string data_file(const ValidateArgs& a, const std::string& name) {
  if (!a.data_dir.empty()) return read_text(std::filesystem::path(a.data_dir) / name);
  for (const auto& f : builtin_validation_files()) {
    if (f.path == name) return std::string(f.text);
  }
  throw RuntimeError("validation data file '" + name + "' is not built in");
}

// The median absolute error a group should stay within (nc::kGroupTarget): 10%, the accuracy the
// collective model is held to on every published set and on every group of a machine's own
// measurements.
using nc::kGroupTarget;

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * v);
  return buf;
}
std::string pct_abs(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * v);
  return buf;
}
std::string pct_whole(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * v);
  return buf;
}
std::string num(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

void run_validate(Context& ctx, const ValidateArgs& a) {
  std::vector<nc::ValidationSet> sets = nc::load_published_sets(
      data_file(a, "collective_sets.json"), "collective_sets.json", [&](const std::string& n) { return data_file(a, n); });
  const nc::ThresholdFile threshold_file =
      nc::load_thresholds(data_file(a, "collective_thresholds.json"), "collective_thresholds.json");
  // The file a record goes to, read and checked before the run, so a bad one is named at once.
  std::string record_text;
  if (!a.record_thresholds.empty()) {
    record_text = read_text(a.record_thresholds);
    (void)nc::load_thresholds(record_text, a.record_thresholds);
  }
  for (const auto& path : a.results) {
    const JsonDocument doc = load_json_file(path);
    auto more = nc::load_results_sets(doc.json(), path, ctx.catalog(), a.system);
    for (auto& s : more) sets.push_back(std::move(s));
  }
  if (!a.sets_pattern.empty()) {
    // A record is a whole section: made from some of the sets it would drop the others'.
    if (!a.record_thresholds.empty()) {
      throw InputError("", "--sets", "expected no --sets with --record-thresholds (a record covers every set)");
    }
    std::regex re;
    try {
      re = std::regex(a.sets_pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw InputError("", "--sets", "expected a regular expression (ECMAScript), got '" + a.sets_pattern + "': " + e.what());
    }
    std::erase_if(sets, [&](const nc::ValidationSet& s) { return !std::regex_search(s.name, re); });
    if (sets.empty()) throw InputError("", "--sets", "no set's name matches '" + a.sets_pattern + "'");
  }
  // The profiles: the first answers for every set (on its GPU), each further one for the sets of
  // the machine it was fitted on (its provenance's machine, the name a family of sets gives its
  // machine in collective_sets.json): a host's calls cost what that host's cost, so a machine
  // calibrated on its own is predicted with its own profile.
  std::vector<hardware::CalibrationProfile> profiles;
  for (const auto& c : a.calibrations) {
    profiles.push_back(std::filesystem::exists(c) ? hardware::CalibrationProfile::load(c)
                                                  : hardware::CalibrationProfile::builtin(c));
  }
  for (std::size_t i = 1; i < profiles.size(); ++i) {
    if (profiles[i].provenance().machine.empty()) {
      throw InputError(a.calibrations[i], "provenance.machine",
                       "expected the machine the profile was fitted on (a further --calibration answers for that "
                       "machine's sets; calibrate fit --machine names it)");
    }
  }
  const hardware::CalibrationProfile* profile = profiles.empty() ? nullptr : &profiles.front();
  // The thresholds recorded for these parameters: the fallbacks' without a profile, the profiles'
  // own with them, named as given and joined by " + " (none where they have no record: a profile
  // fitted elsewhere is judged by nothing).
  const std::string profile_name = nc::profiles_record_name(profiles);
  const nc::Thresholds no_record;
  const auto recorded = profile ? threshold_file.profiles.find(profile_name) : threshold_file.profiles.end();
  const nc::Thresholds& record =
      !profile ? threshold_file.fallbacks : (recorded != threshold_file.profiles.end() ? recorded->second : no_record);
  const bool has_record = !profile || recorded != threshold_file.profiles.end();
  if (a.check && !has_record) {
    throw InputError("collective_thresholds.json", "/profiles/" + profile_name,
                     "expected thresholds recorded for calibration profile '" + profile_name +
                         "' (--check compares with them; --record-thresholds FILE records them)");
  }
  const auto& thresholds = record.sets;
  std::vector<nc::SetResult> results;
  for (const auto& s : sets) results.push_back(nc::run_validation(s, ctx.catalog(), nc::profile_for_set(profiles, s)));
  // Where the parameters come from, and which sets a profile was fitted on (those score in
  // sample: a held-out check fits on other files, or on alternate sizes with `calibrate fit`). A
  // profile applies only to sets on the GPU it was fitted on (run_validation); each set says
  // which parameters it ran on.
  std::string parameters_source =
      "NCCL and catalog fallbacks only (no calibration profile): no parameter was fitted on these sets";
  if (profile) {
    // "calibration profile NAME (fitted from FILE, FILE)"
    auto fitted_from = [](const hardware::CalibrationProfile& p) {
      std::string files;
      for (const auto& r : p.provenance().results) files += (files.empty() ? "" : ", ") + r;
      return "calibration profile " + p.name() + " (fitted from " +
             (files.empty() ? std::string("unnamed results") : files) + ")";
    };
    const std::string gpu = profile->provenance().gpu;
    parameters_source = fitted_from(*profile) + " on sets whose GPU is its " +
                        (gpu.empty() ? std::string("(unnamed, so every set)") : gpu) +
                        ", NCCL and catalog fallbacks for the rest";
    for (std::size_t i = 1; i < profiles.size(); ++i) {
      parameters_source += "; " + fitted_from(profiles[i]) + " instead on the sets of " + profiles[i].provenance().machine;
    }
  }
  auto in_sample = [&](const nc::SetResult& r) {
    if (r.profile == nullptr || !r.profile_applied) return false;
    for (const auto& f : r.profile->provenance().results) {
      const std::string base = std::filesystem::path(f).filename().string();
      if (!base.empty() && r.set->provenance.find(base) != std::string::npos) return true;
    }
    return false;
  };

  const std::vector<nc::GroupResult> groups = nc::group_results(results);
  // Whether any set or group is past its recorded threshold (--check), whatever the output shows.
  auto set_over = [&](const nc::SetResult& r) {
    const auto t = thresholds.find(r.set->name);
    return t != thresholds.end() &&
           (r.median_abs_error > t->second.median_abs_error || r.worst_abs_error > t->second.worst_abs_error);
  };
  bool breach = false;
  for (const auto& r : results) breach = breach || set_over(r);
  // A group's recorded threshold, if any. A group's record is of the whole pool: a group of some
  // of the sets (--sets) is not held to it.
  auto group_threshold = [&](const nc::GroupResult& g) -> std::optional<double> {
    if (!a.sets_pattern.empty()) return std::nullopt;
    if (auto t = record.groups.find(nc::group_key(g)); t != record.groups.end()) return t->second;
    return std::nullopt;
  };
  for (const auto& g : groups) {
    if (auto t = group_threshold(g); t && g.median_abs_error > *t) breach = true;
  }
  std::ostringstream out;
  if (a.format == "json") {
    nlohmann::json j;
    j["schema_version"] = 1;
    j["kind"] = "clustersim-collective-validation";
    j["counted_from_bytes"] = nc::kCountedFromBytes;
    j["parameters"] = parameters_source;
    j["thresholds_recorded"] = has_record;
    nlohmann::json js = nlohmann::json::array();
    for (const auto& r : results) {
      nlohmann::json s;
      s["name"] = r.set->name;
      s["description"] = r.set->description;
      s["provenance"] = r.set->provenance;
      s["nccl_version"] = r.set->nccl_version;
      if (r.set->counted_from_bytes != nc::kCountedFromBytes) s["counted_from_bytes"] = r.set->counted_from_bytes;
      s["parameters"] = r.parameters;
      s["in_sample"] = in_sample(r);
      s["counted_points"] = r.counted;
      s["median_abs_error"] = r.median_abs_error;
      s["worst_abs_error"] = r.worst_abs_error;
      if (auto t = thresholds.find(r.set->name); t != thresholds.end()) {
        s["threshold"] = {{"median_abs_error", t->second.median_abs_error}, {"worst_abs_error", t->second.worst_abs_error}};
        s["within_threshold"] = !set_over(r);
      }
      nlohmann::json pts = nlohmann::json::array();
      for (const auto& p : r.points) {
        pts.push_back({{"system", p.point.system},
                       {"nodes", p.point.nodes},
                       {"op", std::string(nc::to_string(p.point.op))},
                       {"size_bytes", p.point.size.count()},
                       {"measured_time_us", p.point.measured_time_us},
                       {"measured_busbw_GBps", p.point.measured_busbw_GBps},
                       {"predicted_time_us", p.prediction.time.microseconds()},
                       {"predicted_busbw_GBps", p.prediction.busbw_GBps},
                       {"uncertainty", p.prediction.uncertainty},
                       {"error", p.error},
                       {"counted", p.counted},
                       {"algo", std::string(nc::to_string(p.prediction.algorithm))},
                       {"proto", std::string(nc::to_string(p.prediction.protocol))},
                       {"channels", p.prediction.channels}});
      }
      s["points"] = pts;
      js.push_back(s);
    }
    j["sets"] = js;
    nlohmann::json jg = nlohmann::json::array();
    for (const auto& g : groups) {
      jg.push_back({{"source", g.source},
                    {"transport", g.transport},
                    {"op", g.op},
                    {"algo", g.algo},
                    {"proto", g.proto},
                    {"sets", g.sets},
                    {"counted_points", g.points},
                    {"median_abs_error", g.median_abs_error},
                    {"configurations", g.configurations},
                    {"config_median_abs_error", g.config_median_abs_error},
                    {"repeat_deviations", g.repeated},
                    {"repeat_spread", g.repeat_spread},
                    {"session_deviations", g.session_compared},
                    {"session_spread", g.session_spread},
                    {"coverage_68", g.within68},
                    {"coverage_90", g.within90}});
      if (auto t = group_threshold(g)) {
        jg.back()["threshold"] = {{"median_abs_error", *t}};
        jg.back()["within_threshold"] = g.median_abs_error <= *t;
      }
      nlohmann::json bands = nlohmann::json::array();
      for (std::size_t b = 0; b < nc::kSizeBands.size(); ++b) {
        if (g.by_size[b].points == 0) continue;
        nlohmann::json band = {{"from_bytes", nc::kSizeBands[b].from_bytes},
                               {"points", g.by_size[b].points},
                               {"median_error", g.by_size[b].median_error}};
        if (nc::kSizeBands[b].to_bytes > 0) band["to_bytes"] = nc::kSizeBands[b].to_bytes;
        bands.push_back(std::move(band));
      }
      jg.back()["by_size"] = std::move(bands);
    }
    j["groups"] = jg;
    out << j.dump(2) << '\n';
  } else {
    using Align = reports::TextTable::Align;
    out << "parameters: " << parameters_source << "\n";
    if (!has_record) out << "thresholds: none recorded for calibration profile " << profile_name << "\n";
    out << "\n";
    for (const auto& r : results) {
      if (a.summary) break;
      out << "== " << r.set->name << ": " << r.set->description << "\n";
      out << "   source: " << r.set->provenance << "\n";
      out << "   parameters: " << r.parameters << "\n";
      if (in_sample(r)) out << "   IN SAMPLE: the calibration profile was fitted on these points\n";
      out << "   conditions: NCCL " << r.set->nccl_version << ", " << r.set->gpus_per_node << " GPUs per node, -t "
          << r.set->threads_per_process << " -g " << r.set->gpus_per_thread << ", -n " << r.set->iters;
      for (const auto& [k, v] : r.set->env) out << ", " << k << "=" << v;
      out << "\n";
      reports::TextTable t({"system", "nodes", "op", "size (B)", "expected us", "predicted us", "error", "busbw meas",
                            "busbw pred", "algo", "proto", "ch"},
                           {Align::LEFT, Align::RIGHT, Align::LEFT, Align::RIGHT, Align::RIGHT, Align::RIGHT,
                            Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::LEFT, Align::LEFT, Align::RIGHT});
      for (const auto& p : r.points) {
        t.add_row({p.point.system, std::to_string(p.point.nodes), std::string(nc::to_string(p.point.op)),
                   std::to_string(p.point.size.count()) + (p.counted ? "" : " *"), num(p.point.measured_time_us, 1),
                   num(p.prediction.time.microseconds(), 1), pct(p.error), num(p.point.measured_busbw_GBps, 1),
                   num(p.prediction.busbw_GBps, 1), std::string(nc::to_string(p.prediction.algorithm)),
                   std::string(nc::to_string(p.prediction.protocol)), std::to_string(p.prediction.channels)});
      }
      t.write(out, "   ");
      out << "   |error| over " << r.counted << " points >= 64 KB (* not counted): median " << pct_abs(r.median_abs_error)
          << ", worst " << pct_abs(r.worst_abs_error);
      if (auto th = thresholds.find(r.set->name); th != thresholds.end()) {
        out << "; recorded thresholds " << pct_abs(th->second.median_abs_error) << " / "
            << pct_abs(th->second.worst_abs_error) << (set_over(r) ? "  EXCEEDED" : "  ok");
      }
      out << "\n\n";
    }
    reports::TextTable s({"set", "points", "median |error|", "worst |error|", ""},
                         {Align::LEFT, Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::LEFT});
    for (const auto& r : results) {
      s.add_row({r.set->name, std::to_string(r.counted), pct_abs(r.median_abs_error), pct_abs(r.worst_abs_error),
                 set_over(r) ? "EXCEEDED" : ""});
    }
    out << "Summary (time error, sizes >= 64 KB)\n";
    s.write(out, "  ");
    // The groups (collective_validation.hpp): what a machine's measurements of each transport, op,
    // forced algorithm and protocol come to, repeats and in-place columns pooled.
    reports::TextTable gt(
        {"source", "transport", "op", "algo", "proto", "sets", "points", "median |error|", "recorded", "configs",
         "of medians", "repeat spread", "session spread", "in 68% band", "in 90% band", ""},
        {Align::LEFT, Align::LEFT, Align::LEFT, Align::LEFT, Align::LEFT, Align::RIGHT, Align::RIGHT, Align::RIGHT,
         Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::RIGHT,
         Align::LEFT});
    int within = 0, within_medians = 0;
    for (const auto& g : groups) {
      const bool over = g.median_abs_error > kGroupTarget;
      within += over ? 0 : 1;
      within_medians += g.config_median_abs_error > kGroupTarget ? 0 : 1;
      const std::optional<double> t = group_threshold(g);
      std::string flag = over ? "over 10%" : "";
      if (t && g.median_abs_error > *t) flag += std::string(flag.empty() ? "" : ", ") + "EXCEEDED";
      gt.add_row({g.source, g.transport, g.op, g.algo, g.proto, std::to_string(g.sets), std::to_string(g.points),
                  pct_abs(g.median_abs_error), t ? pct_abs(*t) : "-", std::to_string(g.configurations),
                  pct_abs(g.config_median_abs_error), g.repeated > 0 ? pct_abs(g.repeat_spread) : "-",
                  g.session_compared > 0 ? pct_abs(g.session_spread) : "-", pct_whole(g.within68),
                  pct_whole(g.within90), flag});
    }
    out << "\nGroups (counted points pooled by source, transport, op, forced algorithm and protocol): " << within
        << " of " << groups.size() << " within 10% (" << within_medians
        << " against their configurations' medians); recorded: the median |error| the thresholds file lets the group reach with these parameters; configs, of medians: the configurations (command and size) behind the points, and the median |error| against each one's median measured time; repeat spread: the median deviation of runs of one configuration "
           "from their median; session spread: the same for its sessions' medians; in 68% band, in 90% band: the "
           "points whose measured time lies within the prediction's 68% band (one standard deviation) and 90% band "
           "(1.645)\n";
    gt.write(out, "  ");
    {
      double n = 0, in68 = 0, in90 = 0;
      for (const auto& g : groups) {
        n += g.points;
        in68 += g.within68 * g.points;
        in90 += g.within90 * g.points;
      }
      if (n > 0) {
        out << "Bands over all " << static_cast<long long>(n) << " counted points: " << pct_whole(in68 / n)
            << " inside the 68% band, " << pct_whole(in90 / n) << " inside the 90% band\n";
      }
    }
    // The same groups' signed error by size band: where it keeps one sign and level the host or
    // the session sets it; where it moves with size, the model's shape does.
    std::vector<std::string> bh{"source", "transport", "op", "algo", "proto"};
    std::vector<Align> ba(5, Align::LEFT);
    for (const auto& band : nc::kSizeBands) {
      bh.emplace_back(band.label);
      ba.push_back(Align::RIGHT);
    }
    reports::TextTable bt(bh, ba);
    for (const auto& g : groups) {
      std::vector<std::string> row{g.source, g.transport, g.op, g.algo, g.proto};
      for (const auto& band : g.by_size) {
        row.push_back(band.points > 0 ? pct(band.median_error) + " (" + std::to_string(band.points) + ")" : "-");
      }
      bt.add_row(std::move(row));
    }
    out << "\nSigned error by size (median of (predicted - measured) / measured over the group's counted points in "
           "each band, points in brackets; + predicts slower than measured)\n";
    bt.write(out, "  ");
  }
  // The record goes in only once the whole report is made: a failed run leaves the file as it was.
  if (!a.record_thresholds.empty()) {
    write_file_atomically(
        a.record_thresholds, nc::replace_threshold_section(record_text, a.record_thresholds, profile_name,
                                                           nc::record_thresholds(results, groups)));
  }
  ctx.emit("", out.str());
  if (a.check && breach) throw RuntimeError("a validation error exceeds its recorded threshold");
}

}  // namespace

void add_validate_command(CLI::App& app, Context& ctx) {
  auto* validate = app.add_subcommand("validate", "Compare predictions with measurements");
  validate->require_subcommand(1);
  auto args = std::make_shared<ValidateArgs>();
  auto* coll = validate->add_subcommand("collectives", "NCCL collectives against published and measured nccl-tests results");
  coll->add_option("--results", args->results, "Calibration results JSON to add as sets (repeatable)");
  coll->add_option("--system", args->system, "Catalog system of the results files when they name no instance type");
  coll->add_option("--data", args->data_dir, "Directory with the validation data (default: the built-in copies)")
      ->check(CLI::ExistingDirectory);
  coll->add_option("--calibration", args->calibrations,
                   "Calibration profile file or built-in name; repeated, each further profile answers for the sets of "
                   "the machine it was fitted on (its provenance's machine)")
      ->take_all();
  coll->add_option("--format", args->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  coll->add_flag("--check", args->check,
                 "Exit 1 when a set's or group's error exceeds the threshold recorded for these parameters");
  coll->add_option("--record-thresholds", args->record_thresholds,
                   "Thresholds file to update: this run's errors plus margins replace the section of these "
                   "parameters (the profile's, or the fallbacks')")
      ->check(CLI::ExistingFile);
  coll->add_option("--sets", args->sets_pattern,
                   "Only the sets whose name this regular expression finds (ECMAScript; 'socket', '^h200x2/')");
  coll->add_flag("--summary", args->summary, "Text: the summaries per set and group, not every set's points");
  coll->callback([&ctx, args]() { run_validate(ctx, *args); });
  add_validate_training(*validate, ctx);
}

}  // namespace clustersim::cli
