// clustersim collective: what nccl-tests would measure, predicted (DESIGN.md "clustersim collective").
//
//   clustersim collective --op all_reduce --system hgx-h200 --gpus 4 [--nodes 1] -b 8 -e 8G -f 2
//       [--algo auto|ring|tree|nvls|nvls_tree|pat|collnet] [--proto auto|ll|ll128|simple]
//       [--env NCCL_P2P_READ_ENABLE=1 ...] [--calibration FILE] [--format table|csv|json] [--output FILE]
// Extras in nccl-tests' own words: -i (step bytes), -g (GPUs per thread), -t (threads), -n
// (iterations), -d (type), -o (reduction, beside the collective: --op all_reduce -o max), -r (root),
// -z (blocking), -G (CUDA graph launches), modelled (CollectivePredictor, NcclTestsMethod); -w, -c
// and -a read and named in a note, not modelled. The table is nccl-tests' (out-of-place and
// in-place columns), and imports with `calibrate import-nccl-tests`. Also the
// placement that decides transports: --gpus-per-pod, --no-host-ipc, --p2p, --no-fabric-manager,
// --nccl-version.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <set>
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
  std::vector<std::string> op;  // the collective and/or nccl-tests' -o reduction
  std::string datatype = "float";
  int root = 0;
  int warmup = 1;
  int check = 1;
  int blocking = 0;
  int graph_launches = 0;
  int average = 1;
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


// nccl-tests' count column and the size it prints for a requested size (setupArgs and each test's
// GetCollByteCount): count = size / element size; all-gather, reduce-scatter and alltoall take
// count / nranks per rank, rounded down to a multiple of 16 bytes, and print nranks times that.
struct TestSize {
  long long count = 0;
  Bytes size;
};
TestSize test_size(nc::CollectiveOp op, Bytes requested, int elem, int n) {
  const long long count = requested.count() / elem;
  if (op == nc::CollectiveOp::ALL_GATHER || op == nc::CollectiveOp::REDUCE_SCATTER || op == nc::CollectiveOp::ALLTOALL) {
    const long long base = (count / n) & ~static_cast<long long>(16 / elem - 1);
    return {base, Bytes::of(base * n * elem)};
  }
  return {count, Bytes::of(count * elem)};
}

// nccl-tests' number format of a column `width` wide (src/util.cu getFloatStr).
std::string float_str(double v, int width) {
  char buf[64];
  for (const char* f : {"%*.2f", "%*.1f", "%*.0f"}) {
    if (std::snprintf(buf, sizeof buf, f, width, v) <= width) return buf;
  }
  std::snprintf(buf, sizeof buf, width >= 7 ? "%*.1e" : "%*.0e", width, v);
  return buf;
}

