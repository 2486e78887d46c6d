#include "hardware/units.hpp"

#include <array>
#include <charconv>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "hardware/errors.hpp"

namespace clustersim {

namespace {

constexpr double kInt64Max = 9.2233720368547758e18;

std::int64_t round_to_int64(double v, const char* what) {
  const double r = std::nearbyint(v);
  if (!std::isfinite(r) || r >= kInt64Max || r < -kInt64Max) {
    throw std::out_of_range(std::string(what) + " out of range: " + format_number(v));
  }
  return static_cast<std::int64_t>(r);
}

struct UnitEntry {
  std::string_view name;
  double factor;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits "900 GB/s" into 900 and "GB/s". Throws InputError naming `kind` and `example`.
std::pair<double, std::string_view> split_number(std::string_view text, std::string_view kind,
                                                 std::string_view example) {
  const std::string_view t = trim(text);
  auto fail = [&](std::string_view why) -> InputError {
    return InputError("expected " + std::string(kind) + " with a unit such as '" + std::string(example) +
                      "', got '" + std::string(text) + "'" + (why.empty() ? "" : " (" + std::string(why) + ")"));
  };
  if (t.empty()) throw fail("empty");
  const char* begin = t.data();
  const char* end = t.data() + t.size();
  const char* p = begin;
  if (p != end && *p == '+') ++p;  // from_chars rejects a leading '+'
  double v = 0;
  auto [ptr, ec] = std::from_chars(p, end, v);
  if (ec == std::errc::result_out_of_range) throw fail("number out of range");
  if (ec != std::errc() || ptr == p) throw fail("no number");
  if (!std::isfinite(v)) throw fail("not a finite number");
  std::string_view unit = trim(std::string_view(ptr, static_cast<std::size_t>(end - ptr)));
  if (unit.empty()) throw fail("a number without a unit");
  return {v, unit};
}

template <std::size_t N>
double lookup(const std::array<UnitEntry, N>& table, std::string_view unit, std::string_view text,
              std::string_view kind, std::string_view example, std::string_view known) {
  for (const auto& e : table) {
    if (e.name == unit) return e.factor;
  }
  throw InputError("expected " + std::string(kind) + " with a unit such as '" + std::string(example) + "', got '" +
                   std::string(text) + "' (unknown unit '" + std::string(unit) + "'; known: " + std::string(known) +
                   ")");
}

constexpr double K = 1e3, M = 1e6, G = 1e9, T = 1e12, P = 1e15, E = 1e18;
constexpr double Ki = 1024.0, Mi = Ki * 1024, Gi = Mi * 1024, Ti = Gi * 1024, Pi = Ti * 1024;

constexpr std::array<UnitEntry, 12> kByteUnits{{{"B", 1},
                                                 {"kB", K},
                                                 {"KB", K},
                                                 {"MB", M},
                                                 {"GB", G},
                                                 {"TB", T},
                                                 {"PB", P},
                                                 {"KiB", Ki},
                                                 {"MiB", Mi},
                                                 {"GiB", Gi},
                                                 {"TiB", Ti},
                                                 {"PiB", Pi}}};

constexpr std::array<UnitEntry, 30> kBandwidthUnits{{
    {"B/s", 1},         {"kB/s", K},        {"KB/s", K},         {"MB/s", M},        {"GB/s", G},
    {"TB/s", T},        {"KiB/s", Ki},      {"MiB/s", Mi},       {"GiB/s", Gi},      {"TiB/s", Ti},
    {"b/s", 1.0 / 8},   {"kb/s", K / 8},    {"Kb/s", K / 8},     {"Mb/s", M / 8},    {"Gb/s", G / 8},
    {"Tb/s", T / 8},    {"bps", 1.0 / 8},   {"kbps", K / 8},     {"Kbps", K / 8},    {"Mbps", M / 8},
    {"Gbps", G / 8},    {"Tbps", T / 8},    {"bit/s", 1.0 / 8},  {"kbit/s", K / 8},  {"Mbit/s", M / 8},
    {"Gbit/s", G / 8},  {"Tbit/s", T / 8},  {"Kbit/s", K / 8},   {"PB/s", P},        {"Pb/s", P / 8},
}};

constexpr std::array<UnitEntry, 9> kDurationUnits{{{"ps", 1e-12},
                                                    {"ns", 1e-9},
                                                    {"us", 1e-6},
                                                    {"\xc2\xb5s", 1e-6},  // µs (micro sign)
                                                    {"\xce\xbcs", 1e-6},  // μs (Greek mu)
                                                    {"ms", 1e-3},
                                                    {"s", 1},
                                                    {"min", 60},
                                                    {"h", 3600}}};

constexpr std::array<UnitEntry, 13> kFlopRateUnits{{{"FLOP/s", 1},
                                                     {"kFLOP/s", K},
                                                     {"MFLOP/s", M},
                                                     {"GFLOP/s", G},
                                                     {"TFLOP/s", T},
                                                     {"PFLOP/s", P},
                                                     {"EFLOP/s", E},
                                                     {"FLOPS", 1},
                                                     {"GFLOPS", G},
                                                     {"TFLOPS", T},
                                                     {"PFLOPS", P},
                                                     {"MFLOPS", M},
                                                     {"EFLOPS", E}}};

constexpr std::array<UnitEntry, 7> kFlopCountUnits{{{"FLOP", 1},
                                                     {"kFLOP", K},
                                                     {"MFLOP", M},
                                                     {"GFLOP", G},
                                                     {"TFLOP", T},
                                                     {"PFLOP", P},
                                                     {"EFLOP", E}}};

// Prints v / factor with the unit of the largest factor not above |v|.
template <std::size_t N>
std::string format_with(double v, const std::array<UnitEntry, N>& ladder) {
  const UnitEntry* best = &ladder[0];
  for (const auto& e : ladder) {
    if (std::fabs(v) >= e.factor) best = &e;
  }
  return format_number(v / best->factor) + " " + std::string(best->name);
}

constexpr std::array<UnitEntry, 6> kDecimalByteLadder{
    {{"B", 1}, {"kB", K}, {"MB", M}, {"GB", G}, {"TB", T}, {"PB", P}}};
constexpr std::array<UnitEntry, 6> kBinaryByteLadder{
    {{"B", 1}, {"KiB", Ki}, {"MiB", Mi}, {"GiB", Gi}, {"TiB", Ti}, {"PiB", Pi}}};
constexpr std::array<UnitEntry, 6> kBandwidthLadder{
    {{"B/s", 1}, {"kB/s", K}, {"MB/s", M}, {"GB/s", G}, {"TB/s", T}, {"PB/s", P}}};
constexpr std::array<UnitEntry, 6> kBitLadder{
    {{"b/s", 1}, {"kb/s", K}, {"Mb/s", M}, {"Gb/s", G}, {"Tb/s", T}, {"Pb/s", P}}};
constexpr std::array<UnitEntry, 6> kFlopRateLadder{
    {{"FLOP/s", 1}, {"kFLOP/s", K}, {"MFLOP/s", M}, {"GFLOP/s", G}, {"TFLOP/s", T}, {"PFLOP/s", P}}};
constexpr std::array<UnitEntry, 7> kFlopCountLadder{
    {{"FLOP", 1}, {"kFLOP", K}, {"MFLOP", M}, {"GFLOP", G}, {"TFLOP", T}, {"PFLOP", P}, {"EFLOP", E}}};

}  // namespace

Bytes Bytes::from_double(double n) { return Bytes(round_to_int64(n, "byte count")); }

Duration Duration::from_seconds(double s) { return Duration(round_to_int64(s * 1e12, "duration")); }

Duration transfer_time(Bytes bytes, Bandwidth rate) {
  if (!(rate.bytes_per_second() > 0)) throw std::invalid_argument("transfer_time: bandwidth must be > 0");
  return Duration::ps(round_to_int64(bytes.as_double() * 1e12 / rate.bytes_per_second(), "transfer time"));
}

Duration compute_time(FlopCount work, FlopRate rate) {
  if (!(rate.flops_per_second() > 0)) throw std::invalid_argument("compute_time: FLOP rate must be > 0");
  return Duration::ps(round_to_int64(work.count() * 1e12 / rate.flops_per_second(), "compute time"));
}

Bytes bytes_in(Duration d, Bandwidth rate) {
  return Bytes::of(static_cast<std::int64_t>(std::floor(d.seconds() * rate.bytes_per_second())));
}

Bytes parse_bytes(std::string_view text) {
  constexpr std::string_view kind = "a size", ex = "80 GiB";
  auto [v, unit] = split_number(text, kind, ex);
  const double f = lookup(kByteUnits, unit, text, kind, ex, "B kB MB GB TB PB KiB MiB GiB TiB PiB");
  const double n = v * f;
  if (std::fabs(n) >= kInt64Max) {
    throw InputError("expected a size below 8 EiB, got '" + std::string(text) + "'");
  }
  return Bytes::from_double(n);
}

Duration parse_duration(std::string_view text) {
  constexpr std::string_view kind = "a duration", ex = "1.5 us";
  auto [v, unit] = split_number(text, kind, ex);
  const double f = lookup(kDurationUnits, unit, text, kind, ex, "ps ns us ms s min h");
  const double ps = v * f * 1e12;
  if (std::fabs(ps) >= kInt64Max) {
    throw InputError("expected a duration within 106 days, got '" + std::string(text) + "'");
  }
  return Duration::ps(round_to_int64(ps, "duration"));
}

Bandwidth parse_bandwidth(std::string_view text) {
  constexpr std::string_view kind = "a bandwidth", ex = "900 GB/s' or '400 Gb/s";
  auto [v, unit] = split_number(text, kind, ex);
  const double f = lookup(kBandwidthUnits, unit, text, kind, ex,
                          "B/s kB/s MB/s GB/s TB/s KiB/s MiB/s GiB/s (bytes); b/s Mb/s Gb/s Tb/s Gbps (bits)");
  return Bandwidth::bytes_per_second(v * f);
}

FlopRate parse_flop_rate(std::string_view text) {
  constexpr std::string_view kind = "a FLOP rate", ex = "989.4 TFLOP/s";
  auto [v, unit] = split_number(text, kind, ex);
  const double f = lookup(kFlopRateUnits, unit, text, kind, ex, "FLOP/s GFLOP/s TFLOP/s PFLOP/s TFLOPS");
  return FlopRate::flops_per_second(v * f);
}

FlopCount parse_flop_count(std::string_view text) {
  constexpr std::string_view kind = "a FLOP count", ex = "3.2 PFLOP";
  auto [v, unit] = split_number(text, kind, ex);
  const double f = lookup(kFlopCountUnits, unit, text, kind, ex, "FLOP GFLOP TFLOP PFLOP EFLOP");
  return FlopCount::of(v * f);
}

Bytes parse_nccl_size(std::string_view text) {
  const std::string_view t = trim(text);
  auto fail = [&]() {
    return InputError("expected a size in bytes like nccl-tests takes it (8, 64K, 128M, 8G), got '" +
                      std::string(text) + "'");
  };
  if (t.empty()) throw fail();
  std::int64_t mult = 1;
  std::string_view digits = t;
  switch (t.back()) {
    case 'K': case 'k': mult = 1LL << 10; digits.remove_suffix(1); break;
    case 'M': case 'm': mult = 1LL << 20; digits.remove_suffix(1); break;
    case 'G': case 'g': mult = 1LL << 30; digits.remove_suffix(1); break;
    case 'T': case 't': mult = 1LL << 40; digits.remove_suffix(1); break;
    default: break;
  }
  std::int64_t n = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || digits.empty() || n < 0) throw fail();
  if (n > INT64_MAX / mult) throw fail();
  return Bytes::of(n * mult);
}

std::string format_number(double v) {
  std::array<char, 64> buf{};
  auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  if (ec != std::errc()) return "nan";
  return std::string(buf.data(), ptr);
}

std::string format_significant(double v, int digits) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "%.*g", digits, v);
  // Re-read so that 1e+03 style output becomes plain digits where it is short.
  const double r = std::strtod(buf.data(), nullptr);
  if (std::fabs(r) < 1e15 && std::fabs(r) >= 1e-4) {
    std::array<char, 64> plain{};
    auto [ptr, ec] = std::to_chars(plain.data(), plain.data() + plain.size(), r, std::chars_format::fixed);
    if (ec == std::errc()) return std::string(plain.data(), ptr);
  }
  return std::string(buf.data());
}

std::string format_bytes(Bytes b, Prefix prefix) {
  return prefix == Prefix::BINARY ? format_with(b.as_double(), kBinaryByteLadder)
                                  : format_with(b.as_double(), kDecimalByteLadder);
}

std::string format_duration(Duration d) {
  constexpr std::array<UnitEntry, 5> ladder{{{"ps", 1}, {"ns", 1e3}, {"us", 1e6}, {"ms", 1e9}, {"s", 1e12}}};
  return format_with(static_cast<double>(d.picoseconds()), ladder);
}

std::string format_bandwidth(Bandwidth b) { return format_with(b.bytes_per_second(), kBandwidthLadder); }
std::string format_bandwidth_bits(Bandwidth b) { return format_with(b.bytes_per_second() * 8, kBitLadder); }
std::string format_flop_rate(FlopRate r) { return format_with(r.flops_per_second(), kFlopRateLadder); }
std::string format_flop_count(FlopCount f) { return format_with(f.count(), kFlopCountLadder); }

}  // namespace clustersim
