// The "environment" section: what machine the numbers come from. GPUs and versions from the CUDA
// runtime and NCCL, links and the fabric manager from NVML (loaded with dlopen), PCIe placement and
// NICs from sysfs, the instance type from DMI or the EC2 metadata service (1 s timeout, never an
// error). Every probe that fails leaves its field empty and, where it matters, a warning.
//
// Fabric manager (seed 004): on an NVSwitch board the GPUs reach each other over NVLink only once
// nvidia-fabricmanager has programmed the switches; without it CUDA reports "system not yet
// initialized" or NCCL falls back to slower paths. Evidence, strongest first: NVML's GPU fabric
// state (completed / not started / in progress); CUDA error 802 at start-up; NVLink links whose
// far end is an NVSwitch being active or not; an nv-fabricmanager process visible on this host.

#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "calibrate/harness/cuda_checks.hpp"
#include "calibrate/harness/harness_json_writer.hpp"
#include "calibrate/harness/nccl_comm.hpp"
#include "calibrate/harness/nvml_dynamic.hpp"
#include "calibrate/harness/worker_context.hpp"

extern char** environ;

namespace clustersim::harness {

namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) return "";
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string link_basename(const std::string& path) {
  char buf[4096] = {};
  const ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string s(buf, static_cast<std::size_t>(n));
  const auto slash = s.rfind('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// One HTTP exchange with the EC2 metadata service; "" on any failure. Bounded by timeout_ms for the
// connection and for the answer.
std::string imds_request(const std::string& request, int timeout_ms) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(80);
  inet_pton(AF_INET, "169.254.169.254", &addr.sin_addr);
  std::string reply;
  const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  bool connected = rc == 0;
  if (!connected && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, timeout_ms) == 1) {
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      connected = err == 0;
    }
  }
  if (connected && ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    char buf[2048];
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) != 1) continue;
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      reply.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  if (reply.rfind("HTTP/1.1 200", 0) != 0 && reply.rfind("HTTP/1.0 200", 0) != 0) return "";
  const auto body = reply.find("\r\n\r\n");
  return body == std::string::npos ? "" : reply.substr(body + 4);
}

// The instance type: DMI names it on EC2 Nitro instances; otherwise IMDSv2 (token, then query).
std::pair<std::string, std::string> instance_type() {
  const std::string vendor = read_first_line("/sys/devices/virtual/dmi/id/sys_vendor");
  const std::string product = read_first_line("/sys/devices/virtual/dmi/id/product_name");
  if (vendor.find("Amazon") != std::string::npos && !product.empty() && product.find('.') != std::string::npos) {
    return {product, "dmi"};
  }
  const std::string token = imds_request(
      "PUT /latest/api/token HTTP/1.1\r\nHost: 169.254.169.254\r\nX-aws-ec2-metadata-token-ttl-seconds: 60\r\n"
      "Content-Length: 0\r\nConnection: close\r\n\r\n",
      1000);
  if (token.empty()) return {"", ""};
  const std::string type = imds_request("GET /latest/meta-data/instance-type HTTP/1.1\r\nHost: 169.254.169.254\r\n"
                                        "X-aws-ec2-metadata-token: " + token + "\r\nConnection: close\r\n\r\n",
                                        1000);
  return {type, type.empty() ? "" : "imds"};
}

bool process_running(const std::string& comm) {
  for (const auto& pid : list_dir("/proc")) {
    if (pid.empty() || !std::isdigit(static_cast<unsigned char>(pid[0]))) continue;
    if (read_first_line("/proc/" + pid + "/comm") == comm) return true;
  }
  return false;
}

struct GpuFacts {
  int cuda_index = 0;
  std::string name;
  std::string bus_id;  // lower case, "0000:18:00.0"
  std::optional<Nvml::Device> nvml;
};

}  // namespace

