#pragma once
// CHECK_CUBLAS: every cuBLASLt status is checked, as CHECK_CUDA checks the runtime's (cuda_checks.hpp).

#include <cublasLt.h>

#include "calibrate/harness/cuda_checks.hpp"

#define CHECK_CUBLAS(expr)                                                                                      \
  do {                                                                                                          \
    const cublasStatus_t check_cublas_rc_ = (expr);                                                             \
    if (check_cublas_rc_ != CUBLAS_STATUS_SUCCESS) {                                                            \
      ::clustersim::harness::throw_check_failure("cuBLASLt", static_cast<long>(check_cublas_rc_),               \
                                                 cublasLtGetStatusString(check_cublas_rc_), #expr, __FILE__, \
                                                 __LINE__);                                                     \
    }                                                                                                           \
  } while (0)
