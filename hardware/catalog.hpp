#pragma once
// The hardware catalog: GPUs, systems (one 8-GPU board with its host), instances and cluster nodes
// (a system plus its network cards), fabrics, prices and storage, each figure with its provenance.
//
// Data, not code: the built-in catalog is the JSON under hardware/catalog/, compiled into the
// binary. Users add or override entries with the same schema from a directory (--catalog DIR or
// CLUSTERSIM_CATALOG); an entry there replaces the built-in one of the same name.
//
// Every figure is written {"value": "<quantity with unit>", "source": "<id>"}, where the id names
// an entry of the file's "sources" table: {"kind": datasheet | published_measurement |
// measured_here | vendor_documentation | price_list | estimate, "title", "url", "date"}.

#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hardware/embedded_file.hpp"
#include "hardware/sha256.hpp"
#include "hardware/units.hpp"

namespace clustersim::hardware {

enum class SourceKind { DATASHEET, PUBLISHED_MEASUREMENT, MEASURED_HERE, VENDOR_DOCUMENTATION, PRICE_LIST, ESTIMATE };
std::string_view to_string(SourceKind k);

struct Source {
  std::string id;
  SourceKind kind = SourceKind::DATASHEET;
  std::string title;
  std::string url;
  std::string date;
};

template <class T>
struct Figure {
  T value{};
  std::string source;  // id in Catalog::sources
};

struct NvlinkSpec {
  int generation = 0;
  int links = 0;
  Figure<Bandwidth> link_bandwidth;  // per link, per direction
  // Exponent p of the soft minimum between the payload rate a GPU's channels offer and the rate
  // its NVLink carries, (D^-p + L^-p)^(-1/p) (sim/nccl/step_program.hpp); none: a hard minimum.
  std::optional<Figure<double>> knee_exponent;
  Bandwidth per_direction() const { return link_bandwidth.value * links; }
};

struct PcieSpec {
  int generation = 0;
  int lanes = 16;
  Figure<Bandwidth> bandwidth;  // per direction, x`lanes`
  std::optional<Figure<Bandwidth>> host_read_bandwidth;  // a kernel's loads of pinned host memory (GPU-initiated reads)
};

// One NCCL channel's thread block with the LL or LL128 protocol, measured as a copy engine: a
// step with L loads and S stores per payload byte takes (L (1 - s) + S s) / copy_rate.
struct ChannelCopySpec {
  Figure<Bandwidth> copy_rate;  // payload bytes per second of one load and one store per byte
  Figure<double> store_share;   // the stores' share s of a copy's time
};

struct GpuSpec {
  std::string name;
  std::string vendor;
  std::string architecture;
  std::string compute_capability;
  int sm_count = 0;
  Figure<FlopRate> peak_bf16;
  std::optional<Figure<FlopRate>> peak_fp8;
  Figure<FlopRate> peak_fp32;  // plain FP32 (not tensor core)
  Figure<Bytes> hbm_capacity;  // as the datasheet writes it
  Figure<Bytes> hbm_usable;    // what the driver reports as total memory
  std::string hbm_type;
  Figure<Bandwidth> hbm_bandwidth;
  NvlinkSpec nvlink;
  PcieSpec pcie;
  std::optional<Figure<double>> sm_store_share;  // one block's stores' share of its per-byte copy time, s / (l + s)
  std::optional<ChannelCopySpec> nccl_ll_channel;     // NCCL's LL protocol, one channel
  std::optional<ChannelCopySpec> nccl_ll128_channel;  // NCCL's LL128 protocol, one channel
};

enum class GpuFabric { NVSWITCH, NVLINK_MESH, PCIE_ONLY };
std::string_view to_string(GpuFabric f);

struct GpuInterconnect {
  GpuFabric kind = GpuFabric::NVSWITCH;
  int nvswitch_generation = 0;
  int nvswitch_chips = 0;
  std::vector<int> links_per_chip;  // NVLinks from each GPU to each switch chip (the planes)
  bool fabric_manager_required = false;
};

struct PcieSwitch {
  int numa_node = 0;
  std::vector<int> gpus;  // local GPU indices
  std::vector<int> nics;  // NIC indices (empty on a bare system)
};

struct HostSpec {
  std::string cpu;
  int sockets = 1;
  int numa_nodes = 1;
  int cores = 0;
  Figure<Bytes> memory;
  Figure<Bandwidth> memory_bandwidth_per_socket;
  // What of the last-level cache PCIe writes into host memory may allocate (Intel DDIO's ways);
  // absent where the host has no such path or it is not known.
  std::optional<Figure<Bytes>> io_cache_per_socket;
  Figure<Bandwidth> inter_socket_bandwidth;  // per direction (UPI / xGMI)
};

struct SystemSpec {
  std::string name;
  std::string description;
  std::string gpu;  // GpuSpec name
  int gpu_count = 8;
  GpuInterconnect interconnect;
  HostSpec host;
  int pcie_generation = 4;
  Figure<Bandwidth> pcie_switch_uplink;  // switch to root complex, per direction
  std::vector<PcieSwitch> pcie_switches;
  std::string calibration;  // default calibration profile name, "" if none
};

enum class FabricKind { EFA, INFINIBAND, ROCE, ETHERNET };
std::string_view to_string(FabricKind k);

struct FabricSpec {
  std::string name;
  std::string description;
  FabricKind kind = FabricKind::EFA;
  std::string nccl_net;  // NCCL network plugin: "ofi" (aws-ofi-nccl), "ib", "socket"
  bool forces_simple_protocol = false;
  std::optional<Bytes> nccl_buffsize;
  std::optional<Bytes> nccl_p2p_net_chunksize;
  // NVLS chunk settings the network plugin exports (NCCL_NVLS_CHUNKSIZE, NCCL_NVLSTREE_MAX_CHUNKSIZE).
  std::optional<Bytes> nccl_nvls_chunksize;
  std::optional<Bytes> nccl_nvlstree_max_chunksize;
  bool supports_gpudirect_rdma = false;
  Figure<Duration> nic_latency;     // one-way, NIC to NIC through one switch, small message
  Figure<Duration> switch_latency;  // per additional switch hop
  // Payload rate NCCL's network transport reaches over the NIC line rate, where known for this
  // fabric (nccl.net.efficiency's fallback); absent: the NCCL rule of thumb.
  std::optional<Figure<double>> nccl_net_efficiency;
  // The latency the NCCL network plugin reports in its device properties (ncclNetProperties_t
  // latency, us); NCCL's tuner adds it to its network latency (absent: 0, as NCCL's own transports).
  std::optional<Figure<Duration>> nccl_net_reported_latency;
  // The network plugin's multi-rail striping (aws-ofi-nccl): a message shorter than this goes on
  // one rail of a fused device, a longer one on up to all of them; absent: no striping (NCCL's own
  // transports put a message on one NIC).
  std::optional<Figure<Bytes>> nccl_net_min_stripe_size;
};

enum class NetworkTopologyKind { SINGLE_SWITCH, LEAF_SPINE, RAIL_OPTIMIZED };
std::string_view to_string(NetworkTopologyKind k);

struct NetworkTopology {
  NetworkTopologyKind kind = NetworkTopologyKind::RAIL_OPTIMIZED;
  int nodes_per_leaf = 16;
  double oversubscription = 1.0;  // leaf downlink : uplink bandwidth
};

struct NodeNetwork {
  std::string fabric;  // FabricSpec name
  int nics = 0;
  Figure<Bandwidth> nic_bandwidth;  // per NIC, per direction
  bool gpudirect_rdma = false;
  NetworkTopology topology;
};

// An instance type (p5.48xlarge) or a cluster node design (dgx-h100): a system plus its network.
struct InstanceSpec {
  std::string name;
  std::string provider;  // "aws", "nvidia", ...
  std::string description;
  std::string system;    // SystemSpec name
  std::string gpu;       // GpuSpec name (the system's unless overridden)
  int vcpus = 0;
  Figure<Bytes> memory;
  bool virtualized = false;  // a hypervisor sits between the processes and the PCIe fabric
  std::optional<HostSpec> host;                          // overrides the system's reference host
  std::optional<Figure<Bandwidth>> pcie_switch_uplink;   // overrides the system's
  NodeNetwork network;
  std::vector<PcieSwitch> pcie_switches;  // the system's switches with this node's NICs placed
  std::string pcie_layout_source;         // source id of the switch layout
  std::string calibration;                // overrides the system's default profile
};

// A price per instance-hour in one currency, "55.04 USD/h" in data files.
struct HourlyPrice {
  double per_hour = 0;
  std::string currency;
  std::string source;
};
HourlyPrice parse_hourly_price(std::string_view text);  // throws InputError

// Prices of one instance in one region; an option is absent where it is not offered or not known.
// The date of each price is its source's date.
struct PriceEntry {
  std::string instance;
  std::string region;
  std::optional<HourlyPrice> on_demand;
  std::optional<HourlyPrice> capacity_block;
  std::optional<HourlyPrice> savings_plan_1yr;
  std::optional<HourlyPrice> savings_plan_3yr;
  std::optional<HourlyPrice> spot;
};

// The booking rules of EC2 Capacity Blocks for ML, as AWS publishes them (prices.json
// "capacity_block_rules", each figure with its source). A block lasts 1 to `daily_up_to_days`
// days in 1-day steps, then up to `max_days` in 7-day steps (extensions included); it holds at most
// `max_instances_per_block` instances, and an account at most `max_instances_across_blocks`
// across its blocks; a block starts at most `max_lead_days` after it is bought. The defaults are
// the built-in catalog's figures (AWS EC2 User Guide, "Capacity Blocks for ML", 2026-12), for
// catalogs that state none.
struct CapacityBlockRules {
  int daily_up_to_days = 14;
  int weekly_step_days = 7;
  int max_days = 182;
  int max_instances_per_block = 64;
  int max_instances_across_blocks = 256;
  int max_lead_days = 56;
  std::string source;  // id in Catalog::sources; empty for the defaults
};

struct StorageSpec {
  std::string name;
  std::string description;
  Figure<Bandwidth> write_bandwidth_per_node;
  Figure<Bandwidth> read_bandwidth_per_node;
  std::optional<Figure<Bandwidth>> aggregate_limit;  // the whole file system or bucket prefix
  std::optional<Figure<double>> usd_per_gb_month;    // "0.023 USD/GB-month" in data files (GB = 1e9 B)
  // A file system billed for what it provisions (FSx for Lustre), not for the bytes stored: the
  // bill is of max(provisioned, stored).
  std::optional<Figure<Bytes>> provisioned_capacity;
};
// "0.023 USD/GB-month" in US dollars per decimal gigabyte-month; InputError otherwise.
double parse_usd_per_gb_month(std::string_view text);

// How often a training job is interrupted by a failure, and how long it takes to start again,
// as published for a named fleet.
struct FailureRateSpec {
  std::string name;
  std::string description;
  Figure<double> interruptions_per_gpu_hour;  // unexpected job interruptions per GPU-hour
  Figure<Duration> restart_time;              // detection, replacement, rescheduling, initialisation
};

class Catalog {
 public:
  // The built-in catalog, then each directory in order (later entries override earlier by name).
  static Catalog load(const std::vector<std::filesystem::path>& user_dirs = {});
  // The directories named by CLUSTERSIM_CATALOG (colon-separated) followed by `extra`.
  static std::vector<std::filesystem::path> user_dirs_from_env(const std::vector<std::filesystem::path>& extra);
  // Loads a catalog from given files only (tests).
  static Catalog from_files(std::span<const EmbeddedFile> files);
  // A copy of this catalog with one more layer, given as texts, on top (fuzzing, tests).
  Catalog extended(std::span<const EmbeddedFile> files) const;

