#include "reports/trace_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

namespace clustersim::reports {

namespace {

using Json = nlohmann::json;
using ThreadKey = std::pair<std::int64_t, std::int64_t>;  // (pid, tid)

struct SliceSpan {
  std::int64_t start;
  std::int64_t end;
  std::size_t event;
};

struct FlowEnd {
  bool seen = false;
  ThreadKey thread{};
  std::int64_t time = 0;
  std::string name;
  std::string category;
  std::size_t event = 0;
};

struct FlowPair {
  FlowEnd start;
  FlowEnd finish;
  int starts = 0;
  int finishes = 0;
};

class TraceChecker {
 public:
  explicit TraceChecker(std::size_t max) : max_(max) {}

  std::vector<std::string> run(std::string_view text) {
    Json doc;
    try {
      doc = Json::parse(text);
    } catch (const Json::parse_error& e) {
      add(std::string("not valid JSON: ") + e.what());
      return problems_;
    }
    if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
      add("expected an object with a \"traceEvents\" array");
      return problems_;
    }
    const Json& events = doc["traceEvents"];
    for (std::size_t i = 0; i < events.size() && !full(); ++i) event(i, events[i]);
    check_flows();
    check_nesting();
    check_names();
    return problems_;
  }

 private:
  bool full() const { return problems_.size() >= max_; }
  void add(std::string p) {
    if (!full()) problems_.push_back(std::move(p));
  }
  std::string where(std::size_t i) const { return "traceEvents[" + std::to_string(i) + "]: "; }

  bool integer(const Json& e, const char* key, std::size_t i, std::int64_t& out) {
    if (!e.contains(key) || !e[key].is_number_integer()) {
      add(where(i) + "expected an integer \"" + key + "\"");
      return false;
    }
    out = e[key].get<std::int64_t>();
    return true;
  }

  bool time(const Json& e, const char* key, std::size_t i, std::int64_t& ps) {
    if (!e.contains(key) || !e[key].is_number()) {
      add(where(i) + "expected a number \"" + key + "\" (microseconds)");
      return false;
    }
    const double us = e[key].get<double>();
    if (!std::isfinite(us) || us < 0) {
      add(where(i) + "\"" + key + "\" must be finite and >= 0");
      return false;
    }
    ps = std::llround(us * 1e6);
    return true;
  }

  std::string string_of(const Json& e, const char* key) {
    return e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : std::string();
  }

  void event(std::size_t i, const Json& e) {
    if (!e.is_object()) return add(where(i) + "expected an object");
    if (!e.contains("ph") || !e["ph"].is_string()) return add(where(i) + "expected a string \"ph\"");
    const std::string ph = e["ph"].get<std::string>();
    std::int64_t pid = 0;
    if (!integer(e, "pid", i, pid)) return;
    if (!e.contains("name") || !e["name"].is_string()) return add(where(i) + "expected a string \"name\"");
    const std::string name = e["name"].get<std::string>();
    processes_.insert(pid);
    std::int64_t tid = 0;
    std::int64_t ts = 0;
    if (ph == "M") {
      const Json* args = e.contains("args") && e["args"].is_object() ? &e["args"] : nullptr;
      if (name == "process_name" || name == "thread_name") {
        if (args == nullptr || !args->contains("name") || !(*args)["name"].is_string() ||
            (*args)["name"].get<std::string>().empty()) {
          return add(where(i) + name + " needs a non-empty args.name");
        }
        if (name == "process_name") {
          named_processes_.insert(pid);
        } else if (integer(e, "tid", i, tid)) {
          named_threads_.insert({pid, tid});
        }
      } else if (name == "process_sort_index" || name == "thread_sort_index") {
        if (args == nullptr || !args->contains("sort_index") || !(*args)["sort_index"].is_number_integer()) {
          return add(where(i) + name + " needs an integer args.sort_index");
        }
      } else {
        add(where(i) + "unknown metadata event '" + name + "'");
      }
    } else if (ph == "X") {
      std::int64_t dur = 0;
      if (!integer(e, "tid", i, tid) || !time(e, "ts", i, ts) || !time(e, "dur", i, dur)) return;
      slices_[{pid, tid}].push_back({ts, ts + dur, i});
    } else if (ph == "i") {
      if (!integer(e, "tid", i, tid) || !time(e, "ts", i, ts)) return;
      const std::string scope = string_of(e, "s");
      if (scope != "t" && scope != "p" && scope != "g") add(where(i) + "instant scope \"s\" must be t, p or g");
    } else if (ph == "C") {
      if (!time(e, "ts", i, ts)) return;
      if (!e.contains("args") || !e["args"].is_object() || e["args"].empty()) {
        return add(where(i) + "a counter needs args with at least one value");
      }
      for (const auto& [k, v] : e["args"].items()) {
        if (!v.is_number()) add(where(i) + "counter value '" + k + "' is not a number");
      }
    } else if (ph == "s" || ph == "f") {
      std::int64_t id = 0;
      if (!integer(e, "tid", i, tid) || !time(e, "ts", i, ts) || !integer(e, "id", i, id)) return;
      if (string_of(e, "cat").empty()) return add(where(i) + "a flow event needs a \"cat\"");
      if (ph == "f" && string_of(e, "bp") != "e")
        add(where(i) + "a flow end should bind to its enclosing slice (\"bp\":\"e\")");
      FlowPair& pair = flows_[id];
      FlowEnd& end = ph == "s" ? pair.start : pair.finish;
      (ph == "s" ? pair.starts : pair.finishes)++;
      end = FlowEnd{true, {pid, tid}, ts, name, string_of(e, "cat"), i};
    } else {
      add(where(i) + "unexpected phase '" + ph + "'");
    }
  }

