#include "calibrate/harness/nvml_dynamic.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

namespace clustersim::harness {

namespace {

// NVML ABI, as in the driver's nvml.h (see the header of this file).
struct PciInfo {
  char bus_id_legacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pci_device_id;
  unsigned pci_subsystem_id;
  char bus_id[32];
  char slack[64];  // room should a later NVML grow the struct
};

struct FieldValue {
  unsigned field_id;
  unsigned scope_id;
  long long timestamp;
  long long latency_usec;
  int value_type;
  int nvml_return;
  union {
    double d;
    unsigned ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
  } value;
};

struct GpuFabricInfo {
  unsigned char cluster_uuid[16];
  int status;
  unsigned clique_id;
  unsigned char state;
  unsigned char slack[32];
};

constexpr int kSuccess = 0;
constexpr unsigned kFieldNvlinkSpeedCommon = 90;  // NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON
constexpr int kClockSm = 1;                       // NVML_CLOCK_SM

std::string format_bus(unsigned domain, unsigned bus, unsigned device) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.0", domain, bus, device);
  return buf;
}

}  // namespace

template <class F>
F Nvml::sym(const char* name) const {
  if (handle_ == nullptr) return nullptr;
  return reinterpret_cast<F>(dlsym(handle_, name));
}

Nvml::Nvml() {
  for (const char* lib : {"libnvidia-ml.so.1", "libnvidia-ml.so"}) {
    handle_ = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (handle_ != nullptr) break;
  }
  if (handle_ == nullptr) {
    const char* e = dlerror();
    error_ = std::string("libnvidia-ml.so.1 not loaded: ") + (e ? e : "unknown reason");
    return;
  }
  auto init = sym<int (*)()>("nvmlInit_v2");
  if (init == nullptr) {
    error_ = "nvmlInit_v2 missing from libnvidia-ml";
    return;
  }
  const int rc = init();
  if (rc != kSuccess) {
    error_ = "nvmlInit_v2 failed with code " + std::to_string(rc);
    return;
  }
  ok_ = true;
}

Nvml::~Nvml() {
  if (ok_) {
    if (auto shutdown = sym<int (*)()>("nvmlShutdown")) shutdown();
  }
  if (handle_ != nullptr) dlclose(handle_);
}

std::optional<std::string> Nvml::driver_version() const {
  auto f = sym<int (*)(char*, unsigned)>("nvmlSystemGetDriverVersion");
  char buf[96] = {};
  if (!ok_ || f == nullptr || f(buf, sizeof(buf)) != kSuccess) return std::nullopt;
  return std::string(buf);
}

std::optional<unsigned> Nvml::device_count() const {
  auto f = sym<int (*)(unsigned*)>("nvmlDeviceGetCount_v2");
  unsigned n = 0;
  if (!ok_ || f == nullptr || f(&n) != kSuccess) return std::nullopt;
  return n;
}

std::optional<Nvml::Device> Nvml::device_by_bus_id(const std::string& bus_id) const {
  auto f = sym<int (*)(const char*, Device*)>("nvmlDeviceGetHandleByPciBusId_v2");
  Device d = nullptr;
  if (!ok_ || f == nullptr || f(bus_id.c_str(), &d) != kSuccess) return std::nullopt;
  return d;
}

std::optional<Nvml::Device> Nvml::device_by_index(unsigned index) const {
  auto f = sym<int (*)(unsigned, Device*)>("nvmlDeviceGetHandleByIndex_v2");
  Device d = nullptr;
  if (!ok_ || f == nullptr || f(index, &d) != kSuccess) return std::nullopt;
  return d;
}

std::optional<std::string> Nvml::name(Device d) const {
  auto f = sym<int (*)(Device, char*, unsigned)>("nvmlDeviceGetName");
  char buf[128] = {};
  if (!ok_ || f == nullptr || f(d, buf, sizeof(buf)) != kSuccess) return std::nullopt;
  return std::string(buf);
}

std::optional<std::string> Nvml::bus_id(Device d) const {
  auto f = sym<int (*)(Device, PciInfo*)>("nvmlDeviceGetPciInfo_v3");
  PciInfo p{};
  if (!ok_ || f == nullptr || f(d, &p) != kSuccess) return std::nullopt;
  return format_bus(p.domain, p.bus, p.device);
}

std::optional<Nvml::NvLink> Nvml::nvlink(Device d, unsigned link) const {
  auto state = sym<int (*)(Device, unsigned, int*)>("nvmlDeviceGetNvLinkState");
  if (!ok_ || state == nullptr) return std::nullopt;
  int active = 0;
  if (state(d, link, &active) != kSuccess) return std::nullopt;
  NvLink l;
  l.active = active != 0;
  if (auto f = sym<int (*)(Device, unsigned, unsigned*)>("nvmlDeviceGetNvLinkVersion")) {
    unsigned v = 0;
    if (f(d, link, &v) == kSuccess) l.version = v;
  }
  if (auto f = sym<int (*)(Device, unsigned, PciInfo*)>("nvmlDeviceGetNvLinkRemotePciInfo_v2")) {
    PciInfo p{};
    if (f(d, link, &p) == kSuccess) l.remote_bus_id = format_bus(p.domain, p.bus, p.device);
  }
  if (auto f = sym<int (*)(Device, unsigned, int*)>("nvmlDeviceGetNvLinkRemoteDeviceType")) {
    int t = 0;
    if (f(d, link, &t) == kSuccess) l.remote_type = t;
  }
  return l;
}