  const GpuSpec& gpu(std::string_view name) const;
  const SystemSpec& system(std::string_view name) const;
  const InstanceSpec& instance(std::string_view name) const;
  const FabricSpec& fabric(std::string_view name) const;
  const StorageSpec& storage(std::string_view name) const;
  const FailureRateSpec& failure_rate(std::string_view name) const;
  const Source& source(std::string_view id) const;
  bool has_system(std::string_view name) const { return systems_.count(std::string(name)) != 0; }
  bool has_instance(std::string_view name) const { return instances_.count(std::string(name)) != 0; }

  const std::map<std::string, GpuSpec, std::less<>>& gpus() const { return gpus_; }
  const std::map<std::string, SystemSpec, std::less<>>& systems() const { return systems_; }
  const std::map<std::string, InstanceSpec, std::less<>>& instances() const { return instances_; }
  const std::map<std::string, FabricSpec, std::less<>>& fabrics() const { return fabrics_; }
  const std::map<std::string, StorageSpec, std::less<>>& storages() const { return storage_; }
  const std::map<std::string, FailureRateSpec, std::less<>>& failure_rates() const { return failure_rates_; }
  const std::map<std::string, Source, std::less<>>& sources() const { return sources_; }
  // Prices of an instance, one per region, sorted by region.
  std::vector<PriceEntry> prices(std::string_view instance) const;
  const std::vector<PriceEntry>& all_prices() const { return prices_; }
  // Capacity Block booking rules: the top layer that states them, else the defaults.
  const CapacityBlockRules& capacity_block_rules() const { return capacity_block_rules_; }

