#pragma once
// Matrix-unit throughput under a continuous load, as a training step keeps a GPU busy, against the
// throughput the shape sweep measures (gemm_bench.cpp: repeats of about 10 ms with the host's
// checks between shapes). A GPU at its power limit lowers its clocks within milliseconds, so a
// long run of matrix products goes slower than a short one; the ratio converts the sweep's fitted
// efficiency curve to the condition of a training step.
//
// One square bf16 product (--gemm-square, 8192 when that is 0), each GPU of the sub-run at once,
// four "gemm" entries named "sustained", told apart by "phase":
//   harness    the sweep's own method (warm-up; repeats of about 10 ms; the median repeat)
//   burst      after 1 s idle, five launches each timed alone (the median): the boost clock
//   sustained  back-to-back launches for --gemm-sustained seconds; the median launch of the last
//              quarter
//   mixed      the same time alternating the product with an elementwise pass over HBM that takes
//              about a third of the pair (a training step's matrix work between memory-bound
//              kernels); the median product of the last quarter, and gemm_share = the products'
//              share of the GPU's time
// with the SM clock and the board power NVML reads during the last quarter (medians; absent
// without NVML), and busy_ms, how long the phase had kept the GPU busy when its timed launches
// began (sustained and mixed run one after the other: the GPU is busy through both).

#include "calibrate/harness/worker_context.hpp"

namespace clustersim::harness {

// Runs the four phases on this rank's GPU and adds their entries to the GEMM section.
void run_gemm_sustained(WorkerContext& ctx);

}  // namespace clustersim::harness
