#include "reports/perfetto_trace.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "hardware/atomic_file.hpp"

namespace clustersim::reports {

namespace {

void append_int(std::string& out, std::int64_t v) {
  std::array<char, 24> buf{};
  auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  out.append(buf.data(), ptr);
}

void append_double(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";  // JSON has no NaN or infinity
    return;
  }
  std::array<char, 32> buf{};
  auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  out.append(buf.data(), ptr);
}

// Floor division for possibly negative times.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// Picoseconds rounded to the nearest nanosecond (halves away from zero), in nanoseconds.
std::int64_t round_to_ns(std::int64_t ps) { return ps >= 0 ? (ps + 500) / 1000 : -((-ps + 500) / 1000); }

// `units` of 10^-digits microseconds as a decimal number of microseconds: 1234567 with 6 digits
// -> "1.234567"; trailing zeros of the fraction are dropped ("2.5", "3").
void append_fixed_point(std::string& out, std::int64_t units, int digits) {
  std::int64_t scale = 1;
  for (int i = 0; i < digits; ++i) scale *= 10;
  const std::int64_t whole = floor_div(units, scale);
  std::int64_t frac = units - whole * scale;
  if (whole < 0 && frac != 0) {
    // Negative values: print "-" and the magnitude.
    out += '-';
    append_fixed_point(out, -units, digits);
    return;
  }
  append_int(out, whole);
  if (frac == 0) return;
  std::array<char, 8> f{};
  int n = digits;
  while (frac % 10 == 0) {
    frac /= 10;
    --n;
  }
  for (int i = n - 1; i >= 0; --i) {
    f[static_cast<std::size_t>(i)] = static_cast<char>('0' + frac % 10);
    frac /= 10;
  }
  out += '.';
  out.append(f.data(), static_cast<std::size_t>(n));
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[(c >> 4) & 0xF];
          out += kHex[c & 0xF];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void TraceArg::append_json(std::string& out) const {
  append_json_string(out, key_);
  out += ':';
  switch (kind_) {
    case Kind::STRING: append_json_string(out, text_); break;
    case Kind::INTEGER: append_int(out, integer_); break;
    case Kind::NUMBER: append_double(out, number_); break;
    case Kind::BOOL: out += integer_ != 0 ? "true" : "false"; break;
  }
}

void TraceArgs::append_json(std::string& out) const {
  out += '{';
  for (std::size_t i = 0; i < args_.size(); ++i) {
    if (i > 0) out += ',';
    args_[i].append_json(out);
  }
  out += '}';
}

PerfettoTrace::PerfettoTrace(TraceOptions options) : options_(options) { body_.reserve(1 << 16); }

void PerfettoTrace::check_rank(int rank) const {
  if (rank < 0) throw std::invalid_argument("trace: rank " + std::to_string(rank) + " is negative");
}

void PerfettoTrace::check_stream(int rank, int stream) const {
  check_rank(rank);
  if (stream < 0 || stream >= kMaxStreams) {
    throw std::invalid_argument("trace: stream " + std::to_string(stream) + " of rank " + std::to_string(rank) +
                                " is outside [0, " + std::to_string(kMaxStreams) + ")");
  }
}

void PerfettoTrace::begin_event(std::string& out, char phase, std::int64_t pid, std::int64_t tid, std::string_view name,
                                std::string_view category) {
  out += "{\"ph\":\"";
  out += phase;
  out += "\",\"pid\":";
  append_int(out, pid);
  out += ",\"tid\":";
  append_int(out, tid);
  out += ",\"name\":";
  append_json_string(out, name);
  if (!category.empty()) {
    out += ",\"cat\":";
    append_json_string(out, category);
  }
}

void PerfettoTrace::append_time(std::string& out, std::string_view key, Duration t) const {
  out += ",\"";
  out += key;
  out += "\":";
  if (options_.precision == TimePrecision::PICOSECOND) {
    append_fixed_point(out, t.picoseconds(), 6);
  } else {
    append_fixed_point(out, round_to_ns(t.picoseconds()), 3);
  }
}

void PerfettoTrace::add_process(int rank, std::string_view name) {
  check_rank(rank);
  const std::int64_t pid = pid_of(rank);
  begin_event(body_, 'M', pid, pid, "process_name", "");
  body_ += ",\"args\":{\"name\":";
  append_json_string(body_, name);
  body_ += "}},\n";
  begin_event(body_, 'M', pid, pid, "process_sort_index", "");
  body_ += ",\"args\":{\"sort_index\":";
  append_int(body_, rank);
  body_ += "}},\n";
  events_ += 2;
}

void PerfettoTrace::add_thread(int rank, int stream, std::string_view name) {
  check_stream(rank, stream);
  const std::int64_t pid = pid_of(rank);
  const std::int64_t tid = tid_of(rank, stream);
  begin_event(body_, 'M', pid, tid, "thread_name", "");
  body_ += ",\"args\":{\"name\":";
  append_json_string(body_, name);
  body_ += "}},\n";
  begin_event(body_, 'M', pid, tid, "thread_sort_index", "");
  body_ += ",\"args\":{\"sort_index\":";
  append_int(body_, stream);
  body_ += "}},\n";
  events_ += 2;
}

void PerfettoTrace::slice(int rank, int stream, std::string_view name, std::string_view category, Duration start,
                          Duration duration, const TraceArgs& args) {
  check_stream(rank, stream);
  if (duration < Duration::zero()) {
    throw std::invalid_argument("trace: slice '" + std::string(name) + "' has a negative duration");
  }
  begin_event(body_, 'X', pid_of(rank), tid_of(rank, stream), name, category);
  if (options_.precision == TimePrecision::PICOSECOND) {
    append_time(body_, "ts", start);
    append_time(body_, "dur", duration);
  } else {
    // Both ends rounded, so that nested and touching slices stay so after rounding.
    const std::int64_t start_ns = round_to_ns(start.picoseconds());
    const std::int64_t end_ns = round_to_ns((start + duration).picoseconds());
    body_ += ",\"ts\":";
    append_fixed_point(body_, start_ns, 3);
    body_ += ",\"dur\":";
    append_fixed_point(body_, end_ns - start_ns, 3);
  }
  if (!args.empty()) {
    body_ += ",\"args\":";
    args.append_json(body_);
  }
  body_ += "},\n";
  ++events_;
}

void PerfettoTrace::instant(int rank, int stream, std::string_view name, std::string_view category, Duration time,
                            const TraceArgs& args) {
  check_stream(rank, stream);
  begin_event(body_, 'i', pid_of(rank), tid_of(rank, stream), name, category);
  body_ += ",\"s\":\"t\"";
  append_time(body_, "ts", time);
  if (!args.empty()) {
    body_ += ",\"args\":";
    args.append_json(body_);
  }
  body_ += "},\n";
  ++events_;
}

std::uint64_t PerfettoTrace::flow(const TracePoint& from, const TracePoint& to, std::string_view name,
                                  std::string_view category) {
  check_stream(from.rank, from.stream);
  check_stream(to.rank, to.stream);
  if (to.time < from.time) {
    throw std::invalid_argument("trace: flow '" + std::string(name) + "' ends before it starts");
  }
  const std::uint64_t id = next_flow_id_++;
  const std::string_view cat = category.empty() ? std::string_view("flow") : category;
  begin_event(flows_, 's', pid_of(from.rank), tid_of(from.rank, from.stream), name, cat);
  flows_ += ",\"id\":";
  append_int(flows_, static_cast<std::int64_t>(id));
  append_time(flows_, "ts", from.time);
  flows_ += "},\n";
  begin_event(flows_, 'f', pid_of(to.rank), tid_of(to.rank, to.stream), name, cat);
  flows_ += ",\"bp\":\"e\",\"id\":";
  append_int(flows_, static_cast<std::int64_t>(id));
  append_time(flows_, "ts", to.time);
  flows_ += "},\n";
  flow_events_ += 2;
  return id;
}

void PerfettoTrace::counter(int rank, std::string_view name, Duration time, double value, std::string_view series) {
  check_rank(rank);
  const std::int64_t pid = pid_of(rank);
  begin_event(body_, 'C', pid, pid, name, "");
  append_time(body_, "ts", time);
  body_ += ",\"args\":{";
  append_json_string(body_, series.empty() ? std::string_view("value") : series);
  body_ += ':';
  append_double(body_, value);
  body_ += "}},\n";
  ++events_;
}

void PerfettoTrace::set_metadata(std::string_view key, std::string_view value) {
  metadata_.emplace_back(std::string(key), std::string(value));
}

std::string PerfettoTrace::str() const {
  std::string out;
  out.reserve(body_.size() + flows_.size() + 256);
  out += "{\"displayTimeUnit\":\"ns\",\"otherData\":{";
  for (std::size_t i = 0; i < metadata_.size(); ++i) {
    if (i > 0) out += ',';
    append_json_string(out, metadata_[i].first);
    out += ':';
    append_json_string(out, metadata_[i].second);
  }
  out += "},\"traceEvents\":[\n";
  out += body_;
  out += flows_;
  if (out.size() >= 2 && out.compare(out.size() - 2, 2, ",\n") == 0) out.erase(out.size() - 2, 1);  // last comma
  out += "]}\n";
  return out;
}

void PerfettoTrace::write(const std::filesystem::path& path) const { write_file_atomically(path, str()); }

}  // namespace clustersim::reports
