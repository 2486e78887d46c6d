// Regression tests for robustness bugs: each reproduces, with its input inline, a crash, hang,
// wrong exit code or misleading message that a fuzzer or the bad-input catalogue found, and checks
// the fixed behaviour (exit 2, InputError naming the file, the key or flag, and the expectation).

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "cli/app.hpp"
#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;

namespace {

struct Output {
  int rc;
  std::string out, err;
};

Output run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int rc = cli::run(args, out, err);
  return {rc, out.str(), err.str()};
}

// The default scenario with `from` replaced by `to` in its text.
std::string scenario_with(const std::string& from, const std::string& to) {
  std::string s = R"({"schema_version": 1, "model": {"preset": "llama3-8b"},
    "training": {"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 16, "tokens": 1e12},
    "parallelism": {"framework": "pytorch", "data": 4, "zero_stage": 3},
    "cluster": {"system": "hgx-h200", "nodes": 1, "gpus_per_node": 4},
    "nccl": {"env": {}}})";
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("Fix: a directory or a missing file given as JSON says so (not 'not valid JSON')", "[unit][robust]") {
  testing::TempDir dir;
  try {
    (void)load_json_file(dir.path().string());
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.file() == dir.path().string());
    CHECK(e.message() == "is a directory; expected a JSON file");
  }
  CHECK_THROWS_WITH(load_json_file((dir.path() / "none.json").string()), Catch::EndsWith("none.json: no such file"));
}

TEST_CASE("Fix: a number beyond the double range (1e999) is reported at its JSON pointer", "[unit][robust]") {
  CHECK_THROWS_WITH(parse_json_text(R"({"a": {"b": 1e999}})", "f.json"),
                    Catch::StartsWith("f.json: /a/b: not valid JSON: number overflow parsing '1e999'"));
  CHECK_THROWS_WITH(parse_json_text(R"({"a": [1, 2, -1e999]})", "f.json"), Catch::StartsWith("f.json: /a/2: "));
}
