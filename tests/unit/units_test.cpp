#include <catch2/catch.hpp>

#include "hardware/errors.hpp"
#include "hardware/units.hpp"

using namespace clustersim;

TEST_CASE("byte sizes keep decimal and binary prefixes apart", "[unit][units]") {
  // 80 GiB = 80 * 2^30 = 85,899,345,920 bytes; 80 GB = 80 * 10^9.
  CHECK(parse_bytes("80 GiB").count() == 85'899'345'920LL);
  CHECK(parse_bytes("80 GB").count() == 80'000'000'000LL);
  CHECK(parse_bytes("1.5 KiB").count() == 1536);
  CHECK(parse_bytes("512KiB").count() == 524'288);
  CHECK(parse_bytes("  8 MiB ").count() == 8'388'608);
  CHECK(parse_bytes("1 kB").count() == 1000);
}

TEST_CASE("bandwidths in bytes and bits per second", "[unit][units]") {
  // 900 GB/s = 9e11 B/s; 400 Gb/s = 400e9 / 8 = 5e10 B/s = 50 GB/s; 25 Gbps = 3.125e9 B/s.
  CHECK(parse_bandwidth("900 GB/s").bytes_per_second() == Approx(9e11));
  CHECK(parse_bandwidth("400 Gb/s").gigabytes_per_second() == Approx(50.0));
  CHECK(parse_bandwidth("25 Gbps").bytes_per_second() == Approx(3.125e9));
  // 1 GiB/s = 2^30 B/s, not 1e9.
  CHECK(parse_bandwidth("1 GiB/s").bytes_per_second() == Approx(1073741824.0));
  CHECK(format_bandwidth(parse_bandwidth("400 Gb/s")) == "50 GB/s");
  CHECK(format_bandwidth_bits(parse_bandwidth("3200 Gb/s")) == "3.2 Tb/s");
}

TEST_CASE("durations are integer picoseconds", "[unit][units]") {
  // 1.5 us = 1.5e-6 s = 1,500,000 ps.
  CHECK(parse_duration("1.5 us").picoseconds() == 1'500'000);
  CHECK(parse_duration("1.5 \xc2\xb5s").picoseconds() == 1'500'000);
  CHECK(parse_duration("2 ms").picoseconds() == 2'000'000'000LL);
  CHECK(parse_duration("130 ns").picoseconds() == 130'000);
  CHECK(format_duration(Duration::us(15)) == "15 us");
}

TEST_CASE("FLOP rates", "[unit][units]") {
  // 989.4 TFLOP/s = 9.894e14 FLOP/s.
  CHECK(parse_flop_rate("989.4 TFLOP/s").flops_per_second() == Approx(9.894e14));
  CHECK(parse_flop_rate("989.4 TFLOPS").teraflops() == Approx(989.4));
  CHECK(format_flop_rate(FlopRate::teraflops(312)) == "312 TFLOP/s");
}

TEST_CASE("printing then parsing gives the same quantity", "[unit][units]") {
  for (std::int64_t b : {0LL, 1LL, 1000LL, 1024LL, 1536LL, 4'194'304LL, 85'899'345'920LL, 141'000'000'000LL}) {
    CHECK(parse_bytes(format_bytes(Bytes::of(b))).count() == b);
    CHECK(parse_bytes(format_bytes(Bytes::of(b), Prefix::DECIMAL)).count() == b);
  }
  for (double gbs : {0.5, 25.0, 31.5, 450.0, 3350.0, 4800.0}) {
    const Bandwidth bw = Bandwidth::gigabytes_per_second(gbs);
    CHECK(parse_bandwidth(format_bandwidth(bw)).bytes_per_second() == Approx(bw.bytes_per_second()));
    CHECK(parse_bandwidth(format_bandwidth_bits(bw)).bytes_per_second() == Approx(bw.bytes_per_second()));
  }
  for (std::int64_t ps : {1LL, 999LL, 1'500'000LL, 2'330'169LL, 7'000'000'000'000LL}) {
    CHECK(parse_duration(format_duration(Duration::ps(ps))).picoseconds() == ps);
  }
  for (double t : {19.5, 312.0, 989.4, 2250.0}) {
    CHECK(parse_flop_rate(format_flop_rate(FlopRate::teraflops(t))).teraflops() == Approx(t));
  }
}

TEST_CASE("a number without a unit is an error that quotes the text", "[unit][units]") {
  auto message = [](auto fn) {
    try {
      fn();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message([] { parse_bandwidth("900"); }), Catch::Contains("'900'") && Catch::Contains("without a unit"));
  CHECK_THAT(message([] { parse_bytes("80"); }), Catch::Contains("'80'") && Catch::Contains("80 GiB"));
  CHECK_THAT(message([] { parse_duration("1.5"); }), Catch::Contains("'1.5'"));
  CHECK_THAT(message([] { parse_bandwidth("3 TB/sec"); }), Catch::Contains("unknown unit 'TB/sec'"));
  CHECK_THAT(message([] { parse_bytes("GiB"); }), Catch::Contains("no number"));
  CHECK_THAT(message([] { parse_bytes("1e30 GiB"); }), Catch::Contains("below 8 EiB"));
  CHECK_THAT(message([] { parse_flop_rate(""); }), Catch::Contains("empty"));
}

TEST_CASE("transfer times are rounded once from bytes and rate", "[unit][units]") {
  // 1 MiB at 450 GB/s: 1,048,576 / 4.5e11 s = 2,330,168.9 ps -> 2,330,169 ps.
  CHECK(transfer_time(Bytes::mib(1), Bandwidth::gigabytes_per_second(450)).picoseconds() == 2'330'169);
  // Summing 1024 one-KiB transfers rounded separately would drift; one 1 MiB transfer does not:
  // 1 KiB at 450 GB/s = 2275.56 ps -> 2276 ps, x1024 = 2,330,624 ps (0.02% high).
  CHECK(transfer_time(Bytes::kib(1), Bandwidth::gigabytes_per_second(450)).picoseconds() == 2276);
  // 312 TFLOP at 312 TFLOP/s = 1 s.
  CHECK(compute_time(FlopCount::of(312e12), FlopRate::teraflops(312)).picoseconds() == 1'000'000'000'000LL);
}

TEST_CASE("nccl-tests sizes use binary suffixes", "[unit][units]") {
  // nccl-tests' -e 8G means 8 * 2^30 bytes.
  CHECK(parse_nccl_size("8").count() == 8);
  CHECK(parse_nccl_size("64K").count() == 65536);
  CHECK(parse_nccl_size("8G").count() == 8'589'934'592LL);
  CHECK_THROWS_AS(parse_nccl_size("8X"), InputError);
  CHECK_THROWS_AS(parse_nccl_size("-1"), InputError);
  CHECK_THROWS_AS(parse_nccl_size("99999999999T"), InputError);
}
