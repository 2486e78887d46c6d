#include "sim/nccl/nccl_types.hpp"

#include <algorithm>
#include <cctype>

namespace clustersim::sim::nccl {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Drops '_' and '-' so that "all_reduce", "allreduce" and "All-Reduce" compare equal.
std::string squash(std::string_view s) {
  std::string out;
  for (char c : lower(s)) {
    if (c != '_' && c != '-') out.push_back(c);
  }
  return out;
}

}  // namespace

std::string_view to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::ALL_REDUCE: return "all_reduce";
    case CollectiveOp::ALL_GATHER: return "all_gather";
    case CollectiveOp::REDUCE_SCATTER: return "reduce_scatter";
    case CollectiveOp::BROADCAST: return "broadcast";
    case CollectiveOp::REDUCE: return "reduce";
    case CollectiveOp::ALLTOALL: return "alltoall";
    case CollectiveOp::SENDRECV: return "sendrecv";
  }
  return "?";
}

std::string_view to_string(Algorithm a) {
  switch (a) {
    case Algorithm::TREE: return "tree";
    case Algorithm::RING: return "ring";
    case Algorithm::COLLNET_DIRECT: return "collnet_direct";
    case Algorithm::COLLNET_CHAIN: return "collnet_chain";
    case Algorithm::NVLS: return "nvls";
    case Algorithm::NVLS_TREE: return "nvls_tree";
    case Algorithm::PAT: return "pat";
  }
  return "?";
}

std::string_view nccl_name(Algorithm a) {
  switch (a) {
    case Algorithm::TREE: return "Tree";
    case Algorithm::RING: return "Ring";
    case Algorithm::COLLNET_DIRECT: return "CollNetDirect";
    case Algorithm::COLLNET_CHAIN: return "CollNetChain";
    case Algorithm::NVLS: return "NVLS";
    case Algorithm::NVLS_TREE: return "NVLSTree";
    case Algorithm::PAT: return "PAT";
  }
  return "?";
}

std::string_view to_string(Protocol p) {
  switch (p) {
    case Protocol::LL: return "ll";
    case Protocol::LL128: return "ll128";
    case Protocol::SIMPLE: return "simple";
  }
  return "?";
}

std::string_view nccl_name(Protocol p) {
  switch (p) {
    case Protocol::LL: return "LL";
    case Protocol::LL128: return "LL128";
    case Protocol::SIMPLE: return "Simple";
  }
  return "?";
}

std::string_view to_string(HwClass h) {
  switch (h) {
    case HwClass::NVLINK: return "nvlink";
    case HwClass::PCI: return "pci";
    case HwClass::NET: return "net";
  }
  return "?";
}

std::string_view to_string(PathType t) {
  static constexpr std::array<std::string_view, 12> names = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                                                             "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
  return names[static_cast<int>(t)];
}

std::string_view to_string(TransportKind t) {
  switch (t) {
    case TransportKind::P2P: return "P2P";
    case TransportKind::SHM: return "SHM";
    case TransportKind::NET: return "NET";
  }
  return "?";
}

std::optional<CollectiveOp> parse_op(std::string_view s) {
  const std::string k = squash(s);
  for (CollectiveOp op : kAllOps) {
    if (squash(to_string(op)) == k) return op;
  }
  return std::nullopt;
}

std::optional<Algorithm> parse_algorithm(std::string_view s) {
  const std::string k = squash(s);
  for (Algorithm a : kAllAlgorithms) {
    if (squash(to_string(a)) == k || squash(nccl_name(a)) == k) return a;
  }
  return std::nullopt;
}

std::optional<Protocol> parse_protocol(std::string_view s) {
  const std::string k = squash(s);
  for (Protocol p : kAllProtocols) {
    if (squash(to_string(p)) == k) return p;
  }
  return std::nullopt;
}

