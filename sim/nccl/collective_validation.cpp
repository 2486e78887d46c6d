#include "sim/nccl/collective_validation.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"
#include "hardware/statistics.hpp"
#include "sim/nccl/nccl_release.hpp"
#include "sim/nccl/nccl_version.hpp"

namespace clustersim::sim::nccl {

namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  return out;
}

struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  int column(const std::string& name, const std::string& file) const {
    auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) throw InputError(file, "header", "expected a column '" + name + "'");
    return static_cast<int>(it - header.begin());
  }
};

CsvTable parse_csv(const std::string& text, const std::string& file) {
  CsvTable t;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    auto cells = split_csv_line(line);
    if (t.header.empty()) {
      t.header = cells;
      continue;
    }
    if (cells.size() != t.header.size()) {
      throw InputError(file, "line " + std::to_string(lineno),
                       "expected " + std::to_string(t.header.size()) + " cells, got " + std::to_string(cells.size()));
    }
    t.rows.push_back(std::move(cells));
  }
  return t;
}

double parse_double(const std::string& s, const std::string& file, const std::string& where) {
  try {
    std::size_t pos = 0;
    const double v = std::stod(s, &pos);
    if (pos != s.size() || !std::isfinite(v)) throw std::invalid_argument("x");
    return v;
  } catch (const std::exception&) {
    throw InputError(file, where, "expected a number, got '" + s + "'");
  }
}

double time_from_busbw(CollectiveOp op, double size, double busbw_GBps, int nranks) {
  const double algbw = busbw_GBps / busbw_factor(op, nranks);
  return size / (algbw * 1e9) * 1e6;
}

// NCCL's variables of a results file's environment (the run's), under each series' own.
std::map<std::string, std::string> run_nccl_env(ObjectReader& o, std::map<std::string, std::string> env) {
  if (auto e = o.maybe("environment")) {
    ObjectReader er = e->as_object();
    if (auto ne = er.maybe("nccl_env")) {
      ne->read_object([&](ObjectReader& m) {
        for (const auto& k : m.keys()) env[k] = m.at(k).as_string();
      });
    }
  }
  return env;
}

std::map<std::string, std::string> read_env(ObjectReader& e, std::map<std::string, std::string> env) {
  if (auto v = e.maybe("env")) {
    v->read_object([&](ObjectReader& m) {
      for (const auto& k : m.keys()) env[k] = m.at(k).as_string();
    });
  }
  return env;
}

// The NCCL release a results file was measured with, as the table that predicts it: the release's
// own table, else the nearest known patch of its minor release (`note` says so); a release of an
// untabled minor release is an InputError at /environment/nccl_version.
std::string results_nccl_version(ObjectReader& o, std::string& note) {
  std::string nccl_version = "2.28";
  if (auto env = o.maybe("environment")) {
    if (auto v = env->as_object().maybe("nccl_version")) {
      const std::string name = v->as_string();
      try {
        const ReleaseTable r = resolve_release(name);
        nccl_version = r.table.name;
        note = r.note;
      } catch (const InputError& e) {
        v->fail_message(e.message());
      }
    }
  }
  return nccl_version;
}

