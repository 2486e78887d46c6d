#include <catch2/catch.hpp>

#include "hardware/json_reader.hpp"

using namespace clustersim;

namespace {

std::string error_of(std::string_view text, const std::function<void(const JsonDocument&)>& read) {
  try {
    read(parse_json_text(text, "cfg.json"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

struct Link {
  std::string name;
  Bandwidth bw;
  std::int64_t lanes = 16;
};

Link read_link(const JsonDocument& doc) {
  return doc.root().read_object([](ObjectReader& o) {
    return Link{.name = o.at("name").as_string(),
                .bw = o.at("bandwidth").as_bandwidth(),
                .lanes = o.get_or("lanes", std::int64_t{16}, {.min = 1, .max = 32})};
  });
}

}  // namespace

TEST_CASE("strict reading fills a struct", "[unit][json]") {
  const auto doc = parse_json_text(R"({"name": "nvlink", "bandwidth": "450 GB/s"})", "cfg.json");
  const Link l = read_link(doc);
  CHECK(l.name == "nvlink");
  CHECK(l.bw.gigabytes_per_second() == Approx(450));
  CHECK(l.lanes == 16);
}

TEST_CASE("unknown keys name the file, the JSON pointer and the nearest valid key", "[unit][json]") {
  const auto msg = error_of(R"({"name": "x", "bandwidth": "1 GB/s", "lanse": 4})", read_link);
  CHECK_THAT(msg, Catch::Contains("cfg.json") && Catch::Contains("/lanse") && Catch::Contains("did you mean 'lanes'"));
}

TEST_CASE("missing keys, wrong types and ranges say what was expected", "[unit][json]") {
  CHECK_THAT(error_of(R"({"name": "x"})", read_link),
             Catch::Contains("/bandwidth") && Catch::Contains("missing required key 'bandwidth'"));
  CHECK_THAT(error_of(R"({"name": 3, "bandwidth": "1 GB/s"})", read_link),
             Catch::Contains("/name") && Catch::Contains("expected a string, got 3"));
  CHECK_THAT(error_of(R"({"name": "x", "bandwidth": "1 GB/s", "lanes": 64})", read_link),
             Catch::Contains("/lanes") && Catch::Contains("an integer from 1 to 32"));
  CHECK_THAT(error_of(R"({"name": "x", "bandwidth": "1 GB/s", "lanes": 1.5})", read_link),
             Catch::Contains("expected an integer"));
  CHECK_THAT(error_of(R"({"name": "x", "bandwidth": "-2 GB/s"})", read_link),
             Catch::Contains("/bandwidth") && Catch::Contains("a bandwidth > 0"));
  CHECK_THAT(error_of(R"({"name": "x", "bandwidth": 450})", read_link),
             Catch::Contains("as a string with a unit"));
  CHECK_THAT(error_of(R"({"name": null, "bandwidth": "1 GB/s"})", read_link),
             Catch::Contains("required key 'name' is null"));
  CHECK_THAT(error_of(R"([1, 2])", read_link), Catch::Contains("expected an object"));
}

TEST_CASE("integers may be written as 1e9 and optional nulls count as absent", "[unit][json]") {
  const auto doc = parse_json_text(R"({"a": 1e9, "b": null})", "cfg.json");
  ObjectReader o = doc.root().as_object();
  CHECK(o.at("a").as_int() == 1'000'000'000);
  CHECK_FALSE(o.maybe("b").has_value());
  CHECK(o.get_or("b", 7) == 7);
  o.finish();
}

TEST_CASE("syntax errors and duplicate keys are errors with a place", "[unit][json]") {
  const auto syntax = error_of("{\"a\": 1,\n \"b\": }", [](const JsonDocument&) {});
  CHECK_THAT(syntax, Catch::Contains("cfg.json") && Catch::Contains("not valid JSON") && Catch::Contains("line 2"));
  const auto dup = error_of(R"({"gpus": [{"name": "a"}, {"name": "b", "name": "c"}]})", [](const JsonDocument&) {});
  CHECK_THAT(dup, Catch::Contains("/gpus/1/name") && Catch::Contains("duplicate key 'name'"));
  CHECK_THAT(error_of("1e999", [](const JsonDocument&) {}), Catch::Contains("not valid JSON"));
}

TEST_CASE("choices suggest the nearest allowed value", "[unit][json]") {
  const auto doc = parse_json_text(R"({"algo": "rnig"})", "cfg.json");
  ObjectReader o = doc.root().as_object();
  try {
    o.at("algo").as_choice({"ring", "tree"});
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("/algo") && Catch::Contains("did you mean 'ring'"));
  }
}

TEST_CASE("nearest_word only suggests likely typos", "[unit][json]") {
  CHECK(nearest_word("nodez", {"nodes", "system"}) == std::optional<std::string>("nodes"));
  CHECK_FALSE(nearest_word("completely_different", {"nodes", "system"}).has_value());
}
