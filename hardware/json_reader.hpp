#pragma once
// Strict reading of JSON into structs: the one way every input file is read.
//
//   auto doc = load_json_file(path);                    // parse errors, duplicate keys -> InputError
//   auto cfg = doc.root().read_object([](ObjectReader& o) {
//     return Config{.nodes = o.at("nodes").as_int({.min = 1}),
//                   .link = o.at("link").as_bandwidth(),
//                   .name = o.get_or("name", std::string("x"))};
//   });                                                  // unknown keys -> InputError on return
//
// Every error names the file, the JSON pointer of the offending value and what was expected:
//   "scenario.json: /cluster/nodez: unknown key; did you mean 'nodes'?"
//   "gpus.json: /gpus/2/hbm_bandwidth/value: expected a bandwidth > 0, got '-3 TB/s'"
// An optional key holding null counts as absent (users write null for "use the default").
// Numbers must be finite; integers may be written as 1e9 but not 1.5.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hardware/errors.hpp"
#include "hardware/units.hpp"

namespace clustersim {

struct IntRange {
  std::int64_t min = std::numeric_limits<std::int64_t>::min();
  std::int64_t max = std::numeric_limits<std::int64_t>::max();
};

struct NumberRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;
};

class ObjectReader;

// One JSON value at a known place (file + JSON pointer).
class ValueReader {
 public:
  ValueReader(const nlohmann::json& value, std::string file, std::string pointer)
      : value_(&value), file_(std::move(file)), pointer_(std::move(pointer)) {}

  const nlohmann::json& raw() const { return *value_; }
  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }

  std::string as_string() const;
  // One of `allowed`; the error lists them and suggests the nearest.
  std::string as_choice(std::initializer_list<std::string_view> allowed) const;
  std::string as_choice(const std::vector<std::string>& allowed) const;
  std::int64_t as_int(IntRange range = {}) const;
  double as_number(NumberRange range = {}) const;
  bool as_bool() const;
  // Unit strings. Bytes must be >= min_bytes; bandwidths and FLOP rates > 0; durations >= 0.
  Bytes as_bytes(Bytes min_bytes = Bytes::of(0)) const;
  Duration as_duration() const;
  Bandwidth as_bandwidth() const;
  FlopRate as_flop_rate() const;

  ObjectReader as_object() const;
  std::vector<ValueReader> as_array(std::size_t min_size = 0,
                                    std::size_t max_size = std::numeric_limits<std::size_t>::max()) const;
  // Reads an object with `fn(ObjectReader&)` and then rejects any key `fn` did not read.
  template <class Fn>
  auto read_object(Fn&& fn) const -> decltype(fn(std::declval<ObjectReader&>()));

  // Throws InputError "<file>: <pointer>: expected <expected>, got <value>".
  [[noreturn]] void fail(std::string_view expected) const;
  // Throws InputError "<file>: <pointer>: <message>".
  [[noreturn]] void fail_message(std::string message) const;

 private:
  const nlohmann::json* value_;
  std::string file_;
  std::string pointer_;
};

// A JSON object whose keys are checked: each key a caller reads is marked known; finish() rejects
// the rest with the nearest known key as a suggestion.
class ObjectReader {
 public:
  ObjectReader(const nlohmann::json& object, std::string file, std::string pointer);

  bool has(std::string_view key) const;  // present and not null; marks the key known
  ValueReader at(std::string_view key);  // required; a missing key is an InputError
  std::optional<ValueReader> maybe(std::string_view key);  // absent or null -> nullopt

  std::string get_or(std::string_view key, std::string fallback);
  std::string get_or(std::string_view key, const char* fallback) { return get_or(key, std::string(fallback)); }
  bool get_or(std::string_view key, bool fallback);
  std::int64_t get_or(std::string_view key, std::int64_t fallback, IntRange range = {});
  std::int64_t get_or(std::string_view key, int fallback, IntRange range = {}) {
    return get_or(key, static_cast<std::int64_t>(fallback), range);
  }
  double get_or(std::string_view key, double fallback, NumberRange range = {});

  // Declares keys that are accepted and ignored (for example "comment").
  void allow(std::initializer_list<std::string_view> keys);
  // Keys in the object, in document order.
  std::vector<std::string> keys() const;
  void finish() const;

  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  std::string child_pointer(std::string_view key) const;
  [[noreturn]] void fail(std::string message) const;

 private:
  const nlohmann::json* object_;
  std::string file_;
  std::string pointer_;
  std::set<std::string, std::less<>> known_;
};

template <class Fn>
auto ValueReader::read_object(Fn&& fn) const -> decltype(fn(std::declval<ObjectReader&>())) {
  ObjectReader o = as_object();
  if constexpr (std::is_void_v<decltype(fn(o))>) {
    fn(o);
    o.finish();
  } else {
    auto result = fn(o);
    o.finish();
    return result;
  }
}

// A parsed document that remembers its file name for error messages.
class JsonDocument {
 public:
  JsonDocument(nlohmann::json root, std::string file) : root_(std::move(root)), file_(std::move(file)) {}
  ValueReader root() const { return ValueReader(root_, file_, ""); }
  const nlohmann::json& json() const { return root_; }
  const std::string& file() const { return file_; }

 private:
  nlohmann::json root_;
  std::string file_;
};

// Parses text strictly: syntax errors give line and column, duplicate keys are errors.
JsonDocument parse_json_text(std::string_view text, std::string file);
// Reads and parses a file; a missing or unreadable file is an InputError naming it.
JsonDocument load_json_file(const std::string& path);

// JSON pointer escaping of one reference token ("a/b" -> "a~1b").
std::string json_pointer_token(std::string_view key);
// The candidate nearest to `word` by edit distance, if it is near enough to be a likely typo.
std::optional<std::string> nearest_word(std::string_view word, const std::vector<std::string>& candidates);
// A short rendering of a JSON value for error messages (long values are cut).
std::string describe_json(const nlohmann::json& value);

}  // namespace clustersim
