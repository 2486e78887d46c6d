#include "unit/reports_xml_check.hpp"

#include <algorithm>
#include <stdexcept>

namespace clustersim::testing {

namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == ':' || c == '.';
}

class XmlParser {
 public:
  explicit XmlParser(std::string_view text) : s_(text) {}

  std::unique_ptr<XmlElement> document() {
    skip_space();
    if (starts("<!DOCTYPE")) {
      const auto end = s_.find('>', pos_);
      if (end == std::string_view::npos) fail("unterminated DOCTYPE");
      pos_ = end + 1;
    }
    skip_misc();
    if (!starts("<")) fail("expected the root element");
    auto root = element();
    skip_misc();
    if (pos_ != s_.size()) fail("content after the root element");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    std::size_t line = 1;
    std::size_t col = 1;
    for (std::size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw std::runtime_error("line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what);
  }
  bool starts(std::string_view p) const { return s_.substr(pos_, p.size()) == p; }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  void skip_misc() {
    for (;;) {
      skip_space();
      if (starts("<!--")) {
        comment();
      } else {
        return;
      }
    }
  }
  void comment() {
    const auto end = s_.find("-->", pos_ + 4);
    if (end == std::string_view::npos) fail("unterminated comment");
    pos_ = end + 3;
  }
  std::string name() {
    const std::size_t start = pos_;
    while (pos_ < s_.size() && name_char(s_[pos_])) ++pos_;
    if (pos_ == start) fail("expected a name");
    return std::string(s_.substr(start, pos_ - start));
  }
  // Decodes one entity at pos_ (which is at '&').
  std::string entity() {
    const auto end = s_.find(';', pos_);
    if (end == std::string_view::npos || end - pos_ > 10) fail("'&' that does not start an entity");
    const std::string_view e = s_.substr(pos_ + 1, end - pos_ - 1);
    char c = '?';  // non-ASCII references: enough for tests, which compare ASCII text only
    if (e == "amp") {
      c = '&';
    } else if (e == "lt") {
      c = '<';
    } else if (e == "gt") {
      c = '>';
    } else if (e == "quot") {
      c = '"';
    } else if (e == "apos") {
      c = '\'';
    } else if (!e.empty() && e[0] == '#') {
      const bool hex = e.size() > 1 && e[1] == 'x';
      const std::string digits(e.substr(hex ? 2 : 1));
      if (digits.empty() ||
          digits.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789") != std::string::npos) {
        fail("bad character reference");
      }
      const unsigned long cp = std::stoul(digits, nullptr, hex ? 16 : 10);
      if (cp < 0x80) c = static_cast<char>(cp);
    } else {
      fail("unknown entity '&" + std::string(e) + ";' (XML knows only amp, lt, gt, quot, apos)");
    }
    pos_ = end + 1;
    return std::string(1, c);
  }
  std::unique_ptr<XmlElement> element() {
    ++pos_;  // '<'
    auto el = std::make_unique<XmlElement>();
    el->name = name();
    for (;;) {
      const std::size_t before = pos_;
      skip_space();
      if (starts("/>")) {
        pos_ += 2;
        return el;
      }
      if (starts(">")) {
        ++pos_;
        break;
      }
      if (pos_ == before) fail("expected whitespace between attributes");
      const std::string key = name();
      if (!starts("=")) fail("attribute '" + key + "' without a value");
      ++pos_;
      if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\'')) fail("unquoted attribute '" + key + "'");
      const char quote = s_[pos_++];
      std::string value;
      while (pos_ < s_.size() && s_[pos_] != quote) {
        if (s_[pos_] == '<') fail("'<' in attribute '" + key + "'");
        if (s_[pos_] == '&') {
          value += entity();
        } else {
          value += s_[pos_++];
        }
      }
      if (pos_ >= s_.size()) fail("unterminated attribute '" + key + "'");
      ++pos_;
      if (!el->attributes.emplace(key, value).second) fail("duplicate attribute '" + key + "'");
    }
    // Content.
    for (;;) {
      if (pos_ >= s_.size()) fail("element <" + el->name + "> is not closed");
      if (starts("</")) {
        pos_ += 2;
        const std::string closing = name();
        if (closing != el->name) fail("</" + closing + "> closes <" + el->name + ">");
        skip_space();
        if (!starts(">")) fail("expected '>'");
        ++pos_;
        return el;
      }
      if (starts("<!--")) {
        comment();
      } else if (starts("<![CDATA[")) {
        const auto end = s_.find("]]>", pos_);
        if (end == std::string_view::npos) fail("unterminated CDATA");
        el->text += s_.substr(pos_ + 9, end - pos_ - 9);
        pos_ = end + 3;
      } else if (starts("<")) {
        el->children.push_back(element());
      } else if (s_[pos_] == '&') {
        el->text += entity();
      } else {
        if (starts("]]>")) fail("']]>' in text");
        el->text += s_[pos_++];
      }
    }
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

void collect(const XmlElement& e, const std::function<bool(const XmlElement&)>& pred,
             std::vector<const XmlElement*>& out) {
  if (pred(e)) out.push_back(&e);
  for (const auto& c : e.children) collect(*c, pred, out);
}

}  // namespace

bool XmlElement::has_class(std::string_view cls) const {
  const std::string all = attribute("class");
  std::size_t pos = 0;
  while (pos <= all.size()) {
    const std::size_t end = std::min(all.find(' ', pos), all.size());
    if (std::string_view(all).substr(pos, end - pos) == cls) return true;
    pos = end + 1;
  }
  return false;
}

std::vector<const XmlElement*> XmlElement::find_all(const std::function<bool(const XmlElement&)>& pred) const {
  std::vector<const XmlElement*> out;
  collect(*this, pred, out);
  return out;
}

std::string XmlElement::all_text() const {
  std::string s = text;
  for (const auto& c : children) s += c->all_text();
  return s;
}

std::unique_ptr<XmlElement> parse_xml(std::string_view text) { return XmlParser(text).document(); }

}  // namespace clustersim::testing
