#include "calibrate/harness/nccl_comm.hpp"

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "calibrate/harness/cuda_checks.hpp"

namespace clustersim::harness {

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

std::string nccl_runtime_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  // NCCL_VERSION(X,Y,Z) is X*10000 + Y*100 + Z from 2.9 on, X*1000 + Y*100 + Z before.
  const int major = v >= 10000 ? v / 10000 : v / 1000;
  const int minor = v >= 10000 ? (v / 100) % 100 : (v / 100) % 10;
  const int patch = v % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

NcclComm::NcclComm(HostGroup& group, int device, const Options& opt, std::string_view tag)
    : device_(device), rank_(group.rank()), nranks_(group.size()), nonblocking_(opt.nonblocking),
      timeout_s_(opt.test_timeout_s) {
  CHECK_CUDA(cudaSetDevice(device_));
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  std::string id_blob;
  if (rank_ == 0) {
    CHECK_NCCL(ncclGetUniqueId(&id));
    id_blob.assign(reinterpret_cast<const char*>(&id), sizeof(id));
  }
  id_blob = broadcast(group, std::string(tag) + ":unique-id", 0, id_blob);
  if (id_blob.size() != sizeof(id)) throw HarnessError("NCCL unique id of the wrong size from rank 0");
  std::memcpy(&id, id_blob.data(), sizeof(id));

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  if (nonblocking_) config.blocking = 0;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
  int runtime = 0;
  ncclGetVersion(&runtime);
  if (opt.nvlink_centric_sched && runtime >= NCCL_VERSION(2, 28, 0)) config.nvlinkCentricSched = 1;
#endif
  const ncclResult_t rc = ncclCommInitRankConfig(&comm_, nranks_, id, rank_, &config);
  if (nonblocking_ && rc == ncclInProgress) {
    wait_ready("ncclCommInitRankConfig", opt.test_timeout_s);
  } else if (rc != ncclSuccess) {
    comm_ = nullptr;
    CHECK_NCCL(rc);
  }
}

NcclComm::~NcclComm() {
  if (comm_ != nullptr) {
    // A clean destroy after outstanding work drains; work that does not drain in a few seconds
    // belongs to a failed test, and the communicator is aborted instead. Failures here only leak.
    const auto t0 = Clock::now();
    cudaError_t q = cudaErrorNotReady;
    while ((q = cudaStreamQuery(stream_)) == cudaErrorNotReady && seconds_since(t0) < 10) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (q == cudaSuccess) {
      ncclCommDestroy(comm_);
    } else {
      ncclCommAbort(comm_);
    }
  }
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void NcclComm::abort() {
  if (comm_ != nullptr) {
    ncclCommAbort(comm_);
    comm_ = nullptr;
  }
}

void NcclComm::wait_ready(const char* what, double timeout_s) {
  const auto t0 = Clock::now();
  while (true) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t rc = ncclCommGetAsyncError(comm_, &state);
    if (rc != ncclSuccess) {
      abort();
      CHECK_NCCL(rc);
    }
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      abort();
      throw HarnessError(std::string(what) + ": " + ncclGetErrorString(state) + " (" + ncclGetLastError(nullptr) + ")");
    }
    if (seconds_since(t0) > timeout_s) {
      abort();
      throw TestTimeout(std::string(what) + " did not complete in " + std::to_string(timeout_s) + " s");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void NcclComm::check(ncclResult_t rc, const char* what) {
  if (rc == ncclSuccess) return;
  if (rc == ncclInProgress && nonblocking_) {
    wait_ready(what, timeout_s_);
    return;
  }
  throw HarnessError(std::string(what) + ": " + ncclGetErrorString(rc) + " (" + ncclGetLastError(comm_) + ")");
}

void NcclComm::wait(double timeout_s) {
  if (comm_ == nullptr) throw HarnessError("communicator already aborted");
  const auto t0 = Clock::now();
  while (true) {
    const cudaError_t q = cudaStreamQuery(stream_);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) {
      abort();
      CHECK_CUDA(q);
    }
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess || (state != ncclSuccess && state != ncclInProgress)) {
      const std::string text = ncclGetErrorString(state);
      abort();
      throw HarnessError("NCCL asynchronous error: " + text);
    }
    if (seconds_since(t0) > timeout_s) {
      abort();
      throw TestTimeout("no completion in " + std::to_string(static_cast<int>(timeout_s)) + " s; communicator aborted");
    }
    std::this_thread::yield();
  }
}

DeviceBuffer::DeviceBuffer(std::size_t bytes, bool nccl_alloc) : bytes_(bytes), nccl_alloc_(nccl_alloc) {
  if (bytes == 0) return;
  if (nccl_alloc_) {
    CHECK_NCCL(ncclMemAlloc(&ptr_, bytes));
  } else {
    CHECK_CUDA(cudaMalloc(&ptr_, bytes));
  }
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), nccl_alloc_(o.nccl_alloc_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    nccl_alloc_ = o.nccl_alloc_;
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (ptr_ == nullptr) return;
  if (nccl_alloc_) {
    ncclMemFree(ptr_);
  } else {
    cudaFree(ptr_);
  }
  ptr_ = nullptr;
}

}  // namespace clustersim::harness
