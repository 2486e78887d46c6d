#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "reports/perfetto_trace.hpp"
#include "reports/trace_check.hpp"
#include "support/source_text.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;
using namespace clustersim::reports;

namespace {

constexpr int kCompute = 0;
constexpr int kComm = 1;
constexpr int kNetwork = 2;  // a process for link counters, past the last GPU rank

Duration ns(double v) { return Duration::from_seconds(v * 1e-9); }

// Two ranks, a compute and a communication stream each: a forward pass with a nested GEMM, a
// send/receive with its arrow, a two-rank all-reduce with arrows both ways, an instant, and a
// link-utilisation counter. Times are picoseconds chosen to show the rounding.
PerfettoTrace tiny_trace(TraceOptions options = {}) {
  PerfettoTrace t(options);
  t.set_metadata("scenario", "tiny");
  for (int r = 0; r < 2; ++r) {
    t.add_process(r, "rank " + std::to_string(r));
    t.add_thread(r, kCompute, "compute");
    t.add_thread(r, kComm, "nccl");
  }
  t.add_process(kNetwork, "network");
  t.instant(0, kCompute, "step start", "step", Duration::zero());
  t.slice(0, kCompute, "forward", "compute", Duration::zero(), ns(1500), {{"layer", 0}, {"phase", "fwd"}});
  t.slice(0, kCompute, "gemm", "compute", ns(250), Duration::ps(1'000'400),
          {{"flops", 1.2e9}, {"shape", std::string("4096x4096")}, {"tensor_core", true}});
  t.slice(0, kComm, "send", "p2p", ns(1500), Duration::ps(500'123), {{"bytes", std::int64_t{1} << 20}});
  t.slice(1, kComm, "recv", "p2p", ns(1600), ns(500));
  t.flow({0, kComm, ns(1500)}, {1, kComm, ns(1600)}, "send 1 MiB");
  for (int r = 0; r < 2; ++r) t.slice(r, kComm, "all_reduce", "collective", ns(2100), ns(1000));
  t.flow({0, kComm, ns(2100)}, {1, kComm, ns(2100)}, "all_reduce ring", "collective");
  t.flow({1, kComm, ns(2100)}, {0, kComm, ns(2100)}, "all_reduce ring", "collective");
  t.counter(kNetwork, "nvlink 0->1", Duration::zero(), 0.0, "utilisation");
  t.counter(kNetwork, "nvlink 0->1", ns(1500), 0.8, "utilisation");
  t.counter(kNetwork, "nvlink 0->1", ns(2000), 0.0, "utilisation");
  return t;
}

constexpr auto read_file = &testing::read_file_text;

std::string problems(std::string_view text) {
  std::string all;
  for (const auto& p : check_chrome_trace(text)) all += p + "\n";
  return all;
}

}  // namespace

TEST_CASE("the tiny trace matches its golden", "[unit][reports]") {
  // Regenerate with CLUSTERSIM_UPDATE_GOLDENS=1 after an intended change, and review the diff.
  const auto golden = testing::source_dir() / "tests/data/reports/tiny_trace.json";
  const std::string text = tiny_trace().str();
  if (const char* update = std::getenv("CLUSTERSIM_UPDATE_GOLDENS"); update != nullptr && std::string(update) == "1") {
    std::ofstream(golden, std::ios::binary) << text;
    WARN("rewrote " << golden.string());
  }
  CHECK(text == read_file(golden));
}

TEST_CASE("the trace has the structure Perfetto reads", "[unit][reports]") {
  const PerfettoTrace trace = tiny_trace();
  const std::string text = trace.str();
  CHECK(problems(text).empty());
  const auto doc = nlohmann::json::parse(text);
  CHECK(doc["displayTimeUnit"] == "ns");
  CHECK(doc["otherData"]["scenario"] == "tiny");
  const auto& events = doc["traceEvents"];
  // 3 processes x 2 metadata events + 4 threads x 2 = 14; 1 instant; 6 slices; 3 counter samples;
  // 3 flows x 2 = 6. In all 30.
  CHECK(events.size() == 30);
  CHECK(trace.event_count() == 30);
  std::map<std::string, int> phases;
  for (const auto& e : events) phases[e["ph"].get<std::string>()]++;
  CHECK(phases == std::map<std::string, int>{{"M", 14}, {"i", 1}, {"X", 6}, {"C", 3}, {"s", 3}, {"f", 3}});
  // Rank r is pid r + 1; stream s of rank r is tid (r + 1) * 1000 + s.
  CHECK(events[0] ==
        nlohmann::json::parse(R"({"ph":"M","pid":1,"tid":1,"name":"process_name","args":{"name":"rank 0"}})"));
  CHECK(events[2]["tid"] == 1000);  // rank 0, stream 0: (0 + 1) * 1000 + 0
  CHECK(events[4]["tid"] == 1001);
  CHECK(PerfettoTrace::tid_of(1, kComm) == 2001);
  // Flow events come after every other event, paired by id, "f" binding to its enclosing slice.
  for (std::size_t i = 0; i + 6 < events.size(); ++i) {
    CHECK(events[i]["ph"] != "s");
    CHECK(events[i]["ph"] != "f");
  }
  CHECK(events[24]["ph"] == "s");
  CHECK(events[25]["ph"] == "f");
  CHECK(events[25]["bp"] == "e");
  CHECK(events[24]["id"] == events[25]["id"]);
}

TEST_CASE("trace times are microseconds with a fraction, rounded per end at nanosecond precision", "[unit][reports]") {
  const auto doc = nlohmann::json::parse(tiny_trace().str());
  const auto& events = doc["traceEvents"];
  auto slice = [&](const std::string& name) {
    for (const auto& e : events) {
      if (e["ph"] == "X" && e["name"] == name) return e;
    }
    FAIL("no slice " << name);
    return nlohmann::json();
  };
  // gemm: start 250 ns, 1,000,400 ps long, so it ends at 1,250,400 ps -> 1250 ns; dur
  // 1250 - 250 = 1000 ns = 1 us. Written as text "0.25" and "1".
  CHECK(slice("gemm")["ts"].get<double>() == 0.25);
  CHECK(slice("gemm")["dur"].get<double>() == 1.0);
  // send: 500,123 ps from 1500 ns; the end 2,000,123 ps rounds to 2000 ns: dur 0.5 us.
  CHECK(slice("send")["dur"].get<double>() == 0.5);
  CHECK(slice("gemm")["args"] == nlohmann::json::parse(R"({"flops":1.2e9,"shape":"4096x4096","tensor_core":true})"));

  // Picosecond precision keeps the exact values: 1,000,400 ps = 1.0004 us.
  const auto exact = nlohmann::json::parse(tiny_trace({.precision = TimePrecision::PICOSECOND}).str());
  bool found = false;
  for (const auto& e : exact["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "gemm") {
      CHECK(e["dur"].get<double>() == 1.0004);
      found = true;
    }
  }
  CHECK(found);

  // Rounding the ends keeps nesting: a parent [0.4 ns, 10.4 ns) and a child [0.6 ns, 10.4 ns).
  // Rounding ts and dur separately would give the child ts 1 ns and dur round(9.8) = 10 ns, an
  // end at 11 ns past the parent's 10 ns; rounding the ends gives parent [0, 10), child [1, 10).
  PerfettoTrace t;
  t.add_process(0, "rank 0");
  t.add_thread(0, 0, "compute");
  t.slice(0, 0, "parent", "c", Duration::ps(400), Duration::ps(10'000));
  t.slice(0, 0, "child", "c", Duration::ps(600), Duration::ps(9'800));
  const std::string text = t.str();
  CHECK(text.find(R"("name":"child","cat":"c","ts":0.001,"dur":0.009})") != std::string::npos);
  CHECK(problems(text).empty());
}

TEST_CASE("the trace checker finds overlaps, unpaired flows and unnamed tracks", "[unit][reports]") {
  CHECK_THAT(problems("{\"traceEvents\": [}"), Catch::Contains("not valid JSON"));
  CHECK_THAT(problems("[]"), Catch::Contains("traceEvents"));

  PerfettoTrace overlap;
  overlap.add_process(0, "rank 0");
  overlap.add_thread(0, 0, "compute");
  overlap.slice(0, 0, "a", "c", ns(0), ns(10));
  overlap.slice(0, 0, "b", "c", ns(5), ns(10));  // [5, 15) sticks out of [0, 10)
  overlap.slice(0, 0, "c", "c", ns(10), ns(5));  // touching [10, 15) after a is fine
  CHECK_THAT(problems(overlap.str()), Catch::Contains("overlaps") && Catch::Contains("without nesting"));

  PerfettoTrace unbound;
  unbound.add_process(0, "rank 0");
  unbound.add_thread(0, 0, "compute");
  unbound.add_thread(0, 1, "nccl");
  unbound.slice(0, 0, "a", "c", ns(0), ns(10));
  unbound.flow({0, 0, ns(5)}, {0, 1, ns(6)}, "to nowhere");  // no slice on stream 1
  CHECK_THAT(problems(unbound.str()), Catch::Contains("flow 1") && Catch::Contains("no slice of pid 1 tid 1001"));

  const std::string hand_written = R"({"traceEvents":[
    {"ph":"M","pid":1,"tid":1,"name":"process_name","args":{"name":"rank 0"}},
    {"ph":"X","pid":1,"tid":1000,"name":"a","ts":0,"dur":5},
    {"ph":"s","pid":1,"tid":1000,"name":"x","cat":"flow","id":7,"ts":1},
    {"ph":"s","pid":1,"tid":1000,"name":"x","cat":"flow","id":7,"ts":2},
    {"ph":"C","pid":1,"tid":1,"name":"util","ts":0,"args":{"value":"high"}}]})";
  const std::string found = problems(hand_written);
  CHECK_THAT(found, Catch::Contains("flow 7: 2 start(s) and 0 end(s)"));
  CHECK_THAT(found, Catch::Contains("pid 1 tid 1000 has slices but no thread_name"));
  CHECK_THAT(found, Catch::Contains("counter value 'value' is not a number"));

  CHECK_THROWS_AS(PerfettoTrace().slice(0, PerfettoTrace::kMaxStreams, "x", "c", ns(0), ns(1)), std::invalid_argument);
  CHECK_THROWS_AS(PerfettoTrace().flow({0, 0, ns(5)}, {1, 0, ns(4)}, "back in time"), std::invalid_argument);
}

TEST_CASE("a trace of many events stays valid and writes atomically", "[unit][reports]") {
  // 8 ranks x 2 streams x 1000 slices of 1 us back to back, one flow per slice on the comm stream.
  PerfettoTrace t;
  for (int r = 0; r < 8; ++r) {
    t.add_process(r, "rank " + std::to_string(r));
    t.add_thread(r, 0, "compute");
    t.add_thread(r, 1, "nccl");
  }
  for (int i = 0; i < 1000; ++i) {
    for (int r = 0; r < 8; ++r) {
      t.slice(r, 0, "gemm", "compute", ns(1000.0 * i), ns(1000));
      t.slice(r, 1, "ring step", "collective", ns(1000.0 * i), ns(1000));
    }
    for (int r = 0; r < 8; ++r) t.flow({r, 1, ns(1000.0 * i)}, {(r + 1) % 8, 1, ns(1000.0 * i + 500)}, "ring");
  }
  // 8 ranks x (2 process + 2 x 2 thread metadata) + 16,000 slices + 8,000 flows x 2 events.
  CHECK(t.event_count() == 48 + 16'000 + 16'000);
  testing::TempDir dir;
  t.write(dir.path() / "trace.json");
  const std::string text = read_file(dir.path() / "trace.json");
  CHECK(text == t.str());
  CHECK(problems(text).empty());
}
