// Output files are written to a temporary name and renamed into place (hardware/atomic_file.hpp),
// so an interrupted run never leaves a half-written report, trace, profile or results file. For
// every command that writes a file: an existing file is replaced by a new one (a new inode: a hard
// link to the old file still holds the old bytes, so it was never truncated in place), no temporary
// file is left beside it, and a path in a missing directory exits 2 and creates nothing.

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include "calibrate/results.hpp"
#include "cli/app.hpp"
#include "hardware/atomic_file.hpp"
#include "hardware/errors.hpp"
#include "support/source_text.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;

namespace {

constexpr auto slurp = &testing::read_file_text;

ino_t inode_of(const std::filesystem::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_ino;
}

std::vector<std::string> names_in(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string src(const char* rel) { return (testing::source_dir() / rel).string(); }

// One writer: the command line with OUT where the output path goes.
struct Writer {
  const char* name;
  std::vector<std::string> args;
};

std::vector<Writer> writers() {
  return {
      {"simulate --trace", {"simulate", src("scenarios/default.json"), "--trace", "OUT"}},
      {"collective --output",
       {"collective", "--op", "all_gather", "--system", "p4d.24xlarge", "--format", "csv", "--output", "OUT"}},
      {"plan -o",
       {"plan", src("scenarios/plans/llama3-8b-finetune-sft-vs-lora-p4d-p5.json"),
        "--quiet", "--threads", "2", "--format", "json", "-o", "OUT"}},
      {"report -o", {"report", src("tests/fuzz/corpus/report/seed-plan-result-small.json"), "--format", "html", "-o", "OUT"}},
      {"calibrate import-nccl-tests -o",
       {"calibrate", "import-nccl-tests", src("tests/data/nccl_tests_logs/all_reduce_4gpu_format_sample.log"), "-o",
        "OUT"}},
      {"calibrate fit -o", {"calibrate", "fit", src("tests/fuzz/corpus/results/seed-results-1gpu.json"), "-o", "OUT"}},
  };
}

int run(std::vector<std::string> args, const std::filesystem::path& out_path, std::string* err_text = nullptr) {
  for (auto& a : args) {
    if (a == "OUT") a = out_path.string();
  }
  std::ostringstream out, err;
  const int rc = cli::run(args, out, err);
  if (err_text) *err_text = err.str();
  return rc;
}

}  // namespace

TEST_CASE("every writer replaces an existing file atomically and leaves no temporary file",
          "[unit][robust][atomic]") {
  for (const auto& w : writers()) {
    INFO(w.name);
    testing::TempDir dir;
    const auto target = dir.path() / "output.json";
    const auto link = dir.path() / "old-link";
    dir.write("output.json", "old contents\n");
    std::filesystem::create_hard_link(target, link);
    const ino_t before = inode_of(target);
    std::string err;
    REQUIRE(run(w.args, target, &err) == 0);
    INFO(err);
    const std::string now = slurp(target);
    CHECK(now.size() > 20);
    CHECK(now != "old contents\n");
    // Renamed into place: a new inode; the old one, still reachable through the link, is intact.
    CHECK(inode_of(target) != before);
    CHECK(slurp(link) == "old contents\n");
    CHECK(names_in(dir.path()) == std::vector<std::string>{"old-link", "output.json"});
  }
}

TEST_CASE("every writer exits 2 on a path in a missing directory and creates nothing", "[unit][robust][atomic]") {
  for (const auto& w : writers()) {
    INFO(w.name);
    testing::TempDir dir;
    const auto target = dir.path() / "missing" / "output.json";
    std::string err;
    CHECK(run(w.args, target, &err) == 2);
    CHECK_THAT(err, Catch::Contains(target.string()) && Catch::Contains("does not exist"));
    CHECK(names_in(dir.path()).empty());
  }
}

TEST_CASE("write_file_atomically: directories, files in the way, and the results writer", "[unit][robust][atomic]") {
  testing::TempDir dir;
  // A directory where the file should go.
  std::filesystem::create_directory(dir.path() / "d");
  CHECK_THROWS_AS(write_file_atomically(dir.path() / "d", "x"), InputError);
  // A regular file where a directory should be.
  dir.write("f", "x");
  CHECK_THROWS_AS(write_file_atomically(dir.path() / "f" / "out.json", "x"), InputError);
  CHECK(names_in(dir.path()) == std::vector<std::string>{"d", "f"});
  // An empty output is written too (a zero-byte file, not a missing one).
  write_file_atomically(dir.path() / "empty", "");
  CHECK(std::filesystem::file_size(dir.path() / "empty") == 0);
  // Calibration results (what import and the fitter's inputs are) go through the same path.
  const auto results = calibrate::load_calibration_results(src("tests/fuzz/corpus/results/seed-results-1gpu.json"));
  const auto path = dir.path() / "r.json";
  dir.write("r.json", "old");
  calibrate::write_calibration_results(path.string(), results);
  CHECK(calibrate::load_calibration_results(path.string()).collectives.size() == results.collectives.size());
  CHECK(names_in(dir.path()) == std::vector<std::string>{"d", "empty", "f", "r.json"});
}
