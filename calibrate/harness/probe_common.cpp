#include "calibrate/harness/probe_common.hpp"

#include <charconv>
#include <stdexcept>

#include "calibrate/harness/harness_json_writer.hpp"
#include "calibrate/harness/harness_options.hpp"

namespace clustersim::harness {

void check_cuda(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(rc));
}

long long parse_integer_option(const std::string& option, const std::string& text, long long min, long long max) {
  long long v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < min || v > max) {
    throw UsageError(option + ": expected an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                     ", got '" + text + "'");
  }
  return v;
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