std::optional<unsigned> Nvml::nvlink_speed_mbps(Device d) const {
  auto f = sym<int (*)(Device, int, FieldValue*)>("nvmlDeviceGetFieldValues");
  if (!ok_ || f == nullptr) return std::nullopt;
  FieldValue v{};
  v.field_id = kFieldNvlinkSpeedCommon;
  if (f(d, 1, &v) != kSuccess || v.nvml_return != kSuccess) return std::nullopt;
  // valueType 1 is unsigned int, 2 unsigned long, 3 unsigned long long.
  if (v.value_type == 1) return v.value.ui;
  if (v.value_type == 2) return static_cast<unsigned>(v.value.ul);
  if (v.value_type == 3) return static_cast<unsigned>(v.value.ull);
  return std::nullopt;
}

std::optional<int> Nvml::p2p_status(Device a, Device b, int capability) const {
  auto f = sym<int (*)(Device, Device, int, int*)>("nvmlDeviceGetP2PStatus");
  int s = 0;
  if (!ok_ || f == nullptr || f(a, b, capability, &s) != kSuccess) return std::nullopt;
  return s;
}

std::optional<int> Nvml::common_ancestor(Device a, Device b) const {
  auto f = sym<int (*)(Device, Device, int*)>("nvmlDeviceGetTopologyCommonAncestor");
  int level = 0;
  if (!ok_ || f == nullptr || f(a, b, &level) != kSuccess) return std::nullopt;
  return level;
}

std::optional<unsigned> Nvml::pcie_generation(Device d, bool max) const {
  auto f = sym<int (*)(Device, unsigned*)>(max ? "nvmlDeviceGetMaxPcieLinkGeneration" : "nvmlDeviceGetCurrPcieLinkGeneration");
  unsigned v = 0;
  if (!ok_ || f == nullptr || f(d, &v) != kSuccess) return std::nullopt;
  return v;
}

std::optional<unsigned> Nvml::pcie_width(Device d, bool max) const {
  auto f = sym<int (*)(Device, unsigned*)>(max ? "nvmlDeviceGetMaxPcieLinkWidth" : "nvmlDeviceGetCurrPcieLinkWidth");
  unsigned v = 0;
  if (!ok_ || f == nullptr || f(d, &v) != kSuccess) return std::nullopt;
  return v;
}

std::optional<Nvml::FabricInfo> Nvml::fabric_info(Device d) const {
  auto f = sym<int (*)(Device, GpuFabricInfo*)>("nvmlDeviceGetGpuFabricInfo");
  GpuFabricInfo g{};
  if (!ok_ || f == nullptr || f(d, &g) != kSuccess) return std::nullopt;
  return FabricInfo{g.state, g.status};
}

std::optional<unsigned> Nvml::max_sm_clock_mhz(Device d) const {
  auto f = sym<int (*)(Device, int, unsigned*)>("nvmlDeviceGetMaxClockInfo");
  unsigned v = 0;
  if (!ok_ || f == nullptr || f(d, kClockSm, &v) != kSuccess) return std::nullopt;
  return v;
}

std::optional<unsigned> Nvml::sm_clock_mhz(Device d) const {
  auto f = sym<int (*)(Device, int, unsigned*)>("nvmlDeviceGetClockInfo");
  unsigned v = 0;
  if (!ok_ || f == nullptr || f(d, kClockSm, &v) != kSuccess) return std::nullopt;
  return v;
}

std::optional<unsigned> Nvml::power_usage_mw(Device d) const {
  auto f = sym<int (*)(Device, unsigned*)>("nvmlDeviceGetPowerUsage");
  unsigned v = 0;
  if (!ok_ || f == nullptr || f(d, &v) != kSuccess) return std::nullopt;
  return v;
}

std::optional<unsigned> Nvml::power_limit_mw(Device d) const {
  auto f = sym<int (*)(Device, unsigned*)>("nvmlDeviceGetEnforcedPowerLimit");
  unsigned v = 0;
  if (!ok_ || f == nullptr || f(d, &v) != kSuccess) return std::nullopt;
  return v;
}

std::optional<std::string> Nvml::error_string(int code) const {
  auto f = sym<const char* (*)(int)>("nvmlErrorString");
  if (f == nullptr) return std::nullopt;
  const char* s = f(code);
  return s ? std::optional<std::string>(s) : std::nullopt;
}

}  // namespace clustersim::harness
