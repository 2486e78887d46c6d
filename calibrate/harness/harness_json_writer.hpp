#pragma once
// A small JSON writer, so the harness needs nothing beyond CUDA and the C++ standard library.
//
//   JsonWriter w;
//   w.begin_object().field("op", "all_reduce").field("nranks", 4).key("points").begin_array();
//   ...
//   std::string text = w.take();
//
// Doubles are written in their shortest round-trip form; NaN and infinities become null (JSON has
// no such numbers). Strings are escaped per RFC 8259. The writer checks its own nesting and throws
// std::logic_error on misuse (a programmer error, never user input).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::harness {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(int v) { return integer(v); }
  JsonWriter& value(long v) { return integer(v); }
  JsonWriter& value(long long v) { return integer(v); }
  JsonWriter& value(unsigned v) { return integer(static_cast<long long>(v)); }
  JsonWriter& value(unsigned long v) { return integer(static_cast<long long>(v)); }
  JsonWriter& value(unsigned long long v) { return integer(static_cast<long long>(v)); }
  JsonWriter& value(double v);
  JsonWriter& null();
  // A value already rendered as JSON text (an entry a worker sent, for example).
  JsonWriter& raw(std::string_view json);

  template <class T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  template <class T>
  JsonWriter& field(std::string_view k, const std::optional<T>& v) {
    key(k);
    return v ? value(*v) : null();
  }
  JsonWriter& field_null(std::string_view k) {
    key(k);
    return null();
  }
  // "k": ["a", "b"] / "k": [1, 2]
  JsonWriter& field(std::string_view k, const std::vector<std::string>& list);
  JsonWriter& field(std::string_view k, const std::vector<int>& list);
  JsonWriter& field(std::string_view k, const std::vector<double>& list);

  // The next item (or the closing bracket) starts on a new line at its depth (readable documents).
  JsonWriter& newline();

  const std::string& str() const { return out_; }
  std::string take();

 private:
  JsonWriter& integer(long long v);
  void before_value();
  void separate();
  enum class Frame { OBJECT, ARRAY };
  std::string out_;
  std::vector<Frame> stack_;
  std::vector<bool> first_;
  bool after_key_ = false;
  bool pending_newline_ = false;
};

// JSON string literal for `s`, quotes included.
std::string json_quote(std::string_view s);
// Shortest round-trip text of a finite double; "null" otherwise.
std::string json_number(double v);

// Writes `text` to `path` through a temporary file in the same folder and a rename, so that a reader
// never sees a half-written file; HarnessError when it cannot.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace clustersim::harness
