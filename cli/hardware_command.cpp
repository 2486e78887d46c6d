// clustersim hardware list | show NAME: the catalog and the figures derived from it.

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli/app.hpp"
#include "hardware/catalog.hpp"
#include "reports/text_table.hpp"

namespace clustersim::cli {

namespace {

using hardware::Catalog;
using hardware::NodeSpec;
using reports::TextTable;
using Align = TextTable::Align;

std::string gbps(Bandwidth b) { return format_significant(b.gigabytes_per_second(), 4) + " GB/s"; }

// The cheapest on-demand price per GPU-hour, or "-" where none is known.
std::string price_per_gpu_hour(const Catalog& c, const NodeSpec& n) {
  if (n.instance == nullptr) return "-";
  for (const auto& p : c.prices(n.name)) {
    if (p.on_demand) return format_significant(p.on_demand->per_hour / n.gpus(), 4) + " " + p.on_demand->currency;
    if (p.capacity_block) {
      return format_significant(p.capacity_block->per_hour / n.gpus(), 4) + " " + p.capacity_block->currency + " (CB)";
    }
  }
  return "-";
}

nlohmann::json price_json(const Catalog& c, const hardware::HourlyPrice& h, int gpus) {
  const auto& src = c.source(h.source);
  return {{"per_hour", h.per_hour},
          {"per_gpu_hour", h.per_hour / gpus},
          {"currency", h.currency},
          {"date", src.date},
          {"source", h.source}};
}

nlohmann::json node_json(const Catalog& c, const NodeSpec& n, std::set<std::string>& sources) {
  const auto& g = *n.gpu;
  auto fig = [&](const auto& f) {
    sources.insert(f.source);
    return f.source;
  };
  nlohmann::json j;
  j["schema_version"] = 1;
  j["name"] = n.name;
  j["kind"] = n.instance ? "instance" : "system";
  if (n.instance) {
    j["provider"] = n.instance->provider;
    j["description"] = n.instance->description;
    j["vcpus"] = n.instance->vcpus;
    j["virtualized"] = n.instance->virtualized;
  } else {
    j["description"] = n.system->description;
  }
  j["system"] = n.system->name;
  j["gpu"] = {{"model", g.name},
              {"count", n.gpus()},
              {"architecture", g.architecture},
              {"peak_bf16_tflops", g.peak_bf16.value.teraflops()},
              {"peak_bf16_source", fig(g.peak_bf16)},
              {"hbm_bytes", g.hbm_capacity.value.count()},
              {"hbm_usable_bytes", g.hbm_usable.value.count()},
              {"hbm_bandwidth_GBps", g.hbm_bandwidth.value.gigabytes_per_second()},
              {"hbm_source", fig(g.hbm_capacity)}};
  if (g.peak_fp8) j["gpu"]["peak_fp8_tflops"] = g.peak_fp8->value.teraflops();
  const auto& ic = n.system->interconnect;
  j["nvlink"] = {{"generation", g.nvlink.generation},
                 {"links_per_gpu", g.nvlink.links},
                 {"link_GBps_per_direction", g.nvlink.link_bandwidth.value.gigabytes_per_second()},
                 {"per_gpu_GBps_per_direction", n.nvlink_per_gpu().gigabytes_per_second()},
                 {"fabric", std::string(hardware::to_string(ic.kind))},
                 {"nvswitch_generation", ic.nvswitch_generation},
                 {"nvswitch_chips", ic.nvswitch_chips},
                 {"source", fig(g.nvlink.link_bandwidth)}};
  if (n.instance) {
    const auto& net = n.instance->network;
    j["network"] = {{"fabric", net.fabric},
                    {"kind", std::string(hardware::to_string(n.fabric->kind))},
                    {"nccl_net", n.fabric->nccl_net},
                    {"nics", net.nics},
                    {"nic_Gbps", net.nic_bandwidth.value.gigabits_per_second()},
                    {"per_node_Gbps", n.network_per_node().gigabits_per_second()},
                    {"per_node_GBps", n.network_per_node().gigabytes_per_second()},
                    {"per_gpu_GBps", n.network_per_gpu().gigabytes_per_second()},
                    {"nics_per_gpu", static_cast<double>(net.nics) / n.gpus()},
                    {"gpudirect_rdma", net.gpudirect_rdma},
                    {"topology", std::string(hardware::to_string(net.topology.kind))},
                    {"oversubscription", net.topology.oversubscription},
                    {"source", fig(net.nic_bandwidth)}};
    nlohmann::json prices = nlohmann::json::array();
    for (const auto& p : c.prices(n.name)) {
      nlohmann::json options = nlohmann::json::object();
      auto add = [&](const char* key, const std::optional<hardware::HourlyPrice>& h) {
        if (!h) return;
        options[key] = price_json(c, *h, n.gpus());
        sources.insert(h->source);
      };
      add("on_demand", p.on_demand);
      add("capacity_block", p.capacity_block);
      add("savings_plan_1yr", p.savings_plan_1yr);
      add("savings_plan_3yr", p.savings_plan_3yr);
      add("spot", p.spot);
      prices.push_back({{"region", p.region}, {"options", options}});
    }
    j["prices"] = prices;
  }
  const auto& h = n.host();
  j["host"] = {{"cpu", h.cpu},
               {"sockets", h.sockets},
               {"cores", h.cores},
               {"memory_bytes", h.memory.value.count()},
               {"memory_bandwidth_per_socket_GBps", h.memory_bandwidth_per_socket.value.gigabytes_per_second()},
               {"pcie_switch_uplink_GBps", n.pcie_switch_uplink().value.gigabytes_per_second()},
               {"pcie_switches", n.pcie_switches.size()},
               {"source", fig(h.memory_bandwidth_per_socket)}};
  nlohmann::json sw = nlohmann::json::array();
  for (const auto& s : n.pcie_switches) sw.push_back({{"numa_node", s.numa_node}, {"gpus", s.gpus}, {"nics", s.nics}});
  j["host"]["pcie_layout"] = sw;
  j["calibration"] = n.calibration.empty() ? nlohmann::json(nullptr) : nlohmann::json(n.calibration);
  return j;
}

void list_table(Context& ctx) {
  const Catalog& c = ctx.catalog();
  std::ostream& out = ctx.out;
  TextTable sys({"NAME", "KIND", "GPU", "GPUS", "NVLINK/GPU/DIR", "NETWORK/NODE", "NET/GPU", "$/GPU-H"},
                {Align::LEFT, Align::LEFT, Align::LEFT, Align::RIGHT, Align::RIGHT, Align::LEFT, Align::RIGHT,
                 Align::RIGHT});
  for (const auto& name : c.machine_names()) {
    const NodeSpec n = hardware::resolve_node(c, name);
    std::string net = "-", per_gpu = "-";
    if (n.instance) {
      const auto& nw = n.instance->network;
      net = std::to_string(nw.nics) + "x " + format_bandwidth_bits(nw.nic_bandwidth.value) + " " + nw.fabric;
      per_gpu = gbps(n.network_per_gpu());
    }
    sys.add_row({name, n.instance ? "instance" : "system", n.gpu->name, std::to_string(n.gpus()),
                 gbps(n.nvlink_per_gpu()), net, per_gpu, price_per_gpu_hour(c, n)});
  }
  out << "Systems and instances\n";
  sys.write(out, "  ");
  TextTable gpus({"GPU", "BF16", "FP8", "HBM", "HBM BW", "NVLINK"},
                 {Align::LEFT, Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::RIGHT, Align::LEFT});
  for (const auto& [name, g] : c.gpus()) {
    gpus.add_row({name, format_flop_rate(g.peak_bf16.value), g.peak_fp8 ? format_flop_rate(g.peak_fp8->value) : "-",
                  format_bytes(g.hbm_capacity.value, Prefix::DECIMAL) + " " + g.hbm_type,
                  format_bandwidth(g.hbm_bandwidth.value),
                  "gen" + std::to_string(g.nvlink.generation) + " x" + std::to_string(g.nvlink.links)});
  }
  out << "\nGPUs\n";
  gpus.write(out, "  ");
  TextTable fab({"FABRIC", "KIND", "NCCL NET", "GDR", "NIC LATENCY", "NOTE"});
  for (const auto& [name, f] : c.fabrics()) {
    fab.add_row({name, std::string(hardware::to_string(f.kind)), f.nccl_net, f.supports_gpudirect_rdma ? "yes" : "no",
                 format_duration(f.nic_latency.value), f.forces_simple_protocol ? "forces Simple protocol" : ""});
  }
  out << "\nFabrics\n";
  fab.write(out, "  ");
}

nlohmann::json list_json(Context& ctx) {
  const Catalog& c = ctx.catalog();
  nlohmann::json j;
  j["schema_version"] = 1;
  j["gpus"] = nlohmann::json::array();
  for (const auto& [name, g] : c.gpus()) {
    j["gpus"].push_back({{"name", name},
                         {"peak_bf16_tflops", g.peak_bf16.value.teraflops()},
                         {"hbm_bytes", g.hbm_capacity.value.count()},
                         {"hbm_bandwidth_GBps", g.hbm_bandwidth.value.gigabytes_per_second()},
                         {"nvlink_per_direction_GBps", g.nvlink.per_direction().gigabytes_per_second()}});
  }
  auto machines = [&](bool instances) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& name : c.machine_names()) {
      const NodeSpec n = hardware::resolve_node(c, name);
      if ((n.instance != nullptr) != instances) continue;
      nlohmann::json e{{"name", name},
                       {"gpu", n.gpu->name},
                       {"gpus", n.gpus()},
                       {"nvlink_per_gpu_GBps_per_direction", n.nvlink_per_gpu().gigabytes_per_second()}};
      if (n.instance) {
        e["provider"] = n.instance->provider;
        e["fabric"] = n.instance->network.fabric;
        e["network_per_node_Gbps"] = n.network_per_node().gigabits_per_second();
      } else {
        e["nvswitch_generation"] = n.system->interconnect.nvswitch_generation;
      }
      a.push_back(e);
    }
    return a;
  };
  j["systems"] = machines(false);
  j["instances"] = machines(true);
  j["fabrics"] = nlohmann::json::array();
  for (const auto& [name, f] : c.fabrics()) {
    j["fabrics"].push_back({{"name", name},
                            {"kind", std::string(hardware::to_string(f.kind))},
                            {"nccl_net", f.nccl_net},
                            {"forces_simple_protocol", f.forces_simple_protocol}});
  }
  return j;
}

