#pragma once
// A small strict XML reader for the HTML report tests: the page is generated as XHTML-compatible
// markup, so reading it as XML proves every element is closed and nested, every attribute quoted
// and every '&' an entity. It keeps a tree to query charts, series and links.
// Accepted beyond XML elements and text: one <!DOCTYPE ...>, comments, CDATA sections.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::testing {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;  // values with entities decoded
  std::vector<std::unique_ptr<XmlElement>> children;
  std::string text;  // all text directly inside, entities decoded, CDATA included

  std::string attribute(const std::string& key) const {
    const auto it = attributes.find(key);
    return it == attributes.end() ? std::string() : it->second;
  }
  bool has_class(std::string_view cls) const;
  // Every element below (and including) this one for which `pred` holds, in document order.
  std::vector<const XmlElement*> find_all(const std::function<bool(const XmlElement&)>& pred) const;
  // The text of this element and all below it.
  std::string all_text() const;
};

// Parses `text`; throws std::runtime_error "line L, column C: what" on the first error.
std::unique_ptr<XmlElement> parse_xml(std::string_view text);

}  // namespace clustersim::testing
