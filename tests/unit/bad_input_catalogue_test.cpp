// The bad-input catalogue (tests/data/bad_inputs/manifest.json): malformed and impossible inputs
// across every subcommand, each run through cli::run. Every case must exit with its code (2: bad
// input or usage), say on stderr what its manifest entry lists (the file, the key or flag, what was
// expected), print nothing on stdout, and leave nothing behind in its scratch folder: an output
// that could not be written leaves no half-written or temporary file.
//
// The files and the manifest are made by tests/data/bad_inputs/make_bad_inputs.py.

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli/app.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

// Everything under `dir` that is not one of `made` (the folders a case creates beforehand).
std::vector<std::string> leftovers(const std::filesystem::path& dir, const std::vector<std::string>& made) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string p = e.path().string();
    if (std::find(made.begin(), made.end(), p) == made.end()) out.push_back(p);
  }
  return out;
}

nlohmann::json manifest() {
  std::ifstream in(testing::source_dir() / "tests" / "data" / "bad_inputs" / "manifest.json");
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("bad-input catalogue: every case exits as listed with a message naming file, key and expectation",
          "[unit][bad_input]") {
  const nlohmann::json m = manifest();
  const std::string data = (testing::source_dir() / "tests" / "data" / "bad_inputs").string();
  const std::string src = testing::source_dir().string();
  // The catalogue covers every subcommand that reads user input.
  std::set<std::string> commands;
  int cases = 0;
  for (const auto& c : m.at("cases")) {
    ++cases;
    const std::string name = c.at("name").get<std::string>();
    INFO("case: " << name);
    testing::TempDir tmp;
    auto expand = [&](std::string s) {
      s = replace_all(std::move(s), "{data}", data);
      s = replace_all(std::move(s), "{src}", src);
      return replace_all(std::move(s), "{tmp}", tmp.path().string());
    };
    std::vector<std::string> made;
    if (c.contains("mkdir")) {
      for (const auto& d : c["mkdir"]) {
        made.push_back(expand(d.get<std::string>()));
        std::filesystem::create_directories(made.back());
      }
    }
    std::vector<std::string> args;
    for (const auto& a : c.at("args")) args.push_back(expand(a.get<std::string>()));
    if (!args.empty()) commands.insert(args[0] == "--catalog" ? "hardware" : args[0]);
    std::ostringstream out, err;
    const int rc = cli::run(args, out, err);
    INFO("stderr: " << err.str());
    CHECK(rc == c.at("exit").get<int>());
    REQUIRE(!c.at("stderr").empty());
    for (const auto& s : c.at("stderr")) CHECK_THAT(err.str(), Catch::Contains(expand(s.get<std::string>())));
    CHECK(out.str().empty());
    CHECK(leftovers(tmp.path(), made).empty());
  }
  CHECK(cases >= 100);
  for (const char* cmd : {"simulate", "collective", "plan", "report", "hardware", "calibrate", "validate"}) {
    INFO(cmd);
    CHECK(commands.count(cmd) == 1);
  }
}