void show_table(Context& ctx, const NodeSpec& n, const nlohmann::json& j) {
  std::ostream& out = ctx.out;
  const Catalog& c = ctx.catalog();
  out << n.name << " (" << (n.instance ? "instance" : "system") << ")";
  if (n.instance) out << ": " << n.instance->description;
  out << "\n\n";
  TextTable t({"FIGURE", "VALUE", "SOURCE"});
  const auto& g = *n.gpu;
  auto src = [&](const std::string& id) {
    const auto& s = c.source(id);
    return id + " (" + std::string(hardware::to_string(s.kind)) + ", " + s.date + ")";
  };
  t.add_row({"GPU", std::to_string(n.gpus()) + "x " + g.name, ""});
  t.add_row({"peak bf16 per GPU", format_flop_rate(g.peak_bf16.value), src(g.peak_bf16.source)});
  t.add_row({"HBM per GPU", format_bytes(g.hbm_capacity.value, Prefix::DECIMAL) + " " + g.hbm_type + ", " +
                                format_bandwidth(g.hbm_bandwidth.value),
             src(g.hbm_capacity.source)});
  t.add_row({"NVLink per GPU, per direction",
             std::to_string(g.nvlink.links) + " x " + format_bandwidth(g.nvlink.link_bandwidth.value) + " = " +
                 gbps(n.nvlink_per_gpu()),
             src(g.nvlink.link_bandwidth.source)});
  const auto& ic = n.system->interconnect;
  if (ic.kind == hardware::GpuFabric::NVSWITCH) {
    t.add_row({"NVSwitch", "gen" + std::to_string(ic.nvswitch_generation) + ", " + std::to_string(ic.nvswitch_chips) +
                               " chips" + (ic.fabric_manager_required ? ", needs fabric manager" : ""),
               ""});
  }
  if (n.instance) {
    const auto& nw = n.instance->network;
    t.add_row({"network", std::to_string(nw.nics) + " x " + format_bandwidth_bits(nw.nic_bandwidth.value) + " " +
                              nw.fabric + (nw.gpudirect_rdma ? ", GPUDirect RDMA" : ""),
               src(nw.nic_bandwidth.source)});
    t.add_row({"network per node", format_bandwidth_bits(n.network_per_node()) + " = " + gbps(n.network_per_node()), ""});
    t.add_row({"network per GPU", gbps(n.network_per_gpu()), ""});
    t.add_row({"NCCL net plugin", n.fabric->nccl_net + (n.fabric->forces_simple_protocol ? " (forces Simple)" : ""), ""});
  }
  const auto& h = n.host();
  t.add_row({"host", h.cpu + ", " + format_bytes(h.memory.value), src(h.memory.source)});
  t.add_row({"PCIe switch uplink", gbps(n.pcie_switch_uplink().value), src(n.pcie_switch_uplink().source)});
  t.add_row({"calibration profile", n.calibration.empty() ? "none" : n.calibration, ""});
  t.write(out);
  if (n.instance) {
    out << "\nPrices\n";
    TextTable p({"REGION", "OPTION", "$/HOUR", "$/GPU-HOUR", "DATE", "SOURCE"},
                {Align::LEFT, Align::LEFT, Align::RIGHT, Align::RIGHT, Align::LEFT, Align::LEFT});
    for (const auto& pr : j["prices"]) {
      for (const auto& [opt, v] : pr["options"].items()) {
        p.add_row({pr["region"].get<std::string>(), opt, format_significant(v["per_hour"].get<double>(), 6),
                   format_significant(v["per_gpu_hour"].get<double>(), 4), v["date"].get<std::string>(),
                   v["source"].get<std::string>()});
      }
    }
    if (p.rows() == 0) {
      out << "  none in the catalog\n";
    } else {
      p.write(out, "  ");
    }
  }
}

}  // namespace