// One set per "collectives" series and one per NCCL "p2p" mode of a results file (see the header).
std::vector<ValidationSet> results_sets(const ValueReader& root, const std::string& file, const std::string& machine,
                                        const std::string& prefix, const std::map<std::string, std::string>& base_env) {
  std::vector<ValidationSet> sets;
  ObjectReader o = root.as_object();
  const std::map<std::string, std::string> run_env = run_nccl_env(o, base_env);
  std::string version_note;
  const std::string nccl_version = results_nccl_version(o, version_note);
  const std::string provenance = file + " (calibration results" + (version_note.empty() ? "" : "; " + version_note) + ")";
  int gpu_count = 0;
  if (auto env = o.maybe("environment")) {
    if (auto gc = env->as_object().maybe("gpu_count")) gpu_count = static_cast<int>(gc->as_int({.min = 0}));
  }
  // The harness says once how it launched (tool.launcher); an imported nccl-tests log says it per
  // series.
  std::string launcher;
  if (auto tool = o.maybe("tool")) {
    if (auto l = tool->as_object().maybe("launcher")) launcher = l->as_string();
  }
  if (auto colls = o.maybe("collectives")) {
    std::map<std::string, int> runs;  // repeated runs of one configuration: name -> count so far
    for (const ValueReader& c : colls->as_array()) {
      ObjectReader e = c.as_object();
      ValidationSet set;
      const std::string opname = e.at("op").as_choice(
          {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv"});
      const int nodes = static_cast<int>(e.at("nodes").as_int({.min = 1}));
      set.gpus_per_node = static_cast<int>(e.at("gpus_per_node").as_int({.min = 1}));
      set.env = read_env(e, run_env);
      // The entry's own NCCL variables beyond those the name already carries (algorithm, protocol,
      // channels) tell apart runs of one configuration under different settings.
      std::string settings, settings_text;
      for (const auto& [k, v] : read_env(e, {})) {
        if (k == "NCCL_ALGO" || k == "NCCL_PROTO" || k == "NCCL_MIN_NCHANNELS" || k == "NCCL_MAX_NCHANNELS") continue;
        settings += "/" + k + "=" + v;
        settings_text += ", " + k + "=" + v;
      }
      const std::string algo = e.get_or("algo", std::string("auto"));
      const std::string proto = e.get_or("proto", std::string("auto"));
      std::string channels = "auto";
      if (auto ch = e.maybe("channels"); ch && !ch->raw().is_null()) channels = std::to_string(ch->as_int({.min = 1}));
      set.in_place = e.get_or("in_place", false);
      set.nccl_version = nccl_version;
      set.iters = static_cast<int>(e.get_or("iters", 20, {.min = 1}));
      set.gpus_per_thread = static_cast<int>(e.get_or("gpus_per_thread", 1, {.min = 1, .max = 1 << 16}));
      set.threads_per_process = static_cast<int>(
          e.get_or("threads_per_process", harness_threads_per_process(launcher, set.gpus_per_node), {.min = 1, .max = 1 << 16}));
      const std::string place = set.in_place ? "in-place" : "out-of-place";
      // nccl-tests -n 1 times each launch alone (no launch runs ahead of the last one's), a
      // measurement of its own beside the same configuration back to back.
      const bool single = set.iters == 1;
      // Several GPUs to a thread (nccl-tests -g G > 1) is a launch structure of its own.
      const std::string launch = set.gpus_per_thread > 1 ? "/t" + std::to_string(set.threads_per_process) + "g" +
                                                               std::to_string(set.gpus_per_thread)
                                                         : std::string();
      set.name = prefix + "/" + opname + "/" + std::to_string(nodes * set.gpus_per_node) + "ranks/" + algo + "/" +
                 proto + "/" + channels + "ch/" + place + settings + launch + (single ? "/single-launch" : "");
      // A configuration measured again in the same file (nccl-tests run twice) is a set of its own,
      // named by its run number from the second on.
      if (const int k = ++runs[set.name]; k > 1) set.name += "/run" + std::to_string(k);
      set.description = opname + " on " + std::to_string(nodes) + " x " + std::to_string(set.gpus_per_node) + " " +
                        machine + ", algo " + algo + ", proto " + proto + ", channels " + channels + ", " + place +
                        settings_text + ", -t " + std::to_string(set.threads_per_process) + " -g " +
                        std::to_string(set.gpus_per_thread) + (single ? ", one launch per timing (-n 1)" : "");
      set.provenance = provenance;
      for (const ValueReader& pv : e.at("points").as_array(1)) {
        ObjectReader pt = pv.as_object();
        ValidationPoint p;
        p.system = machine;
        p.nodes = nodes;
        p.op = *parse_op(opname);
        p.size = Bytes::of(pt.at("size_bytes").as_int({.min = 0}));
        p.measured_time_us = pt.at("time_us").as_number({.min = 0, .min_exclusive = true});
        p.measured_busbw_GBps = pt.get_or("busbw_GBps", 0.0);
        set.points.push_back(p);
      }
      sets.push_back(std::move(set));
    }
  }
  if (auto p2p = o.maybe("p2p")) {
    // One set per NCCL mode: every pair's points, each a send in a communicator of all the run's
    // GPUs with the transport the mode names (cuda_memcpy_peer is not NCCL's).
    int ranks = gpu_count;
    for (const ValueReader& c : p2p->as_array()) {
      ObjectReader e = c.as_object();
      ranks = std::max(ranks, static_cast<int>(std::max(e.at("src").as_int({.min = 0}), e.at("dst").as_int({.min = 0}))) + 1);
    }
    std::map<std::string, std::size_t> by_mode;
    for (const ValueReader& c : p2p->as_array()) {
      ObjectReader e = c.as_object();
      const std::string mode =
          e.at("mode").as_choice({"nccl_p2p_write", "nccl_p2p_read", "nccl_shm", "cuda_memcpy_peer"});
      if (mode == "cuda_memcpy_peer") continue;
      std::map<std::string, std::string> env = read_env(e, run_env);
      // The variables that force the mode's transport (implied when the entry lacks them).
      if (mode == "nccl_shm") env.emplace("NCCL_P2P_DISABLE", "1");
      if (mode == "nccl_p2p_read") env.emplace("NCCL_P2P_READ_ENABLE", "1");
      if (mode == "nccl_p2p_write") env.emplace("NCCL_P2P_READ_ENABLE", "0");
      auto it = by_mode.find(mode);
      if (it == by_mode.end()) {
        ValidationSet set;
        set.gpus_per_node = ranks;
        set.env = env;
        set.nccl_version = nccl_version;
        set.iters = static_cast<int>(e.get_or("iters", 20, {.min = 1}));
        set.name = prefix + "/p2p/" + std::to_string(ranks) + "ranks/" + mode;
        set.description = "NCCL send between two GPUs (" + mode + ") in a communicator of " + std::to_string(ranks) +
                          " " + machine + " GPUs, every pair";
        set.provenance = provenance;
        it = by_mode.emplace(mode, sets.size()).first;
        sets.push_back(std::move(set));
      }
      ValidationSet& set = sets[it->second];
      const int src = static_cast<int>(e.at("src").as_int({.min = 0}));
      const int dst = static_cast<int>(e.at("dst").as_int({.min = 0}));
      for (const ValueReader& pv : e.at("points").as_array(1)) {
        ObjectReader pt = pv.as_object();
        ValidationPoint p;
        p.system = machine;
        p.nodes = 1;
        p.op = CollectiveOp::SENDRECV;
        p.pair_src = src;
        p.pair_dst = dst;
        p.size = Bytes::of(pt.at("size_bytes").as_int({.min = 0}));
        p.measured_time_us = pt.at("time_us").as_number({.min = 0, .min_exclusive = true});
        p.measured_busbw_GBps = pt.get_or("bandwidth_GBps", 0.0);
        set.points.push_back(p);
      }
    }
  }
  return sets;
}

}  // namespace

std::vector<ValidationSet> load_published_sets(std::string_view sets_json, const std::string& file,
                                               const std::function<std::string(const std::string&)>& read_file) {
  const JsonDocument doc = parse_json_text(sets_json, file);
  std::vector<ValidationSet> sets;
  std::map<std::string, CsvTable> tables;
  doc.root().read_object([&](ObjectReader& o) {
    o.at("schema_version").as_int({.min = 1, .max = 1});
    for (const ValueReader& v : o.at("sets").as_array(1)) {
      v.read_object([&](ObjectReader& s) {
        if (s.maybe("results")) {
          // Measured sets: calibration results files, one set per series (results_sets).
          const std::string prefix = s.at("name").as_string();
          const std::string description = s.at("description").as_string();
          const std::string provenance = s.at("provenance").as_string();
          const std::string system = s.at("system").as_string();
          std::map<std::string, std::string> env;
          if (auto e = s.maybe("env")) {
            e->read_object([&](ObjectReader& m) {
              for (const auto& k : m.keys()) env[k] = m.at(k).as_string();
            });
          }
          const long long counted_from = s.get_or("counted_from_bytes", std::int64_t{kCountedFromBytes}, {.min = 0});
          const std::string machine = s.get_or("machine", std::string());
          for (const ValueReader& f : s.at("results").as_array(1)) {
            const std::string name = f.as_string();
            const JsonDocument results = parse_json_text(read_file(name), name);
            // Sets are named after the entry and the file ("h200x4-results-4gpu.json" in entry
            // "h200x4": "h200x4/results-4gpu/...").
            std::string stem = std::filesystem::path(name).stem().string();
            if (stem.rfind(prefix + "-", 0) == 0) stem = stem.substr(prefix.size() + 1);
            auto more = results_sets(results.root(), name, system, prefix + "/" + stem, env);
            for (auto& m : more) {
              m.description += " (" + description + ")";
              m.provenance = name + ": " + provenance;
              m.counted_from_bytes = counted_from;
              m.machine = machine;
              sets.push_back(std::move(m));
            }
          }
          return;
        }
        ValidationSet set;
        set.name = s.at("name").as_string();
        set.description = s.at("description").as_string();
        set.provenance = s.at("provenance").as_string();
        const std::string csv = s.at("csv").as_string();
        std::map<std::string, std::string> match;
        s.at("match").read_object([&](ObjectReader& m) {
          for (const auto& k : m.keys()) match[k] = m.at(k).as_string();
        });
        const std::string system = s.get_or("system", std::string());
        const int set_nodes = static_cast<int>(s.get_or("nodes", 0, {.min = 0, .max = 100000}));
        set.gpus_per_node = static_cast<int>(s.at("gpus_per_node").as_int({.min = 1, .max = 1024}));
        const std::string set_op = s.get_or("op", std::string());
        set.nccl_version = s.at("nccl_version").as_string();
        s.at("env").read_object([&](ObjectReader& e) {
          for (const auto& k : e.keys()) set.env[k] = e.at(k).as_string();
        });
        set.gpus_per_thread = static_cast<int>(s.at("gpus_per_thread").as_int({.min = 1, .max = 1024}));
        set.threads_per_process = static_cast<int>(s.get_or("threads_per_process", 1, {.min = 1, .max = 1024}));
        set.iters = static_cast<int>(s.at("iters").as_int({.min = 1}));
        if (tables.find(csv) == tables.end()) tables[csv] = parse_csv(read_file(csv), csv);
        const CsvTable& t = tables.at(csv);
        const int c_size = t.column("size_bytes", csv);
        const int c_busbw = t.column("busbw_GBps", csv);
        for (std::size_t r = 0; r < t.rows.size(); ++r) {
          const auto& row = t.rows[r];
          bool ok = true;
          for (const auto& [k, want] : match) ok = ok && row[t.column(k, csv)] == want;
          if (!ok) continue;
          const std::string where = "row " + std::to_string(r + 2);
          ValidationPoint p;
          p.system = !system.empty() ? system : row[t.column("system", csv)];
          p.nodes = set_nodes > 0 ? set_nodes : static_cast<int>(parse_double(row[t.column("nodes", csv)], csv, where));
          const std::string opname = !set_op.empty() ? set_op : row[t.column("op", csv)];
          const auto op = parse_op(opname);
          if (!op) throw InputError(csv, where, "unknown collective '" + opname + "'");
          p.op = *op;
          p.size = Bytes::of(static_cast<long long>(parse_double(row[c_size], csv, where)));
          p.measured_busbw_GBps = parse_double(row[c_busbw], csv, where);
          p.measured_time_us = time_from_busbw(p.op, static_cast<double>(p.size.count()), p.measured_busbw_GBps,
                                               p.nodes * set.gpus_per_node);
          set.points.push_back(p);
        }
        if (set.points.empty()) s.at("match").fail("a match that selects at least one row of " + csv);
        sets.push_back(std::move(set));
      });
    }
  });
  return sets;
}

std::vector<ValidationSet> load_results_sets(const nlohmann::json& results, const std::string& file,
                                             const hardware::Catalog& catalog, const std::string& system) {
  const ValueReader root(results, file, "");
  std::string machine = system;
  if (machine.empty()) {
    if (auto env = root.as_object().maybe("environment")) {
      if (auto it = env->as_object().maybe("instance_type")) {
        if (it->raw().is_string() && catalog.has_instance(it->as_string())) machine = it->as_string();
      }
    }
  }
  if (machine.empty()) {
    throw InputError(file, "/environment/instance_type",
                     "expected an instance type from the catalog; name the system with --system");
  }
  return results_sets(root, file, machine, std::filesystem::path(file).stem().string(), {});
}

namespace {

// One record: "sets" (required) and "groups" (optional) of a thresholds file's section.
Thresholds read_threshold_record(ObjectReader& o) {
  Thresholds out;
  o.at("sets").read_object([&](ObjectReader& s) {
    for (const auto& name : s.keys()) {
      s.at(name).read_object([&](ObjectReader& t) {
        out.sets[name] = Threshold{.median_abs_error = t.at("median_abs_error").as_number({.min = 0}),
                                   .worst_abs_error = t.at("worst_abs_error").as_number({.min = 0})};
      });
    }
  });
  if (auto g = o.maybe("groups")) {
    g->read_object([&](ObjectReader& gs) {
      for (const auto& key : gs.keys()) {
        gs.at(key).read_object(
            [&](ObjectReader& t) { out.groups[key] = t.at("median_abs_error").as_number({.min = 0}); });
      }
    });
  }
  return out;
}

// x rounded up to `places` decimals (a threshold never rounds below what it records).
double round_up(double x, int places) {
  const double scale = std::pow(10.0, places);
  // The small allowance keeps a value already on the grid (0.12 computed as 0.1200000001) there.
  return std::ceil(x * scale - 1e-6) / scale;
}

}  // namespace

std::string group_key(const GroupResult& g) {
  return g.source + " | " + (g.transport.empty() ? "-" : g.transport) + " | " + g.op + " | " + g.algo + " | " + g.proto;
}

ThresholdFile load_thresholds(std::string_view text, const std::string& file) {
  ThresholdFile out;
  parse_json_text(text, file).root().read_object([&](ObjectReader& o) {
    o.at("schema_version").as_int({.min = 1, .max = 2});
    o.at("note").as_string();
    out.fallbacks = read_threshold_record(o);
    if (auto p = o.maybe("profiles")) {
      p->read_object([&](ObjectReader& ps) {
        for (const auto& name : ps.keys()) {
          ps.at(name).read_object([&](ObjectReader& r) { out.profiles[name] = read_threshold_record(r); });
        }
      });
    }
  });
  return out;
}

nlohmann::ordered_json record_thresholds(const std::vector<SetResult>& results, const std::vector<GroupResult>& groups) {
  nlohmann::ordered_json sets = nlohmann::ordered_json::object();
  for (const SetResult& r : results) {
    sets[r.set->name] = {{"median_abs_error", round_up(r.median_abs_error + kSetMedianMargin, 2)},
                         {"worst_abs_error", round_up(r.worst_abs_error + kSetWorstMargin, 2)}};
  }
  nlohmann::ordered_json gs = nlohmann::ordered_json::object();
  for (const GroupResult& g : groups) {
    double t = round_up(g.median_abs_error + kGroupMargin, 3);
    if (g.median_abs_error <= kGroupTarget) t = std::min(t, kGroupTarget);
    gs[group_key(g)] = {{"median_abs_error", t}};
  }
  return {{"sets", std::move(sets)}, {"groups", std::move(gs)}};
}

std::string replace_threshold_section(std::string_view text, const std::string& file, const std::string& profile,
                                      const nlohmann::ordered_json& record) {
  (void)load_thresholds(text, file);  // the file's own errors first, named as a reader names them
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
  if (profile.empty()) {
    j["sets"] = record.at("sets");
    j["groups"] = record.at("groups");
  } else {
    j["schema_version"] = 2;
    j["profiles"][profile] = record;
  }
  return j.dump(2) + "\n";
}

bool profile_gpu_matches(std::string_view fitted_gpu, std::string_view catalog_gpu) {
  const std::string_view name = hardware::gpu_model_word(fitted_gpu);
  if (name.empty()) return true;
  return catalog_gpu.rfind(name, 0) == 0;
}

const hardware::CalibrationProfile* profile_for_set(const std::vector<hardware::CalibrationProfile>& profiles,
                                                    const ValidationSet& set) {
  for (std::size_t i = 1; i < profiles.size(); ++i) {
    if (!set.machine.empty() && profiles[i].provenance().machine == set.machine) return &profiles[i];
  }
  return profiles.empty() ? nullptr : &profiles.front();
}

std::string profiles_record_name(const std::vector<hardware::CalibrationProfile>& profiles) {
  std::string name;
  for (const auto& p : profiles) name += (name.empty() ? "" : " + ") + p.name();
  return name;
}

SetResult run_validation(const ValidationSet& set, const hardware::Catalog& catalog,
                         const hardware::CalibrationProfile* profile) {
  SetResult r;
  r.set = &set;
  r.profile = profile;
  // The profile's parameters are figures of the GPU it was fitted on: points on other GPUs run on
  // the fallbacks. The GPUs of the set's points, with whether the profile fits them.
  std::map<std::string, bool> gpus;
  for (const ValidationPoint& p : set.points) {
    const hardware::NodeSpec node = hardware::resolve_node(catalog, p.system);
    gpus.emplace(node.gpu->name, profile != nullptr && profile_gpu_matches(profile->provenance().gpu, node.gpu->name));
  }
  std::string on, off;
  for (const auto& [gpu, fits] : gpus) {
    std::string& list = fits ? on : off;
    list += (list.empty() ? "" : ", ") + gpu;
  }
  r.profile_applied = !on.empty();
  if (!profile) {
    r.parameters = "NCCL and catalog fallbacks (no calibration profile)";
  } else {
    const std::string fitted =
        profile->provenance().gpu.empty() ? std::string("a GPU it does not name") : profile->provenance().gpu;
    if (off.empty()) {
      r.parameters = "calibration profile " + profile->name() + " (fitted on " + fitted +
                     "), NCCL and catalog fallbacks for the rest";
    } else if (on.empty()) {
      r.parameters = "NCCL and catalog fallbacks (profile fitted on " + fitted + "; this set runs on " + off + ")";
    } else {
      r.parameters = "calibration profile " + profile->name() + " (fitted on " + fitted + ") on " + on +
                     ", NCCL and catalog fallbacks on " + off;
    }
  }
  std::map<std::pair<std::string, int>, std::unique_ptr<CollectivePredictor>> predictors;
  std::vector<double> errors;
  for (const ValidationPoint& p : set.points) {
    auto key = std::make_pair(p.system, p.nodes);
    auto it = predictors.find(key);
    if (it == predictors.end()) {
      PredictorConfig cfg;
      cfg.node = hardware::resolve_node(catalog, p.system);
      cfg.shape = {p.nodes, set.gpus_per_node};
      cfg.env = set.env;
      cfg.env_location = set.name + "/env";
      cfg.version = set.nccl_version;
      cfg.placement.ranks_per_process = set.threads_per_process * set.gpus_per_thread;
      cfg.profile = profile != nullptr && profile_gpu_matches(profile->provenance().gpu, cfg.node.gpu->name)
                        ? profile
                        : nullptr;
      it = predictors.emplace(key, std::make_unique<CollectivePredictor>(cfg)).first;
    }
    NcclTestsMethod m;
    m.threads_per_process = set.threads_per_process;
    m.gpus_per_thread = set.gpus_per_thread;
    m.iters = set.iters;
    m.in_place = set.in_place;
    PointResult pr;
    pr.point = p;
    pr.prediction = p.pair_src >= 0 ? it->second->predict_pair(p.size, p.pair_src, p.pair_dst, m)
                                    : it->second->predict(p.op, p.size, m);
    pr.error = (pr.prediction.time.microseconds() - p.measured_time_us) / p.measured_time_us;
    pr.counted = p.size.count() >= set.counted_from_bytes;
    if (pr.counted) errors.push_back(std::fabs(pr.error));
    r.points.push_back(std::move(pr));
  }
  r.counted = static_cast<int>(errors.size());
  if (!errors.empty()) {
    r.worst_abs_error = *std::max_element(errors.begin(), errors.end());
    r.median_abs_error = median(std::move(errors));
  }
  return r;
}

namespace {

std::string env_value(const ValidationSet& s, const std::string& name) {
  const auto it = s.env.find(name);
  return it == s.env.end() ? std::string() : it->second;
}

std::string lower(std::string v) {
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v;
}

// The configuration a set measured: its name less the results file (the second part) and a
// trailing "runN".
std::string configuration_of(const std::string& name) {
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (std::size_t at = name.find('/'); at != std::string::npos; at = name.find('/', from)) {
    parts.push_back(name.substr(from, at - from));
    from = at + 1;
  }
  parts.push_back(name.substr(from));
  if (parts.size() > 2 && parts.back().starts_with("run") && parts.back().size() > 3 &&
      std::all_of(parts.back().begin() + 3, parts.back().end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    parts.pop_back();
  }
  std::string key = parts.front();
  for (std::size_t i = 2; i < parts.size(); ++i) key += "/" + parts[i];
  return key;
}

// The configuration as run: NCCL's buffer sizes set to the release's own defaults are left out of
// the name, since NCCL runs them exactly as it runs them unset (NCCL_BUFFSIZE=4194304 in 2.28). A
// name holds each variable once, as "/VAR=value" between slashes.
std::string effective_configuration(const ValidationSet& s) {
  std::string key = configuration_of(s.name);
  std::optional<NcclVersion> v;
  try {
    v = NcclVersion::builtin(s.nccl_version);
  } catch (const InputError&) {
    return key;  // a release without a table: names compared as they are
  }
  const std::pair<const char*, Protocol> vars[] = {
      {"NCCL_LL_BUFFSIZE", Protocol::LL}, {"NCCL_LL128_BUFFSIZE", Protocol::LL128}, {"NCCL_BUFFSIZE", Protocol::SIMPLE}};
  for (const auto& [var, proto] : vars) {
    const std::string part =
        "/" + std::string(var) + "=" + std::to_string(v->device.buffsize[static_cast<int>(proto)].count());
    const std::size_t at = key.find(part + "/");
    if (at != std::string::npos) {
      key.erase(at, part.size());
    } else if (key.ends_with(part)) {
      key.erase(key.size() - part.size());
    }
  }
  return key;
}

// The session a set came from: its family and its results file (the name's first two parts).
std::string session_of(const std::string& name) {
  const std::size_t first = name.find('/');
  if (first == std::string::npos) return name;
  return name.substr(0, name.find('/', first + 1));
}

std::string group_transport(const ValidationSet& s, const ValidationPoint& p) {
  if (p.nodes * s.gpus_per_node == 1) return "local";
  const bool no_p2p = env_value(s, "NCCL_P2P_DISABLE") == "1";
  if (p.nodes > 1 || (no_p2p && env_value(s, "NCCL_SHM_DISABLE") == "1")) return "NET";
  if (no_p2p) return "SHM";
  if (env_value(s, "NCCL_P2P_READ_ENABLE") == "1") return "P2P read";
  return "P2P";
}

}  // namespace

int size_band(long long bytes) {
  for (std::size_t b = 0; b + 1 < kSizeBands.size(); ++b) {
    if (bytes < kSizeBands[b].to_bytes) return static_cast<int>(b);
  }
  return static_cast<int>(kSizeBands.size() - 1);
}

std::vector<GroupResult> group_results(const std::vector<SetResult>& results) {
  using Key = std::tuple<std::string, std::string, std::string, std::string, std::string>;
  // A configuration's point: configuration, op, size, pair, nodes (a published set holds one size at
  // several node counts).
  using RunKey = std::tuple<std::string, std::string, long long, int, int, int>;
  struct Pool {
    std::set<const ValidationSet*> sets;
    std::vector<double> errors;
    int within68 = 0, within90 = 0;
    std::array<std::vector<double>, kSizeBands.size()> signed_by_band;
    std::map<RunKey, std::vector<std::pair<std::string, double>>> runs;  // session (results file), measured time
    std::map<RunKey, std::pair<std::vector<double>, std::vector<double>>> configs;  // measured, predicted times
  };
  std::map<Key, Pool> pools;
  for (const SetResult& r : results) {
    const ValidationSet& s = *r.set;
    const bool published = s.name.find('/') == std::string::npos;
    const std::string algo = env_value(s, "NCCL_ALGO").empty() ? "auto" : lower(env_value(s, "NCCL_ALGO"));
    const std::string proto = env_value(s, "NCCL_PROTO").empty() ? "auto" : lower(env_value(s, "NCCL_PROTO"));
    // Runs of one configuration meet under this key (with the op, size and pair of each point).
    const std::string config = published ? std::string()
                                         : effective_configuration(s) + " -n " + std::to_string(s.iters) + " -t " +
                                               std::to_string(s.threads_per_process) + " -g " +
                                               std::to_string(s.gpus_per_thread);
    const std::string session = session_of(s.name);
    for (const PointResult& p : r.points) {
      const std::string op = p.point.pair_src >= 0 ? "pair" : std::string(to_string(p.point.op));
      const Key key = published ? Key{s.name, "", op, algo, proto}
                                : Key{(s.machine.empty() ? p.point.system : s.machine) + " measured", group_transport(s, p.point),
                                      op, algo, proto};
      Pool& pool = pools[key];
      pool.sets.insert(&s);
      if (!p.counted) continue;
      pool.errors.push_back(std::fabs(p.error));
      // |m / p - 1| against the prediction's relative uncertainty (p = m (1 + error)).
      const double off = std::fabs(1.0 / (1.0 + p.error) - 1.0);
      const double u = p.prediction.uncertainty;
      pool.within68 += off <= u ? 1 : 0;
      pool.within90 += off <= kBandZ90 * u ? 1 : 0;
      pool.signed_by_band[static_cast<std::size_t>(size_band(p.point.size.count()))].push_back(p.error);
      const RunKey where{published ? s.name : config, op, p.point.size.count(), p.point.pair_src, p.point.pair_dst,
                         p.point.nodes};
      if (!published) pool.runs[where].emplace_back(session, p.point.measured_time_us);
      auto& [measured, predicted] = pool.configs[where];
      measured.push_back(p.point.measured_time_us);
      predicted.push_back(p.prediction.time.microseconds());
    }
  }
  std::vector<GroupResult> out;
  for (auto& [key, pool] : pools) {
    if (pool.errors.empty()) continue;
    GroupResult g;
    std::tie(g.source, g.transport, g.op, g.algo, g.proto) = key;
    g.sets = static_cast<int>(pool.sets.size());
    g.points = static_cast<int>(pool.errors.size());
    g.within68 = static_cast<double>(pool.within68) / g.points;
    g.within90 = static_cast<double>(pool.within90) / g.points;
    g.median_abs_error = median(std::move(pool.errors));
    for (std::size_t b = 0; b < kSizeBands.size(); ++b) {
      g.by_size[b].points = static_cast<int>(pool.signed_by_band[b].size());
      g.by_size[b].median_error = median(std::move(pool.signed_by_band[b]));
    }
    std::vector<double> deviations;
    std::vector<double> session_deviations;
    for (const auto& [where, runs] : pool.runs) {
      if (runs.size() < 2) continue;
      std::vector<double> times;
      std::map<std::string, std::vector<double>> by_session;
      for (const auto& [session, t] : runs) {
        times.push_back(t);
        by_session[session].push_back(t);
      }
      const double m = median(times);
      for (double t : times) deviations.push_back(std::fabs(t / m - 1));
      if (by_session.size() < 2) continue;
      std::vector<double> medians;
      for (auto& [session, ts] : by_session) medians.push_back(median(std::move(ts)));
      const double ms = median(medians);
      for (double x : medians) session_deviations.push_back(std::fabs(x / ms - 1));
    }
    std::vector<double> config_errors;
    for (auto& [where, times] : pool.configs) {
      const double m = median(times.first);
      config_errors.push_back(std::fabs(median(times.second) / m - 1));
    }
    g.configurations = static_cast<int>(config_errors.size());
    g.config_median_abs_error = median(std::move(config_errors));
    g.repeated = static_cast<int>(deviations.size());
    g.repeat_spread = median(std::move(deviations));
    g.session_compared = static_cast<int>(session_deviations.size());
    g.session_spread = median(std::move(session_deviations));
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace clustersim::sim::nccl