  // For each thread: slices sorted by start (longer first on ties) and the running maximum of
  // their ends, so "is t inside some slice" is a binary search.
  void index_slices() {
    for (auto& [key, spans] : slices_) {
      std::sort(spans.begin(), spans.end(), [](const SliceSpan& a, const SliceSpan& b) {
        return a.start != b.start ? a.start < b.start : a.end > b.end;
      });
      auto& ends = max_end_[key];
      std::int64_t m = INT64_MIN;
      for (const auto& s : spans) {
        m = std::max(m, s.end);
        ends.push_back(m);
      }
    }
  }

  bool inside_slice(const ThreadKey& thread, std::int64_t t) const {
    const auto it = slices_.find(thread);
    if (it == slices_.end()) return false;
    const auto& spans = it->second;
    const auto last =
        std::upper_bound(spans.begin(), spans.end(), t, [](std::int64_t v, const SliceSpan& s) { return v < s.start; });
    if (last == spans.begin()) return false;
    const auto idx = static_cast<std::size_t>(last - spans.begin()) - 1;
    return max_end_.at(thread)[idx] >= t;
  }

  void check_flows() {
    index_slices();
    for (const auto& [id, pair] : flows_) {
      const std::string f = "flow " + std::to_string(id) + ": ";
      if (pair.starts != 1 || pair.finishes != 1) {
        add(f + std::to_string(pair.starts) + " start(s) and " + std::to_string(pair.finishes) +
            " end(s); expected one of each");
        continue;
      }
      if (pair.start.name != pair.finish.name || pair.start.category != pair.finish.category) {
        add(f + "its start and end differ in name or category");
      }
      if (pair.finish.time < pair.start.time) add(f + "ends before it starts");
      for (const FlowEnd* end : {&pair.start, &pair.finish}) {
        if (!inside_slice(end->thread, end->time)) {
          add(f + where(end->event) + "no slice of pid " + std::to_string(end->thread.first) + " tid " +
              std::to_string(end->thread.second) + " encloses its time");
        }
      }
    }
  }

  void check_nesting() {
    for (const auto& [key, spans] : slices_) {
      std::vector<const SliceSpan*> stack;
      for (const auto& s : spans) {
        while (!stack.empty() && stack.back()->end <= s.start) stack.pop_back();
        if (!stack.empty() && s.end > stack.back()->end) {
          add(where(s.event) + "slice overlaps traceEvents[" + std::to_string(stack.back()->event) + "] on pid " +
              std::to_string(key.first) + " tid " + std::to_string(key.second) + " without nesting in it");
          continue;
        }
        stack.push_back(&s);
      }
    }
  }

  void check_names() {
    for (const auto& [key, spans] : slices_) {
      if (!named_threads_.count(key)) {
        add("pid " + std::to_string(key.first) + " tid " + std::to_string(key.second) +
            " has slices but no thread_name");
      }
    }
    for (std::int64_t pid : processes_) {
      if (!named_processes_.count(pid)) add("pid " + std::to_string(pid) + " has no process_name");
    }
  }

  std::size_t max_;
  std::vector<std::string> problems_;
  std::map<ThreadKey, std::vector<SliceSpan>> slices_;
  std::map<ThreadKey, std::vector<std::int64_t>> max_end_;
  std::map<std::int64_t, FlowPair> flows_;
  std::set<ThreadKey> named_threads_;
  std::set<std::int64_t> named_processes_;
  std::set<std::int64_t> processes_;
};

}  // namespace

std::vector<std::string> check_chrome_trace(std::string_view text, std::size_t max_problems) {
  return TraceChecker(max_problems).run(text);
}

}  // namespace clustersim::reports
