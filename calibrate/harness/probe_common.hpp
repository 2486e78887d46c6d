#pragma once
// What the standalone probes (clustersim-storeprobe, clustersim-hostprobe) share besides the
// harness's option parsing (harness_options.hpp): a CUDA error check and a device's description in
// their JSON. They need only the CUDA runtime, not the harness's NCCL or cuBLAS.

#include <cuda_runtime.h>

#include <string>

// The build sets it; a probe built by hand says it does not know.
#ifndef CLUSTERSIM_HARNESS_VERSION
#define CLUSTERSIM_HARNESS_VERSION "unknown"
#endif

namespace clustersim::harness {

// Throws std::runtime_error "what: CUDA's message" unless rc is cudaSuccess.
void check_cuda(cudaError_t rc, const char* what);
// Device `dev` as a JSON object: index, name, compute capability, SMs, clocks, L2, memory, PCI bus id.
std::string device_json(int dev);

}  // namespace clustersim::harness
