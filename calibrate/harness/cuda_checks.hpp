#pragma once
// CHECK_CUDA / CHECK_NCCL / CHECK_LAUNCH: every return code of the CUDA runtime and NCCL is checked.
// CHECK_LAUNCH goes after each kernel launch: it reads the launch error (cudaGetLastError), which
// a kernel launch reports nowhere else.

#include <cuda_runtime.h>
#include <nccl.h>

#include "calibrate/harness/harness_errors.hpp"

#define CHECK_CUDA(expr)                                                                                  \
  do {                                                                                                    \
    const cudaError_t check_cuda_rc_ = (expr);                                                            \
    if (check_cuda_rc_ != cudaSuccess) {                                                                  \
      ::clustersim::harness::throw_check_failure("CUDA", static_cast<long>(check_cuda_rc_),               \
                                                 cudaGetErrorString(check_cuda_rc_), #expr, __FILE__,     \
                                                 __LINE__);                                               \
    }                                                                                                     \
  } while (0)

#define CHECK_LAUNCH() CHECK_CUDA(cudaGetLastError())

#define CHECK_NCCL(expr)                                                                                  \
  do {                                                                                                    \
    const ncclResult_t check_nccl_rc_ = (expr);                                                           \
    if (check_nccl_rc_ != ncclSuccess) {                                                                  \
      ::clustersim::harness::throw_check_failure(                                                         \
          "NCCL", static_cast<long>(check_nccl_rc_),                                                      \
          std::string(ncclGetErrorString(check_nccl_rc_)) + " (" + ncclGetLastError(nullptr) + ")", #expr, \
          __FILE__, __LINE__);                                                                            \
    }                                                                                                     \
  } while (0)