std::string printf_str(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string printf_str(const char* format, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(buf, sizeof buf, format, ap);
  va_end(ap);
  return buf;
}

// The nccl-tests binary of a collective ("all_reduce_perf"; send/recv is sendrecv_perf).
std::string perf_binary(nc::CollectiveOp op) { return std::string(nc::to_string(op)) + "_perf"; }

// -o: each word is the collective (clustersim's --op) or the reduction (nccl-tests' -o), told
// apart by name; "all" runs every reduction as nccl-tests does.
struct OpWords {
  nc::CollectiveOp collective = nc::CollectiveOp::ALL_REDUCE;
  std::vector<nc::RedOp> reductions;
  bool reduction_given = false;
};
OpWords parse_op_words(const std::vector<std::string>& words) {
  OpWords out;
  std::optional<nc::CollectiveOp> coll;
  std::string expected = "a collective (";
  for (const auto& n : nc::op_names()) expected += (expected.back() == '(' ? "" : ", ") + n;
  expected += ") and optionally a reduction (";
  for (const auto& n : nc::red_op_names()) expected += n + ", ";
  expected += "or all)";
  for (const auto& w : words) {
    if (const auto c = nc::parse_op(w)) {
      if (coll && *coll != *c) throw InputError("", "--op", "expected one collective, got both " + std::string(nc::to_string(*coll)) + " and " + w);
      coll = c;
    } else if (const auto r = nc::parse_red_op(w); r || w == "all") {
      if (out.reduction_given) throw InputError("", "-o/--op", "expected one reduction (or all), got a second: '" + w + "'");
      out.reduction_given = true;
      if (r) {
        out.reductions = {*r};
      } else {
        for (const auto& n : nc::red_op_names()) out.reductions.push_back(*nc::parse_red_op(n));
      }
    } else {
      throw InputError("", "-o/--op", "expected " + expected + ", got '" + w + "'");
    }
  }
  if (!coll) throw InputError("", "--op", "expected " + expected + "; no collective given");
  out.collective = *coll;
  if (out.reductions.empty()) out.reductions = {nc::RedOp::SUM};
  return out;
}

// One sweep of sizes for one type, reduction and root (nccl-tests prints them in that order: each
// type, then each op or root, then the sizes).
struct Series {
  nc::DataType type = nc::DataType::FLOAT;
  nc::RedOp redop = nc::RedOp::SUM;
  int root = -1;
  std::vector<TestSize> sizes;
  std::vector<nc::CollectivePrediction> oop, ip;
};

void run_collective(Context& ctx, const CollectiveArgs& a, const std::set<std::string>& given) {
  const OpWords words = parse_op_words(a.op);
  const nc::CollectiveOp op_value = words.collective;
  const auto* op = &op_value;
  std::vector<nc::DataType> types;
  if (a.datatype == "all") {
    for (const auto& t : nc::data_type_names()) types.push_back(*nc::parse_data_type(t));
  } else if (const auto t = nc::parse_data_type(a.datatype)) {
    types.push_back(*t);
  } else {
    std::string list;
    for (const auto& t : nc::data_type_names()) list += t + " ";
    throw InputError("", "-d/--datatype", "expected one of nccl-tests' types (" + list + "or all), got '" + a.datatype + "'");
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
  if (a.warmup < 0) throw InputError("", "-w/--warmup_iters", "expected a count >= 0, got " + std::to_string(a.warmup));
  if (a.check < 0) throw InputError("", "-c/--check", "expected a count >= 0 (0: no data check), got " + std::to_string(a.check));
  if (a.blocking < 0 || a.blocking > 3) {
    throw InputError("", "-z/--blocking", "expected 0, 1, 2 or 3 (nccl-tests' blocking modes), got " + std::to_string(a.blocking));
  }
  if (a.graph_launches < 0) {
    throw InputError("", "-G/--cudagraph", "expected a number of graph launches >= 0 (0: no graph), got " +
                                               std::to_string(a.graph_launches));
  }
  if (a.average < 0 || a.average > 3) {
    throw InputError("", "-a/--average", "expected 0 (rank 0), 1 (average), 2 (minimum) or 3 (maximum), got " +
                                             std::to_string(a.average));
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
  const bool has_root = *op == nc::CollectiveOp::BROADCAST || *op == nc::CollectiveOp::REDUCE;
  // nccl-tests passes the op to all-reduce, reduce-scatter, reduce and send/recv (which prints it).
  const bool has_redop = *op == nc::CollectiveOp::ALL_REDUCE || *op == nc::CollectiveOp::REDUCE_SCATTER ||
                         *op == nc::CollectiveOp::REDUCE || *op == nc::CollectiveOp::SENDRECV;
  if (a.root < -1 || a.root >= n) {
    throw InputError("", "-r/--root", "expected a rank from 0 to " + std::to_string(n - 1) +
                                          " (or -1: every root in turn), got " + std::to_string(a.root));
  }
  std::vector<int> roots;
  if (!has_root) roots = {-1};
  else if (a.root >= 0) roots = {a.root};
  else for (int r = 0; r < n; ++r) roots.push_back(r);
  const std::vector<nc::RedOp> redops = has_redop ? words.reductions : std::vector<nc::RedOp>{nc::RedOp::SUM};

  nc::NcclTestsMethod method;
  method.threads_per_process = a.threads;
  method.gpus_per_thread = a.gpus_per_thread;
  method.iters = a.iters;
  method.blocking = a.blocking;
  method.graph_launches = a.graph_launches;

  // The nccl-tests flags the prediction takes in, or reads and leaves (said among the notes).
  std::vector<std::string> flag_notes;
  if (given.count("-d")) {
    flag_notes.push_back("-d " + a.datatype + ": sizes and counts in its elements, NCCL's choice for the type (NVLS only "
                         "for the types and ops it reduces); the reduction's arithmetic is not priced apart (a reduction "
                         "moves the bytes a copy does)");
  }
  if (words.reduction_given && !has_redop) {
    flag_notes.push_back("-o: " + std::string(nc::to_string(*op)) + " reduces nothing; nccl-tests prints redop none");
  } else if (words.reduction_given) {
    flag_notes.push_back("-o: the reduction decides NCCL's device op (avg and mulsum scale the inputs) and so NVLS and "
                         "PAT; its arithmetic is not priced apart");
  }
  if (given.count("-r")) {
    flag_notes.push_back(has_root ? "-r: every rank is alike to the model, so each root predicts the same"
                                  : "-r: " + std::string(nc::to_string(*op)) + " has no root; nccl-tests prints -1");
  }
  if (given.count("-w")) {
    flag_notes.push_back("-w " + std::to_string(a.warmup) + ": not modelled; warm-up iterations are untimed, and nccl-tests "
                         "times after one untimed call whatever -w is");
  }
  if (given.count("-c")) {
    flag_notes.push_back("-c " + std::to_string(a.check) + ": not modelled; nccl-tests checks outside the timed loop, and "
                         "a prediction moves no data: #wrong is N/A");
  }
  if (given.count("-a")) {
    flag_notes.push_back("-a " + std::to_string(a.average) + ": not modelled; every rank's time is predicted alike, so "
                         "rank 0's, the average, minimum and maximum are one");
  }
  if (a.blocking > 0) {
    flag_notes.push_back("-z " + std::to_string(a.blocking) + ": each call waits for its stream before the next; " +
                         (a.blocking == 1 ? "the barrier after each is not priced" : "no launch overlaps another"));
  }
  if (a.graph_launches > 0) {
    flag_notes.push_back("-G " + std::to_string(a.graph_launches) + ": launches replayed from a CUDA graph; the host's calls "
                         "leave the loop" + std::string(a.blocking > 0 ? "; -z waits inside the capture, which CUDA refuses: "
                                                                         "predicted as -G alone" : ""));
    method.blocking = 0;
  }

  std::vector<Series> all;
  for (nc::DataType type : types) {
    method.reduction.type = type;
    for (nc::RedOp redop : redops) {
      for (int root : roots) {
        Series sr;
        sr.type = type;
        sr.redop = redop;
        sr.root = root;
        method.reduction.op = redop;
        const int elem = nc::element_size(type);
        for (Bytes s : sizes) {
          const TestSize ts = test_size(*op, s, elem, n);
          sr.sizes.push_back(ts);
          method.in_place = false;
          sr.oop.push_back(predictor.predict(*op, ts.size, method));
          method.in_place = true;
          sr.ip.push_back(predictor.predict(*op, ts.size, method));
        }
        all.push_back(std::move(sr));
      }
    }
  }
  const Series& first = all.front();
  if (a.explain) {
    // What the model runs for the largest size: NCCL's choice, the hops with their rates.
    const Bytes largest = first.sizes.back().size;
    const nc::TunerChoice c = predictor.choice(*op, largest, nc::Reduction{first.type, first.redop});
    std::ostringstream ex;
    ex << "# explain " << largest.count() << " B: " << nc::nccl_name(c.algorithm) << "/" << nc::nccl_name(c.protocol)
       << ", " << c.channels << " channels of " << c.threads << " threads, NCCL estimate " << fixed(c.estimated_us, 1)
       << " us\n";
    if (predictor.system().nranks() > 1 && largest.count() > 0) {
      const nc::StepProgram p = predictor.program(*op, largest, c);
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
  std::vector<std::string> notes = predictor.notes();
  if (!version_note.empty()) notes.insert(notes.begin(), version_note);
  notes.insert(notes.end(), flag_notes.begin(), flag_notes.end());
  for (const auto& sr : all) {
    for (const auto& p : sr.oop) {
      for (const auto& note : p.notes) {
        if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
      }
    }
  }
  const bool calibrated = !predictor.parameters().any_uncalibrated();
  const std::string opname(nc::to_string(*op));
  auto redop_of = [&](const Series& sr) { return has_redop ? std::string(nc::to_string(sr.redop)) : std::string("none"); };
  std::ostringstream out;
  if (a.format == "csv") {
    out << "size_bytes,time_us,algbw_GBps,busbw_GBps,algo,proto,channels,count,type,redop,root,in_place_time_us,"
           "in_place_algbw_GBps,in_place_busbw_GBps\n";
    for (const auto& sr : all) {
      for (std::size_t i = 0; i < sr.oop.size(); ++i) {
        const auto& p = sr.oop[i];
        const auto& q = sr.ip[i];
        out << p.size.count() << ',' << format_number(p.time.microseconds()) << ',' << format_number(p.algbw_GBps) << ','
            << format_number(p.busbw_GBps) << ',' << nc::to_string(p.algorithm) << ',' << nc::to_string(p.protocol) << ','
            << p.channels << ',' << sr.sizes[i].count << ',' << nc::to_string(sr.type) << ',' << redop_of(sr) << ','
            << sr.root << ',' << format_number(q.time.microseconds()) << ',' << format_number(q.algbw_GBps) << ','
            << format_number(q.busbw_GBps) << '\n';
      }
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
    j["nccl_tests"] = {{"iters", a.iters},         {"warmup_iters", a.warmup},   {"check", a.check},
                       {"blocking", a.blocking},   {"cudagraph", a.graph_launches}, {"average", a.average},
                       {"nthreads", a.threads},    {"ngpus", a.gpus_per_thread}};
    j["calibrated"] = calibrated;
    j["notes"] = notes;
    nlohmann::json params = nlohmann::json::array();
    for (const auto& [name, u] : predictor.parameters().used()) {
      params.push_back({{"name", name}, {"value", u.text}, {"calibrated", u.calibrated}, {"provenance", u.provenance},
                        {"uncertainty", u.uncertainty}});
    }
    j["parameters"] = params;
    nlohmann::json pts = nlohmann::json::array();
    for (const auto& sr : all) {
      for (std::size_t i = 0; i < sr.oop.size(); ++i) {
        const auto& p = sr.oop[i];
        const auto& q = sr.ip[i];
        pts.push_back({{"size_bytes", p.size.count()},
                       {"count", sr.sizes[i].count},
                       {"type", std::string(nc::to_string(sr.type))},
                       {"redop", redop_of(sr)},
                       {"root", sr.root},
                       {"time_us", p.time.microseconds()},
                       {"algbw_GBps", p.algbw_GBps},
                       {"busbw_GBps", p.busbw_GBps},
                       {"in_place", {{"time_us", q.time.microseconds()}, {"algbw_GBps", q.algbw_GBps},
                                     {"busbw_GBps", q.busbw_GBps}}},
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
    }
    j["points"] = pts;
    j["uncertainty"] = {{"coverage", 0.68},
                        {"meaning", "each point's band: time x (1 +- uncertainty), one standard deviation; band_90 "
                                    "uses 1.645"}};
    out << j.dump(2) << '\n';
  } else {
    // nccl-tests' own layout (src/util.cu writeDeviceReport, writeResultHeader,
    // writeBenchmarkLine*, writeResultFooter; tag v2.19.6), with clustersim's lines as comments.
    const std::string binary = perf_binary(*op);
    const long long lo = parse_nccl_size(a.min_bytes).count();
    const long long hi = parse_nccl_size(a.max_bytes).count();
    const bool factor = a.step_factor > 1;
    const long long step = factor ? static_cast<long long>(a.step_factor)
                                  : (a.step_bytes.empty() ? Bytes::mib(1) : parse_nccl_size(a.step_bytes)).count();
    out << "# clustersim collective: " << opname << " predicted (not measured), NCCL " << predictor.version().name << "\n";
    out << "# Collective test starting: " << binary << "\n";
    out << printf_str("# nThread %d nGpus %d minBytes %lld maxBytes %lld step: %lld(%s) warmup iters: %d iters: %d agg "
                      "iters: %d validation: %d graph: %d unalign: %d\n",
                      a.threads, a.gpus_per_thread, lo, hi, step, factor ? "factor" : "bytes", a.warmup, a.iters, 1,
                      a.check, a.graph_launches, 0);
    if (a.blocking == 1) out << "# Blocking Enabled: wait and barrier after each inner iteration (-m) \n";
    if (a.blocking == 2) out << "# Blocking Enabled: wait after each inner iteration (-m), no barrier \n";
    if (a.blocking == 3) out << "# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes barrier \n";
    out << "#\n";
    out << "# " << node.name << ": " << a.nodes << " node(s) x " << gpus << " GPU(s) = " << n << " ranks, "
        << node.gpu->name << "\n";
    if (!predictor.intra_transport().empty()) out << "#  inside a node : " << predictor.intra_transport() << "\n";
    if (!predictor.inter_transport().empty()) out << "#  between nodes : " << predictor.inter_transport() << "\n";
    for (const auto& [name, value] : env) out << "#  env           : " << name << "=" << value << "\n";
    const auto& ch = predictor.channels();
    out << "#  channels      : " << ch.coll_channels << " coll, " << ch.nvls_channels << " nvls, " << ch.p2p_channels
        << " p2p (" << ch.p2p_channels_per_peer << " per peer)\n";
    out << "#  calibration   : "
        << (calibrated ? "profile " + (cfg.profile ? cfg.profile->name() : std::string())
                       : std::string(cfg.profile ? "profile " + cfg.profile->name() + " with catalog fallbacks"
                                                 : "none (catalog and NCCL fallbacks; uncertainty widened)"))
        << "\n";
    for (const auto& note : notes) out << "#  note: " << note << "\n";
    // NCCL's choice, one line per run of sizes with the same algorithm, protocol and channels.
    for (const auto& sr : all) {
      std::size_t i = 0;
      while (i < sr.oop.size()) {
        std::size_t k = i;
        const auto same = [&](const nc::CollectivePrediction& x, const nc::CollectivePrediction& y) {
          return x.algorithm == y.algorithm && x.protocol == y.protocol && x.channels == y.channels;
        };
        while (k + 1 < sr.oop.size() && same(sr.oop[k + 1], sr.oop[i])) ++k;
        out << "#  choice        : " << sr.oop[i].size.count() << " to " << sr.oop[k].size.count() << " B";
        if (all.size() > 1) out << " (" << nc::to_string(sr.type) << " " << redop_of(sr) << " root " << sr.root << ")";
        out << ": " << nc::to_string(sr.oop[i].algorithm) << "/" << nc::to_string(sr.oop[i].protocol) << " on "
            << sr.oop[i].channels << " channel(s)\n";
        i = k + 1;
      }
    }
    out << "#\n";
    out << printf_str("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n",
                      "", "", "", "", "");
    out << printf_str("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size", "count", "type",
                      "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", 0, "");
    out << printf_str("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)", "(elements)", "",
                      "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", 0, "");
    double sum_busbw = 0;
    int rows = 0;
    for (const auto& sr : all) {
      for (std::size_t i = 0; i < sr.oop.size(); ++i) {
        char root_name[32];
        std::snprintf(root_name, sizeof root_name, "%6i", sr.root);
        out << printf_str("%12lli  %12lli  %8s  %6s  %6s", static_cast<long long>(sr.sizes[i].size.count()),
                          sr.sizes[i].count, std::string(nc::to_string(sr.type)).c_str(), redop_of(sr).c_str(), root_name);
        for (const auto* p : {&sr.oop[i], &sr.ip[i]}) {
          out << printf_str("  %7s  %6s  %6s    N/A", float_str(p->time.microseconds(), 7).c_str(),
                            float_str(p->algbw_GBps, 6).c_str(), float_str(p->busbw_GBps, 6).c_str());
          sum_busbw += p->busbw_GBps;
          ++rows;
        }
        out << "\n";
      }
    }
    out << printf_str("# %-20s : %d %s\n", "Out of bounds values", 0, "OK");
    out << printf_str("# %-20s : %g %s\n", "Avg bus bandwidth", rows ? sum_busbw / rows : 0.0, "");
    const double u = first.oop.front().uncertainty;
    out << "# Band (68%, 1 sd)     : +-" << fixed(100.0 * u, 0) << "% of time (90% band: +-"
        << fixed(100.0 * nc::kBandZ90 * u, 0) << "%)\n";
    out << "#\n";
    out << "# Collective test concluded: " << binary << "\n";
  }
  ctx.emit(a.output, out.str());
}

}  // namespace

void add_collective_command(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<CollectiveArgs>();
  auto* cmd = app.add_subcommand(
      "collective", "Predict what nccl-tests would measure for one collective (nccl-tests vocabulary)");
  cmd->add_option("-o,--op", args->op,
                  "The collective (all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall or sendrecv) "
                  "and, as nccl-tests' -o, the reduction (sum, prod, max, min, avg, mulsum or all; default sum): "
                  "--op all_reduce -o max")
      ->required();
  auto* datatype = cmd->add_option("-d,--datatype", args->datatype,
                                   "Element type, nccl-tests' names: int8 uint8 int32 uint32 int64 uint64 half float "
                                   "double bfloat16 f8e4m3 f8e5m2, or all; default float");
  auto* root = cmd->add_option("-r,--root", args->root, "Root rank of broadcast and reduce (-1: each in turn); default 0");
  auto* warmup = cmd->add_option("-w,--warmup_iters", args->warmup, "Warm-up iterations (read, not modelled); default 1");
  auto* check = cmd->add_option("-c,--check", args->check, "Data-check iterations (read, not modelled: #wrong is N/A); default 1");
  cmd->add_option("-z,--blocking", args->blocking, "0, or 1/2/3: each call waits for its stream (nccl-tests' blocking modes)");
  cmd->add_option("-G,--cudagraph", args->graph_launches, "Replay the timed launches from a CUDA graph this many times; default 0");
  auto* average = cmd->add_option("-a,--average", args->average,
                                  "Time reported across ranks: 0 rank 0, 1 average, 2 minimum, 3 maximum (read, not "
                                  "modelled: ranks are predicted alike); default 1");
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
  cmd->add_option("--output", args->output, "Write to this file instead of stdout (no short form: -o is nccl-tests' reduction)");
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
  cmd->callback([&ctx, args, datatype, root, warmup, check, average]() {
    std::set<std::string> given;
    if (datatype->count() > 0) given.insert("-d");
    if (root->count() > 0) given.insert("-r");
    if (warmup->count() > 0) given.insert("-w");
    if (check->count() > 0) given.insert("-c");
    if (average->count() > 0) given.insert("-a");
    run_collective(ctx, *args, given);
  });
}

}  // namespace clustersim::cli
