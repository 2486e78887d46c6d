#pragma once
// Quantities as types: byte counts, durations, bandwidths, FLOP counts and FLOP rates.
//
// Representation
//   Bytes     int64 count of bytes (exact; sizes up to 8 EiB).
//   Duration  int64 count of picoseconds (exact, +-106 days). Times derived from a rate are
//             computed at the point of use from bytes (or FLOPs) and the rate, and rounded once to
//             the nearest picosecond: transfer_time(1 MiB, 450 GB/s) = 1048576 / 450e9 s
//             = 2330168.9 ps -> 2330169 ps.
//   Bandwidth double, bytes per second.
//   FlopCount double, floating-point operations.
//   FlopRate  double, FLOP per second.
//
// Text form (data files and flags): a finite number, optional spaces, and a unit. A number without
// a unit is an error that quotes the text. Decimal and binary prefixes are different things:
//   bytes      B, kB (=KB), MB, GB, TB, PB = 10^3k;  KiB, MiB, GiB, TiB, PiB = 2^10k
//   bandwidth  bytes per second: B/s kB/s MB/s GB/s TB/s, KiB/s MiB/s GiB/s TiB/s
//              bits per second:  b/s kb/s Mb/s Gb/s Tb/s, bps kbps Mbps Gbps Tbps, Gbit/s ...
//              (400 Gb/s = 50 GB/s)
//   duration   ps ns us (also µs) ms s min h
//   FLOP rate  FLOP/s kFLOP/s MFLOP/s GFLOP/s TFLOP/s PFLOP/s (also TFLOPS)
//   FLOP count FLOP kFLOP MFLOP GFLOP TFLOP PFLOP EFLOP
// Printing picks the largest unit of the same family (binary for bytes unless asked otherwise)
// and writes the shortest number that reads back exactly.

#include <cmath>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

namespace clustersim {

class Bytes {
 public:
  constexpr Bytes() = default;
  static constexpr Bytes of(std::int64_t n) { return Bytes(n); }
  static constexpr Bytes kib(std::int64_t n) { return Bytes(n * 1024); }
  static constexpr Bytes mib(std::int64_t n) { return Bytes(n * 1024 * 1024); }
  static constexpr Bytes gib(std::int64_t n) { return Bytes(n * 1024 * 1024 * 1024); }
  // Rounds to the nearest byte; throws std::out_of_range beyond int64.
  static Bytes from_double(double n);

  constexpr std::int64_t count() const { return n_; }
  constexpr double as_double() const { return static_cast<double>(n_); }

  constexpr auto operator<=>(const Bytes&) const = default;
  constexpr Bytes operator+(Bytes o) const { return Bytes(n_ + o.n_); }
  constexpr Bytes operator-(Bytes o) const { return Bytes(n_ - o.n_); }
  constexpr Bytes& operator+=(Bytes o) { n_ += o.n_; return *this; }
  constexpr Bytes& operator-=(Bytes o) { n_ -= o.n_; return *this; }
  constexpr Bytes operator*(std::int64_t k) const { return Bytes(n_ * k); }
  constexpr Bytes operator/(std::int64_t k) const { return Bytes(n_ / k); }

 private:
  explicit constexpr Bytes(std::int64_t n) : n_(n) {}
  std::int64_t n_ = 0;
};

class Duration {
 public:
  constexpr Duration() = default;
  static constexpr Duration ps(std::int64_t n) { return Duration(n); }
  static constexpr Duration ns(std::int64_t n) { return Duration(n * 1000); }
  static constexpr Duration us(std::int64_t n) { return Duration(n * 1000'000); }
  static constexpr Duration ms(std::int64_t n) { return Duration(n * 1000'000'000); }
  static constexpr Duration zero() { return Duration(0); }
  static constexpr Duration max() { return Duration(INT64_MAX); }
  // Rounds to the nearest picosecond; throws std::out_of_range beyond the representable span.
  static Duration from_seconds(double s);

  constexpr std::int64_t picoseconds() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) / 1e12; }
  constexpr double microseconds() const { return static_cast<double>(ps_) / 1e6; }

  constexpr auto operator<=>(const Duration&) const = default;
  constexpr Duration operator+(Duration o) const { return Duration(ps_ + o.ps_); }
  constexpr Duration operator-(Duration o) const { return Duration(ps_ - o.ps_); }
  constexpr Duration& operator+=(Duration o) { ps_ += o.ps_; return *this; }
  constexpr Duration& operator-=(Duration o) { ps_ -= o.ps_; return *this; }
  constexpr Duration operator*(std::int64_t k) const { return Duration(ps_ * k); }
  constexpr Duration operator/(std::int64_t k) const { return Duration(ps_ / k); }

