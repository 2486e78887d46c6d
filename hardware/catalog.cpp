#include "hardware/catalog.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"

namespace clustersim::hardware {

std::span<const EmbeddedFile> builtin_catalog_files();  // generated from hardware/catalog/*.json

namespace {

constexpr int kBuiltinLayer = 0;

const std::vector<std::string> kSourceKinds = {"datasheet",      "published_measurement", "measured_here",
                                               "vendor_documentation", "price_list",  "estimate"};

SourceKind source_kind_from(const std::string& s) {
  if (s == "datasheet") return SourceKind::DATASHEET;
  if (s == "published_measurement") return SourceKind::PUBLISHED_MEASUREMENT;
  if (s == "measured_here") return SourceKind::MEASURED_HERE;
  if (s == "vendor_documentation") return SourceKind::VENDOR_DOCUMENTATION;
  if (s == "price_list") return SourceKind::PRICE_LIST;
  return SourceKind::ESTIMATE;
}

// Reads figures of one file, checking that each names a source of that file.
class FileReader {
 public:
  FileReader(std::map<std::string, Source, std::less<>> sources) : sources_(std::move(sources)) {}

  template <class T, class Get>
  Figure<T> figure(ValueReader v, Get get) const {
    return v.read_object([&](ObjectReader& o) {
      Figure<T> f;
      f.value = get(o.at("value"));
      auto src = o.at("source");
      f.source = src.as_string();
      check_source(src);
      return f;
    });
  }
  // A source id must name an entry of this file's "sources".
  void check_source(const ValueReader& v) const {
    const std::string id = v.as_string();
    if (sources_.find(id) != sources_.end()) return;
    std::vector<std::string> ids;
    for (const auto& [k, s] : sources_) ids.push_back(k);
    std::string msg = "unknown source '" + id + "' (sources are declared in this file's \"sources\")";
    if (auto near = nearest_word(id, ids)) msg += "; did you mean '" + *near + "'?";
    v.fail_message(msg);
  }
  Figure<Bandwidth> bandwidth(ValueReader v) const {
    return figure<Bandwidth>(v, [](ValueReader x) { return x.as_bandwidth(); });
  }
  Figure<Bytes> bytes(ValueReader v) const {
    return figure<Bytes>(v, [](ValueReader x) { return x.as_bytes(Bytes::of(1)); });
  }
  Figure<FlopRate> flop_rate(ValueReader v) const {
    return figure<FlopRate>(v, [](ValueReader x) { return x.as_flop_rate(); });
  }
  Figure<Duration> duration(ValueReader v) const {
    return figure<Duration>(v, [](ValueReader x) { return x.as_duration(); });
  }

