#pragma once
// The vocabulary of NCCL as the simulator speaks it: collectives, algorithms, protocols,
// transports and NCCL's path types, in NCCL's own order so that tables copied as data from its
// tuner (sim/nccl/versions/*.json) index the same way.
//
// NCCL 2.28 src/include/device.h: algorithms Tree, Ring, CollNetDirect, CollNetChain, NVLS,
// NVLSTree, PAT; protocols LL, LL128, Simple. src/graph/topo.h: path types LOC, NVL, NVB, C2C,
// PIX, PXB, P2C, PXN, PHB, SYS, NET, DIS (smaller is closer).

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::sim::nccl {

enum class CollectiveOp { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, REDUCE, ALLTOALL, SENDRECV };
inline constexpr std::array<CollectiveOp, 7> kAllOps = {
    CollectiveOp::ALL_REDUCE, CollectiveOp::ALL_GATHER, CollectiveOp::REDUCE_SCATTER, CollectiveOp::BROADCAST,
    CollectiveOp::REDUCE,     CollectiveOp::ALLTOALL,   CollectiveOp::SENDRECV};

enum class Algorithm { TREE = 0, RING = 1, COLLNET_DIRECT = 2, COLLNET_CHAIN = 3, NVLS = 4, NVLS_TREE = 5, PAT = 6 };
inline constexpr int kNumAlgorithms = 7;
inline constexpr std::array<Algorithm, kNumAlgorithms> kAllAlgorithms = {
    Algorithm::TREE, Algorithm::RING,      Algorithm::COLLNET_DIRECT, Algorithm::COLLNET_CHAIN,
    Algorithm::NVLS, Algorithm::NVLS_TREE, Algorithm::PAT};

enum class Protocol { LL = 0, LL128 = 1, SIMPLE = 2 };
inline constexpr int kNumProtocols = 3;
inline constexpr std::array<Protocol, kNumProtocols> kAllProtocols = {Protocol::LL, Protocol::LL128, Protocol::SIMPLE};

// NCCL's hardware classes of its latency table (tuning.cc NCCL_HW_NVLINK / PCI / NET).
enum class HwClass { NVLINK = 0, PCI = 1, NET = 2 };

// NCCL's path types (topo.h), closest first.
enum class PathType { LOC = 0, NVL = 1, NVB = 2, C2C = 3, PIX = 4, PXB = 5, P2C = 6, PXN = 7, PHB = 8, SYS = 9, NET = 10, DIS = 11 };

// How one hop moves data, as NCCL's transport selection decides (p2p.cc, shm.cc, net.cc).
enum class TransportKind { P2P, SHM, NET };
// P2P variants as NCCL logs them: "P2P/direct pointer" (same process), "P2P/CUMEM" (cuMem
// handles, default since 2.19), "P2P/IPC" (legacy CUDA IPC); "/read" when the receiver pulls.
enum class P2pVariant { DIRECT, CUMEM, IPC };

std::string_view to_string(CollectiveOp op);
std::string_view to_string(Algorithm a);      // "ring", "tree", "nvls", "nvls_tree", "pat", "collnet_direct", ...
std::string_view nccl_name(Algorithm a);      // NCCL's spelling: "Ring", "Tree", "NVLS", "NVLSTree", "PAT", ...
std::string_view to_string(Protocol p);       // "ll", "ll128", "simple"
std::string_view nccl_name(Protocol p);       // "LL", "LL128", "Simple"
std::string_view to_string(HwClass h);
std::string_view to_string(PathType t);       // "NVL", "PXB", ...
std::string_view to_string(TransportKind t);  // "P2P", "SHM", "NET"

// Parsing of user words; nullopt when unknown (callers name the expectation in their error).
std::optional<CollectiveOp> parse_op(std::string_view s);         // all_reduce, allreduce, ...
std::optional<Algorithm> parse_algorithm(std::string_view s);      // case-insensitive, NCCL or our spelling
std::optional<Protocol> parse_protocol(std::string_view s);        // case-insensitive
std::optional<PathType> parse_path_type(std::string_view s);       // NCCL_P2P_LEVEL words (LOC, NVL, PIX, ...)
std::vector<std::string> op_names();

// nccl-tests' bus-bandwidth factor (src/*_perf.cu *GetBw): busbw = algbw * factor.
double busbw_factor(CollectiveOp op, int nranks);
// Bytes NCCL moves for an nccl-tests "size" (the size column): per-rank input of all_reduce,
// broadcast, reduce and sendrecv; the total of all ranks' pieces for all_gather, reduce_scatter
// (and the per-rank buffer of nranks pieces for alltoall).
bool size_is_total_across_ranks(CollectiveOp op);

// Element types and reduction ops as nccl-tests names them (-d, -o; src/common.cu test_typenames
// and test_opnames, tag v2.19.6): int8 uint8 int32 uint32 int64 uint64 half float double bfloat16
// f8e4m3 f8e5m2 (the two fp8 types with NCCL 2.24 and later), and sum prod max min avg mulsum
// (mulsum: ncclRedOpCreatePreMulSum). Ops that do not reduce print "none".
enum class DataType { INT8, UINT8, INT32, UINT32, INT64, UINT64, HALF, FLOAT, DOUBLE, BFLOAT16, F8E4M3, F8E5M2 };
enum class RedOp { SUM, PROD, MAX, MIN, AVG, MULSUM };
std::string_view to_string(DataType t);
std::string_view to_string(RedOp r);
std::optional<DataType> parse_data_type(std::string_view s);  // nccl-tests' names, exactly
std::optional<RedOp> parse_red_op(std::string_view s);
std::vector<std::string> data_type_names();
std::vector<std::string> red_op_names();
int element_size(DataType t);  // bytes (ncclTypeSize)
bool is_fp8(DataType t);

// What one collective reduces: its element type and op (the all-gather, broadcast, alltoall and
// send/recv calls of nccl-tests pass sum).
struct Reduction {
  Reduction() = default;
  Reduction(DataType t, RedOp o) : type(t), op(o) {}
  DataType type = DataType::FLOAT;
  RedOp op = RedOp::SUM;
};

// NCCL's device op for a user op and type (enqueue.cc hostToDevRedOp): avg is a sum divided after
// (SumPostDiv) for integers and a sum of pre-multiplied inputs (PreMulSum) for floating types;
// mulsum is PreMulSum; max and min are one MinMax op.
enum class DevRedOp { SUM, PROD, MIN_MAX, PRE_MUL_SUM, SUM_POST_DIV };
DevRedOp device_op(Reduction r);
// NVLS and NVLSTree run only these (device.h ncclNvlsSupported, 2.20 to 2.28; 2.18's
// NCCL_NVLS_SUPPORTS in collectives.h is the same set): sum and min/max on int32, uint32, int64,
// uint64, half and bfloat16; sum alone on float and double.
bool nvls_supported(Reduction r);

// ceil(a / b) for a >= 0, b > 0 (NCCL's DIVUP / divUp).
inline constexpr long long div_up(long long a, long long b) { return (a + b - 1) / b; }

// Threads of a CUDA warp (NCCL's WARP_SIZE): thread counts come in whole warps.
inline constexpr int kWarpSize = 32;

}  // namespace clustersim::sim::nccl
