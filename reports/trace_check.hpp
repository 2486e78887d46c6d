#pragma once
// Checks a Chrome JSON trace the way Perfetto and chrome://tracing read it, so the executor's
// tests (and ours) can assert that a trace opens cleanly:
//   - an object with a "traceEvents" array; every event an object with "ph", "pid", "name";
//   - "X": tid, ts >= 0, dur >= 0; "i": tid, ts, scope "t"/"p"/"g"; "C": ts and numeric args;
//     "M": process_name / thread_name with args.name, *_sort_index with args.sort_index;
//     "s"/"f": tid, ts, numeric id, cat; "f" binds to its enclosing slice ("bp":"e");
//   - flows pair up: each id has one "s" and one "f" with the same name and category, the "f"
//     not before the "s", and each end lies inside a slice of its thread (start <= t <= end);
//   - the slices of one thread nest or are disjoint (a partial overlap is what Perfetto moves to
//     an overflow track and flags);
//   - every thread with slices has a thread_name and every process a process_name.
// Times are compared in integer picoseconds (ts * 1e6 rounded).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::reports {

// The problems found, at most `max_problems` of them; empty when the trace is sound.
std::vector<std::string> check_chrome_trace(std::string_view text, std::size_t max_problems = 20);

}  // namespace clustersim::reports
