#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "reports/html_report.hpp"
#include "support/temp_dir.hpp"
#include "unit/reports_sample.hpp"
#include "unit/reports_xml_check.hpp"

using namespace clustersim;
using namespace clustersim::reports;
using clustersim::testing::XmlElement;

namespace {

auto named(std::string_view name) {
  return [name](const XmlElement& e) { return e.name == name; };
}
auto with_class(std::string_view name, std::string_view cls) {
  return [name, cls](const XmlElement& e) { return e.name == name && e.has_class(cls); };
}

const XmlElement& chart(const XmlElement& root, const std::string& id) {
  const auto found =
      root.find_all([&](const XmlElement& e) { return e.name == "svg" && e.attribute("data-chart") == id; });
  REQUIRE(found.size() == 1);
  return *found[0];
}

std::vector<std::string> texts(const std::vector<const XmlElement*>& elements) {
  std::vector<std::string> out;
  for (const auto* e : elements) out.push_back(e->text);
  return out;
}

std::vector<std::string> attribute_values(const std::vector<const XmlElement*>& elements, const std::string& key) {
  std::vector<std::string> out;
  for (const auto* e : elements) out.push_back(e->attribute(key));
  return out;
}

}  // namespace

TEST_CASE("the HTML report is well-formed XHTML-compatible markup", "[unit][reports]") {
  const std::string html = render_html(testing::sample_capacity_report());
  std::unique_ptr<XmlElement> root;
  REQUIRE_NOTHROW(root = testing::parse_xml(html));
  CHECK(root->name == "html");
  CHECK(html.rfind("<!DOCTYPE html>\n", 0) == 0);
  // The checker itself rejects what a browser would forgive.
  CHECK_THROWS_WITH(testing::parse_xml("<html><p>a<b>b</p></b></html>"), Catch::Contains("</p> closes <b>"));
  CHECK_THROWS_WITH(testing::parse_xml("<html><p>A & B</p></html>"), Catch::Contains("entity"));
  CHECK_THROWS_WITH(testing::parse_xml("<html><br></html>"), Catch::Contains("</html> closes <br>"));
  CHECK_THROWS_WITH(testing::parse_xml("<html><p class=x>a</p></html>"), Catch::Contains("unquoted"));
}

TEST_CASE("the HTML report holds its four charts with their series and labels", "[unit][reports]") {
  const auto root = testing::parse_xml(render_html(testing::sample_capacity_report()));
  // The sample has one chart in each of the sections scaling, frontier, breakdown and memory.
  const auto charts = root->find_all(with_class("svg", "chart"));
  CHECK(attribute_values(charts, "data-chart") ==
        std::vector<std::string>{"step-time-vs-gpus", "cost-time-frontier", "step-breakdown", "memory-per-rank"});

  SECTION("step time against GPU count: one line per layout, log axes, error bars") {
    const XmlElement& c = chart(*root, "step-time-vs-gpus");
    const auto series = c.find_all(with_class("g", "series"));
    CHECK(attribute_values(series, "data-series") ==
          std::vector<std::string>{"ZeRO-3", "TP8 PP4", "TP8 PP8 interleaved"});
    CHECK(c.find_all(named("polyline")).size() == 3);
    // ZeRO-3 has 4 points, each with a band: 4 circles (the first series' marker) and 4 error bars.
    CHECK(series[0]->find_all(named("circle")).size() == 4);
    CHECK(c.find_all(with_class("path", "band")).size() == 4);
    // x: log2 from 64 to 2048 GPUs, one tick per power of two.
    const auto x_labels = texts(c.find_all(with_class("g", "x-axis"))[0]->find_all(named("text")));
    CHECK(x_labels == std::vector<std::string>{"64", "128", "256", "512", "1024", "2048", "GPUs, log scale"});
    // y: log10; data 0.33 s .. 10.3 s (band end) span log10(10.3 / 0.33) = 1.49 decades <= 2, so
    // 1-2-5 ticks: the nearest outside the data are 0.2 below and 20 above; shown in seconds
    // because the largest value, 10.3 s, is at least 1 s.
    const auto y_labels = texts(c.find_all(with_class("g", "y-axis"))[0]->find_all(named("text")));
    CHECK(y_labels == std::vector<std::string>{"0.2", "0.5", "1", "2", "5", "10", "20", "Step time (s), log scale"});
    CHECK(texts(c.find_all(with_class("g", "legend-item"))[0]->find_all(named("text"))) ==
          std::vector<std::string>{"ZeRO-3"});
  }

  SECTION("cost/time frontier: candidates in their series' colour, the frontier highlighted and labelled") {
    const XmlElement& c = chart(*root, "cost-time-frontier");
    const auto highlighted = c.find_all(with_class("g", "highlight"));
    REQUIRE(highlighted.size() == 1);
    CHECK(highlighted[0]->attribute("data-series") == "Pareto frontier");
    const auto labels = texts(c.find_all(with_class("text", "point-label")));
    CHECK(labels.size() == 6);
    CHECK(labels[2] == "x 128, TP8 PP4");
    // 12 candidates drawn as scatter markers (circles, the first series' shape) in the first
    // colour of the palette (one colour per system in a plan); the frontier in near-black.
    const auto candidates = c.find_all(
        [](const XmlElement& e) { return e.attribute("data-series") == "Candidates" && e.has_class("series"); });
    REQUIRE(candidates.size() == 1);
    CHECK(candidates[0]->find_all(named("circle")).size() == 12);
    CHECK(candidates[0]->attribute("fill") == "#0072b2");
    CHECK(candidates[0]->attribute("opacity").empty());
    CHECK(highlighted[0]->attribute("stroke") == "#222222");
    // Axis units: 75 days is past 2 days, so days; $4.1M is past $1M, so $ millions.
    CHECK(c.find_all(with_class("g", "x-axis"))[0]->all_text().find("Time to train (days)") != std::string::npos);
    CHECK(c.find_all(with_class("g", "y-axis"))[0]->all_text().find("Cost (on-demand) ($ millions)") !=
          std::string::npos);
  }

  SECTION("step-time breakdown: stacked horizontal bars, one segment per non-zero component") {
    const XmlElement& c = chart(*root, "step-breakdown");
    CHECK(attribute_values(c.find_all(with_class("g", "bar")), "data-bar") ==
          std::vector<std::string>{"x 256, TP8 PP8", "x 128, TP8 PP4", "x 64, ZeRO-3", "x 16, ZeRO-3 + CPU offload"});
    // Non-zero values per bar: 4 (no offload), 4 (no offload), 3 (no bubble, no offload),
    // 4 (no bubble): 15 segments.
    CHECK(c.find_all(with_class("rect", "segment")).size() == 15);
    CHECK(attribute_values(c.find_all(with_class("g", "legend-item")), "data-series") ==
          std::vector<std::string>{"compute", "exposed communication", "pipeline bubble", "optimizer", "offload"});
    // Totals: 0.21 + 0.05 + 0.06 + 0.01 = 0.33 s, printed as 330 ms.
    CHECK(c.find_all(with_class("text", "total"))[0]->text == "330 ms");
  }

  SECTION("memory per rank: stacked vertical bars and the capacity line") {
    const XmlElement& c = chart(*root, "memory-per-rank");
    // 4 stages x 5 non-zero components.
    CHECK(c.find_all(with_class("rect", "segment")).size() == 20);
    const auto refs = c.find_all(with_class("g", "reference-line"));
    REQUIRE(refs.size() == 1);
    CHECK(refs[0]->attribute("data-label") == "capacity");
    CHECK(refs[0]->find_all(named("text"))[0]->text == "capacity 64 GiB");
  }
}

