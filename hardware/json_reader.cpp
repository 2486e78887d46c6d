#include "hardware/json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace clustersim {

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Levenshtein distance with adjacent transpositions (optimal string alignment).
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::string join_quoted(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ", ";
    out += "'" + w + "'";
  }
  return out;
}

std::string type_name(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}

// Tracks where the parser is so duplicate keys can be reported with their JSON pointer.
struct ParseFrame {
  bool is_array = false;
  std::size_t next_index = 0;
  std::string current_key;
  std::set<std::string, std::less<>> keys;
};

std::string frames_pointer(const std::vector<ParseFrame>& frames, std::size_t upto) {
  std::string p;
  for (std::size_t i = 0; i < upto; ++i) {
    const auto& f = frames[i];
    if (f.is_array) {
      p += "/" + std::to_string(f.next_index == 0 ? 0 : f.next_index - 1);
    } else {
      p += "/" + json_pointer_token(f.current_key);
    }
  }
  return p;
}

}  // namespace

std::string json_pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::optional<std::string> nearest_word(std::string_view word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  if (!best || best_d > limit) return std::nullopt;
  return best;
}

std::string describe_json(const nlohmann::json& value) {
  std::string s = value.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  if (value.is_string()) return s;
  if (value.is_object() || value.is_array()) return type_name(value) + " " + s;
  return s;
}

// ---------------------------------------------------------------- ValueReader

void ValueReader::fail(std::string_view expected) const {
  throw InputError(file_, pointer_.empty() ? "/" : pointer_,
                   "expected " + std::string(expected) + ", got " + describe_json(*value_));
}

void ValueReader::fail_message(std::string message) const {
  throw InputError(file_, pointer_.empty() ? "/" : pointer_, std::move(message));
}

std::string ValueReader::as_string() const {
  if (!value_->is_string()) fail("a string");
  return value_->get<std::string>();
}

std::string ValueReader::as_choice(std::initializer_list<std::string_view> allowed) const {
  return as_choice(std::vector<std::string>(allowed.begin(), allowed.end()));
}

std::string ValueReader::as_choice(const std::vector<std::string>& allowed) const {
  if (!value_->is_string()) fail("one of " + join_quoted(allowed));
  std::string s = value_->get<std::string>();
  if (std::find(allowed.begin(), allowed.end(), s) != allowed.end()) return s;
  std::string msg = "expected one of " + join_quoted(allowed) + ", got '" + s + "'";
  if (auto near = nearest_word(s, allowed)) msg += "; did you mean '" + *near + "'?";
  fail_message(msg);
}

std::int64_t ValueReader::as_int(IntRange range) const {
  auto expected = [&]() {
    std::string e = "an integer";
    const bool has_min = range.min != std::numeric_limits<std::int64_t>::min();
    const bool has_max = range.max != std::numeric_limits<std::int64_t>::max();
    if (has_min && has_max) {
      e += " from " + std::to_string(range.min) + " to " + std::to_string(range.max);
    } else if (has_min) {
      e += " >= " + std::to_string(range.min);
    } else if (has_max) {
      e += " <= " + std::to_string(range.max);
    }
    return e;
  };
  std::int64_t v = 0;
  if (value_->is_number_unsigned()) {
    const auto u = value_->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) fail(expected());
    v = static_cast<std::int64_t>(u);
  } else if (value_->is_number_integer()) {
    v = value_->get<std::int64_t>();
  } else if (value_->is_number_float()) {
    const double d = value_->get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) >= 9.2e18) fail(expected());
    v = static_cast<std::int64_t>(d);
  } else {
    fail(expected());
  }
  if (v < range.min || v > range.max) fail(expected());
  return v;
}

double ValueReader::as_number(NumberRange range) const {
  auto expected = [&]() {
    std::string e = "a number";
    if (std::isfinite(range.min)) e += (range.min_exclusive ? " > " : " >= ") + format_number(range.min);
    if (std::isfinite(range.max)) e += (std::isfinite(range.min) ? " and <= " : " <= ") + format_number(range.max);
    return e;
  };
  if (!value_->is_number()) fail(expected());
  const double v = value_->get<double>();
  if (!std::isfinite(v)) fail(expected());
  if (v < range.min || (range.min_exclusive && v == range.min) || v > range.max) fail(expected());
  return v;
}

