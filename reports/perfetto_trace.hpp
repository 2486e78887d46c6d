#pragma once
// A trace of a simulated run in the Chrome JSON trace format, the one ui.perfetto.dev and
// chrome://tracing open. The executor calls the hooks as it runs; the trace is written once at
// the end through write_file_atomically.
//
// Mapping
//   rank r            process, pid = r + 1 (Perfetto treats pid 0 as the kernel's idle process;
//                     its maintainers advise synthetic traces to start at 1, google/perfetto
//                     issue 394), named by add_process, sorted by r.
//   stream s of r     thread, tid = pid * 1000 + s (0 <= s < 1000), named by add_thread, sorted
//                     by s. Distinct tids across processes keep Perfetto's thread lookup cheap
//                     and never make a stream the process's main thread (tid == pid).
//   slice             "X" complete event: ts and dur in microseconds with a fraction.
//   instant           "i" event with thread scope.
//   flow              "s" at the source and "f" with "bp":"e" at the destination, sharing an id,
//                     name and category: each end binds to the slice that encloses its time on
//                     its thread, so a time inside the sending and the receiving slice (start
//                     <= t < end; the start is the usual choice) draws the arrow between them.
//                     Flow events are written after every slice: a viewer that keeps file order
//                     at equal timestamps then sees the slice before the flow that binds to it.
//   counter           "C" event on the process (its main thread, tid = pid); Perfetto names
//                     the track "NAME SERIES".
//
// Time. Inputs are picoseconds (Duration). Perfetto reads ts and dur separately and rounds each
// to a nanosecond (json_trace_tokenizer.cc, CoerceToTs: llround(us * 1000)), which can make a
// nested slice stick out of its parent by 1 ns and be flagged as an overlap. NANOSECOND
// precision (the default) therefore rounds the two ends of a slice to the nanosecond and writes
// dur = end - start: nesting and touching slices survive exactly. PICOSECOND writes the exact
// values (six decimals of a microsecond) for tools that keep them.
//
// Cost: each hook appends its event's text to a buffer (amortised O(length)); nothing is sorted
// or searched, so a trace of n events costs O(n) time and memory.

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "hardware/units.hpp"

namespace clustersim::reports {

enum class TimePrecision { NANOSECOND, PICOSECOND };

struct TraceOptions {
  TimePrecision precision = TimePrecision::NANOSECOND;
};

// One key of a slice's or instant's args: a string, a number or a boolean.
class TraceArg {
 public:
  template <class S>
    requires std::is_convertible_v<const S&, std::string_view>
  TraceArg(std::string_view key, const S& value) : key_(key), kind_(Kind::STRING), text_(std::string_view(value)) {}
  template <class T>
    requires(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
  TraceArg(std::string_view key, T value) : key_(key) {
    if constexpr (std::is_integral_v<T>) {
      kind_ = Kind::INTEGER;
      integer_ = static_cast<std::int64_t>(value);
    } else {
      kind_ = Kind::NUMBER;
      number_ = static_cast<double>(value);
    }
  }
  TraceArg(std::string_view key, bool value) : key_(key), kind_(Kind::BOOL), integer_(value ? 1 : 0) {}

  // Appends `"key":value` as JSON.
  void append_json(std::string& out) const;

 private:
  enum class Kind { STRING, INTEGER, NUMBER, BOOL };
  std::string key_;
  Kind kind_ = Kind::STRING;
  std::string text_;
  std::int64_t integer_ = 0;
  double number_ = 0;
};

class TraceArgs {
 public:
  TraceArgs() = default;
  TraceArgs(std::initializer_list<TraceArg> args) : args_(args) {}
  explicit TraceArgs(std::vector<TraceArg> args) : args_(std::move(args)) {}
  TraceArgs& add(TraceArg arg) {
    args_.push_back(std::move(arg));
    return *this;
  }
  bool empty() const { return args_.empty(); }
  // Appends `{"k":v,...}`.
  void append_json(std::string& out) const;

 private:
  std::vector<TraceArg> args_;
};

// One end of a flow arrow.
struct TracePoint {
  int rank = 0;
  int stream = 0;
  Duration time;
};

class PerfettoTrace {
 public:
  static constexpr int kMaxStreams = 1000;

  explicit PerfettoTrace(TraceOptions options = {});

  // Names. Call once per rank and stream, before or after their events (viewers read names from
  // anywhere in the file). Ranks >= 0; streams in [0, kMaxStreams). A rank may also stand for a
  // non-GPU track group (the network's counters): give it a number past the last GPU rank.
  void add_process(int rank, std::string_view name);
  void add_thread(int rank, int stream, std::string_view name);

  // A piece of work on a stream: [start, start + duration). Slices of one stream must nest or
  // be disjoint (check_chrome_trace reports partial overlaps).
  void slice(int rank, int stream, std::string_view name, std::string_view category, Duration start, Duration duration,
             const TraceArgs& args = {});
  void instant(int rank, int stream, std::string_view name, std::string_view category, Duration time,
               const TraceArgs& args = {});
  // An arrow from one slice to another (a send to its receive, a collective's step between
  // ranks); returns the flow's id (1, 2, ...). to.time must not be before from.time.
  std::uint64_t flow(const TracePoint& from, const TracePoint& to, std::string_view name,
                     std::string_view category = "flow");
  // A sample of a counter track of the rank's process (link utilisation, bytes in flight).
  void counter(int rank, std::string_view name, Duration time, double value, std::string_view series = "value");
  // A key/value of the trace's "otherData" (scenario name, clustersim version), in call order.
  void set_metadata(std::string_view key, std::string_view value);

  std::size_t event_count() const { return events_ + flow_events_; }
  // The whole trace as JSON text.
  std::string str() const;
  // str() written atomically to `path`.
  void write(const std::filesystem::path& path) const;

  static std::int64_t pid_of(int rank) { return static_cast<std::int64_t>(rank) + 1; }
  static std::int64_t tid_of(int rank, int stream) { return pid_of(rank) * kMaxStreams + stream; }

 private:
  void begin_event(std::string& out, char phase, std::int64_t pid, std::int64_t tid, std::string_view name,
                   std::string_view category);
  void append_time(std::string& out, std::string_view key, Duration t) const;
  void check_rank(int rank) const;
  void check_stream(int rank, int stream) const;

  TraceOptions options_;
  std::string body_;   // metadata, slices, instants and counters in call order, each ending ",\n"
  std::string flows_;  // flow events, written after body_
  std::vector<std::pair<std::string, std::string>> metadata_;
  std::size_t events_ = 0;
  std::size_t flow_events_ = 0;
  std::uint64_t next_flow_id_ = 1;
};

// Appends `text` as a JSON string literal (quotes included) to `out`.
void append_json_string(std::string& out, std::string_view text);

}  // namespace clustersim::reports