std::optional<PathType> parse_path_type(std::string_view s) {
  const std::string k = squash(s);
  for (int i = 0; i <= static_cast<int>(PathType::DIS); ++i) {
    if (squash(to_string(static_cast<PathType>(i))) == k) return static_cast<PathType>(i);
  }
  return std::nullopt;
}

std::vector<std::string> op_names() {
  std::vector<std::string> out;
  for (CollectiveOp op : kAllOps) out.emplace_back(to_string(op));
  return out;
}

double busbw_factor(CollectiveOp op, int nranks) {
  const double n = nranks;
  switch (op) {
    case CollectiveOp::ALL_REDUCE: return 2.0 * (n - 1) / n;
    case CollectiveOp::ALL_GATHER:
    case CollectiveOp::REDUCE_SCATTER:
    case CollectiveOp::ALLTOALL: return (n - 1) / n;
    case CollectiveOp::BROADCAST:
    case CollectiveOp::REDUCE:
    case CollectiveOp::SENDRECV: return 1.0;
  }
  return 1.0;
}

namespace {
constexpr std::array<std::string_view, 12> kTypeNames = {"int8",   "uint8", "int32",  "uint32",   "int64",  "uint64",
                                                         "half",   "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
constexpr std::array<int, 12> kTypeSizes = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
constexpr std::array<std::string_view, 6> kOpNames = {"sum", "prod", "max", "min", "avg", "mulsum"};
}  // namespace

std::string_view to_string(DataType t) { return kTypeNames.at(static_cast<std::size_t>(t)); }
std::string_view to_string(RedOp r) { return kOpNames.at(static_cast<std::size_t>(r)); }
int element_size(DataType t) { return kTypeSizes.at(static_cast<std::size_t>(t)); }
bool is_fp8(DataType t) { return t == DataType::F8E4M3 || t == DataType::F8E5M2; }

std::optional<DataType> parse_data_type(std::string_view s) {
  for (std::size_t i = 0; i < kTypeNames.size(); ++i) {
    if (kTypeNames[i] == s) return static_cast<DataType>(i);
  }
  return std::nullopt;
}

std::optional<RedOp> parse_red_op(std::string_view s) {
  for (std::size_t i = 0; i < kOpNames.size(); ++i) {
    if (kOpNames[i] == s) return static_cast<RedOp>(i);
  }
  return std::nullopt;
}

std::vector<std::string> data_type_names() { return {kTypeNames.begin(), kTypeNames.end()}; }
std::vector<std::string> red_op_names() { return {kOpNames.begin(), kOpNames.end()}; }

DevRedOp device_op(Reduction r) {
  switch (r.op) {
    case RedOp::SUM: return DevRedOp::SUM;
    case RedOp::PROD: return DevRedOp::PROD;
    case RedOp::MAX:
    case RedOp::MIN: return DevRedOp::MIN_MAX;
    case RedOp::MULSUM: return DevRedOp::PRE_MUL_SUM;
    case RedOp::AVG: break;
  }
  switch (r.type) {
    case DataType::INT8:
    case DataType::UINT8:
    case DataType::INT32:
    case DataType::UINT32:
    case DataType::INT64:
    case DataType::UINT64: return DevRedOp::SUM_POST_DIV;
    default: return DevRedOp::PRE_MUL_SUM;
  }
}

bool nvls_supported(Reduction r) {
  const DevRedOp d = device_op(r);
  switch (r.type) {
    case DataType::INT32:
    case DataType::UINT32:
    case DataType::INT64:
    case DataType::UINT64:
    case DataType::HALF:
    case DataType::BFLOAT16: return d == DevRedOp::SUM || d == DevRedOp::MIN_MAX;
    case DataType::FLOAT:
    case DataType::DOUBLE: return d == DevRedOp::SUM;
    default: return false;
  }
}

bool size_is_total_across_ranks(CollectiveOp op) {
  return op == CollectiveOp::ALL_GATHER || op == CollectiveOp::REDUCE_SCATTER || op == CollectiveOp::ALLTOALL;
}

}  // namespace clustersim::sim::nccl