bool ValueReader::as_bool() const {
  if (!value_->is_boolean()) fail("true or false");
  return value_->get<bool>();
}

namespace {
template <class T, class Parse>
T parse_unit_value(const ValueReader& v, std::string_view what, Parse parse) {
  if (!v.raw().is_string()) v.fail(std::string(what) + " as a string with a unit");
  try {
    return parse(v.raw().get<std::string>());
  } catch (const InputError& e) {
    v.fail_message(e.message());
  }
}
}  // namespace

Bytes ValueReader::as_bytes(Bytes min_bytes) const {
  const Bytes b = parse_unit_value<Bytes>(*this, "a size such as '80 GiB'", parse_bytes);
  if (b < min_bytes) fail("a size >= " + format_bytes(min_bytes));
  return b;
}

Duration ValueReader::as_duration() const {
  const Duration d = parse_unit_value<Duration>(*this, "a duration such as '1.5 us'", parse_duration);
  if (d < Duration::zero()) fail("a duration >= 0");
  return d;
}

Bandwidth ValueReader::as_bandwidth() const {
  const Bandwidth b = parse_unit_value<Bandwidth>(*this, "a bandwidth such as '900 GB/s'", parse_bandwidth);
  if (!(b.bytes_per_second() > 0)) fail("a bandwidth > 0");
  return b;
}

FlopRate ValueReader::as_flop_rate() const {
  const FlopRate r = parse_unit_value<FlopRate>(*this, "a FLOP rate such as '989.4 TFLOP/s'", parse_flop_rate);
  if (!(r.flops_per_second() > 0)) fail("a FLOP rate > 0");
  return r;
}

ObjectReader ValueReader::as_object() const {
  if (!value_->is_object()) fail("an object");
  return ObjectReader(*value_, file_, pointer_);
}

std::vector<ValueReader> ValueReader::as_array(std::size_t min_size, std::size_t max_size) const {
  if (!value_->is_array()) fail("an array");
  if (value_->size() < min_size || value_->size() > max_size) {
    std::string e = "an array of ";
    if (max_size == std::numeric_limits<std::size_t>::max()) {
      e += "at least " + std::to_string(min_size) + " element" + (min_size == 1 ? "" : "s");
    } else if (min_size == max_size) {
      e += std::to_string(min_size) + " elements";
    } else {
      e += std::to_string(min_size) + " to " + std::to_string(max_size) + " elements";
    }
    fail_message("expected " + e + ", got " + std::to_string(value_->size()));
  }
  std::vector<ValueReader> out;
  out.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i) {
    out.emplace_back((*value_)[i], file_, pointer_ + "/" + std::to_string(i));
  }
  return out;
}

// ---------------------------------------------------------------- ObjectReader

ObjectReader::ObjectReader(const nlohmann::json& object, std::string file, std::string pointer)
    : object_(&object), file_(std::move(file)), pointer_(std::move(pointer)) {
  if (!object.is_object()) {
    throw InputError(file_, pointer_.empty() ? "/" : pointer_, "expected an object, got " + describe_json(object));
  }
}

std::string ObjectReader::child_pointer(std::string_view key) const {
  return pointer_ + "/" + json_pointer_token(key);
}

void ObjectReader::fail(std::string message) const {
  throw InputError(file_, pointer_.empty() ? "/" : pointer_, std::move(message));
}

bool ObjectReader::has(std::string_view key) const {
  const_cast<ObjectReader*>(this)->known_.emplace(key);
  auto it = object_->find(key);
  return it != object_->end() && !it->is_null();
}

ValueReader ObjectReader::at(std::string_view key) {
  known_.emplace(key);
  auto it = object_->find(key);
  if (it == object_->end()) {
    // A required key that is missing is most often a typo of a key that is present: say so.
    std::vector<std::string> present;
    for (auto k = object_->begin(); k != object_->end(); ++k) {
      if (known_.count(k.key()) == 0) present.push_back(k.key());
    }
    if (auto near = nearest_word(key, present)) {
      throw InputError(file_, child_pointer(*near),
                       "unknown key '" + *near + "'; did you mean '" + std::string(key) + "'?");
    }
  }
  if (it == object_->end() || it->is_null()) {
    throw InputError(file_, child_pointer(key),
                     it == object_->end() ? "missing required key '" + std::string(key) + "'"
                                          : "required key '" + std::string(key) + "' is null");
  }
  return ValueReader(*it, file_, child_pointer(key));
}