  // Every file read, in order, with its SHA-256 (the built-in files as hardware/catalog/NAME).
  const std::vector<InputDigest>& inputs() const { return inputs_; }

  // Names of every system and instance (for suggestions in errors).
  std::vector<std::string> machine_names() const;

 private:
  void add_file(std::string_view file, std::string_view text, int layer);
  int top_layer_ = 0;
  void validate() const;

  std::map<std::string, GpuSpec, std::less<>> gpus_;
  std::map<std::string, SystemSpec, std::less<>> systems_;
  std::map<std::string, InstanceSpec, std::less<>> instances_;
  std::map<std::string, FabricSpec, std::less<>> fabrics_;
  std::map<std::string, StorageSpec, std::less<>> storage_;
  std::map<std::string, FailureRateSpec, std::less<>> failure_rates_;
  std::map<std::string, Source, std::less<>> sources_;
  std::vector<PriceEntry> prices_;
  CapacityBlockRules capacity_block_rules_;
  std::vector<InputDigest> inputs_;
  // Where each entry came from, for duplicate-name errors: "<kind>/<name>" -> (layer, file).
  std::map<std::string, std::pair<int, std::string>, std::less<>> origin_;
};

// A system or instance resolved to one node description (the common input of topology and models).
struct NodeSpec {
  std::string name;  // instance or system name
  const SystemSpec* system = nullptr;
  const GpuSpec* gpu = nullptr;
  const InstanceSpec* instance = nullptr;  // null for a bare system
  const FabricSpec* fabric = nullptr;      // null when the node has no network
  std::vector<PcieSwitch> pcie_switches;
  std::string calibration;
  int gpus() const { return system->gpu_count; }
  const HostSpec& host() const { return instance && instance->host ? *instance->host : system->host; }
  const Figure<Bandwidth>& pcie_switch_uplink() const {
    return instance && instance->pcie_switch_uplink ? *instance->pcie_switch_uplink : system->pcie_switch_uplink;
  }
  int nics() const { return instance ? instance->network.nics : 0; }
  Bandwidth nvlink_per_gpu() const { return gpu->nvlink.per_direction(); }
  // NIC bandwidth of the whole node and per GPU, per direction (zero without a network).
  Bandwidth network_per_node() const;
  Bandwidth network_per_gpu() const;
};

// Resolves a system or instance name; an unknown name is an InputError suggesting the nearest.
// The NodeSpec points into `catalog`, which must outlive it (a temporary catalog is refused).
NodeSpec resolve_node(const Catalog& catalog, std::string_view name);
// The model word of a GPU name as the driver reports it ("NVIDIA H200" -> "H200"): the name less a
// leading "NVIDIA ", up to its first space. A catalog GPU is that model when its name begins with
// the word ("H200-SXM-141GB"); `calibrate fit` finds a results file's system so, and a profile
// names the GPU it was fitted on so.
std::string_view gpu_model_word(std::string_view driver_name);
NodeSpec resolve_node(Catalog&& catalog, std::string_view name) = delete;

}  // namespace clustersim::hardware
