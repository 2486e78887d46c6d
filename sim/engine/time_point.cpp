#include "sim/engine/time_point.hpp"

namespace clustersim::sim {

std::string format_time(TimePoint t) { return "t=" + format_duration(t.since_start()); }

}  // namespace clustersim::sim