std::optional<ValueReader> ObjectReader::maybe(std::string_view key) {
  known_.emplace(key);
  auto it = object_->find(key);
  if (it == object_->end() || it->is_null()) return std::nullopt;
  return ValueReader(*it, file_, child_pointer(key));
}

std::string ObjectReader::get_or(std::string_view key, std::string fallback) {
  auto v = maybe(key);
  return v ? v->as_string() : std::move(fallback);
}

bool ObjectReader::get_or(std::string_view key, bool fallback) {
  auto v = maybe(key);
  return v ? v->as_bool() : fallback;
}

std::int64_t ObjectReader::get_or(std::string_view key, std::int64_t fallback, IntRange range) {
  auto v = maybe(key);
  return v ? v->as_int(range) : fallback;
}

double ObjectReader::get_or(std::string_view key, double fallback, NumberRange range) {
  auto v = maybe(key);
  return v ? v->as_number(range) : fallback;
}

void ObjectReader::allow(std::initializer_list<std::string_view> keys) {
  for (auto k : keys) known_.emplace(k);
}

std::vector<std::string> ObjectReader::keys() const {
  std::vector<std::string> out;
  for (auto it = object_->begin(); it != object_->end(); ++it) out.push_back(it.key());
  return out;
}

void ObjectReader::finish() const {
  for (auto it = object_->begin(); it != object_->end(); ++it) {
    if (known_.count(it.key()) != 0) continue;
    std::vector<std::string> valid(known_.begin(), known_.end());
    std::string msg = "unknown key '" + it.key() + "'";
    if (auto near = nearest_word(it.key(), valid)) {
      msg += "; did you mean '" + *near + "'?";
    } else if (!valid.empty()) {
      msg += "; valid keys here: " + join_quoted(valid);
    }
    throw InputError(file_, child_pointer(it.key()), msg);
  }
}

// ---------------------------------------------------------------- documents

JsonDocument parse_json_text(std::string_view text, std::string file) {
  std::vector<ParseFrame> frames;
  // The callback sees every event in document order; it keeps a stack of containers so that a
  // repeated key can be reported at its JSON pointer (nlohmann would keep the last silently).
  auto callback = [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) -> bool {
    using E = nlohmann::json::parse_event_t;
    auto note_value_in_parent = [&]() {
      if (!frames.empty() && frames.back().is_array) ++frames.back().next_index;
    };
    switch (event) {
      case E::object_start:
      case E::array_start:
        note_value_in_parent();
        frames.emplace_back();
        frames.back().is_array = event == E::array_start;
        break;
      case E::object_end:
      case E::array_end:
        if (!frames.empty()) frames.pop_back();
        break;
      case E::key: {
        auto& f = frames.back();
        const std::string key = parsed.get<std::string>();
        f.current_key = key;
        if (!f.keys.insert(key).second) {
          throw InputError(file, frames_pointer(frames, frames.size()),
                           "duplicate key '" + key + "' (each key may appear once in an object)");
        }
        break;
      }
      case E::value:
        note_value_in_parent();
        break;
    }
    return true;
  };
  try {
    auto j = nlohmann::json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true,
                                   /*ignore_comments=*/false);
    return JsonDocument(std::move(j), std::move(file));
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix; keep its line and column.
    if (auto p = what.find("] "); what.rfind("[json.exception", 0) == 0 && p != std::string::npos) {
      what = what.substr(p + 2);
    }
    // A number beyond the double range (1e999): nlohmann gives no position, but the frames know
    // where the parser was (the member's key, or the next index of an array).
    std::string where;
    if (dynamic_cast<const nlohmann::json::out_of_range*>(&e) != nullptr && !frames.empty()) {
      if (frames.back().is_array) ++frames.back().next_index;
      where = frames_pointer(frames, frames.size());
      what += " (JSON numbers must be finite doubles)";
    }
    throw InputError(file, where, "not valid JSON: " + what);
  }
}

JsonDocument load_json_file(const std::string& path) {
  // A directory opens as a stream that reads nothing: say so rather than "not valid JSON".
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, "", "is a directory; expected a JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const char* why = std::filesystem::exists(path, ec) ? "cannot open file for reading" : "no such file";
    throw InputError(path, "", why);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError(path, "", "cannot read file");
  return parse_json_text(ss.str(), path);
}

}  // namespace clustersim
