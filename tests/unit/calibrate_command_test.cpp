#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>

#include "calibrate/results.hpp"
#include "cli/app.hpp"
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;

namespace {
using Result = testing::CliResult;
constexpr auto run = &testing::run_cli;
std::string sample(const std::string& name) {
  return (testing::source_dir() / "tests/data/nccl_tests_logs" / name).string();
}
}  // namespace

TEST_CASE("clustersim calibrate import-nccl-tests writes results the strict reader accepts", "[unit][calibrate][cli]") {
  testing::TempDir dir;
  const auto out = (dir.path() / "imported.json").string();
  const auto r = run({"calibrate", "import-nccl-tests", sample("all_reduce_4gpu_format_sample.log"), "-o", out});
  REQUIRE(r.rc == 0);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("2 series"));
  const auto results = calibrate::load_calibration_results(out);
  CHECK(results.collectives.size() == 2);

  const auto s = run({"calibrate", "summary", out});
  REQUIRE(s.rc == 0);
  // The largest size of the sample is 128 MiB.
  CHECK_THAT(s.out, Catch::Contains("all_reduce") && Catch::Contains("128 MiB"));

  // Without -o the JSON goes to stdout.
  const auto to_stdout = run({"calibrate", "import-nccl-tests", sample("sendrecv_2gpu_cycles_format_sample.log")});
  REQUIRE(to_stdout.rc == 0);
  CHECK_THAT(to_stdout.out, Catch::StartsWith("{") && Catch::Contains("\"sendrecv\""));
}

TEST_CASE("clustersim calibrate: bad input exits 2 with the file and line on stderr", "[unit][calibrate][cli]") {
  const auto bad = run({"calibrate", "import-nccl-tests", sample("bad_truncated_row.log")});
  CHECK(bad.rc == 2);
  CHECK(bad.out.empty());
  CHECK_THAT(bad.err, Catch::Contains("bad_truncated_row.log") && Catch::Contains("line 11"));
  CHECK(run({"calibrate", "import-nccl-tests", sample("all_reduce_4gpu_format_sample.log"), "--op", "gather"}).rc == 2);
  CHECK(run({"calibrate", "summary", sample("all_reduce_4gpu_format_sample.log")}).rc == 2);
  CHECK(run({"calibrate"}).rc == 2);
}
