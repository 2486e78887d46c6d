// clustersim collective: what nccl-tests would measure, predicted (DESIGN.md "clustersim collective").
//
//   clustersim collective --op all_reduce --system hgx-h200 --gpus 4 [--nodes 1] -b 8 -e 8G -f 2
//       [--algo auto|ring|tree|nvls|nvls_tree|pat|collnet] [--proto auto|ll|ll128|simple]
//       [--env NCCL_P2P_READ_ENABLE=1 ...] [--calibration FILE] [--format table|csv|json]
// Extras in nccl-tests' own words: -i (step bytes), -g (GPUs per thread), -n (iterations); and the
// placement that decides transports: --gpus-per-pod, --no-host-ipc, --p2p, --no-fabric-manager,
// --nccl-version.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/app.hpp"
#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "reports/text_table.hpp"
#include "sim/nccl/collective_predictor.hpp"
#include "sim/nccl/nccl_release.hpp"

namespace clustersim::cli {

namespace {

namespace nc = sim::nccl;

struct CollectiveArgs {
  std::string op;
  std::string system;
  int gpus = 0;
  int nodes = 1;
  std::string min_bytes = "32M";
  std::string max_bytes = "32M";
  double step_factor = 1;
  std::string step_bytes;
  std::string algo = "auto";
  std::string proto = "auto";
  std::vector<std::string> env;
  std::string calibration;
  std::string format = "table";
  std::string output;
  std::string nccl_version = "2.28";
  int threads = 1;
  int gpus_per_thread = 1;
  int iters = 20;
  int gpus_per_pod = 0;
  bool no_host_ipc = false;
  std::string p2p = "write";
  bool no_fabric_manager = false;
  bool explain = false;
};

std::map<std::string, std::string> parse_env(const std::vector<std::string>& items) {
  std::map<std::string, std::string> env;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw InputError("", "--env", "expected NAME=VALUE (e.g. NCCL_P2P_READ_ENABLE=1), got '" + item + "'");
    }
    env[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return env;
}

// nccl-tests' size sweep (src/common.cu): from -b to -e, multiplying by -f when it is above 1,
// else adding -i (default 1 MiB).
std::vector<Bytes> sizes_of(const CollectiveArgs& a) {
  if (!std::isfinite(a.step_factor) || a.step_factor < 0) {
    throw InputError("", "-f", "expected a finite step factor >= 0 (above 1 multiplies, else -i adds), got " +
                                   format_number(a.step_factor));
  }
  const Bytes lo = parse_nccl_size(a.min_bytes);
  const Bytes hi = parse_nccl_size(a.max_bytes);
  if (hi < lo) {
    throw InputError("", "-e", "expected a maximum size >= the minimum (-b " + a.min_bytes + "), got " + a.max_bytes);
  }
  std::vector<Bytes> out;
  if (a.step_factor > 1) {
    if (lo.count() == 0) out.push_back(lo);
    for (double s = std::max<double>(1, static_cast<double>(lo.count())); s <= static_cast<double>(hi.count()) * (1 + 1e-12);
         s *= a.step_factor) {
      out.push_back(Bytes::from_double(std::floor(s)));
      if (out.size() > 100000) throw InputError("", "-f", "expected at most 100000 sizes between -b and -e");
    }
    return out;
  }
  const Bytes step = a.step_bytes.empty() ? Bytes::mib(1) : parse_nccl_size(a.step_bytes);
  if (step.count() <= 0) throw InputError("", "-i", "expected a step of at least 1 byte, got " + a.step_bytes);
  for (Bytes s = lo; s <= hi; s += step) {
    out.push_back(s);
    if (out.size() > 100000) {
      throw InputError("", "-i", "expected at most 100000 sizes between -b and -e (use -f for a geometric sweep)");
    }
  }
  return out;
}

// Bytes nccl-tests allocates per GPU for one size (send and receive buffers, out of place).
double buffer_bytes_per_gpu(nc::CollectiveOp op, double size, int n) {
  switch (op) {
    case nc::CollectiveOp::ALL_REDUCE:
    case nc::CollectiveOp::BROADCAST:
    case nc::CollectiveOp::REDUCE:
    case nc::CollectiveOp::SENDRECV:
    case nc::CollectiveOp::ALLTOALL: return 2 * size;
    case nc::CollectiveOp::ALL_GATHER:
    case nc::CollectiveOp::REDUCE_SCATTER: return size + size / n;
  }
  return 2 * size;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// nccl-tests prints the time with two decimals below 10 ms and as an integer above.
std::string time_text(double us) { return us < 10000 ? fixed(us, 2) : fixed(us, 0); }

long long count_of(nc::CollectiveOp op, long long size, int n) {
  const long long elems = size / 4;  // float
  return nc::size_is_total_across_ranks(op) ? elems / n : elems;
}

void run_collective(Context& ctx, const CollectiveArgs& a) {
  const auto op = nc::parse_op(a.op);
  if (!op) {
    std::string expected = "one of";
    for (const auto& n : nc::op_names()) expected += " " + n;
    throw InputError("", "--op", "expected " + expected + ", got '" + a.op + "'");
  }
  const hardware::NodeSpec node = [&] {
    try {
      return hardware::resolve_node(ctx.catalog(), a.system);
    } catch (const InputError& e) {
      throw InputError("", "--system", e.message());
    }
  }();
  const int gpus = a.gpus == 0 ? node.gpus() : a.gpus;
  if (gpus < 1 || gpus > node.gpus()) {
    throw InputError("", "--gpus", "expected GPUs per node from 1 to " + std::to_string(node.gpus()) + " (" +
                                       node.name + " has " + std::to_string(node.gpus()) + "), got " +
                                       std::to_string(gpus));
  }
  if (a.nodes < 1 || a.nodes > 100000) {
    throw InputError("", "--nodes", "expected 1 to 100000 nodes, got " + std::to_string(a.nodes));
  }
  if (a.gpus_per_pod < 0 || (a.gpus_per_pod > 0 && gpus % a.gpus_per_pod != 0)) {
    throw InputError("", "--gpus-per-pod", "expected a divisor of the GPUs per node (" + std::to_string(gpus) +
                                               "), got " + std::to_string(a.gpus_per_pod));
  }
  // A patch release without a table of its own takes the nearest one of its minor release, said on
  // stderr and among the output's notes.
  std::string version_note;
  std::string version = a.nccl_version;
  try {
    const nc::ReleaseTable r = nc::resolve_release(a.nccl_version);
    version_note = r.note;
    version = r.table.name;
  } catch (const InputError& e) {
    throw InputError("", "--nccl-version", e.message());
  }
  if (!version_note.empty()) ctx.err << "warning: --nccl-version " << a.nccl_version << ": " << version_note << "\n";
  std::map<std::string, std::string> env = parse_env(a.env);
  if (a.algo != "auto") {
    const auto algo = nc::parse_algorithm(a.algo);
    if (a.algo == "collnet") env["NCCL_ALGO"] = "CollNetDirect,CollNetChain";
    else if (algo) env["NCCL_ALGO"] = std::string(nc::nccl_name(*algo));
    else throw InputError("", "--algo", "expected auto, ring, tree, nvls, nvls_tree, pat or collnet, got '" + a.algo + "'");
  }
  if (a.proto != "auto") {
    const auto proto = nc::parse_protocol(a.proto);
    if (!proto) throw InputError("", "--proto", "expected auto, ll, ll128 or simple, got '" + a.proto + "'");
    env["NCCL_PROTO"] = std::string(nc::nccl_name(*proto));
  }
  nc::PredictorConfig cfg;
  cfg.node = node;
  cfg.shape = {a.nodes, gpus};
  cfg.placement.gpus_per_pod = a.gpus_per_pod;
  cfg.placement.host_ipc = !a.no_host_ipc;
  cfg.placement.p2p = a.p2p == "read" ? nc::PlatformP2p::READ
                      : a.p2p == "disabled" ? nc::PlatformP2p::DISABLED
                                            : nc::PlatformP2p::WRITE;
  cfg.placement.fabric_manager = !a.no_fabric_manager;
  cfg.placement.ranks_per_process = std::max(1, a.threads) * std::max(1, a.gpus_per_thread);
  cfg.env = env;
  cfg.version = version;
  std::optional<hardware::CalibrationProfile> profile;
  if (a.calibration == "none") {
    // Catalog and NCCL fallbacks only, even where the catalog names a profile for the node.
  } else if (!a.calibration.empty()) {
    profile = std::filesystem::exists(a.calibration) ? hardware::CalibrationProfile::load(a.calibration)
                                                     : hardware::CalibrationProfile::builtin(a.calibration);
  } else if (!node.calibration.empty()) {
    profile = hardware::CalibrationProfile::builtin(node.calibration);
  }
  if (profile) cfg.profile = &*profile;
  const nc::CollectivePredictor predictor(cfg);

  const std::vector<Bytes> sizes = sizes_of(a);
  const int n = predictor.system().nranks();
  const double hbm = static_cast<double>(node.gpu->hbm_usable.value.count());
  const double need = buffer_bytes_per_gpu(*op, static_cast<double>(sizes.back().count()), n);
  if (need > hbm) {
    throw InputError("", "-e", "expected a size whose buffers fit in GPU memory: " + a.max_bytes + " needs " +
                                   format_bytes(Bytes::from_double(need)) + " per GPU, " + node.gpu->name +
                                   " has " + format_bytes(node.gpu->hbm_usable.value));
  }
  if (a.gpus_per_thread < 1 || a.gpus_per_thread > gpus) {
    throw InputError("", "-g", "expected 1 to " + std::to_string(gpus) + " GPUs per thread, got " +
                                   std::to_string(a.gpus_per_thread));
  }
  if (a.threads < 1 || static_cast<long>(a.threads) * a.gpus_per_thread > gpus) {
    throw InputError("", "-t", "expected 1 to " + std::to_string(gpus / a.gpus_per_thread) +
                                   " threads per process (threads x GPUs per thread <= " + std::to_string(gpus) +
                                   " GPUs per node), got " + std::to_string(a.threads));
  }
  nc::NcclTestsMethod method;
  method.threads_per_process = a.threads;
  method.gpus_per_thread = a.gpus_per_thread;
  method.iters = a.iters;

  std::vector<nc::CollectivePrediction> points;
  points.reserve(sizes.size());
  if (a.explain) {
    // What the model runs for the largest size: NCCL's choice, the hops with their rates.
    const nc::TunerChoice c = predictor.choice(*op, sizes.back());
    std::ostringstream ex;
    ex << "# explain " << sizes.back().count() << " B: " << nc::nccl_name(c.algorithm) << "/" << nc::nccl_name(c.protocol)
       << ", " << c.channels << " channels of " << c.threads << " threads, NCCL estimate " << fixed(c.estimated_us, 1)
       << " us\n";
    if (predictor.system().nranks() > 1 && sizes.back().count() > 0) {
      const nc::StepProgram p = predictor.program(*op, sizes.back(), c);
      ex << "#   " << p.transfers.size() << " transfers, " << p.connections << " connections, fixed cost "
         << format_duration(p.fixed) << "\n";
      for (const auto& h : p.hops) {
        ex << "#   hop " << h.label << ": " << format_significant(h.rate.gigabytes_per_second(), 4)
           << " GB/s per flow (x" << h.multiplicity << "), latency " << format_duration(h.latency);
        if (std::isfinite(h.channel_cap.bytes_per_second())) {
          ex << ", channel cap " << format_significant(h.channel_cap.gigabytes_per_second(), 4) << " GB/s";
        }
        if (h.occupancy.seconds() > 0) ex << ", occupancy " << format_duration(h.occupancy);
        if (h.link_shared) ex << ", links charged over time";
        if (h.host_shared) ex << ", host memory charged over time";
        if (h.proxy_shared) ex << ", socket proxies charged over time";
        ex << ", loads";
        for (const auto& l : h.loads) ex << " " << nc::to_string(l.kind) << "=" << format_significant(l.flows, 3);
        ex << "\n";
      }
    }
    ex << predictor.tuner().table_text();
    ctx.err << ex.str();
  }
  for (Bytes s : sizes) points.push_back(predictor.predict(*op, s, method));
  std::vector<std::string> notes = predictor.notes();
  if (!version_note.empty()) notes.insert(notes.begin(), version_note);
  for (const auto& p : points) {
    for (const auto& note : p.notes) {
      if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
    }
  }
  const bool calibrated = !predictor.parameters().any_uncalibrated();
  const std::string opname(nc::to_string(*op));
  std::ostringstream out;
  if (a.format == "csv") {
    out << "size_bytes,time_us,algbw_GBps,busbw_GBps,algo,proto,channels\n";
    for (const auto& p : points) {
      out << p.size.count() << ',' << format_number(p.time.microseconds()) << ',' << format_number(p.algbw_GBps) << ','
          << format_number(p.busbw_GBps) << ',' << nc::to_string(p.algorithm) << ',' << nc::to_string(p.protocol) << ','
          << p.channels << '\n';
    }
  } else if (a.format == "json") {
    nlohmann::json j;
    j["schema_version"] = 1;
    j["kind"] = "clustersim-collective-prediction";
    j["op"] = opname;
    j["system"] = node.name;
    j["nodes"] = a.nodes;
    j["gpus_per_node"] = gpus;
    j["nranks"] = n;
    j["nccl_version"] = predictor.version().name;
    j["nccl_env"] = env;
    j["transports"] = {{"intra_node", predictor.intra_transport()}, {"inter_node", predictor.inter_transport()}};
    const auto& ch = predictor.channels();
    j["channels"] = {{"coll", ch.coll_channels}, {"nvls", ch.nvls_channels}, {"p2p", ch.p2p_channels},
                     {"p2p_per_peer", ch.p2p_channels_per_peer},
                     {"ring_graph", {{"channels", ch.ring.n_channels}, {"bw_intra_GBps", ch.ring.bw_intra},
                                     {"bw_inter_GBps", ch.ring.bw_inter}}}};
    j["calibrated"] = calibrated;
    j["notes"] = notes;
    nlohmann::json params = nlohmann::json::array();
    for (const auto& [name, u] : predictor.parameters().used()) {
      params.push_back({{"name", name}, {"value", u.text}, {"calibrated", u.calibrated}, {"provenance", u.provenance},
                        {"uncertainty", u.uncertainty}});
    }
    j["parameters"] = params;
    nlohmann::json pts = nlohmann::json::array();
    for (const auto& p : points) {
      pts.push_back({{"size_bytes", p.size.count()},
                     {"count", count_of(*op, p.size.count(), n)},
                     {"time_us", p.time.microseconds()},
                     {"algbw_GBps", p.algbw_GBps},
                     {"busbw_GBps", p.busbw_GBps},
                     {"algo", std::string(nc::to_string(p.algorithm))},
                     {"proto", std::string(nc::to_string(p.protocol))},
                     {"channels", p.channels},
                     {"gpu_time_us", p.gpu_time.microseconds()},
                     {"host_time_us", p.host_time.microseconds()},
                     {"uncertainty", p.uncertainty},
                     {"band",
                      {{"coverage", 0.68},
                       {"low_us", p.time.microseconds() * std::max(0.0, 1 - p.uncertainty)},
                       {"high_us", p.time.microseconds() * (1 + p.uncertainty)}}},
                     {"band_90",
                      {{"coverage", 0.90},
                       {"low_us", p.time.microseconds() * std::max(0.0, 1 - nc::kBandZ90 * p.uncertainty)},
                       {"high_us", p.time.microseconds() * (1 + nc::kBandZ90 * p.uncertainty)}}}});
    }
    j["points"] = pts;
    j["uncertainty"] = {{"coverage", 0.68},
                        {"meaning", "each point's band: time x (1 +- uncertainty), one standard deviation; band_90 "
                                    "uses 1.645"}};
    out << j.dump(2) << '\n';
  } else {
    const bool has_root = *op == nc::CollectiveOp::BROADCAST || *op == nc::CollectiveOp::REDUCE;
    const bool has_redop = *op == nc::CollectiveOp::ALL_REDUCE || *op == nc::CollectiveOp::REDUCE_SCATTER ||
                           *op == nc::CollectiveOp::REDUCE;
    out << "# clustersim collective: " << opname << " predicted (not measured), NCCL " << predictor.version().name
        << "\n";
    out << "# " << node.name << ": " << a.nodes << " node(s) x " << gpus << " GPU(s) = " << n << " ranks, "
        << node.gpu->name << "\n";
    if (!predictor.intra_transport().empty()) out << "#  inside a node : " << predictor.intra_transport() << "\n";
    if (!predictor.inter_transport().empty()) out << "#  between nodes : " << predictor.inter_transport() << "\n";
    const auto& ch = predictor.channels();
    out << "#  channels      : " << ch.coll_channels << " coll, " << ch.nvls_channels << " nvls, " << ch.p2p_channels
        << " p2p (" << ch.p2p_channels_per_peer << " per peer)\n";
    out << "#  calibration   : "
        << (calibrated ? "profile " + (cfg.profile ? cfg.profile->name() : std::string())
                       : std::string(cfg.profile ? "profile " + cfg.profile->name() + " with catalog fallbacks"
                                                 : "none (catalog and NCCL fallbacks; uncertainty widened)"))
        << "\n";
    for (const auto& note : notes) out << "#  note: " << note << "\n";
    out << "#\n";
    reports::TextTable t({"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "algo", "proto", "channels"},
                         {reports::TextTable::Align::RIGHT, reports::TextTable::Align::RIGHT,
                          reports::TextTable::Align::RIGHT, reports::TextTable::Align::RIGHT,
                          reports::TextTable::Align::RIGHT, reports::TextTable::Align::RIGHT,
                          reports::TextTable::Align::RIGHT, reports::TextTable::Align::RIGHT,
                          reports::TextTable::Align::LEFT, reports::TextTable::Align::LEFT,
                          reports::TextTable::Align::RIGHT});
    t.add_row({"(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "", ""});
    double sum_busbw = 0;
    for (const auto& p : points) {
      t.add_row({std::to_string(p.size.count()), std::to_string(count_of(*op, p.size.count(), n)), "float",
                 has_redop ? "sum" : "none", has_root ? "0" : "-1", time_text(p.time.microseconds()),
                 fixed(p.algbw_GBps, 2), fixed(p.busbw_GBps, 2), std::string(nc::to_string(p.algorithm)),
                 std::string(nc::to_string(p.protocol)), std::to_string(p.channels)});
      sum_busbw += p.busbw_GBps;
    }
    t.write(out, "  ");
    out << "# Avg bus bandwidth    : " << fixed(points.empty() ? 0.0 : sum_busbw / points.size(), 4) << "\n";
    const double u = points.empty() ? 0.0 : points.front().uncertainty;
    out << "# Band (68%, 1 sd)     : +-" << fixed(100.0 * u, 0) << "% of time (90% band: +-"
        << fixed(100.0 * nc::kBandZ90 * u, 0) << "%)\n";
  }
  ctx.emit(a.output, out.str());
}

}  // namespace

void add_collective_command(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<CollectiveArgs>();
  auto* cmd = app.add_subcommand(
      "collective", "Predict what nccl-tests would measure for one collective (nccl-tests vocabulary)");
  cmd->add_option("--op", args->op,
                  "all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall or sendrecv")
      ->required();
  cmd->add_option("--system", args->system, "Catalog system or instance (hgx-h200, p5.48xlarge, dgx-h100, ...)")
      ->required();
  cmd->add_option("--gpus", args->gpus, "GPUs per node (default: all of the node's GPUs)");
  cmd->add_option("--nodes", args->nodes, "Nodes (default 1)");
  cmd->add_option("-b,--minbytes", args->min_bytes, "Smallest size, nccl-tests style (8, 1K, 32M, 8G); default 32M");
  cmd->add_option("-e,--maxbytes", args->max_bytes, "Largest size; default 32M");
  cmd->add_option("-f,--stepfactor", args->step_factor, "Multiply the size by this factor between points (when > 1)");
  cmd->add_option("-i,--stepbytes", args->step_bytes, "Add this many bytes between points when -f is not above 1 (default 1M)");
  cmd->add_option("--algo", args->algo, "auto, ring, tree, nvls, nvls_tree, pat or collnet (sets NCCL_ALGO)");
  cmd->add_option("--proto", args->proto, "auto, ll, ll128 or simple (sets NCCL_PROTO)");
  cmd->add_option("--env", args->env, "NCCL variable NAME=VALUE (repeatable)");
  cmd->add_option("--calibration", args->calibration,
                  "Calibration profile file, built-in profile name, or none (catalog and NCCL fallbacks only; default: "
                  "the profile the catalog names for the node)");
  cmd->add_option("--format", args->format, "table (nccl-tests style), csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  cmd->add_option("-o,--output", args->output, "Write to this file instead of stdout");
  cmd->add_option("--nccl-version", args->nccl_version, "NCCL release whose tuner to mirror (2.28, 2.26.2, 2.20.5, 2.18.5, ...; another patch release "
                  "of a known minor release takes its nearest known patch, with a warning)");
  cmd->add_option("-t,--threads", args->threads,
                  "nccl-tests threads of one process (-t), each driving -g GPUs; default 1 (one thread a process, as under MPI)");
  cmd->add_option("-g,--gpus-per-thread", args->gpus_per_thread, "GPUs driven by one nccl-tests thread (-g); default 1");
  cmd->add_option("-n,--iters", args->iters, "Timed iterations (nccl-tests -n); default 20")->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--gpus-per-pod", args->gpus_per_pod, "GPUs per Kubernetes pod (default: one pod per node)");
  cmd->add_flag("--no-host-ipc", args->no_host_ipc, "Pods do not share the host's IPC namespace and /dev/shm");
  cmd->add_option("--p2p", args->p2p, "What the platform allows for GPU peer-to-peer: write, read or disabled")
      ->check(CLI::IsMember({"write", "read", "disabled"}));
  cmd->add_flag("--no-fabric-manager", args->no_fabric_manager, "NVSwitch fabric manager not running");
  cmd->add_flag("--explain", args->explain, "Print NCCL's choice and the model's hops for the largest size (stderr)");
  cmd->callback([&ctx, args]() { run_collective(ctx, *args); });
}

}  // namespace clustersim::cli
