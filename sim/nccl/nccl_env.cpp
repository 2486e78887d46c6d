#include "sim/nccl/nccl_env.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"

namespace clustersim::sim::nccl {

namespace {

// NCCL's function names in the order of its tuner (init.cc ncclFuncStr).
const std::vector<std::pair<std::string, CollectiveOp>>& functions() {
  static const std::vector<std::pair<std::string, CollectiveOp>> f = {
      {"broadcast", CollectiveOp::BROADCAST},
      {"reduce", CollectiveOp::REDUCE},
      {"allgather", CollectiveOp::ALL_GATHER},
      {"reducescatter", CollectiveOp::REDUCE_SCATTER},
      {"allreduce", CollectiveOp::ALL_REDUCE}};
  return f;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

[[noreturn]] void bad(const std::string& where, const std::string& var, const std::string& value,
                      const std::string& expected) {
  throw InputError("", where, var + "=" + value + ": expected " + expected);
}

// NCCL parseList (tuning.cc): "a,b" enables a and b only; "^a" disables a; "f:a;g:^b" per function.
EnableMatrix parse_list(const std::string& where, const std::string& var, const std::string& value,
                        const std::vector<std::string>& names, auto lookup) {
  EnableMatrix m;
  m.is_set = true;
  for (const auto& [fname, op] : functions()) m.enabled[op] = std::vector<bool>(names.size(), true);
  const auto entries = split(value, ';');
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string entry = trim(entries[i]);
    if (entry.empty()) bad(where, var, value, "a comma-separated list of " + names.front() + ", ...");
    std::string prefix, list = entry;
    if (auto colon = entry.find(':'); colon != std::string::npos) {
      prefix = lower(trim(entry.substr(0, colon)));
      list = trim(entry.substr(colon + 1));
    } else if (i != 0) {
      bad(where, var, value, "a function prefix (allreduce:, broadcast:, ...) on every entry but the first");
    }
    bool set = true;
    if (!list.empty() && list[0] == '^') {
      set = false;
      list = list.substr(1);
    }
    bool found_prefix = false;
    for (const auto& [fname, op] : functions()) {
      if (!prefix.empty() && prefix != fname) continue;
      found_prefix = true;
      auto& row = m.enabled[op];
      std::fill(row.begin(), row.end(), !set);
      for (const std::string& raw : split(list, ',')) {
        const std::string word = trim(raw);
        auto idx = lookup(word);
        if (!idx) {
          std::string expected = "one of";
          for (const auto& n : names) expected += " " + n;
          bad(where, var, value, expected + " (got '" + word + "')");
        }
        row[static_cast<std::size_t>(*idx)] = set;
      }
    }
    if (!found_prefix) {
      bad(where, var, value, "a function prefix among broadcast, reduce, allgather, reducescatter, allreduce");
    }
  }
  return m;
}

int parse_int(const std::string& where, const std::string& var, const std::string& value, int lo, int hi) {
  try {
    std::size_t pos = 0;
    const long v = std::stol(value, &pos, 0);
    if (pos != value.size() || v < lo || v > hi) throw std::invalid_argument("range");
    return static_cast<int>(v);
  } catch (const std::exception&) {
    bad(where, var, value, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  }
}

// A byte count as NCCL reads it (a plain integer), or with a unit as our data files write it.
Bytes parse_size(const std::string& where, const std::string& var, const std::string& value) {
  try {
    std::size_t pos = 0;
    const long long v = std::stoll(value, &pos, 0);
    if (pos == value.size() && v > 0) return Bytes::of(v);
  } catch (const std::exception&) {
  }
  try {
    const Bytes b = parse_bytes(value);
    if (b.count() > 0) return b;
  } catch (const InputError&) {
  }
  bad(where, var, value, "a byte count > 0 (e.g. 4194304 or '4 MiB')");
}

PathType parse_level(const std::string& where, const std::string& var, const std::string& value) {
  // ncclGetLevel: a path name up to SYS, or an old-style number 0-5.
  for (int i = 0; i <= static_cast<int>(PathType::SYS); ++i) {
    if (value == to_string(static_cast<PathType>(i))) return static_cast<PathType>(i);
  }
  if (!value.empty() && std::isdigit(static_cast<unsigned char>(value[0]))) {
    static constexpr PathType old_to_new[] = {PathType::LOC, PathType::PIX, PathType::PXB,
                                              PathType::PHB, PathType::SYS, PathType::SYS};
    const int old = std::min(parse_int(where, var, value, 0, 1 << 20), 5);
    return old_to_new[old];
  }
  bad(where, var, value, "one of LOC NVL NVB C2C PIX PXB P2C PXN PHB SYS (upper case, as NCCL reads it) or 0-5");
}

bool parse_bool01(const std::string& where, const std::string& var, const std::string& value) {
  return parse_int(where, var, value, 0, 1) == 1;
}

const std::set<std::string>& ignored_names() {
  // Variables NCCL reads that do not change timing in this model.
  static const std::set<std::string> s = {
      "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", "NCCL_SOCKET_IFNAME", "NCCL_SOCKET_FAMILY",
      "NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_IB_TC", "NCCL_IB_SL", "NCCL_IB_TIMEOUT", "NCCL_IB_RETRY_CNT",
      "NCCL_IB_QPS_PER_CONNECTION", "NCCL_IB_SPLIT_DATA_ON_QPS", "NCCL_NET",
      "NCCL_TUNER_PLUGIN", "NCCL_CUMEM_HOST_ENABLE", "NCCL_IGNORE_CPU_AFFINITY", "NCCL_LAUNCH_MODE",
      "NCCL_ASYNC_ERROR_HANDLING", "NCCL_BLOCKING_WAIT", "NCCL_TOPO_FILE", "NCCL_TOPO_DUMP_FILE",
      "NCCL_GRAPH_DUMP_FILE", "NCCL_GRAPH_FILE", "NCCL_NET_SHARED_BUFFERS",
      "NCCL_NET_SHARED_COMMS", "NCCL_PROTO_THRESHOLD", "NCCL_RUNTIME_CONNECT", "NCCL_WORK_FIFO_BYTES",
      "NCCL_MNNVL_ENABLE",
      "NCCL_MIN_CTAS", "NCCL_MAX_CTAS", "NCCL_CHECK_POINTERS", "NCCL_SET_THREAD_NAME", "NCCL_P2P_DIRECT_DISABLE",
      "NCCL_P2P_USE_CUDA_MEMCPY", "NCCL_SHM_USE_CUDA_MEMCPY", "NCCL_BUFFSIZE_SCHEME", "NCCL_PROFILER_PLUGIN",
      "NCCL_COMM_BLOCKING", "NCCL_CONF_FILE", "NCCL_HOME"};
  return s;
}

// Variables NCCL reads that this model uses (the branches of NcclEnv::parse).
const std::set<std::string>& modelled_names() {
  static const std::set<std::string> s = {
      "NCCL_ALGO", "NCCL_PROTO", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_P2P_READ_ENABLE", "NCCL_SHM_DISABLE",
      "NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_READ", "NCCL_MIN_NCHANNELS", "NCCL_MIN_NRINGS", "NCCL_MAX_NCHANNELS",
      "NCCL_MAX_NRINGS", "NCCL_BUFFSIZE", "NCCL_LL_BUFFSIZE", "NCCL_LL128_BUFFSIZE", "NCCL_P2P_NET_CHUNKSIZE",
      "NCCL_P2P_NVL_CHUNKSIZE", "NCCL_P2P_PCI_CHUNKSIZE", "NCCL_CROSS_NIC", "NCCL_IB_DISABLE", "NCCL_NVLS_ENABLE",
      "NCCL_NVLS_NCHANNELS", "NCCL_COLLNET_ENABLE", "NCCL_PAT_ENABLE", "NCCL_PXN_DISABLE", "NCCL_CUMEM_ENABLE",
      "NCCL_HOSTID", "NCCL_NVLS_CHUNKSIZE", "NCCL_NVLSTREE_MAX_CHUNKSIZE", "NCCL_P2P_LL_THRESHOLD",
      "NCCL_ALLOC_P2P_NET_LL_BUFFERS", "NCCL_NTHREADS", "NCCL_LL128_NTHREADS", "NCCL_MIN_P2P_NCHANNELS",
      "NCCL_MAX_P2P_NCHANNELS", "NCCL_NCHANNELS_PER_NET_PEER", "NCCL_NET_PLUGIN"};
  return s;
}

// True when a and b differ by one edit (a letter changed, added or dropped, or two neighbours swapped).
bool one_edit_apart(const std::string& a, const std::string& b) {
  if (a == b) return false;
  const std::size_t n = a.size(), m = b.size();
  if (n == m) {
    std::size_t i = 0;
    while (a[i] == b[i]) ++i;
    if (a.compare(i + 1, std::string::npos, b, i + 1) == 0) return true;                    // changed
    return i + 1 < n && a[i] == b[i + 1] && a[i + 1] == b[i] && a.compare(i + 2, std::string::npos, b, i + 2) == 0;
  }
  if (n + 1 != m && m + 1 != n) return false;
  const std::string& longer = n > m ? a : b;
  const std::string& shorter = n > m ? b : a;
  std::size_t i = 0;
  while (i < shorter.size() && shorter[i] == longer[i]) ++i;
  return longer.compare(i + 1, std::string::npos, shorter, i) == 0;                        // added or dropped
}

// The variable a misspelt name stands for: one edit from a name NCCL reads (modelled or ignored).
// Names further away may be NCCL variables this model does not list, and stay warnings.
std::optional<std::string> misspelling_of(const std::string& var) {
  for (const auto* names : {&modelled_names(), &ignored_names()}) {
    for (const auto& n : *names) {
      if (one_edit_apart(var, n)) return n;
    }
  }
  return std::nullopt;
}

}  // namespace

namespace {

// aws-ofi-nccl v1.21.1's variables (include/nccl_ofi_param.h OFI_NCCL_PARAM names, each read as
// OFI_NCCL_<name>), none of which the model follows but OFI_NCCL_DISABLE_GDR_REQUIRED_CHECK.
const std::set<std::string>& ofi_nccl_names() {
  static const std::set<std::string> s = {
      "OFI_NCCL_USE_IPV6_TCP", "OFI_NCCL_EXCLUDE_TCP_IF", "OFI_NCCL_GDR_FLUSH_DISABLE", "OFI_NCCL_NIC_DUP_CONNS",
      "OFI_NCCL_CUDA_FLUSH_ENABLE", "OFI_NCCL_MR_KEY_SIZE", "OFI_NCCL_MR_CACHE_DISABLE", "OFI_NCCL_CQ_READ_COUNT",
      "OFI_NCCL_GIN_CQ_PROCESS_MAX_ITER", "OFI_NCCL_CQ_SIZE", "OFI_NCCL_PROTOCOL", "OFI_NCCL_DISABLE_NATIVE_RDMA_CHECK",
      "OFI_NCCL_DISABLE_GDR_REQUIRED_CHECK", "OFI_NCCL_DISABLE_DMABUF", "OFI_NCCL_MIN_STRIPE_SIZE",
      "OFI_NCCL_SCHED_MAX_SMALL_RR_SIZE", "OFI_NCCL_RDMA_MIN_POSTED_EAGER_BUFFERS",
      "OFI_NCCL_RDMA_MAX_POSTED_EAGER_BUFFERS", "OFI_NCCL_RDMA_MIN_POSTED_CONTROL_BUFFERS",
      "OFI_NCCL_RDMA_MAX_POSTED_CONTROL_BUFFERS", "OFI_NCCL_RR_CTRL_MSG", "OFI_NCCL_NET_LATENCY",
      "OFI_NCCL_EAGER_MAX_SIZE", "OFI_NCCL_ERRORCHECK_MUTEX", "OFI_NCCL_ENDPOINT_PER_COMM", "OFI_NCCL_ABORT_ON_ERROR",
      "OFI_NCCL_TUNER_TYPE", "OFI_NCCL_TUNER_NUM_CHANNELS", "OFI_NCCL_TUNER_NET_LATENCY",
      "OFI_NCCL_TUNER_NET_COMP_OVERHEAD", "OFI_NCCL_USE_LOW_LATENCY_TC", "OFI_NCCL_FORCE_NUM_RAILS",
      "OFI_NCCL_EARLY_COMPLETION", "OFI_NCCL_DISABLE_CLOSE_MESSAGE", "OFI_NCCL_CM_NUM_RX_BUFFERS",
      "OFI_NCCL_PROGRESS_MODEL", "OFI_NCCL_PLATFORM", "OFI_NCCL_NVTX_TRACE_DIMENSION", "OFI_NCCL_GDAKI_EFA_HW_COUNTER"};
  return s;
}

// libfabric EFA variables aws-ofi-nccl's EFA cheatsheet (doc/efa-env-var.md) and platform code
// (src/platform-aws.cpp) name, besides FI_EFA_USE_DEVICE_RDMA.
const std::set<std::string>& fi_names() {
  static const std::set<std::string> s = {"FI_PROVIDER", "FI_EFA_FORK_SAFE", "FI_EFA_USE_HUGE_PAGE",
                                          "FI_EFA_ENABLE_SHM_TRANSFER", "FI_EFA_USE_DEVICE_RDMA"};
  return s;
}

// FI_* and OFI_* variables (see the header).
void parse_plugin_variable(NcclEnv& e, const std::string& where, const std::string& var, const std::string& value) {
  const std::string read = var + "=" + value + ": read but not modelled (";
  if (var == "FI_EFA_USE_DEVICE_RDMA") {
    e.efa_device_rdma = parse_bool01(where, var, value);
  } else if (var == "OFI_NCCL_DISABLE_GDR_REQUIRED_CHECK") {
    e.gdr_required_check_disabled = parse_bool01(where, var, value);
  } else if (var == "OFI_NCCL_PROTOCOL") {
    if (value != "SENDRECV" && value != "RDMA") bad(where, var, value, "SENDRECV or RDMA (aws-ofi-nccl's protocols)");
    e.plugin_notes.push_back(read + "aws-ofi-nccl's " + (value == "RDMA" ? "RDMA-write" : "send/receive") +
                             " protocol inside the plugin; the model times the network as its calibration saw it)");
  } else if (var == "FI_PROVIDER") {
    if (value != "efa") {
      e.plugin_notes.push_back(read + "aws-ofi-nccl then leaves EFA for libfabric's " + value +
                               " provider, whose rates the catalog does not have)");
    }
  } else if (fi_names().count(var) != 0) {  // FI_EFA_FORK_SAFE, FI_EFA_USE_HUGE_PAGE, FI_EFA_ENABLE_SHM_TRANSFER
    e.plugin_notes.push_back(read + "libfabric's EFA provider memory handling; no rate of the model follows it)");
  } else if (ofi_nccl_names().count(var) != 0) {
    e.plugin_notes.push_back(read + "an aws-ofi-nccl setting the model has no knob for)");
  } else {
    e.plugin_notes.push_back(var + ": not a variable aws-ofi-nccl v1.21.1 or libfabric's EFA provider is known to "
                             "read; ignored");
  }
}

}  // namespace

bool EnableMatrix::allows(CollectiveOp op, int element) const {
  if (!is_set) return true;
  auto it = enabled.find(op);
  if (it == enabled.end()) return true;
  return it->second.at(static_cast<std::size_t>(element));
}

NcclEnv NcclEnv::parse(const std::map<std::string, std::string>& env, const std::string& where) {
  NcclEnv e;
  e.raw = env;
  std::vector<std::string> algo_names, proto_names;
  for (Algorithm a : kAllAlgorithms) algo_names.emplace_back(nccl_name(a));
  for (Protocol p : kAllProtocols) proto_names.emplace_back(nccl_name(p));
  int p2p_disable = 0;
  std::optional<PathType> level;
  for (const auto& [var, value] : env) {
    if (var.rfind("FI_", 0) == 0 || var.rfind("OFI_", 0) == 0) {
      parse_plugin_variable(e, where, var, value);
      continue;
    }
    if (var.rfind("NCCL_", 0) != 0) continue;
    if (var == "NCCL_ALGO") {
      e.algo = parse_list(where, var, value, algo_names, [](const std::string& w) -> std::optional<int> {
        // NCCL also accepts "CollNet" for both CollNet algorithms in older releases; we take the
        // canonical names and our own spellings.
        if (auto a = parse_algorithm(w)) return static_cast<int>(*a);
        return std::nullopt;
      });
    } else if (var == "NCCL_PROTO") {
      e.proto = parse_list(where, var, value, proto_names, [](const std::string& w) -> std::optional<int> {
        if (auto p = parse_protocol(w)) return static_cast<int>(*p);
        return std::nullopt;
      });
    } else if (var == "NCCL_P2P_DISABLE") {
      p2p_disable = parse_int(where, var, value, 0, 1);
    } else if (var == "NCCL_P2P_LEVEL") {
      level = parse_level(where, var, value);
    } else if (var == "NCCL_P2P_READ_ENABLE") {
      e.p2p_read = parse_bool01(where, var, value);
    } else if (var == "NCCL_SHM_DISABLE") {
      e.shm_disable = parse_bool01(where, var, value);
    } else if (var == "NCCL_NET_GDR_LEVEL") {
      e.net_gdr_level = parse_level(where, var, value);
    } else if (var == "NCCL_NET_GDR_READ") {
      e.net_gdr_read_disable = !parse_bool01(where, var, value);
    } else if (var == "NCCL_MIN_NCHANNELS" || var == "NCCL_MIN_NRINGS") {
      e.min_nchannels = parse_int(where, var, value, 0, 1024);
    } else if (var == "NCCL_MAX_NCHANNELS" || var == "NCCL_MAX_NRINGS") {
      e.max_nchannels = parse_int(where, var, value, 1, 1024);
    } else if (var == "NCCL_MIN_P2P_NCHANNELS") {
      e.min_p2p_nchannels = parse_int(where, var, value, 1, 1024);
    } else if (var == "NCCL_MAX_P2P_NCHANNELS") {
      e.max_p2p_nchannels = parse_int(where, var, value, 1, 1024);
    } else if (var == "NCCL_NCHANNELS_PER_NET_PEER") {
      const int v = parse_int(where, var, value, -(1 << 20), 1 << 20);
      if (v > 0) e.nchannels_per_net_peer = v;
    } else if (var == "NCCL_NTHREADS") {
      e.nthreads = parse_int(where, var, value, -(1 << 20), 1 << 20);  // <= 0: unset
    } else if (var == "NCCL_LL128_NTHREADS") {
      e.ll128_nthreads = parse_int(where, var, value, -(1 << 20), 1 << 20);
    } else if (var == "NCCL_BUFFSIZE") {
      e.buffsize = parse_size(where, var, value);
    } else if (var == "NCCL_LL_BUFFSIZE") {
      e.ll_buffsize = parse_size(where, var, value);
    } else if (var == "NCCL_LL128_BUFFSIZE") {
      e.ll128_buffsize = parse_size(where, var, value);
    } else if (var == "NCCL_P2P_NET_CHUNKSIZE") {
      e.p2p_net_chunksize = parse_size(where, var, value);
    } else if (var == "NCCL_ALLOC_P2P_NET_LL_BUFFERS") {
      e.p2p_net_ll_buffers = parse_bool01(where, var, value);
    } else if (var == "NCCL_P2P_LL_THRESHOLD") {
      e.p2p_ll_threshold = Bytes::of(parse_int(where, var, value, 0, 1 << 30));
    } else if (var == "NCCL_NVLS_CHUNKSIZE") {
      e.nvls_chunksize = parse_size(where, var, value);
    } else if (var == "NCCL_NVLSTREE_MAX_CHUNKSIZE") {
      e.nvlstree_max_chunksize = parse_size(where, var, value);
    } else if (var == "NCCL_P2P_NVL_CHUNKSIZE") {
      e.p2p_nvl_chunksize = parse_size(where, var, value);
    } else if (var == "NCCL_P2P_PCI_CHUNKSIZE") {
      e.p2p_pci_chunksize = parse_size(where, var, value);
    } else if (var == "NCCL_CROSS_NIC") {
      e.cross_nic = parse_int(where, var, value, 0, 2);
    } else if (var == "NCCL_IB_DISABLE") {
      e.ib_disable = parse_bool01(where, var, value);
    } else if (var == "NCCL_NVLS_ENABLE") {
      e.nvls_enable = parse_int(where, var, value, 0, 2);
    } else if (var == "NCCL_NVLS_NCHANNELS") {
      e.nvls_nchannels = parse_int(where, var, value, 1, 1024);
    } else if (var == "NCCL_COLLNET_ENABLE") {
      e.collnet_enable = parse_bool01(where, var, value);
    } else if (var == "NCCL_PAT_ENABLE") {
      e.pat_enable = parse_int(where, var, value, 0, 2);
    } else if (var == "NCCL_PXN_DISABLE") {
      e.pxn_disable = parse_bool01(where, var, value);
    } else if (var == "NCCL_CUMEM_ENABLE") {
      e.cumem_enable = parse_bool01(where, var, value);
    } else if (var == "NCCL_NET_PLUGIN") {
      e.net_plugin_none = value == "none";
    } else if (var == "NCCL_HOSTID") {
      if (value.empty()) bad(where, var, value, "a non-empty host id");
      e.host_id = value;
    } else if (ignored_names().count(var) != 0) {
      e.ignored.push_back(var);
    } else if (auto near = misspelling_of(var)) {
      throw InputError("", where, var + ": not a variable NCCL reads; did you mean " + *near + "?");
    } else {
      e.unknown.push_back(var);
    }
  }
  // ncclGetLevel: NCCL_P2P_DISABLE=1 wins over NCCL_P2P_LEVEL.
  if (p2p_disable == 1) e.p2p_level = PathType::LOC;
  else if (level) e.p2p_level = level;
  return e;
}

}  // namespace clustersim::sim::nccl
