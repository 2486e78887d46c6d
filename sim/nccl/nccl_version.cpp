#include "sim/nccl/nccl_version.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>

#include "hardware/embedded_file.hpp"
#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"

namespace clustersim::sim::nccl {

std::span<const EmbeddedFile> builtin_nccl_version_files();  // generated from sim/nccl/versions/*.json

std::string_view to_string(GpuArch a) {
  switch (a) {
    case GpuArch::VOLTA: return "volta";
    case GpuArch::AMPERE: return "ampere";
    case GpuArch::HOPPER: return "hopper";
    case GpuArch::BLACKWELL: return "blackwell";
  }
  return "?";
}

GpuArch arch_from_compute_capability(int cc) {
  if (cc >= 100) return GpuArch::BLACKWELL;
  if (cc >= 90) return GpuArch::HOPPER;
  if (cc >= 80) return GpuArch::AMPERE;
  return GpuArch::VOLTA;
}

namespace {

// A table written {"unit": "us" | "GB/s", "values": ...}: the unit must be the one NCCL's
// tables use (microseconds, GB/s); `fn` reads the values.
template <class Fn>
auto with_unit(const ValueReader& v, std::string_view unit, Fn fn) {
  return v.read_object([&](ObjectReader& o) {
    o.at("unit").as_choice({std::string(unit)});
    return fn(o.at("values"));
  });
}

std::array<double, kNumProtocols> proto_row(const ValueReader& v) {
  auto items = v.as_array(kNumProtocols, kNumProtocols);
  std::array<double, kNumProtocols> out{};
  for (int i = 0; i < kNumProtocols; ++i) out[i] = items[i].as_number({.min = 0});
  return out;
}

AlgoProtoTable algo_proto(const ValueReader& v) {
  return with_unit(v, "us", [](const ValueReader& values) {
    auto rows = values.as_array(kNumAlgorithms, kNumAlgorithms);
    AlgoProtoTable t{};
    for (int a = 0; a < kNumAlgorithms; ++a) t[a] = proto_row(rows[a]);
    return t;
  });
}

PerArchTable per_arch(const ValueReader& v) {
  return with_unit(v, "GB/s", [](const ValueReader& values) {
  PerArchTable t{};
  bool have[4] = {false, false, false, false};
  values.read_object([&](ObjectReader& o) {
    for (GpuArch a : {GpuArch::VOLTA, GpuArch::AMPERE, GpuArch::HOPPER, GpuArch::BLACKWELL}) {
      if (auto row = o.maybe(to_string(a))) {
        t[static_cast<int>(a)] = proto_row(*row);
        have[static_cast<int>(a)] = true;
      }
    }
  });
  if (!have[static_cast<int>(GpuArch::HOPPER)]) values.fail("a row for 'hopper'");
  // Releases before Blackwell have no row for it; NCCL of that age treats sm100 as Hopper.
  if (!have[static_cast<int>(GpuArch::BLACKWELL)]) t[3] = t[2];
  return t;
  });
}

std::map<std::string, std::vector<double>, std::less<>> ladders(ValueReader v) {
  std::map<std::string, std::vector<double>, std::less<>> out;
  v.read_object([&](ObjectReader& o) {
    for (const std::string& k : o.keys()) {
      std::vector<double> speeds;
      for (const auto& x : o.at(k).as_array(1)) speeds.push_back(x.as_number({.min = 0, .min_exclusive = true}));
      out[k] = std::move(speeds);
    }
  });
  if (out.find("default") == out.end()) v.fail("a ladder named 'default'");
  return out;
}

std::map<CollectiveOp, int> per_op_steps(ValueReader v) {
  std::map<CollectiveOp, int> out;
  v.read_object([&](ObjectReader& o) {
    for (CollectiveOp op : {CollectiveOp::ALL_REDUCE, CollectiveOp::ALL_GATHER, CollectiveOp::REDUCE_SCATTER,
                            CollectiveOp::BROADCAST, CollectiveOp::REDUCE}) {
      out[op] = static_cast<int>(o.at(to_string(op)).as_int({.min = 1, .max = 64}));
    }
  });
  return out;
}

template <class T>
std::array<T, kNumProtocols> per_proto(ValueReader v, auto get) {
  std::array<T, kNumProtocols> out{};
  v.read_object([&](ObjectReader& o) {
    for (Protocol p : kAllProtocols) out[static_cast<int>(p)] = get(o.at(to_string(p)));
  });
  return out;
}

}  // namespace

Bandwidth VersionTopology::nvlink_per_link(int cc) const {
  // topo.h ncclTopoNVLinkBw: sm100+, sm90+, sm86, sm80+, sm70+, sm60+, else the sm80 figure.
  const char* key = cc >= 100 ? "sm100" : cc >= 90 ? "sm90" : cc == 86 ? "sm86" : cc >= 80 ? "sm80" : cc >= 70 ? "sm70"
                    : cc >= 60 ? "sm60" : "sm80";
  auto it = nvlink_bw_per_link.find(key);
  if (it == nvlink_bw_per_link.end()) it = nvlink_bw_per_link.find("sm90");
  return it->second;
}

const std::vector<double>& VersionTopology::intra_speeds(int cc) const {
  if (cc >= 100) {
    if (auto it = speed_intra.find("sm100"); it != speed_intra.end()) return it->second;
  }
  if (cc >= 90) {
    if (auto it = speed_intra.find("sm90"); it != speed_intra.end()) return it->second;
  }
  return speed_intra.find("default")->second;
}

const std::vector<double>& VersionTopology::inter_speeds(int cc) const {
  if (cc >= 100) {
    if (auto it = speed_inter.find("sm100"); it != speed_inter.end()) return it->second;
  }
  if (cc >= 90) {
    if (auto it = speed_inter.find("sm90"); it != speed_inter.end()) return it->second;
  }
  return speed_inter.find("default")->second;
}

int VersionTopology::default_nvls_channels(int cc) const {
  if (cc >= 100) {
    if (auto it = nvls_channels.find("sm100"); it != nvls_channels.end()) return it->second;
  }
  auto it = nvls_channels.find("sm90");
  return it == nvls_channels.end() ? 16 : it->second;
}

int NcclVersion::major_minor_of(std::string_view release) {
  int major = 0, minor = 0;
  if (std::sscanf(std::string(release).c_str(), "%d.%d", &major, &minor) != 2) return 0;
  return major * 100 + minor;
}

std::string NcclVersion::unmodelled_variable_note(const std::string& var) const {
  if (variables.empty()) return var + " is not a variable this model knows (ignored)";
  if (std::find(variables.begin(), variables.end(), var) != variables.end()) {
    return var + ": NCCL " + name + " reads it, this model does not follow it (predicted as if unset)";
  }
  return var + " is not a variable NCCL " + name + " reads (ignored)";
}

NcclVersion NcclVersion::parse(std::string_view text, const std::string& file) {
  const JsonDocument doc = parse_json_text(text, file);
  NcclVersion v;
  doc.root().read_object([&](ObjectReader& o) {
    o.at("schema_version").as_int({.min = 1, .max = 1});
    v.name = o.at("name").as_string();
    for (const auto& a : o.at("aliases").as_array()) v.aliases.push_back(a.as_string());
    v.description = o.at("description").as_string();
    v.source = o.at("source").as_string();

    o.at("device").read_object([&](ObjectReader& d) {
      VersionDevice& dev = v.device;
      dev.max_channels = static_cast<int>(d.at("max_channels").as_int({.min = 1, .max = 1024}));
      dev.steps = static_cast<int>(d.at("steps").as_int({.min = 2, .max = 64}));
      dev.buffsize = per_proto<Bytes>(d.at("buffsize"), [](ValueReader x) { return x.as_bytes(Bytes::of(1)); });
      d.at("max_threads").read_object([&](ObjectReader& t) {
        for (Protocol p : kAllProtocols) {
          dev.max_threads[static_cast<int>(p)] = static_cast<int>(t.at(to_string(p)).as_int({.min = 32, .max = 4096}));
        }
        dev.max_threads_all = static_cast<int>(t.at("all").as_int({.min = 32, .max = 4096}));
      });
      dev.thread_threshold =
          per_proto<int>(d.at("thread_threshold"), [](ValueReader x) { return static_cast<int>(x.as_int({.min = 1})); });
      dev.chunk_steps = per_op_steps(d.at("chunk_steps"));
      dev.slice_steps = per_op_steps(d.at("slice_steps"));
      if (auto m = d.maybe("min_traffic_per_channel")) dev.min_traffic_per_channel = m->as_bytes(Bytes::of(1));
      else d.has("min_traffic_per_channel");
      d.at("p2p_chunk_size").read_object([&](ObjectReader& c) {
        dev.p2p_chunk_nvlink = c.at("nvlink").as_bytes(Bytes::of(1));
        dev.p2p_chunk_pci = c.at("pci").as_bytes(Bytes::of(1));
        dev.p2p_chunk_net = c.at("net").as_bytes(Bytes::of(1));
      });
      dev.p2p_ll_threshold = d.at("p2p_ll_threshold").as_bytes();
      if (auto m = d.maybe("nvls_chunk_size")) dev.nvls_chunk_size = m->as_bytes(Bytes::of(1));
      dev.nvls_chunk_size_param = d.get_or("nvls_chunk_size_param", false);
      dev.work_batch_colls = static_cast<int>(d.at("work_batch_colls").as_int({.min = 1}));
    });

    o.at("topology").read_object([&](ObjectReader& t) {
      VersionTopology& topo = v.topology;
      t.at("nvlink_bw_per_link").read_object([&](ObjectReader& n) {
        for (const std::string& k : n.keys()) topo.nvlink_bw_per_link[k] = n.at(k).as_bandwidth();
      });
      if (topo.nvlink_bw_per_link.find("sm90") == topo.nvlink_bw_per_link.end()) {
        t.at("nvlink_bw_per_link").fail("an entry 'sm90'");
      }
      topo.pci_gen3_x16 = t.at("pci_gen3_x16_bw").as_bandwidth();
      topo.speed_intra = ladders(t.at("speed_intra"));
      topo.speed_inter = ladders(t.at("speed_inter"));
      t.at("speed_unit").as_choice({"GB/s"});
      t.at("nvls_channels").read_object([&](ObjectReader& n) {
        for (const std::string& k : n.keys()) topo.nvls_channels[k] = static_cast<int>(n.at(k).as_int({.min = 1}));
      });
      topo.nvls_min_gpus = static_cast<int>(t.at("nvls_min_gpus").as_int({.min = 2}));
      topo.nvls_multi_node = t.at("nvls_multi_node").as_bool();
      topo.pat = t.at("pat").as_bool();
      topo.hopper_multinode_double =
          t.at("hopper_multinode_double").as_choice({"cc_eq_90_when_room", "cc_eq_90_below_16", "cc_ge_90_below_16"});
      topo.socket_default_speed = t.at("socket_default_speed").as_bandwidth();
      topo.socket_default_speed_source = t.at("socket_default_speed_source").as_string();
    });

    if (auto vars = o.maybe("variables")) {
      vars->read_object([&](ObjectReader& vr) {
        vr.at("source").as_string();  // required provenance; nothing reads it
        for (const auto& n : vr.at("names").as_array(1)) {
          const std::string name = n.as_string();
          if (name.rfind("NCCL_", 0) != 0) n.fail("an NCCL_* variable name");
          v.variables.push_back(name);
        }
      });
    }
    o.at("host").read_object([&](ObjectReader& h) {
      v.host.call_overhead = h.at("call_overhead").as_duration();
      v.host.source = h.at("source").as_string();
      v.host.group_comm_overhead = h.at("group_comm_overhead").as_duration();
      v.host.group_source = h.at("group_source").as_string();
    });

    o.at("tuner").read_object([&](ObjectReader& t) {
      VersionTuner& tu = v.tuner;
      tu.base_latency_us = algo_proto(t.at("base_latency"));
      t.at("hw_latency").read_object([&](ObjectReader& h) {
        tu.hw_latency_us[static_cast<int>(HwClass::NVLINK)] = algo_proto(h.at("nvlink"));
        tu.hw_latency_us[static_cast<int>(HwClass::PCI)] = algo_proto(h.at("pci"));
        tu.hw_latency_us[static_cast<int>(HwClass::NET)] = algo_proto(h.at("net"));
      });
      tu.ll_max_bw = per_arch(t.at("ll_max_bw"));
      tu.per_ch_max_ring_ll128_bw = per_arch(t.at("per_channel_max_ring_ll128_bw"));
      tu.per_ch_max_tree_ll128_bw = per_arch(t.at("per_channel_max_tree_ll128_bw"));
      tu.per_ch_max_tree_bw = per_arch(t.at("per_channel_max_tree_bw"));
      if (auto m = t.maybe("per_channel_max_nvls_tree_bw")) tu.per_ch_max_nvls_tree_bw = per_arch(*m);
      if (auto m = t.maybe("nvls_efficiency")) {
        std::array<double, 4> e{};
        m->read_object([&](ObjectReader& n) {
          for (GpuArch a : {GpuArch::VOLTA, GpuArch::AMPERE, GpuArch::HOPPER, GpuArch::BLACKWELL}) {
            e[static_cast<int>(a)] = n.at(to_string(a)).as_number({.min = 0, .max = 1});
          }
        });
        tu.nvls_efficiency = e;
      }
      auto rows = t.at("tree_correction").as_array(kNumProtocols, kNumProtocols);
      for (int p = 0; p < kNumProtocols; ++p) {
        auto items = rows[p].as_array(23, 23);
        for (int i = 0; i < 23; ++i) tu.tree_correction[p][i] = items[i].as_number({.min = 0, .max = 1});
      }
      t.at("ring_ll_factor").read_object([&](ObjectReader& f) {
        tu.ring_ll_factor_allreduce = f.at("allreduce_reduce_or_multinode").as_number({.min = 0, .max = 1});
        tu.ring_ll_factor_other = f.at("other").as_number({.min = 0, .max = 1});
      });
      t.at("ring_ll128_factor").read_object([&](ObjectReader& f) {
        tu.ring_ll128_factor = f.at("default").as_number({.min = 0, .max = 1});
        tu.ring_ll128_factor_ppn1 = f.at("one_gpu_per_node").as_number({.min = 0, .max = 1});
      });
      tu.tree_allreduce_only = t.at("tree_allreduce_only").as_bool();
      tu.ppn1_uses_tree_net_latency = t.at("ppn1_uses_tree_net_latency").as_bool();
      tu.bandwidth_model = t.at("bandwidth_model").as_choice({"2.18", "2.20", "2.26", "2.28"});
      tu.latency_model = t.at("latency_model").as_choice({"2.18", "2.20", "2.26"});
      t.at("ring_plateau").read_object([&](ObjectReader& f) {
        tu.ring_plateau_before_sm80 = f.at("before_sm80").as_number({.min = 1});
        tu.ring_plateau_sm80 = f.at("sm80_and_later").as_number({.min = 1});
      });
      with_unit(t.at("net_overhead"), "us", [&](const ValueReader& values) {
        values.read_object([&](ObjectReader& n) {
          tu.net_overhead_intel_us = n.at("intel").as_number({.min = 0});
          tu.net_overhead_amd_us = n.at("amd").as_number({.min = 0});
          tu.net_overhead_other_us = n.at("other").as_number({.min = 0});
        });
        return 0;
      });
      tu.net_overhead_simple_factor = t.at("net_overhead_simple_factor").as_number({.min = 1});
      tu.collnet_arity_latency_us = t.at("collnet_arity_latency").as_duration().microseconds();
      if (auto m = t.maybe("pat_per_rank_latency")) tu.pat_per_rank_latency_us = m->as_duration().microseconds();
      if (auto m = t.maybe("pat_bandwidth_factor")) tu.pat_bandwidth_factor = m->as_number({.min = 0, .max = 1});
      tu.no_algorithm_fallback = t.at("no_algorithm_fallback").as_choice({"none", "ring"});
      tu.collnet_request_fallback = t.at("collnet_request_fallback").as_bool();
    });
  });
  if (v.tuner.bandwidth_model == "2.28" && (!v.tuner.nvls_efficiency || !v.tuner.per_ch_max_nvls_tree_bw)) {
    throw InputError(file, "/tuner", "bandwidth_model 2.28 needs nvls_efficiency and per_channel_max_nvls_tree_bw");
  }
  return v;
}

namespace {

// Every built-in table, parsed.
std::vector<NcclVersion> builtin_tables() {
  std::vector<NcclVersion> out;
  for (const auto& f : builtin_nccl_version_files()) {
    out.push_back(NcclVersion::parse(f.text, "sim/nccl/versions/" + std::string(f.path)));
  }
  // Release order (2.9.x before 2.18.x): by major.minor, then patch.
  auto patch = [](const std::string& n) { return std::atoi(n.substr(n.rfind('.') + 1).c_str()); };
  std::sort(out.begin(), out.end(), [&](const NcclVersion& a, const NcclVersion& b) {
    const int ma = NcclVersion::major_minor_of(a.name), mb = NcclVersion::major_minor_of(b.name);
    return ma != mb ? ma < mb : patch(a.name) < patch(b.name);
  });
  return out;
}

// "2.18.5 (2.18), 2.20.5 (2.20), ..., 2.28.7, 2.28.9 (2.28)": each table with the aliases that name it.
std::string known_releases(const std::vector<NcclVersion>& tables) {
  std::string out;
  for (const auto& v : tables) {
    out += (out.empty() ? "" : ", ") + v.name;
    std::string aliases;
    for (const auto& a : v.aliases) aliases += (aliases.empty() ? "" : ", ") + a;
    if (!aliases.empty()) out += " (" + aliases + ")";
  }
  return out;
}

const NcclVersion* named(const std::vector<NcclVersion>& tables, std::string_view name) {
  for (const auto& v : tables) {
    if (v.name == name || std::find(v.aliases.begin(), v.aliases.end(), name) != v.aliases.end()) return &v;
  }
  return nullptr;
}

}  // namespace

NcclVersion NcclVersion::builtin(std::string_view name) {
  const std::vector<NcclVersion> tables = builtin_tables();
  if (const NcclVersion* v = named(tables, name)) return *v;
  throw InputError("unknown NCCL version '" + std::string(name) + "'; expected one of the known releases: " +
                   known_releases(tables));
}

std::vector<std::pair<std::string, std::string>> NcclVersion::builtin_list() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& f : builtin_nccl_version_files()) {
    NcclVersion v = parse(f.text, "sim/nccl/versions/" + std::string(f.path));
    out.emplace_back(v.name, v.description);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace clustersim::sim::nccl
