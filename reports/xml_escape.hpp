#pragma once
// Escaping for the XHTML-compatible markup of the HTML report and its inline SVG: the page must
// parse both as HTML and as XML, so text and attribute values escape & < > " ' and drop the
// control characters XML 1.0 forbids.

#include <string>
#include <string_view>

namespace clustersim::reports {

std::string escape_xml(std::string_view text);

}  // namespace clustersim::reports