 private:
  explicit constexpr Duration(std::int64_t ps) : ps_(ps) {}
  std::int64_t ps_ = 0;
};

class Bandwidth {
 public:
  constexpr Bandwidth() = default;
  static constexpr Bandwidth bytes_per_second(double v) { return Bandwidth(v); }
  static constexpr Bandwidth gigabytes_per_second(double v) { return Bandwidth(v * 1e9); }
  static constexpr Bandwidth gigabits_per_second(double v) { return Bandwidth(v * 1e9 / 8); }
  constexpr double bytes_per_second() const { return v_; }
  constexpr double gigabytes_per_second() const { return v_ / 1e9; }
  constexpr double gigabits_per_second() const { return v_ * 8 / 1e9; }

  constexpr auto operator<=>(const Bandwidth&) const = default;
  constexpr Bandwidth operator+(Bandwidth o) const { return Bandwidth(v_ + o.v_); }
  constexpr Bandwidth operator-(Bandwidth o) const { return Bandwidth(v_ - o.v_); }
  constexpr Bandwidth operator*(double k) const { return Bandwidth(v_ * k); }
  constexpr Bandwidth operator/(double k) const { return Bandwidth(v_ / k); }
  constexpr double operator/(Bandwidth o) const { return v_ / o.v_; }

 private:
  explicit constexpr Bandwidth(double v) : v_(v) {}
  double v_ = 0;
};

class FlopCount {
 public:
  constexpr FlopCount() = default;
  static constexpr FlopCount of(double v) { return FlopCount(v); }
  constexpr double count() const { return v_; }
  constexpr auto operator<=>(const FlopCount&) const = default;
  constexpr FlopCount operator+(FlopCount o) const { return FlopCount(v_ + o.v_); }
  constexpr FlopCount& operator+=(FlopCount o) { v_ += o.v_; return *this; }
  constexpr FlopCount operator*(double k) const { return FlopCount(v_ * k); }

 private:
  explicit constexpr FlopCount(double v) : v_(v) {}
  double v_ = 0;
};

class FlopRate {
 public:
  constexpr FlopRate() = default;
  static constexpr FlopRate flops_per_second(double v) { return FlopRate(v); }
  static constexpr FlopRate teraflops(double v) { return FlopRate(v * 1e12); }
  constexpr double flops_per_second() const { return v_; }
  constexpr double teraflops() const { return v_ / 1e12; }
  constexpr auto operator<=>(const FlopRate&) const = default;
  constexpr FlopRate operator*(double k) const { return FlopRate(v_ * k); }
  constexpr FlopRate operator/(double k) const { return FlopRate(v_ / k); }
  constexpr double operator/(FlopRate o) const { return v_ / o.v_; }

 private:
  explicit constexpr FlopRate(double v) : v_(v) {}
  double v_ = 0;
};

// Time to move `bytes` at `rate`, rounded once to the nearest picosecond. rate must be > 0.
Duration transfer_time(Bytes bytes, Bandwidth rate);
// Time to do `work` at `rate`, rounded once to the nearest picosecond. rate must be > 0.
Duration compute_time(FlopCount work, FlopRate rate);
// Bytes moved in `d` at `rate` (rounded down to whole bytes).
Bytes bytes_in(Duration d, Bandwidth rate);

// Parsing. Each throws InputError quoting the text and naming the expected form.
Bytes parse_bytes(std::string_view text);
Duration parse_duration(std::string_view text);
Bandwidth parse_bandwidth(std::string_view text);
FlopRate parse_flop_rate(std::string_view text);
FlopCount parse_flop_count(std::string_view text);
// nccl-tests' size flags (-b/-e): a plain byte count or a suffix K, M, G, T meaning 2^10k bytes.
Bytes parse_nccl_size(std::string_view text);

enum class Prefix { DECIMAL, BINARY };
std::string format_bytes(Bytes b, Prefix prefix = Prefix::BINARY);
std::string format_duration(Duration d);
std::string format_bandwidth(Bandwidth b);       // bytes per second, decimal: "450 GB/s"
std::string format_bandwidth_bits(Bandwidth b);  // bits per second, decimal: "400 Gb/s"
std::string format_flop_rate(FlopRate r);
std::string format_flop_count(FlopCount f);
// Shortest decimal text that reads back to exactly `v` (std::to_chars).
std::string format_number(double v);
// `v` with at most `digits` significant digits, no exponent for everyday magnitudes.
std::string format_significant(double v, int digits);

}  // namespace clustersim
