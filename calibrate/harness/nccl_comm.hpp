#pragma once
// One NCCL communicator per rank, created the way nccl-tests creates it (ncclCommInitRankConfig,
// with config.nvlinkCentricSched = 1 under NCCL 2.28 as nccl-tests' src/common.cu initComms does),
// its stream, and the wait that bounds every test: the stream is polled, NCCL's asynchronous error
// is read between polls, and past the timeout the communicator is aborted (as nccl-tests'
// testStreamSynchronize does with -T).

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <string_view>

#include "calibrate/harness/harness_options.hpp"
#include "calibrate/harness/host_group.hpp"

namespace clustersim::harness {

class NcclComm {
 public:
  // Rank 0 of `group` makes the unique id; every rank creates its communicator on `device`.
  NcclComm(HostGroup& group, int device, const Options& opt, std::string_view tag);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  cudaStream_t stream() const { return stream_; }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

  // Waits until the stream is idle. Throws TestTimeout (after aborting) past timeout_s, and
  // HarnessError (after aborting) on an asynchronous NCCL error.
  void wait(double timeout_s);
  // Checks the return code of an NCCL call; with non-blocking communicators waits out
  // ncclInProgress. Throws HarnessError.
  void check(ncclResult_t rc, const char* what);
  // Aborts the communicator (idempotent); the object is then only good for destruction.
  void abort();
  bool aborted() const { return comm_ == nullptr; }

 private:
  void wait_ready(const char* what, double timeout_s);
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int device_ = 0;
  int rank_ = 0;
  int nranks_ = 1;
  bool nonblocking_ = false;
  double timeout_s_ = 120;
};

// A device buffer from ncclMemAlloc (as nccl-tests allocates since NCCL 2.19) or cudaMalloc.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(std::size_t bytes, bool nccl_alloc);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void release() noexcept;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  bool nccl_alloc_ = false;
};

// "2.28.9" from ncclGetVersion.
std::string nccl_runtime_version();

}  // namespace clustersim::harness
