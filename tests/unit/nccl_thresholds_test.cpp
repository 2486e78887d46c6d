// The validation's thresholds file (collective_validation.hpp, Thresholds): how a run's errors
// become a record, and how a record takes the place of one section and leaves the rest alone.

#include <catch2/catch.hpp>

#include "hardware/errors.hpp"
#include "sim/nccl/collective_validation.hpp"

using namespace clustersim;
using namespace clustersim::sim::nccl;

namespace {

constexpr const char* kFile = R"({
  "schema_version": 1,
  "note": "n",
  "sets": {"b": {"median_abs_error": 0.2, "worst_abs_error": 0.3},
           "a": {"median_abs_error": 0.1, "worst_abs_error": 0.4}}
})";

GroupResult group(std::string source, std::string transport, double median) {
  GroupResult g;
  g.source = std::move(source);
  g.transport = std::move(transport);
  g.op = "all_reduce";
  g.algo = "tree";
  g.proto = "simple";
  g.median_abs_error = median;
  return g;
}

}  // namespace

TEST_CASE("a record is the run's errors plus their margins, rounded up", "[unit][nccl]") {
  ValidationSet s;
  s.name = "x/one";
  SetResult r;
  r.set = &s;
  r.median_abs_error = 0.0712;  // + 0.03 = 0.1012, up to two places: 0.11
  r.worst_abs_error = 0.25;     // + 0.05 = 0.30 exactly: stays 0.30
  const std::vector<GroupResult> groups = {
      group("m measured", "NET", 0.0712),  // + 0.02 = 0.0912, up to three places: 0.092
      group("m measured", "SHM", 0.095),   // + 0.02 = 0.115, but within 10% it may not leave it: 0.10
      group("m measured", "P2P", 0.116),   // over 10% already: + 0.02 = 0.136
      group("published", "", 0.05)};       // a published set's group has no transport: "-"; 0.07
  const nlohmann::ordered_json rec = record_thresholds({r}, groups);
  CHECK(rec["sets"]["x/one"]["median_abs_error"].get<double>() == Approx(0.11));
  CHECK(rec["sets"]["x/one"]["worst_abs_error"].get<double>() == Approx(0.30));
  CHECK(rec["groups"]["m measured | NET | all_reduce | tree | simple"]["median_abs_error"].get<double>() ==
        Approx(0.092));
  CHECK(rec["groups"]["m measured | SHM | all_reduce | tree | simple"]["median_abs_error"].get<double>() ==
        Approx(0.10));
  CHECK(rec["groups"]["m measured | P2P | all_reduce | tree | simple"]["median_abs_error"].get<double>() ==
        Approx(0.136));
  CHECK(rec["groups"]["published | - | all_reduce | tree | simple"]["median_abs_error"].get<double>() == Approx(0.07));
}

TEST_CASE("a record replaces one section of the thresholds file and keeps the rest", "[unit][nccl]") {
  ValidationSet s;
  s.name = "a";
  SetResult r;
  r.set = &s;
  r.median_abs_error = 0.01;  // 0.04 / 0.06 recorded
  r.worst_abs_error = 0.01;
  const nlohmann::ordered_json rec = record_thresholds({r}, {group("m measured", "NET", 0.05)});

  // A profile's section: added under "profiles" (schema 2), the fallbacks' sets as they were, in
  // their order.
  const std::string with_profile = replace_threshold_section(kFile, "t.json", "p", rec);
  const ThresholdFile f = load_thresholds(with_profile, "t.json");
  CHECK(with_profile.find("\"b\"") < with_profile.find("\"a\""));
  CHECK(f.fallbacks.sets.at("a").worst_abs_error == Approx(0.4));
  CHECK(f.fallbacks.sets.at("b").median_abs_error == Approx(0.2));
  CHECK(f.fallbacks.groups.empty());
  REQUIRE(f.profiles.count("p") == 1);
  CHECK(f.profiles.at("p").sets.at("a").median_abs_error == Approx(0.04));
  CHECK(f.profiles.at("p").sets.at("a").worst_abs_error == Approx(0.06));
  CHECK(f.profiles.at("p").groups.at("m measured | NET | all_reduce | tree | simple") == Approx(0.07));

  // The fallbacks' section: their sets replaced (the record's only), groups added, the profile kept.
  const ThresholdFile g = load_thresholds(replace_threshold_section(with_profile, "t.json", "", rec), "t.json");
  CHECK(g.fallbacks.sets.size() == 1);
  CHECK(g.fallbacks.sets.at("a").median_abs_error == Approx(0.04));
  CHECK(g.fallbacks.groups.size() == 1);
  CHECK(g.profiles.count("p") == 1);

  // A broken file is named, not overwritten with a guess.
  CHECK_THROWS_AS(replace_threshold_section(R"({"schema_version": 1, "note": "n"})", "t.json", "p", rec), InputError);
}
