#pragma once
// Small summaries of measured and predicted figures, shared by the validators and the fitters.

#include <algorithm>
#include <vector>

namespace clustersim {

// The median of v: the middle value, or the mean of the two middle values of an even count; 0 for
// none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace clustersim