 private:
  std::map<std::string, Source, std::less<>> sources_;
};

std::vector<int> int_list(ValueReader v, IntRange range) {
  std::vector<int> out;
  for (auto& e : v.as_array()) out.push_back(static_cast<int>(e.as_int(range)));
  return out;
}

std::vector<PcieSwitch> read_switches(ValueReader v) {
  std::vector<PcieSwitch> out;
  for (auto& e : v.as_array(1)) {
    out.push_back(e.read_object([](ObjectReader& o) {
      PcieSwitch s;
      s.numa_node = static_cast<int>(o.at("numa_node").as_int({.min = 0, .max = 63}));
      s.gpus = int_list(o.at("gpus"), {.min = 0, .max = 1023});
      if (auto n = o.maybe("nics")) s.nics = int_list(*n, {.min = 0, .max = 1023});
      return s;
    }));
  }
  return out;
}

GpuSpec read_gpu(ValueReader v, const FileReader& f) {
  return v.read_object([&](ObjectReader& o) {
    GpuSpec g;
    g.name = o.at("name").as_string();
    g.vendor = o.at("vendor").as_string();
    g.architecture = o.at("architecture").as_string();
    g.compute_capability = o.at("compute_capability").as_string();
    g.sm_count = static_cast<int>(o.at("sm_count").as_int({.min = 1, .max = 100000}));
    g.peak_bf16 = f.flop_rate(o.at("peak_bf16"));
    if (auto x = o.maybe("peak_fp8")) g.peak_fp8 = f.flop_rate(*x);
    g.peak_fp32 = f.flop_rate(o.at("peak_fp32"));
    g.hbm_capacity = f.bytes(o.at("hbm_capacity"));
    g.hbm_usable = f.bytes(o.at("hbm_usable"));
    g.hbm_type = o.at("hbm_type").as_string();
    g.hbm_bandwidth = f.bandwidth(o.at("hbm_bandwidth"));
    g.nvlink = o.at("nvlink").read_object([&](ObjectReader& n) {
      NvlinkSpec s;
      s.generation = static_cast<int>(n.at("generation").as_int({.min = 0, .max = 20}));
      s.links = static_cast<int>(n.at("links").as_int({.min = 0, .max = 64}));
      s.link_bandwidth = f.bandwidth(n.at("link_bandwidth"));
      if (auto x = n.maybe("knee_exponent")) {
        s.knee_exponent = f.figure<double>(*x, [](ValueReader r) { return r.as_number({1.0, 100.0}); });
      }
      return s;
    });
    g.pcie = o.at("pcie").read_object([&](ObjectReader& p) {
      PcieSpec s;
      s.generation = static_cast<int>(p.at("generation").as_int({.min = 1, .max = 10}));
      s.lanes = static_cast<int>(p.at("lanes").as_int({.min = 1, .max = 32}));
      s.bandwidth = f.bandwidth(p.at("bandwidth"));
      if (auto x = p.maybe("host_read_bandwidth")) s.host_read_bandwidth = f.bandwidth(*x);
      return s;
    });
    if (auto x = o.maybe("sm_store_share")) g.sm_store_share = f.figure<double>(*x, [](ValueReader r) { return r.as_number({0.0, 1.0, true}); });
    auto channel_copy = [&](ValueReader v) {
      return v.read_object([&](ObjectReader& c) {
        ChannelCopySpec s;
        s.copy_rate = f.bandwidth(c.at("copy_rate"));
        s.store_share = f.figure<double>(c.at("store_share"), [](ValueReader r) { return r.as_number({0.0, 1.0, true}); });
        return s;
      });
    };
    if (auto x = o.maybe("nccl_ll_channel")) g.nccl_ll_channel = channel_copy(*x);
    if (auto x = o.maybe("nccl_ll128_channel")) g.nccl_ll128_channel = channel_copy(*x);
    return g;
  });
}

HostSpec read_host(ValueReader v, const FileReader& f) {
  return v.read_object([&](ObjectReader& h) {
    HostSpec x;
    x.cpu = h.at("cpu").as_string();
    x.sockets = static_cast<int>(h.at("sockets").as_int({.min = 1, .max = 16}));
    x.numa_nodes = static_cast<int>(h.at("numa_nodes").as_int({.min = 1, .max = 64}));
    x.cores = static_cast<int>(h.at("cores").as_int({.min = 1, .max = 100000}));
    x.memory = f.bytes(h.at("memory"));
    x.memory_bandwidth_per_socket = f.bandwidth(h.at("memory_bandwidth_per_socket"));
    if (auto c = h.maybe("io_cache_per_socket")) x.io_cache_per_socket = f.bytes(*c);
    x.inter_socket_bandwidth = f.bandwidth(h.at("inter_socket_bandwidth"));
    return x;
  });
}

SystemSpec read_system(ValueReader v, const FileReader& f) {
  return v.read_object([&](ObjectReader& o) {
    SystemSpec s;
    s.name = o.at("name").as_string();
    s.description = o.get_or("description", "");
    s.gpu = o.at("gpu").as_string();
    s.gpu_count = static_cast<int>(o.at("gpu_count").as_int({.min = 1, .max = 1024}));
    s.interconnect = o.at("interconnect").read_object([&](ObjectReader& i) {
      GpuInterconnect g;
      const std::string kind = i.at("kind").as_choice({"nvswitch", "nvlink_mesh", "pcie_only"});
      g.kind = kind == "nvswitch" ? GpuFabric::NVSWITCH : kind == "nvlink_mesh" ? GpuFabric::NVLINK_MESH
                                                                                : GpuFabric::PCIE_ONLY;
      if (g.kind == GpuFabric::NVSWITCH) {
        g.nvswitch_generation = static_cast<int>(i.at("nvswitch_generation").as_int({.min = 1, .max = 20}));
        g.nvswitch_chips = static_cast<int>(i.at("nvswitch_chips").as_int({.min = 1, .max = 64}));
        g.links_per_chip = int_list(i.at("links_per_chip"), {.min = 0, .max = 64});
        if (static_cast<int>(g.links_per_chip.size()) != g.nvswitch_chips) {
          i.at("links_per_chip").fail("one entry per NVSwitch chip (" + std::to_string(g.nvswitch_chips) + ")");
        }
      }
      g.fabric_manager_required = i.get_or("fabric_manager_required", false);
      return g;
    });
    s.host = read_host(o.at("host"), f);
    s.pcie_generation = static_cast<int>(o.at("pcie_generation").as_int({.min = 1, .max = 10}));
    s.pcie_switch_uplink = f.bandwidth(o.at("pcie_switch_uplink"));
    s.pcie_switches = read_switches(o.at("pcie_switches"));
    s.calibration = o.get_or("calibration", "");
    return s;
  });
}

FabricSpec read_fabric(ValueReader v, const FileReader& f) {
  return v.read_object([&](ObjectReader& o) {
    FabricSpec s;
    s.name = o.at("name").as_string();
    s.description = o.get_or("description", "");
    const std::string kind = o.at("kind").as_choice({"efa", "infiniband", "roce", "ethernet"});
    s.kind = kind == "efa" ? FabricKind::EFA : kind == "infiniband" ? FabricKind::INFINIBAND
                                             : kind == "roce"       ? FabricKind::ROCE
                                                                    : FabricKind::ETHERNET;
    s.nccl_net = o.at("nccl_net").as_choice({"ofi", "ib", "socket"});
    s.forces_simple_protocol = o.get_or("forces_simple_protocol", false);
    if (auto x = o.maybe("nccl_buffsize")) s.nccl_buffsize = x->as_bytes(Bytes::of(1));
    if (auto x = o.maybe("nccl_p2p_net_chunksize")) s.nccl_p2p_net_chunksize = x->as_bytes(Bytes::of(1));
    if (auto x = o.maybe("nccl_nvls_chunksize")) s.nccl_nvls_chunksize = x->as_bytes(Bytes::of(1));
    if (auto x = o.maybe("nccl_nvlstree_max_chunksize")) s.nccl_nvlstree_max_chunksize = x->as_bytes(Bytes::of(1));
    s.supports_gpudirect_rdma = o.at("supports_gpudirect_rdma").as_bool();
    s.nic_latency = f.duration(o.at("nic_latency"));
    s.switch_latency = f.duration(o.at("switch_latency"));
    if (auto x = o.maybe("nccl_net_reported_latency")) s.nccl_net_reported_latency = f.duration(*x);
    if (auto x = o.maybe("nccl_net_min_stripe_size")) s.nccl_net_min_stripe_size = f.bytes(*x);
    if (auto x = o.maybe("nccl_net_efficiency")) {
      s.nccl_net_efficiency = f.figure<double>(*x, [](ValueReader r) { return r.as_number({0.0, 1.0, true}); });
    }
    return s;
  });
}

NetworkTopology read_topology(ValueReader v) {
  return v.read_object([](ObjectReader& o) {
    NetworkTopology t;
    const std::string kind = o.at("kind").as_choice({"single_switch", "leaf_spine", "rail_optimized"});
    t.kind = kind == "single_switch" ? NetworkTopologyKind::SINGLE_SWITCH
             : kind == "leaf_spine"  ? NetworkTopologyKind::LEAF_SPINE
                                     : NetworkTopologyKind::RAIL_OPTIMIZED;
    t.nodes_per_leaf = static_cast<int>(o.get_or("nodes_per_leaf", 16, {.min = 1, .max = 100000}));
    t.oversubscription = o.get_or("oversubscription", 1.0, {.min = 1.0, .max = 1000.0});
    return t;
  });
}

InstanceSpec read_instance(ValueReader v, const FileReader& f) {
  return v.read_object([&](ObjectReader& o) {
    InstanceSpec s;
    s.name = o.at("name").as_string();
    s.provider = o.at("provider").as_string();
    s.description = o.get_or("description", "");
    s.system = o.at("system").as_string();
    s.gpu = o.get_or("gpu", "");
    s.vcpus = static_cast<int>(o.at("vcpus").as_int({.min = 1, .max = 100000}));
    s.memory = f.bytes(o.at("memory"));
    s.virtualized = o.at("virtualized").as_bool();
    if (auto h = o.maybe("host")) s.host = read_host(*h, f);
    if (auto u = o.maybe("pcie_switch_uplink")) s.pcie_switch_uplink = f.bandwidth(*u);
    s.network = o.at("network").read_object([&](ObjectReader& n) {
      NodeNetwork net;
      net.fabric = n.at("fabric").as_string();
      net.nics = static_cast<int>(n.at("nics").as_int({.min = 1, .max = 1024}));
      net.nic_bandwidth = f.bandwidth(n.at("nic_bandwidth"));
      net.gpudirect_rdma = n.at("gpudirect_rdma").as_bool();
      net.topology = read_topology(n.at("topology"));
      return net;
    });
    s.pcie_switches = read_switches(o.at("pcie_switches"));
    auto layout = o.at("pcie_layout_source");
    s.pcie_layout_source = layout.as_string();
    f.check_source(layout);
    s.calibration = o.get_or("calibration", "");
    return s;
  });
}

PriceEntry read_price(ValueReader v, const FileReader& f) {
  return v.read_object([&](ObjectReader& o) {
    PriceEntry p;
    p.instance = o.at("instance").as_string();
    p.region = o.at("region").as_string();
    auto rate = [&](std::string_view key) -> std::optional<HourlyPrice> {
      auto x = o.maybe(key);
      if (!x) return std::nullopt;
      const Figure<HourlyPrice> fig = f.figure<HourlyPrice>(*x, [](ValueReader val) {
        if (!val.raw().is_string()) val.fail("a price per hour such as '55.04 USD/h'");
        try {
          return parse_hourly_price(val.raw().get<std::string>());
        } catch (const InputError& e) {
          val.fail_message(e.message());
        }
      });
      HourlyPrice h = fig.value;
      h.source = fig.source;
      return h;
    };
    p.on_demand = rate("on_demand_per_hour");
    p.capacity_block = rate("capacity_block_per_hour");
    p.savings_plan_1yr = rate("savings_plan_1yr_per_hour");
    p.savings_plan_3yr = rate("savings_plan_3yr_per_hour");
    p.spot = rate("spot_per_hour");
    return p;
  });
}

CapacityBlockRules read_block_rules(ValueReader v, const FileReader& f) {
  return v.read_object([&](ObjectReader& o) {
    CapacityBlockRules r;
    std::string source;
    auto days = [&](std::string_view key, int lo, int hi) {
      const Figure<double> fig = f.figure<double>(o.at(key), [&](ValueReader x) {
        const double d = x.as_number({static_cast<double>(lo), static_cast<double>(hi)});
        if (d != std::floor(d)) x.fail("a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
        return d;
      });
      if (source.empty()) source = fig.source;
      return static_cast<int>(fig.value);
    };
    r.daily_up_to_days = days("daily_up_to_days", 1, 3650);
    r.weekly_step_days = days("weekly_step_days", 1, 3650);
    r.max_days = days("max_days", 1, 3650);
    r.max_instances_per_block = days("max_instances_per_block", 1, 1000000);
    r.max_instances_across_blocks = days("max_instances_across_blocks", 1, 1000000);
    r.max_lead_days = days("max_lead_days", 0, 3650);
    if (r.max_days < r.daily_up_to_days) o.at("max_days").fail("at least daily_up_to_days");
    if (r.max_instances_across_blocks < r.max_instances_per_block) {
      o.at("max_instances_across_blocks").fail("at least max_instances_per_block");
    }
    r.source = source;
    return r;
  });
}

StorageSpec read_storage(ValueReader v, const FileReader& f) {
  return v.read_object([&](ObjectReader& o) {
    StorageSpec s;
    s.name = o.at("name").as_string();
    s.description = o.get_or("description", "");
    s.write_bandwidth_per_node = f.bandwidth(o.at("write_bandwidth_per_node"));
    s.read_bandwidth_per_node = f.bandwidth(o.at("read_bandwidth_per_node"));
    if (auto x = o.maybe("aggregate_limit")) s.aggregate_limit = f.bandwidth(*x);
    if (auto x = o.maybe("provisioned_capacity")) s.provisioned_capacity = f.bytes(*x);
    if (auto x = o.maybe("price")) {
      s.usd_per_gb_month = f.figure<double>(*x, [](ValueReader val) {
        try {
          return parse_usd_per_gb_month(val.as_string());
        } catch (const InputError& e) {
          val.fail_message(e.message());
        }
      });
    }
    return s;
  });
}

FailureRateSpec read_failure_rate(ValueReader v, const FileReader& f) {
  return v.read_object([&](ObjectReader& o) {
    FailureRateSpec r;
    r.name = o.at("name").as_string();
    r.description = o.get_or("description", "");
    r.interruptions_per_gpu_hour = f.figure<double>(
        o.at("interruptions_per_gpu_hour"), [](ValueReader x) { return x.as_number({.min = 0, .max = 1}); });
    r.restart_time = f.duration(o.at("restart_time"));
    return r;
  });
}

template <class Map>
const typename Map::mapped_type& find_named(const Map& m, std::string_view name, std::string_view what) {
  auto it = m.find(name);
  if (it != m.end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [n, _] : m) names.push_back(n);
  std::string msg = "unknown " + std::string(what) + " '" + std::string(name) + "'";
  if (auto near = nearest_word(name, names)) {
    msg += "; did you mean '" + *near + "'?";
  } else {
    msg += "; known: ";
    for (std::size_t i = 0; i < names.size(); ++i) msg += (i ? ", " : "") + names[i];
  }
  throw InputError(msg);
}

}  // namespace

double parse_usd_per_gb_month(std::string_view text) {
  const std::string s(text);
  std::size_t pos = 0;
  double v = -1;
  try {
    v = std::stod(s, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos == 0 || s.substr(pos) != " USD/GB-month" || !std::isfinite(v) || v < 0) {
    throw InputError("expected a storage price such as '0.023 USD/GB-month', got '" + s + "'");
  }
  return v;
}

HourlyPrice parse_hourly_price(std::string_view text) {
  // "<number> <currency>/h", for example "55.04 USD/h".
  const std::string s(text);
  const auto slash = s.rfind("/h");
  const auto space = s.find(' ');
  auto fail = [&]() {
    return InputError("expected a price per hour such as '55.04 USD/h', got '" + s + "'");
  };
  if (slash == std::string::npos || slash + 2 != s.size() || space == std::string::npos || space > slash) throw fail();
  const std::string number = s.substr(0, space);
  const std::string currency = s.substr(space + 1, slash - space - 1);
  if (currency.size() != 3 || !std::all_of(currency.begin(), currency.end(), [](char ch) { return ch >= 'A' && ch <= 'Z'; })) {
    throw fail();
  }
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  if (end == number.c_str() || *end != '\0' || !std::isfinite(v) || v <= 0) throw fail();
  return HourlyPrice{.per_hour = v, .currency = currency, .source = ""};
}

std::string_view to_string(SourceKind k) {
  switch (k) {
    case SourceKind::DATASHEET: return "datasheet";
    case SourceKind::PUBLISHED_MEASUREMENT: return "published_measurement";
    case SourceKind::MEASURED_HERE: return "measured_here";
    case SourceKind::VENDOR_DOCUMENTATION: return "vendor_documentation";
    case SourceKind::PRICE_LIST: return "price_list";
    case SourceKind::ESTIMATE: return "estimate";
  }
  return "estimate";
}

std::string_view to_string(GpuFabric f) {
  switch (f) {
    case GpuFabric::NVSWITCH: return "nvswitch";
    case GpuFabric::NVLINK_MESH: return "nvlink_mesh";
    case GpuFabric::PCIE_ONLY: return "pcie_only";
  }
  return "pcie_only";
}

std::string_view to_string(FabricKind k) {
  switch (k) {
    case FabricKind::EFA: return "efa";
    case FabricKind::INFINIBAND: return "infiniband";
    case FabricKind::ROCE: return "roce";
    case FabricKind::ETHERNET: return "ethernet";
  }
  return "ethernet";
}

std::string_view to_string(NetworkTopologyKind k) {
  switch (k) {
    case NetworkTopologyKind::SINGLE_SWITCH: return "single_switch";
    case NetworkTopologyKind::LEAF_SPINE: return "leaf_spine";
    case NetworkTopologyKind::RAIL_OPTIMIZED: return "rail_optimized";
  }
  return "rail_optimized";
}

void Catalog::add_file(std::string_view file, std::string_view text, int layer) {
  inputs_.push_back(InputDigest{std::string(file), sha256_hex(text)});
  const JsonDocument doc = parse_json_text(text, std::string(file));
  doc.root().read_object([&](ObjectReader& top) {
    top.at("schema_version").as_int({.min = 1, .max = 1});
    std::map<std::string, Source, std::less<>> file_sources;
    if (auto s = top.maybe("sources")) {
      ObjectReader so = s->as_object();
      for (const auto& id : so.keys()) {
        Source src = so.at(id).read_object([&](ObjectReader& o) {
          Source x;
          x.id = id;
          x.kind = source_kind_from(o.at("kind").as_choice(kSourceKinds));
          x.title = o.at("title").as_string();
          x.url = o.get_or("url", "");
          x.date = o.at("date").as_string();
          return x;
        });
        file_sources[id] = src;
      }
    }
    const FileReader reader(file_sources);
    // An entry of the same kind and name may not appear twice in one layer; a later layer
    // (a user directory) replaces the earlier one by name.
    auto claim = [&](std::string_view kind, const std::string& name, const ValueReader& where) {
      const std::string key = std::string(kind) + "/" + name;
      auto it = origin_.find(key);
      if (it != origin_.end() && it->second.first == layer) {
        where.fail_message("duplicate " + std::string(kind) + " name '" + name + "' (also defined in " +
                           it->second.second + ")");
      }
      origin_[key] = {layer, std::string(file)};
    };
    for (const auto& [id, src] : file_sources) {
      auto it = sources_.find(id);
      const std::string key = "source/" + id;
      auto o = origin_.find(key);
      if (it != sources_.end() && o != origin_.end() && o->second.first == layer &&
          (it->second.title != src.title || it->second.date != src.date)) {
        throw InputError(std::string(file), "/sources/" + json_pointer_token(id),
                         "source id '" + id + "' is already defined differently in " + o->second.second);
      }
      origin_[key] = {layer, std::string(file)};
      sources_[id] = src;
    }
    // Each named kind: read every entry, claim its name in this layer, replace any earlier layer's.
    auto add_named = [&](std::string_view key, std::string_view kind, auto& map, auto read) {
      auto a = top.maybe(key);
      if (!a) return;
      for (auto& e : a->as_array()) {
        auto spec = read(e, reader);
        claim(kind, spec.name, e);
        std::string name = spec.name;
        map[name] = std::move(spec);
      }
    };
    add_named("gpus", "gpu", gpus_, read_gpu);
    add_named("systems", "system", systems_, read_system);
    add_named("instances", "instance", instances_, read_instance);
    add_named("fabrics", "fabric", fabrics_, read_fabric);
    add_named("storage", "storage", storage_, read_storage);
    add_named("failure_rates", "failure rate", failure_rates_, read_failure_rate);
    if (auto r = top.maybe("capacity_block_rules")) capacity_block_rules_ = read_block_rules(*r, reader);
    if (auto a = top.maybe("prices")) {
      for (auto& e : a->as_array()) {
        PriceEntry p = read_price(e, reader);
        claim("price", p.instance + "@" + p.region, e);
        std::erase_if(prices_, [&](const PriceEntry& q) { return q.instance == p.instance && q.region == p.region; });
        prices_.push_back(std::move(p));
      }
    }
  });
}

void Catalog::validate() const {
  // Cross references: the names each entry points at must exist, and layouts must be consistent.
  auto where = [&](std::string_view kind, const std::string& name) {
    auto it = origin_.find(std::string(kind) + "/" + name);
    return it == origin_.end() ? std::string("catalog") : it->second.second;
  };
  auto check_switches = [&](const std::vector<PcieSwitch>& sw, int gpus, int nics, const std::string& file,
                            const std::string& ptr) {
    std::vector<int> gpu_seen(static_cast<std::size_t>(gpus), 0), nic_seen(static_cast<std::size_t>(nics), 0);
    for (const auto& s : sw) {
      for (int g : s.gpus) {
        if (g >= gpus) throw InputError(file, ptr, "PCIe switch lists GPU " + std::to_string(g) + " of " + std::to_string(gpus));
        ++gpu_seen[static_cast<std::size_t>(g)];
      }
      for (int n : s.nics) {
        if (n >= nics) throw InputError(file, ptr, "PCIe switch lists NIC " + std::to_string(n) + " of " + std::to_string(nics));
        ++nic_seen[static_cast<std::size_t>(n)];
      }
    }
    for (int g = 0; g < gpus; ++g) {
      if (gpu_seen[static_cast<std::size_t>(g)] != 1) {
        throw InputError(file, ptr, "GPU " + std::to_string(g) + " must sit on exactly one PCIe switch");
      }
    }
    for (int n = 0; n < nics; ++n) {
      if (nic_seen[static_cast<std::size_t>(n)] != 1) {
        throw InputError(file, ptr, "NIC " + std::to_string(n) + " must sit on exactly one PCIe switch");
      }
    }
  };
  for (const auto& [name, s] : systems_) {
    try {
      (void)gpu(s.gpu);
    } catch (const InputError& e) {
      throw InputError(where("system", name), "system '" + name + "'/gpu", e.message());
    }
    check_switches(s.pcie_switches, s.gpu_count, 0, where("system", name), "system '" + name + "'/pcie_switches");
  }
  for (const auto& [name, inst] : instances_) {
    const std::string file = where("instance", name);
    try {
      const SystemSpec& sys = system(inst.system);
      if (!inst.gpu.empty()) (void)gpu(inst.gpu);
      (void)fabric(inst.network.fabric);
      check_switches(inst.pcie_switches, sys.gpu_count, inst.network.nics, file,
                     "instance '" + name + "'/pcie_switches");
    } catch (const InputError& e) {
      if (!e.file().empty()) throw;
      throw InputError(file, "instance '" + name + "'", e.message());
    }
  }
  for (const auto& p : prices_) {
    if (instances_.find(p.instance) == instances_.end()) {
      throw InputError(where("price", p.instance + "@" + p.region), "price for '" + p.instance + "'",
                       "no instance of that name in the catalog");
    }
  }
}

Catalog Catalog::from_files(std::span<const EmbeddedFile> files) {
  Catalog c;
  for (const auto& f : files) c.add_file(f.path, f.text, kBuiltinLayer);
  c.validate();
  return c;
}

Catalog Catalog::extended(std::span<const EmbeddedFile> files) const {
  Catalog c = *this;
  ++c.top_layer_;
  for (const auto& f : files) c.add_file(f.path, f.text, c.top_layer_);
  c.validate();
  return c;
}

Catalog Catalog::load(const std::vector<std::filesystem::path>& user_dirs) {
  namespace fs = std::filesystem;
  Catalog c;
  for (const auto& f : builtin_catalog_files()) c.add_file("hardware/catalog/" + std::string(f.path), f.text, kBuiltinLayer);
  int layer = kBuiltinLayer;
  for (const auto& dir : user_dirs) {
    ++layer;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      throw InputError(dir.string(), "", "catalog directory does not exist or is not a directory");
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& p : files) {
      std::ifstream in(p, std::ios::binary);
      std::ostringstream ss;
      ss << in.rdbuf();
      if (!in) throw InputError(p.string(), "", "cannot read catalog file");
      c.add_file(p.string(), ss.str(), layer);
    }
  }
  c.top_layer_ = layer;
  c.validate();
  return c;
}

std::vector<std::filesystem::path> Catalog::user_dirs_from_env(const std::vector<std::filesystem::path>& extra) {
  std::vector<std::filesystem::path> out;
  if (const char* env = std::getenv("CLUSTERSIM_CATALOG"); env != nullptr && *env != '\0') {
    std::string_view s(env);
    while (!s.empty()) {
      const auto colon = s.find(':');
      const auto part = s.substr(0, colon);
      if (!part.empty()) out.emplace_back(std::string(part));
      if (colon == std::string_view::npos) break;
      s.remove_prefix(colon + 1);
    }
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

std::string_view gpu_model_word(std::string_view driver_name) {
  if (driver_name.rfind("NVIDIA ", 0) == 0) driver_name.remove_prefix(7);
  return driver_name.substr(0, driver_name.find(' '));
}

const GpuSpec& Catalog::gpu(std::string_view name) const { return find_named(gpus_, name, "GPU"); }
const SystemSpec& Catalog::system(std::string_view name) const { return find_named(systems_, name, "system"); }
const InstanceSpec& Catalog::instance(std::string_view name) const {
  return find_named(instances_, name, "instance");
}
const FabricSpec& Catalog::fabric(std::string_view name) const { return find_named(fabrics_, name, "fabric"); }
const StorageSpec& Catalog::storage(std::string_view name) const { return find_named(storage_, name, "storage"); }
const FailureRateSpec& Catalog::failure_rate(std::string_view name) const {
  return find_named(failure_rates_, name, "failure rate");
}
const Source& Catalog::source(std::string_view id) const { return find_named(sources_, id, "source"); }

std::vector<PriceEntry> Catalog::prices(std::string_view instance) const {
  std::vector<PriceEntry> out;
  for (const auto& p : prices_) {
    if (p.instance == instance) out.push_back(p);
  }
  std::sort(out.begin(), out.end(), [](const PriceEntry& a, const PriceEntry& b) { return a.region < b.region; });
  return out;
}

std::vector<std::string> Catalog::machine_names() const {
  std::vector<std::string> out;
  for (const auto& [n, _] : systems_) out.push_back(n);
  for (const auto& [n, _] : instances_) out.push_back(n);
  return out;
}

Bandwidth NodeSpec::network_per_node() const {
  if (instance == nullptr) return Bandwidth{};
  return instance->network.nic_bandwidth.value * instance->network.nics;
}

Bandwidth NodeSpec::network_per_gpu() const { return network_per_node() / gpus(); }

NodeSpec resolve_node(const Catalog& catalog, std::string_view name) {
  NodeSpec n;
  n.name = std::string(name);
  if (catalog.has_instance(name)) {
    n.instance = &catalog.instance(name);
    n.system = &catalog.system(n.instance->system);
    n.gpu = &catalog.gpu(n.instance->gpu.empty() ? n.system->gpu : n.instance->gpu);
    n.fabric = &catalog.fabric(n.instance->network.fabric);
    n.pcie_switches = n.instance->pcie_switches;
    n.calibration = n.instance->calibration.empty() ? n.system->calibration : n.instance->calibration;
    return n;
  }
  if (catalog.has_system(name)) {
    n.system = &catalog.system(name);
    n.gpu = &catalog.gpu(n.system->gpu);
    n.pcie_switches = n.system->pcie_switches;
    n.calibration = n.system->calibration;
    return n;
  }
  const auto names = catalog.machine_names();
  std::string msg = "unknown system or instance '" + std::string(name) + "'";
  if (auto near = nearest_word(name, names)) {
    msg += "; did you mean '" + *near + "'?";
  } else {
    msg += "; known: ";
    for (std::size_t i = 0; i < names.size(); ++i) msg += (i ? ", " : "") + names[i];
  }
  throw InputError(msg);
}

}  // namespace clustersim::hardware