TEST_CASE("the HTML report loads nothing from the network", "[unit][reports]") {
  const std::string html = render_html(testing::sample_capacity_report());
  const auto root = testing::parse_xml(html);
  for (const char* forbidden : {"http://", "https://", "@import", "url(", "<link", "<img", "<iframe", "<object"}) {
    INFO(forbidden);
    CHECK(html.find(forbidden) == std::string::npos);
  }
  // Links stay in the page; no element has a src.
  for (const auto* e : root->find_all([](const XmlElement& e) { return e.attributes.count("href") > 0; })) {
    CHECK(e->attribute("href").rfind('#', 0) == 0);
  }
  CHECK(root->find_all([](const XmlElement& e) { return e.attributes.count("src") > 0; }).empty());
  // One inline style sheet and one inline script.
  CHECK(root->find_all(named("style")).size() == 1);
  CHECK(root->find_all(named("script")).size() == 1);
}

TEST_CASE("the HTML report shows the summary, tables with bands, notes and assumptions", "[unit][reports]") {
  const auto report = testing::sample_capacity_report();
  const std::string html = render_html(report);
  const auto root = testing::parse_xml(html);
  CHECK(root->find_all(with_class("div", "figure")).size() == report.summary.size());
  const auto values = texts(root->find_all(with_class("div", "figure-value")));
  // 19 days = 1,641,600 s: past 2 days, so shown in days.
  CHECK(values[0] == "19 days");
  // $3.1M: whole dollars, grouped.
  CHECK(values[1] == "$3,100,000");
  CHECK(values[4] == "47%");
  // 51.2 GiB to 3 significant digits.
  CHECK(values[5] == "51.2 GiB");
  CHECK(root->find_all(with_class("div", "warning")).size() == 1);

  const auto tables = root->find_all(
      [](const XmlElement& e) { return e.name == "table" && e.attribute("data-table") == "candidates"; });
  REQUIRE(tables.size() == 1);
  CHECK(tables[0]->find_all(named("th")).size() == 10);
  const auto rows = tables[0]->find_all(named("tr"));
  REQUIRE(rows.size() == 5);  // header + 4 rows
  const auto cells = rows[1]->find_all(named("td"));
  // Step time 0.33 s with band 0.30-0.37 s; the raw value stays in data-v for sorting.
  CHECK(cells[3]->text == "330 ms");
  CHECK(cells[3]->attribute("data-v") == "0.33");
  CHECK(cells[3]->find_all(with_class("span", "band"))[0]->text == "300 ms – 370 ms");
  // Empty cells read n/a.
  CHECK(rows[4]->find_all(named("td"))[4]->text == "n/a");

  const auto groups = root->find_all(with_class("table", "assumptions"));
  CHECK(attribute_values(groups, "data-group") == std::vector<std::string>{"prices", "calibration", "versions"});
  CHECK(groups[0]->all_text().find("demo-region-1") != std::string::npos);
}

