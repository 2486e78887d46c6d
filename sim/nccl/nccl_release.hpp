#pragma once
// Which built-in release table stands for an NCCL release as a user or a log names it.
//
//   a tabled release or alias ("2.28.9", "2.28")   -> that table
//   another patch of a tabled minor release ("2.28.3") -> the tabled patch p' of that minor release
//       nearest it, |p - p'| smallest, the newer of two as near (2.28.3 -> 2.28.7, 2.28.8 -> 2.28.9),
//       with a note that names both releases for the caller to give as a warning
//   anything else (an untabled minor release "2.27.7", "2.27")  -> InputError listing the tables
//
// A patch release is taken to keep its minor release's tuner constants and formulas (an assumption
// the note states); a minor release may change them, so no table stands in for another minor release.

#include <string>
#include <string_view>

#include "sim/nccl/nccl_version.hpp"

namespace clustersim::sim::nccl {

struct ReleaseTable {
  NcclVersion table;
  std::string requested;  // the release as it was asked for
  // "NCCL 2.28.3 has no table of its own; predicted with NCCL 2.28.7's, the nearest known patch
  // release of 2.28" when another patch release's table stands in, else empty.
  std::string note;
};

ReleaseTable resolve_release(std::string_view release);

}  // namespace clustersim::sim::nccl
