#pragma once
// Random (never zero) device data for the compute and memory tests: a matrix product runs faster on
// zeros than on real data, and zeros hide unwritten outputs. Values are uniform in [-scale, scale],
// generated from a counter-based hash, so the same seed gives the same data on any GPU.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace clustersim::harness {

enum class FillType { F32, BF16, FP8_E4M3 };

// n elements of `type` at dst.
void fill_uniform(void* dst, FillType type, std::size_t n, std::uint64_t seed, float scale, cudaStream_t stream);

}  // namespace clustersim::harness
