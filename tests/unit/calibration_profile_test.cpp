#include <catch2/catch.hpp>

#include "hardware/calibration_profile.hpp"
#include "hardware/errors.hpp"

using namespace clustersim;
using namespace clustersim::hardware;

namespace {
const char* kProfile = R"({
  "schema_version": 1,
  "name": "test-profile",
  "provenance": {"machine": "lab", "gpu": "NVIDIA H200", "gpu_count": 4, "date": "2026-11-21"},
  "parameters": {
    "nccl.nvlink.simple.channel_bandwidth": {"value": "21.5 GB/s", "uncertainty": 0.03, "samples": 40},
    "nccl.nvlink.simple.step_latency": {"value": "1.2 us", "uncertainty": 0.2, "samples": 40},
    "compute.gemm.bf16.large.efficiency": {"value": 0.8, "uncertainty": 0.02, "samples": 12}
  }
})";
}

TEST_CASE("a profile's parameters keep their units and uncertainty", "[unit][profile]") {
  const auto p = CalibrationProfile::parse(kProfile, "p.json");
  CHECK(p.name() == "test-profile");
  REQUIRE(p.find("nccl.nvlink.simple.channel_bandwidth") != nullptr);
  CHECK(p.find("nccl.nvlink.simple.channel_bandwidth")->value == Approx(21.5e9));
  CHECK(p.find("nccl.nvlink.simple.step_latency")->kind == ProfileParameter::Kind::DURATION);
  // Round trip through the fitter's writer.
  const auto again = CalibrationProfile::parse(p.to_json().dump(), "again.json");
  CHECK(again.find("compute.gemm.bf16.large.efficiency")->value == Approx(0.8));
}

TEST_CASE("a parameter set records calibrated values and defaults", "[unit][profile]") {
  const auto p = CalibrationProfile::parse(kProfile, "p.json");
  ParameterSet ps(&p);
  CHECK(ps.bandwidth("nccl.nvlink.simple.channel_bandwidth", Bandwidth::gigabytes_per_second(20), "datasheet")
            .gigabytes_per_second() == Approx(21.5));
  CHECK(ps.ratio("compute.gemm.bf16.small.efficiency", 0.5, "default 50% of peak") == Approx(0.5));
  CHECK(ps.used().at("nccl.nvlink.simple.channel_bandwidth").calibrated);
  CHECK_FALSE(ps.used().at("compute.gemm.bf16.small.efficiency").calibrated);
  CHECK(ps.any_uncalibrated());
  // Asking for a bandwidth under a name that holds a duration is a profile error.
  CHECK_THROWS_AS(ps.bandwidth("nccl.nvlink.simple.step_latency", Bandwidth::gigabytes_per_second(1), "x"), InputError);
}

TEST_CASE("a malformed profile names its file and key", "[unit][profile][bad-input]") {
  std::string bad = kProfile;
  bad.replace(bad.find("\"21.5 GB/s\""), 11, "\"21.5\"");
  try {
    (void)CalibrationProfile::parse(bad, "p.json");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("p.json") && Catch::Contains("/parameters/nccl.nvlink.simple.channel_bandwidth/value"));
  }
}
