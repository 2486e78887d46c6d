// What `calibrate fit` reads: results files loaded once each, checked for the fit, merged.

#include <catch2/catch.hpp>

#include "calibrate/fit_input.hpp"
#include "hardware/errors.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;
using namespace clustersim::calibrate;

namespace {

// A results file of `gpus` GPUs named `gpu` with one all_reduce series of one point of `size` bytes.
std::string results_text(const std::string& gpu, int gpus, long long size) {
  return R"({"schema_version": 1, "kind": "clustersim-calibration-results",
  "tool": {"name": "clustersim-calibrate", "version": "t", "command": "c"},
  "environment": {"gpu_name": ")" + gpu + R"(", "gpu_count": )" + std::to_string(gpus) + R"(},
  "collectives": [{"op": "all_reduce", "nodes": 1, "gpus_per_node": )" + std::to_string(gpus) +
         R"(, "nranks": )" + std::to_string(gpus) + R"(, "algo": "auto", "proto": "auto", "dtype": "float",
    "redop": "sum", "root": -1, "in_place": false,
    "points": [{"size_bytes": )" + std::to_string(size) + R"(, "count": 2, "time_us": 10.0, "algbw_GBps": 1.0, "busbw_GBps": 1.0}]}],
  "p2p": [{"src": 0, "dst": 1, "mode": "nccl_p2p_write",
    "points": [{"size_bytes": 8, "time_us": 9.5, "bandwidth_GBps": 0.00084}]}]})";
}

std::string error_of(const std::vector<std::string>& paths) {
  try {
    (void)load_fit_input(paths);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("fit input: files merged in order, the environment of the most GPUs", "[unit][calibrate]") {
  testing::TempDir dir;
  const auto two = dir.write("two.json", results_text("NVIDIA H200", 2, 1024)).string();
  const auto four = dir.write("four.json", results_text("NVIDIA H200", 4, 2048)).string();
  const CalibrationResults r = load_fit_input({two, four});
  REQUIRE(r.environment);
  CHECK(r.environment->gpu_count == 4);
  // One series and one p2p pair per file, in file order: 1024 B from two.json, then 2048 B.
  REQUIRE(r.collectives.size() == 2);
  CHECK(r.collectives[0].points.at(0).size_bytes == 1024);
  CHECK(r.collectives[1].points.at(0).size_bytes == 2048);
  CHECK(r.p2p.size() == 2);
  // merge_calibration_results does the same with results already read.
  const CalibrationResults again = merge_calibration_results(
      {{two, load_calibration_results(two)}, {four, load_calibration_results(four)}});
  CHECK(format_calibration_results(again) == format_calibration_results(r));
}

TEST_CASE("fit input: errors name the file, the JSON pointer and the expectation", "[unit][calibrate][bad-input]") {
  testing::TempDir dir;
  const auto h200 = dir.write("h200.json", results_text("NVIDIA H200", 4, 1024)).string();
  SECTION("two kinds of GPU") {
    const auto h100 = dir.write("h100.json", results_text("NVIDIA H100 80GB HBM3", 4, 1024)).string();
    CHECK_THAT(error_of({h200, h100}), Catch::Contains("h100.json") && Catch::Contains("/environment/gpu_name") &&
                                           Catch::Contains("one kind of GPU"));
  }
  SECTION("a zero-byte point, which the format allows (nccl-tests prints them) and the fit cannot use") {
    const auto zero = dir.write("zero.json", results_text("NVIDIA H200", 4, 0)).string();
    CHECK_NOTHROW(load_calibration_results(zero));
    CHECK_THAT(error_of({h200, zero}), Catch::Contains("zero.json") &&
                                           Catch::Contains("/collectives/0/points/0/size_bytes") &&
                                           Catch::Contains("at least 1 byte"));
  }
  SECTION("a p2p GPU index past what the NCCL fit can place") {
    std::string text = results_text("NVIDIA H200", 4, 1024);
    text.replace(text.find("\"dst\": 1"), 8, "\"dst\": 70000");
    const auto far = dir.write("far.json", text).string();
    CHECK_THAT(error_of({far}), Catch::Contains("far.json") && Catch::Contains("/p2p/0/dst") &&
                                    Catch::Contains("from 0 to 65536"));
  }
  SECTION("no environment in any file") {
    std::string text = results_text("NVIDIA H200", 4, 1024);
    const auto from = text.find("\"environment\"");
    text.erase(from, text.find("\"collectives\"") - from);
    const auto bare = dir.write("bare.json", text).string();
    CHECK_THAT(error_of({bare}), Catch::Contains("bare.json") && Catch::Contains("/environment"));
  }
  SECTION("a malformed file: the strict reader's error") {
    std::string text = results_text("NVIDIA H200", 4, 1024);
    text.replace(text.find("\"time_us\": 10.0"), 15, "\"time_us\": -1");
    const auto bad = dir.write("bad.json", text).string();
    CHECK_THAT(error_of({h200, bad}), Catch::Contains("bad.json") && Catch::Contains("/collectives/0/points/0/time_us"));
  }
}