TEST_CASE("the HTML report is byte-identical for equal data and escapes user text", "[unit][reports]") {
  auto report = testing::sample_capacity_report();
  CHECK(render_html(report) == render_html(testing::sample_capacity_report()));
  report.title = "A <b>bold</b> & \"quoted\" title";
  report.sections[0].paragraphs.push_back("</section><script>alert(1)</script>");
  const std::string html = render_html(report);
  const auto root = testing::parse_xml(html);
  CHECK(root->find_all(named("h1"))[0]->text == "A <b>bold</b> & \"quoted\" title");
  CHECK(root->find_all(named("script")).size() == 1);
  // A single-simulation report renders too (no frontier, one chart).
  const auto sim = testing::parse_xml(render_html(testing::sample_simulation_report()));
  CHECK(sim->find_all(with_class("svg", "chart")).size() == 1);
}

namespace {

std::string find_chromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (std::filesystem::exists(p)) return p;
  }
  return "";
}

// Decodes an 8-bit RGB or RGBA PNG with the standard library only and prints the share of
// pixels that are not white, the number of distinct colours, and how many pixels have exactly
// the palette's first colour (#0072b2, the "compute" segments and the first series).
constexpr std::string_view kPngStats = R"py(
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat, width, height, colour_type = 8, b'', 0, 0, 0
while pos < len(data):
    length, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b'IHDR':
        width, height, depth, colour_type = struct.unpack('>IIBB', body[:10])
        assert depth == 8 and colour_type in (2, 6), (depth, colour_type)
    elif kind == b'IDAT':
        idat += body
    pos += 12 + length
bpp = 3 if colour_type == 2 else 4
raw = zlib.decompress(idat)
stride = width * bpp
prev = bytearray(stride)
nonwhite, blue, colours = 0, 0, set()
for y in range(height):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        px = (line[x], line[x + 1], line[x + 2])
        if px != (255, 255, 255): nonwhite += 1
        if px == (0, 114, 178): blue += 1
        if len(colours) < 100000: colours.add(px)
    prev = line
print('nonwhite=%f colours=%d blue=%d' % (nonwhite / float(width * height), len(colours), blue))
)py";

}  // namespace

TEST_CASE("headless Chromium renders the HTML report to a screenshot that is not blank", "[unit][reports]") {
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    WARN("skipped: Chromium is not installed (/usr/bin/chromium or /usr/bin/chromium-browser)");
    return;
  }
  if (std::system("python3 -c pass > /dev/null 2>&1") != 0) {
    WARN("skipped: python3 is needed to decode the screenshot");
    return;
  }
  testing::TempDir dir;
  const auto page = dir.write("report.html", render_html(testing::sample_capacity_report()));
  const auto shot = dir.path() / "shot.png";
  const auto script = dir.write("png_stats.py", kPngStats);
  std::filesystem::create_directory(dir.path() / "profile");
  const std::string command =
      "timeout 120 " + chromium +
      " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-quic --no-first-run"
      " --disable-background-networking"
      " --disable-component-update --disable-sync --hide-scrollbars --user-data-dir=" +
      (dir.path() / "profile").string() +
      " --window-size=1280,3000 --force-device-scale-factor=0.5 --screenshot=" + shot.string() + " file://" +
      page.string() + " > " + (dir.path() / "chromium.log").string() + " 2>&1";
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
  REQUIRE(std::filesystem::exists(shot));
  const std::string stats_cmd =
      "python3 " + script.string() + " " + shot.string() + " > " + (dir.path() / "stats.txt").string();
  REQUIRE(std::system(stats_cmd.c_str()) == 0);
  std::ifstream in(dir.path() / "stats.txt");
  std::string line;
  std::getline(in, line);
  INFO(line);
  double nonwhite = 0;
  int colours = 0;
  int blue = 0;
  REQUIRE(std::sscanf(line.c_str(), "nonwhite=%lf colours=%d blue=%d", &nonwhite, &colours, &blue) == 3);
  // A blank page is all white: one colour, no non-white pixel. The report has text, panels,
  // grid lines and filled bars: well over 2% of the pixels are not white, and anti-aliased text
  // alone gives dozens of colours.
  CHECK(nonwhite > 0.02);
  CHECK(colours > 32);
  // The compute segments (4 bars, about 12 to 190 px by 22 px at full scale) and the memory
  // chart's weights segments are filled with #0072b2: at half scale (640 x 1500 pixels) still
  // several hundred pixels of exactly that colour.
  CHECK(blue > 300);
}
