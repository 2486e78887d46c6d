#include "sim/nccl/nccl_release.hpp"

#include <array>
#include <cstdlib>
#include <optional>

#include "hardware/errors.hpp"

namespace clustersim::sim::nccl {

namespace {

// {major, minor, patch} of a release written out in full ("2.28.9"); nullopt for anything else.
std::optional<std::array<int, 3>> release_number(std::string_view release) {
  std::array<int, 3> n{};
  std::size_t at = 0;
  for (int part = 0; part < 3; ++part) {
    if (part > 0) {
      if (at >= release.size() || release[at] != '.') return std::nullopt;
      ++at;
    }
    const std::size_t start = at;
    while (at < release.size() && at - start < 6 && release[at] >= '0' && release[at] <= '9') {
      n[part] = n[part] * 10 + (release[at] - '0');
      ++at;
    }
    if (at == start) return std::nullopt;
  }
  if (at != release.size()) return std::nullopt;
  return n;
}

}  // namespace

ReleaseTable resolve_release(std::string_view release) {
  try {
    return ReleaseTable{.table = NcclVersion::builtin(release), .requested = std::string(release), .note = ""};
  } catch (const InputError& unknown) {
    // A patch release of a tabled minor release: the nearest tabled patch (the newer of two as near).
    std::string nearest, minors;
    int nearest_distance = 0;
    const auto want = release_number(release);
    for (const auto& [name, description] : NcclVersion::builtin_list()) {
      const std::string minor = name.substr(0, name.rfind('.'));
      if (minors.find(minor) == std::string::npos) minors += (minors.empty() ? "" : ", ") + minor;
      const auto have = release_number(name);
      if (!want || !have || (*have)[0] != (*want)[0] || (*have)[1] != (*want)[1]) continue;
      const int distance = std::abs((*have)[2] - (*want)[2]);
      if (nearest.empty() || distance < nearest_distance ||
          (distance == nearest_distance && (*have)[2] > (*release_number(nearest))[2])) {
        nearest = name;
        nearest_distance = distance;
      }
    }
    if (nearest.empty()) {
      throw InputError(unknown.message() + ", or another patch release of " + minors +
                       " (which takes the nearest known patch)");
    }
    ReleaseTable r{.table = NcclVersion::builtin(nearest), .requested = std::string(release), .note = ""};
    r.note = "NCCL " + r.requested + " has no table of its own; predicted with NCCL " + nearest +
             "'s, the nearest known patch release of " + nearest.substr(0, nearest.rfind('.'));
    return r;
  }
}

}  // namespace clustersim::sim::nccl
