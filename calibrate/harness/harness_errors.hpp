#pragma once
// Errors of the calibration harness and the checks that raise them.
//
// Every CUDA, NCCL, cuBLASLt and cuDNN return code goes through one of these checks. A failed check
// throws HarnessError naming the call, the code's text and the source line; the caller that owns a
// test catches it, records the test as failed in the results and moves on to the next test.

#include <stdexcept>
#include <string>

namespace clustersim::harness {

class HarnessError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A test that did not finish before its deadline (a hung collective, a stuck peer).
class TestTimeout : public HarnessError {
 public:
  using HarnessError::HarnessError;
};

// A test that cannot run here (no such library, no fp8 on this GPU, an algorithm NCCL refuses).
class Unavailable : public HarnessError {
 public:
  using HarnessError::HarnessError;
};

[[noreturn]] void throw_check_failure(const char* library, long code, const std::string& text, const char* expr,
                                      const char* file, int line);

}  // namespace clustersim::harness