void run_environment(WorkerContext& ctx) {
  std::vector<std::string> warnings;
  JsonWriter w;
  w.begin_object();
  w.field("hostname", ctx.hostname).field("date", utc_now());

  // CUDA: a failure here is itself a fact (error 802 is the fabric manager's absence).
  int count = 0;
  const cudaError_t count_rc = cudaGetDeviceCount(&count);
  int runtime = 0, driver_api = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver_api);
  bool cuda_not_ready = false;
  if (count_rc != cudaSuccess) {
    cuda_not_ready = count_rc == cudaErrorSystemNotReady;
    warnings.push_back(std::string("CUDA cannot see the GPUs: ") + cudaGetErrorString(count_rc) +
                       (cuda_not_ready ? " (on an NVSwitch system this means nvidia-fabricmanager is not running)" : ""));
    count = 0;
  }

  Nvml nvml;
  if (!nvml.loaded()) warnings.push_back("NVML unavailable (" + nvml.error() + "): no NVLink, PCIe or fabric facts");

  std::vector<GpuFacts> gpus;
  for (const int d : ctx.devices) {
    if (d >= count) continue;
    GpuFacts g;
    g.cuda_index = d;
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) == cudaSuccess) g.name = prop.name;
    char bus[64] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), d) == cudaSuccess) g.bus_id = lower(bus);
    if (!g.bus_id.empty()) g.nvml = nvml.device_by_bus_id(g.bus_id);
    gpus.push_back(g);
  }

  w.field("gpu_name", gpus.empty() ? std::string() : gpus.front().name)
      .field("gpu_count", static_cast<int>(gpus.size()));
  if (auto v = nvml.driver_version()) {
    w.field("driver", *v);
  } else {
    const std::string proc = read_first_line("/proc/driver/nvidia/version");
    w.field("driver", proc.empty() ? "unknown" : proc);
  }
  w.field("cuda_runtime", version_text(runtime)).field("cuda_driver_api", version_text(driver_api));
  w.field("nccl_version", nccl_runtime_version()).field("nccl_headers", std::to_string(NCCL_VERSION_CODE));

  // Every NCCL_* variable in effect, and the other variables that steer the transports.
  std::map<std::string, std::string> nccl_env, other_env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = kv.substr(0, eq);
    if (k.rfind("NCCL_", 0) == 0) {
      nccl_env[k] = kv.substr(eq + 1);
    } else if (k.rfind("FI_", 0) == 0 || k.rfind("CUDA_", 0) == 0 || k == "TORCH_SYMM_MEM_DISABLE_MULTICAST" ||
               k.rfind("NVSHMEM_", 0) == 0 || k == "OMP_NUM_THREADS" || k.rfind("OMPI_", 0) == 0) {
      other_env[k] = kv.substr(eq + 1);
    }
  }
  w.key("nccl_env").begin_object();
  for (const auto& [k, v] : nccl_env) w.field(k, v);
  w.end_object();
  w.key("other_env").begin_object();
  for (const auto& [k, v] : other_env) w.field(k, v);
  w.end_object();
  if (nccl_env.count("NCCL_P2P_DISABLE") && nccl_env["NCCL_P2P_DISABLE"] != "0") {
    warnings.push_back("NCCL_P2P_DISABLE is set: GPUs of one node talk through host memory");
  }

  const auto [itype, isource] = instance_type();
  if (itype.empty()) {
    w.field_null("instance_type");
  } else {
    w.field("instance_type", itype).field("instance_type_source", isource);
  }

  // Per GPU: CUDA facts, clocks and power as found (read only), PCIe placement.
  w.key("gpus").begin_array();
  for (const auto& g : gpus) {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, g.cuda_index);
    w.begin_object()
        .field("index", g.cuda_index)
        .field("name", g.name)
        .field("bus_id", g.bus_id)
        .field("memory_bytes", static_cast<std::int64_t>(prop.totalGlobalMem))
        .field("compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor))
        .field("multiprocessors", prop.multiProcessorCount)
        .field("l2_bytes", prop.l2CacheSize);
    if (g.nvml) {
      if (auto v = nvml.max_sm_clock_mhz(*g.nvml)) w.field("max_sm_clock_MHz", *v);
      if (auto v = nvml.sm_clock_mhz(*g.nvml)) w.field("sm_clock_MHz", *v);
      if (auto v = nvml.power_limit_mw(*g.nvml)) w.field("power_limit_W", *v / 1000.0);
    }
    w.end_object();
  }
  w.end_array();

  w.key("pcie").begin_array();
  for (const auto& g : gpus) {
    const std::string dir = "/sys/bus/pci/devices/" + g.bus_id;
    w.begin_object().field("gpu", g.cuda_index).field("bus_id", g.bus_id);
    const std::string numa = read_first_line(dir + "/numa_node");
    if (!numa.empty()) {
      w.field("numa_node", std::atoi(numa.c_str()));
    } else {
      w.field_null("numa_node");
    }
    if (g.nvml) {
      if (auto v = nvml.pcie_generation(*g.nvml, false)) w.field("gen", *v);
      if (auto v = nvml.pcie_width(*g.nvml, false)) w.field("width", *v);
      if (auto v = nvml.pcie_generation(*g.nvml, true)) w.field("max_gen", *v);
      if (auto v = nvml.pcie_width(*g.nvml, true)) w.field("max_width", *v);
    }
    const std::string speed = read_first_line(dir + "/current_link_speed");
    if (!speed.empty()) w.field("sysfs_link_speed", speed);
    const std::string cpus = read_first_line(dir + "/local_cpulist");
    if (!cpus.empty()) w.field("local_cpus", cpus);
    w.end_object();
  }
  w.end_array();

  // NVLink: per GPU, links to NVSwitches; per pair, direct links.
  std::map<std::string, int> gpu_by_bus;
  for (const auto& g : gpus) gpu_by_bus[g.bus_id] = g.cuda_index;
  int switch_links_active = 0, switch_links_total = 0, any_links = 0;
  w.key("nvlink").begin_array();
  for (const auto& g : gpus) {
    if (!g.nvml) continue;
    const auto speed = nvml.nvlink_speed_mbps(*g.nvml);
    std::map<int, int> per_peer;
    int to_switch = 0, to_switch_active = 0, active = 0, total = 0;
    std::optional<unsigned> version;
    for (unsigned link = 0; link < 64; ++link) {
      const auto l = nvml.nvlink(*g.nvml, link);
      if (!l) {
        if (link >= 18) break;  // past the last link (NVML answers an error there)
        continue;
      }
      ++total;
      if (l->active) ++active;
      if (l->version) version = l->version;
      const bool remote_switch = l->remote_type && *l->remote_type == 2;
      int peer = -1;
      if (l->remote_bus_id) {
        auto it = gpu_by_bus.find(lower(*l->remote_bus_id));
        if (it != gpu_by_bus.end()) peer = it->second;
      }
      if (peer >= 0 && l->active) {
        ++per_peer[peer];
      } else if (remote_switch || (l->remote_bus_id && peer < 0)) {
        ++to_switch;
        if (l->active) ++to_switch_active;
      }
    }
    any_links += total;
    switch_links_total += to_switch;
    switch_links_active += to_switch_active;
    if (total == 0) continue;
    const double link_gbps = speed ? *speed / 1000.0 : 0.0;
    if (to_switch > 0 || per_peer.empty()) {
      w.begin_object().field("gpu", g.cuda_index).field_null("peer").field("via", to_switch > 0 ? "nvswitch" : "none");
      w.field("links", to_switch > 0 ? to_switch_active : active).field("links_present", total);
      if (speed) {
        w.field("link_GBps", link_gbps);
      } else {
        w.field_null("link_GBps");
      }
      if (version) w.field("nvlink_version", *version);
      w.end_object();
    }
    for (const auto& [peer, links] : per_peer) {
      w.begin_object().field("gpu", g.cuda_index).field("peer", peer).field("via", "direct").field("links", links);
      if (speed) {
        w.field("link_GBps", link_gbps);
      } else {
        w.field_null("link_GBps");
      }
      w.end_object();
    }
  }
  w.end_array();

  // Pairs: what CUDA and NVML say about peer access.
  w.key("gpu_pairs").begin_array();
  for (const auto& a : gpus) {
    for (const auto& b : gpus) {
      if (a.cuda_index == b.cuda_index) continue;
      w.begin_object().field("gpu", a.cuda_index).field("peer", b.cuda_index);
      int can = 0;
      if (cudaDeviceCanAccessPeer(&can, a.cuda_index, b.cuda_index) == cudaSuccess) w.field("cuda_peer_access", can != 0);
      int rank_attr = 0;
      if (cudaDeviceGetP2PAttribute(&rank_attr, cudaDevP2PAttrPerformanceRank, a.cuda_index, b.cuda_index) == cudaSuccess) {
        w.field("cuda_performance_rank", rank_attr);
      }
      if (a.nvml && b.nvml) {
        const char* caps[] = {"nvml_p2p_read", "nvml_p2p_write", "nvml_p2p_nvlink"};
        for (int c = 0; c < 3; ++c) {
          if (auto s = nvml.p2p_status(*a.nvml, *b.nvml, c)) w.field(caps[c], *s == 0 ? "ok" : "not supported (" + std::to_string(*s) + ")");
        }
        if (auto lvl = nvml.common_ancestor(*a.nvml, *b.nvml)) w.field("pcie_common_ancestor_level", *lvl);
      }
      w.end_object();
    }
  }
  w.end_array();

  // Fabric manager.
  std::string fm = "unknown";
  std::string evidence;
  std::set<int> states;
  bool fabric_error = false;
  for (const auto& g : gpus) {
    if (!g.nvml) continue;
    if (auto f = nvml.fabric_info(*g.nvml)) {
      states.insert(f->state);
      if (f->state == 3 && f->status != 0) fabric_error = true;
    }
  }
  const bool nvswitch_devices = !list_dir("/proc/driver/nvidia-nvswitch/devices").empty() ||
                                std::ifstream("/dev/nvidia-nvswitchctl").good();
  if (states.count(1) || states.count(2)) {
    fm = "not running";
    evidence = states.count(2) ? "NVML GPU fabric state: in progress" : "NVML GPU fabric state: not started";
  } else if (states.count(3)) {
    fm = fabric_error ? "not running" : "running";
    evidence = fabric_error ? "NVML GPU fabric state: completed with an error status" : "NVML GPU fabric state: completed";
  } else if (cuda_not_ready) {
    fm = "not running";
    evidence = "CUDA error 802 (system not yet initialized)";
  } else if (switch_links_total > 0 && switch_links_active > 0) {
    fm = "running";
    evidence = std::to_string(switch_links_active) + " NVLink links to NVSwitches active";
  } else if (switch_links_total > 0 || nvswitch_devices) {
    fm = "not running";
    evidence = "NVSwitch present but no NVLink link to it active";
  } else if (process_running("nv-fabricmanager")) {
    fm = "running";
    evidence = "nv-fabricmanager process on this host";
  } else {
    evidence = any_links == 0 ? "no NVLink seen through NVML" : "no NVSwitch seen";
  }
  w.field("fabric_manager", fm).field("fabric_manager_evidence", evidence);
  if (fm == "not running") {
    warnings.push_back("NVSwitch system without a working fabric manager (" + evidence +
                       "): NVLink between GPUs is unusable; NCCL falls back to PCIe, SHM or the network. Start "
                       "nvidia-fabricmanager on the host (matching the driver version).");
  }

  // NICs: RDMA devices (EFA, InfiniBand) from sysfs.
  w.key("nics").begin_array();
  for (const auto& dev : list_dir("/sys/class/infiniband")) {
    const std::string base = "/sys/class/infiniband/" + dev;
    const std::string driver = link_basename(base + "/device/driver");
    std::string provider = driver;
    if (driver == "efa" || dev.rfind("rdmap", 0) == 0 || dev.rfind("efa", 0) == 0) provider = "efa";
    if (driver.rfind("mlx5", 0) == 0) provider = "mlx5";
    w.begin_object().field("name", dev).field("provider", provider.empty() ? "unknown" : provider);
    const std::string rate = read_first_line(base + "/ports/1/rate");
    if (!rate.empty()) {
      w.field("speed_Gbps", std::atof(rate.c_str())).field("rate", rate);
    } else {
      w.field_null("speed_Gbps");
    }
    const std::string state = read_first_line(base + "/ports/1/state");
    if (!state.empty()) w.field("state", state);
    const std::string numa = read_first_line(base + "/device/numa_node");
    if (!numa.empty()) w.field("numa_node", std::atoi(numa.c_str()));
    w.end_object();
  }
  w.end_array();
  void* fabric = dlopen("libfabric.so.1", RTLD_LAZY | RTLD_LOCAL);
  w.field("libfabric", fabric != nullptr ? "present" : "absent");
  if (fabric != nullptr) dlclose(fabric);

  // Host.
  utsname u{};
  if (uname(&u) == 0) w.field("kernel", std::string(u.sysname) + " " + u.release);
  std::string cpu_model;
  {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
      if (line.rfind("model name", 0) == 0) {
        cpu_model = line.substr(line.find(':') + 2);
        break;
      }
    }
  }
  int numa_nodes = 0;
  for (const auto& n : list_dir("/sys/devices/system/node")) {
    if (n.rfind("node", 0) == 0 && n.size() > 4 && std::isdigit(static_cast<unsigned char>(n[4]))) ++numa_nodes;
  }
  w.key("host").begin_object()
      .field("cpu_model", cpu_model)
      .field("hardware_threads", static_cast<int>(std::thread::hardware_concurrency()))
      .field("numa_nodes", numa_nodes)
      .field("memory_bytes", static_cast<std::int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE))
      .field("dmi_vendor", read_first_line("/sys/devices/virtual/dmi/id/sys_vendor"))
      .field("dmi_product", read_first_line("/sys/devices/virtual/dmi/id/product_name"))
      .end_object();

  if (static_cast<int>(gpus.size()) < static_cast<int>(ctx.devices.size())) {
    warnings.push_back("asked for " + std::to_string(ctx.devices.size()) + " GPUs, CUDA sees " + std::to_string(count));
  }
  w.field("warnings", warnings);
  w.end_object();
  ctx.sink.add(Section::ENVIRONMENT, w.take());
}

}  // namespace clustersim::harness
