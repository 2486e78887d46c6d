#include "calibrate/harness/probe_common.hpp"

#include <stdexcept>

#include "calibrate/harness/harness_json_writer.hpp"

namespace clustersim::harness {

void check_cuda(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(rc));
}


std::string device_json(int dev) {
  cudaDeviceProp p{};
  check_cuda(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
  char bus[32] = {};
  check_cuda(cudaDeviceGetPCIBusId(bus, sizeof bus, dev), "cudaDeviceGetPCIBusId");
  int clock_khz = 0, mem_clock_khz = 0;
  check_cuda(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev), "cudaDeviceGetAttribute");
  check_cuda(cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, dev), "cudaDeviceGetAttribute");
  JsonWriter w;
  w.begin_object()
      .field("index", dev)
      .field("name", std::string(p.name))
      .field("compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor))
      .field("multiprocessors", p.multiProcessorCount)
      .field("sm_clock_khz", clock_khz)
      .field("memory_clock_khz", mem_clock_khz)
      .field("l2_bytes", p.l2CacheSize)
      .field("memory_bytes", static_cast<long long>(p.totalGlobalMem))
      .field("pci_bus_id", std::string(bus))
      .end_object();
  return w.take();
}

}  // namespace clustersim::harness
