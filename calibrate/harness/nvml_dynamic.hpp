#pragma once
// NVML loaded at run time with dlopen, so the harness runs (without NVML's facts) where the library
// is missing, as in containers that mount only the CUDA driver. Only the few types the harness
// reads are declared here; their layouts are NVML's ABI (nvml.h of the NVIDIA driver), which NCCL
// also re-declares for the same reason (NCCL src/include/nvmlwrap.h).
//
// Every query returns std::nullopt when the library, the symbol or the answer is missing; nothing
// here changes any GPU setting.

#include <cstdint>
#include <optional>
#include <string>

namespace clustersim::harness {

class Nvml {
 public:
  using Device = void*;  // nvmlDevice_t

  Nvml();
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  bool loaded() const { return ok_; }
  const std::string& error() const { return error_; }

  std::optional<std::string> driver_version() const;
  std::optional<unsigned> device_count() const;
  // By PCI bus id as CUDA writes it ("0000:18:00.0"), so CUDA and NVML indices are matched.
  std::optional<Device> device_by_bus_id(const std::string& bus_id) const;
  std::optional<Device> device_by_index(unsigned index) const;
  std::optional<std::string> name(Device d) const;
  std::optional<std::string> bus_id(Device d) const;

  struct NvLink {
    bool active = false;
    std::optional<unsigned> version;
    std::optional<std::string> remote_bus_id;
    std::optional<int> remote_type;  // 0 GPU, 1 IBM NPU, 2 NVSwitch, 255 unknown (NVML enum)
  };
  // Link `link`; nullopt past the device's last link.
  std::optional<NvLink> nvlink(Device d, unsigned link) const;
  // NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON: the speed of every active link, MB/s.
  std::optional<unsigned> nvlink_speed_mbps(Device d) const;
  // nvmlDeviceGetP2PStatus for capability index 0 read, 1 write, 2 NVLink: 0 means supported.
  std::optional<int> p2p_status(Device a, Device b, int capability) const;
  // nvmlDeviceGetTopologyCommonAncestor: 0 same board, 10 one PCIe switch, 20 several switches,
  // 30 host bridge, 40 same NUMA node (CPU), 50 across CPUs.
  std::optional<int> common_ancestor(Device a, Device b) const;
  std::optional<unsigned> pcie_generation(Device d, bool max) const;
  std::optional<unsigned> pcie_width(Device d, bool max) const;

  struct FabricInfo {
    int state = 0;   // 0 not supported, 1 not started, 2 in progress, 3 completed
    int status = 0;  // an nvmlReturn_t, meaningful when completed
  };
  std::optional<FabricInfo> fabric_info(Device d) const;

  std::optional<unsigned> max_sm_clock_mhz(Device d) const;
  std::optional<unsigned> sm_clock_mhz(Device d) const;
  std::optional<unsigned> power_limit_mw(Device d) const;
  // nvmlDeviceGetPowerUsage: the board's draw now, mW.
  std::optional<unsigned> power_usage_mw(Device d) const;
  std::optional<std::string> error_string(int code) const;

 private:
  void* handle_ = nullptr;
  bool ok_ = false;
  std::string error_;
  template <class F>
  F sym(const char* name) const;
};

}  // namespace clustersim::harness