void add_hardware_command(CLI::App& app, Context& ctx) {
  auto* hw = app.add_subcommand("hardware", "Show the hardware catalog: GPUs, systems, instances, fabrics, prices");
  hw->require_subcommand(1);
  auto format = std::make_shared<std::string>("table");

  auto* list = hw->add_subcommand("list", "List systems, instances, GPUs and fabrics");
  list->add_option("--format", *format, "table or json")->check(CLI::IsMember({"table", "json"}));
  list->callback([&ctx, format]() {
    if (*format == "json") {
      ctx.out << list_json(ctx).dump(2) << '\n';
    } else {
      list_table(ctx);
    }
  });

  auto* show = hw->add_subcommand("show", "Show one system or instance with derived figures and prices");
  auto name = std::make_shared<std::string>();
  show->add_option("NAME", *name, "System or instance name (see 'hardware list')")->required();
  show->add_option("--format", *format, "table or json")->check(CLI::IsMember({"table", "json"}));
  show->callback([&ctx, format, name]() {
    const NodeSpec n = hardware::resolve_node(ctx.catalog(), *name);
    std::set<std::string> sources;
    nlohmann::json j = node_json(ctx.catalog(), n, sources);
    nlohmann::json src = nlohmann::json::object();
    for (const auto& id : sources) {
      const auto& s = ctx.catalog().source(id);
      src[id] = {{"kind", std::string(hardware::to_string(s.kind))}, {"title", s.title}, {"date", s.date}, {"url", s.url}};
    }
    j["sources"] = src;
    if (*format == "json") {
      ctx.out << j.dump(2) << '\n';
    } else {
      show_table(ctx, n, j);
    }
  });
}

}  // namespace clustersim::cli
