#include "calibrate/harness/harness_json_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "calibrate/harness/harness_errors.hpp"

namespace clustersim::harness {

std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static const char* hex = "0123456789abcdef";
          out += "\\u00";
          out.push_back(hex[(static_cast<unsigned char>(c) >> 4) & 0xf]);
          out.push_back(hex[static_cast<unsigned char>(c) & 0xf]);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

void JsonWriter::before_value() {
  if (stack_.empty()) {
    if (!out_.empty()) throw std::logic_error("JsonWriter: a second top-level value");
    return;
  }
  if (stack_.back() == Frame::OBJECT) {
    if (!after_key_) throw std::logic_error("JsonWriter: a value in an object without a key");
    after_key_ = false;
    return;
  }
  separate();
}

void JsonWriter::separate() {
  if (!first_.back()) out_ += ',';
  if (pending_newline_) {
    out_ += '\n';
    out_.append(2 * stack_.size(), ' ');
  } else if (!first_.back()) {
    out_ += ' ';
  }
  pending_newline_ = false;
  first_.back() = false;
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  stack_.push_back(Frame::OBJECT);
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  if (stack_.empty() || stack_.back() != Frame::OBJECT || after_key_) {
    throw std::logic_error("JsonWriter: end_object without an open object");
  }
  stack_.pop_back();
  first_.pop_back();
  if (pending_newline_) {
    out_ += '\n';
    out_.append(2 * stack_.size(), ' ');
    pending_newline_ = false;
  }
  out_ += '}';
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  stack_.push_back(Frame::ARRAY);
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  if (stack_.empty() || stack_.back() != Frame::ARRAY) throw std::logic_error("JsonWriter: end_array without an array");
  stack_.pop_back();
  first_.pop_back();
  if (pending_newline_) {
    out_ += '\n';
    out_.append(2 * stack_.size(), ' ');
    pending_newline_ = false;
  }
  out_ += ']';
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  if (stack_.empty() || stack_.back() != Frame::OBJECT || after_key_) {
    throw std::logic_error("JsonWriter: key outside an object");
  }
  separate();
  out_ += json_quote(k);
  out_ += ": ";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  out_ += json_quote(s);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::integer(long long v) {
  before_value();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::value(double v) {
  before_value();
  out_ += json_number(v);
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  before_value();
  out_ += json;
  return *this;
}

JsonWriter& JsonWriter::field(std::string_view k, const std::vector<std::string>& list) {
  key(k);
  begin_array();
  for (const auto& s : list) value(s);
  return end_array();
}

JsonWriter& JsonWriter::field(std::string_view k, const std::vector<int>& list) {
  key(k);
  begin_array();
  for (const int v : list) value(v);
  return end_array();
}

JsonWriter& JsonWriter::field(std::string_view k, const std::vector<double>& list) {
  key(k);
  begin_array();
  for (const double v : list) value(v);
  return end_array();
}

JsonWriter& JsonWriter::newline() {
  pending_newline_ = true;
  return *this;
}

std::string JsonWriter::take() {
  if (!stack_.empty()) throw std::logic_error("JsonWriter: take() with open containers");
  return std::move(out_);
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw HarnessError("cannot write " + tmp + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw HarnessError("cannot write " + tmp + ": " + std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw HarnessError("cannot rename " + tmp + " to " + path + ": " + std::strerror(err));
  }
}

}  // namespace clustersim::harness
