#include "calibrate/nccl_tests_import.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"

namespace clustersim::calibrate {

namespace {

struct Timing {
  double time_us = 0;
  double algbw = 0;
  double busbw = 0;
  std::optional<std::int64_t> wrong;
};

struct Row {
  int line = 0;
  std::int64_t size = 0;
  std::int64_t count = 0;
  std::string type;
  std::string redop;
  int root = -1;
  Timing oop, ip;
};

struct RankInfo {
  std::string host;
  std::string gpu;
};

// Where the fields of a table row are: from the header line, or the default layouts.
struct Columns {
  int total = 13;
  int size = 0, count = 1, type = 2, redop = 3, root = 4;  // root -1: no root column
  int oop_time = 5, oop_algbw = 6, oop_busbw = 7, oop_wrong = 8;
  int ip_time = 9, ip_algbw = 10, ip_busbw = 11, ip_wrong = 12;
  int preamble() const { return oop_time; }
  // Where NCCL's debug lines may cut a row that nccl-tests prints in pieces (NCCL_DEBUG=INFO with
  // per-call subsystems such as TUNING): after its first columns, and after the out-of-place ones.
  bool split_point(std::size_t n) const {
    return static_cast<int>(n) == preamble() || (ip_time > oop_time && static_cast<int>(n) == ip_time);
  }
  std::string describe;
};

Columns default_columns(bool with_root) {
  Columns c;
  if (!with_root) {
    c.total = 12;
    c.root = -1;
    c.oop_time = 4, c.oop_algbw = 5, c.oop_busbw = 6, c.oop_wrong = 7;
    c.ip_time = 8, c.ip_algbw = 9, c.ip_busbw = 10, c.ip_wrong = 11;
    c.describe = "size count type redop time algbw busbw error time algbw busbw error";
  } else {
    c.describe = "size count type redop root time algbw busbw #wrong time algbw busbw #wrong";
  }
  return c;
}

struct Block {
  int start_line = 0;
  std::optional<std::string> binary;
  int binary_line = 0;
  std::optional<int> warmup, iters;
  std::optional<int> threads, gpus_per_thread;  // the header's nThread and nGpus (-t, -g)
  std::optional<Columns> columns;
  std::map<int, RankInfo> ranks;
  std::map<std::string, std::string> env;
  std::optional<std::string> nccl_version;
  std::optional<std::string> tests_version;
  std::optional<std::string> command;
  std::optional<int> per_node;
  std::optional<double> avg_busbw;
  std::vector<Row> rows;
  bool seen_threads_line = false;
  bool seen_start_line = false;
  // clustersim collective's own table: its header names the release, the shape and the GPU
  // ("# clustersim collective: ... NCCL 2.28.9", "# hgx-h200: 1 node(s) x 4 GPU(s) = 4 ranks, H200").
  bool predicted = false;
  std::optional<int> predicted_nodes, predicted_per_node;
  std::optional<std::string> predicted_gpu;
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> tokens(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string t;
  while (in >> t) out.push_back(t);
  return out;
}

// A literal every match of a regex contains: checked first, since std::regex is slow on long
// lines and most lines of a log match none of them.
bool has(const std::string& s, std::string_view literal) { return s.find(literal) != std::string::npos; }

bool is_integer(const std::string& t) {
  if (t.empty()) return false;
  std::size_t i = (t[0] == '-' || t[0] == '+') ? 1 : 0;
  if (i >= t.size()) return false;
  for (; i < t.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) return false;
  }
  return true;
}

bool is_number(const std::string& t) {
  if (t.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  return end != nullptr && *end == '\0' && std::isfinite(v);
}

[[noreturn]] void fail(const std::string& file, int line, const std::string& message) {
  throw InputError(file, line > 0 ? "line " + std::to_string(line) : "", message);
}

std::int64_t to_int(const std::string& t, const std::string& file, int line, const char* what) {
  if (!is_integer(t)) fail(file, line, std::string("expected an integer ") + what + ", got '" + t + "'");
  errno = 0;
  const std::int64_t v = std::strtoll(t.c_str(), nullptr, 10);
  if (errno == ERANGE) fail(file, line, std::string("an integer ") + what + " out of range: '" + t + "'");
  return v;
}

double to_number(const std::string& t, const std::string& file, int line, const char* what) {
  if (!is_number(t)) fail(file, line, std::string("expected a number ") + what + ", got '" + t + "'");
  return std::strtod(t.c_str(), nullptr);
}

// Digits a regex matched, as an int: too many of them is bad input, not std::out_of_range.
int to_small_int(const std::string& digits, const std::string& file, int line, const char* what) {
  if (!is_integer(digits) || digits.size() > 9) {
    fail(file, line, std::string("expected ") + what + " of at most 9 digits, got '" + digits + "'");
  }
  return std::stoi(digits);
}

std::optional<std::int64_t> to_wrong(const std::string& t, const std::string& file, int line) {
  if (t == "N/A") return std::nullopt;
  const double v = to_number(t, file, line, "in the #wrong column");
  if (v < 0) fail(file, line, "negative #wrong count '" + t + "'");
  return static_cast<std::int64_t>(std::llround(v));
}

// Column positions from a header such as "size count type redop root time algbw busbw #wrong time ...".
std::optional<Columns> columns_from_header(const std::vector<std::string>& names) {
  auto find_all = [&](std::initializer_list<const char*> wanted) {
    std::vector<int> at;
    for (std::size_t i = 0; i < names.size(); ++i) {
      for (const char* w : wanted) {
        if (names[i] == w) at.push_back(static_cast<int>(i));
      }
    }
    return at;
  };
  const auto size = find_all({"size"});
  const auto count = find_all({"count"});
  const auto type = find_all({"type"});
  const auto redop = find_all({"redop"});
  const auto root = find_all({"root"});
  const auto time = find_all({"time", "cputime"});
  const auto algbw = find_all({"algbw"});
  const auto busbw = find_all({"busbw"});
  const auto wrong = find_all({"#wrong", "error", "wrong"});
  if (size.size() != 1 || count.size() != 1 || type.size() != 1 || redop.size() != 1 || time.size() != 2 ||
      algbw.size() != 2 || busbw.size() != 2 || wrong.size() != 2) {
    return std::nullopt;
  }
  Columns c;
  c.total = static_cast<int>(names.size());
  c.size = size[0], c.count = count[0], c.type = type[0], c.redop = redop[0];
  c.root = root.empty() ? -1 : root[0];
  c.oop_time = time[0], c.oop_algbw = algbw[0], c.oop_busbw = busbw[0], c.oop_wrong = wrong[0];
  c.ip_time = time[1], c.ip_algbw = algbw[1], c.ip_busbw = busbw[1], c.ip_wrong = wrong[1];
  for (const auto& n : names) c.describe += (c.describe.empty() ? "" : " ") + n;
  return c;
}

std::string version_from_code(const std::string& code) {
  const long v = std::strtol(code.c_str(), nullptr, 10);
  if (v <= 0) return code;
  const long major = v >= 10000 ? v / 10000 : v / 1000;
  const long minor = v >= 10000 ? (v / 100) % 100 : (v / 100) % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

class LogParser {
 public:
  explicit LogParser(std::string file) : file_(std::move(file)) { blocks_.emplace_back(); }

  void parse(const std::string& text) {
    std::istringstream in(text);
    std::string raw;
    int n = 0;
    // nccl-tests lines are short; a line of megabytes (a binary file, a pasted dump) would overflow
    // the stack of std::regex, so long lines are skipped, with a warning.
    constexpr std::size_t kMaxLine = 8192;
    int long_lines = 0, first_long = 0;
    while (std::getline(in, raw)) {
      if (raw.size() > kMaxLine) {
        if (long_lines++ == 0) first_long = n + 1;
        ++n;
        continue;
      }
      line(raw, ++n);
    }
    if (long_lines > 0) {
      warnings_.push_back(file_ + ": skipped " + std::to_string(long_lines) + " line(s) longer than " +
                          std::to_string(kMaxLine) + " characters (first: line " + std::to_string(first_long) + ")");
    }
    if (pending_) {
      warnings_.push_back(file_ + ": line " + std::to_string(pending_line_) +
                          ": a table row without its timing columns (the test ended early?) was left out");
    }
  }

  std::vector<Block>& blocks() { return blocks_; }
  std::vector<std::string>& warnings() { return warnings_; }

 private:
  Block& current() { return blocks_.back(); }

  void open_block(int line) {
    Block& b = current();
    if (!b.rows.empty() || b.seen_threads_line || b.seen_start_line) blocks_.emplace_back();
    current().start_line = line;
    if (next_binary_) {
      current().binary = next_binary_;
      current().binary_line = next_binary_line_;
      next_binary_.reset();
    }
    pending_.reset();
  }

  void nccl_info(const std::string& info) {
    static const std::regex env_re(R"((NCCL_[A-Z0-9_]+) set by environment to (\S+))");
    static const std::regex version_re(R"(NCCL version (\d+\.\d+\.\d+))");
    std::smatch m;
    if (has(info, "set by environment") && std::regex_search(info, m, env_re)) {
      std::string value = m[2];
      if (!value.empty() && value.back() == '.') value.pop_back();  // "NCCL_X set by environment to 0."
      current().env[m[1]] = value;
    }
    if (has(info, "NCCL version") && std::regex_search(info, m, version_re)) current().nccl_version = m[1].str();
  }

  void line(std::string s, int n) {
    static const std::regex tag_re(R"(^\[\d+,\d+\]<std(out|err)>:)");
    static const std::regex info_re(R"([A-Za-z][A-Za-z0-9_.-]*:\d+:\d+ \[\d+\] NCCL (INFO|WARN|TRACE))");
    static const std::regex rank_re(
        R"(^\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.+?)\s*$)");
    static const std::regex threads_re(R"(nThread\s+(\d+)\s+nGpus\s+(\d+))");
    static const std::regex iters_re(R"(warmup iters:\s*(\d+)\s+iters:\s*(\d+))");
    static const std::regex start_re(R"(Collective test starting:\s*(\S+))");
    static const std::regex tests_version_re(R"(nccl-tests version\s+(\S+)(?:.*nccl-library=(\d+))?)");
    static const std::regex avg_re(R"(Avg bus bandwidth\s*:\s*([-+0-9.eE]+))");
    static const std::regex binary_re(R"(([A-Za-z0-9_]+)_perf\b)");
    static const std::regex per_node_re(
        R"((?:\s-N|--npernode|\s-npernode|--ntasks-per-node)[=\s]+(\d+)|ppr:(\d+):node)");

    if (!s.empty() && s.back() == '\r') s.pop_back();
    std::smatch m;
    if (!s.empty() && s[0] == '[' && std::regex_search(s, m, tag_re)) s = m.suffix();
    if (has(s, "] NCCL ") && std::regex_search(s, m, info_re)) {
      auto at = static_cast<std::size_t>(m.position(0));
      // A row's "N/A" (#wrong) glued to a host name: the host name's match starts at the "A".
      if (at >= 2 && s.compare(at - 2, 3, "N/A") == 0) ++at;
      nccl_info(s.substr(at));
      s = s.substr(0, at);
    } else if (s.find("NCCL INFO") != std::string::npos || s.find("NCCL WARN") != std::string::npos) {
      nccl_info(s);
      return;
    }
    const std::string t = trim(s);
    if (t.empty()) return;
    const bool hashed = t[0] == '#';
    const std::string body = trim(hashed ? t.substr(1) : t);

    static const std::regex predicted_re(R"(^clustersim collective: \S+ predicted \(not measured\), NCCL (\d+\.\d+\.\d+))");
    static const std::regex shape_re(R"(^\S+: (\d+) node\(s\) x (\d+) GPU\(s\) = (\d+) ranks, (.+)$)");
    static const std::regex predicted_env_re(R"(^env\s+: (NCCL_[A-Z0-9_]+)=(\S*)$)");
    if (hashed && has(body, "clustersim collective:") && std::regex_search(body, m, predicted_re)) {
      open_block(n);
      current().predicted = true;
      current().nccl_version = m[1].str();
      return;
    }
    if (hashed && current().predicted && has(body, "GPU(s) =") && std::regex_search(body, m, shape_re)) {
      current().predicted_nodes = to_small_int(m[1], file_, n, "a node count");
      current().predicted_per_node = to_small_int(m[2], file_, n, "a GPU count");
      current().predicted_gpu = m[4].str();
      return;
    }
    if (hashed && current().predicted && has(body, "env") &&
        std::regex_search(body, m, predicted_env_re)) {
      current().env[m[1]] = m[2];
      return;
    }
    if (has(body, "nccl-tests version") && std::regex_search(body, m, tests_version_re)) {
      open_block(n);
      current().tests_version = m[1].str();
      if (m[2].matched) current().nccl_version = version_from_code(m[2].str());
      return;
    }
    if (has(body, "Collective test starting") && std::regex_search(body, m, start_re)) {
      if (current().seen_start_line || current().seen_threads_line || !current().rows.empty()) open_block(n);
      current().seen_start_line = true;
      current().binary = m[1].str();
      current().binary_line = n;
      return;
    }
    if (has(body, "nThread") && std::regex_search(body, m, threads_re)) {
      if (current().seen_threads_line || !current().rows.empty()) open_block(n);
      current().seen_threads_line = true;
      current().threads = to_small_int(m[1], file_, n, "a thread count");
      current().gpus_per_thread = to_small_int(m[2], file_, n, "a GPU count");
      if (has(body, "warmup iters") && std::regex_search(body, m, iters_re)) {
        current().warmup = to_small_int(m[1], file_, n, "a warmup count");
        current().iters = to_small_int(m[2], file_, n, "an iteration count");
      }
      // -G N times N launches captured in a CUDA graph and replayed: the host's calls are gone
      // from the loop, and with them what nccl-tests' own loop measures and the model predicts.
      static const std::regex graph_re(R"(graph:\s*(\d+))");
      if (has(body, "graph:") && std::regex_search(body, m, graph_re) && m[1].str() != "0") {
        fail(file_, n, "the log was run with -G " + m[1].str() +
                           " (launches replayed from a CUDA graph); expected graph: 0, a loop of host launches");
      }
      return;
    }
    if (has(body, "Rank") && std::regex_search(body, m, rank_re)) {
      current().ranks[to_small_int(m[1], file_, n, "a rank")] = RankInfo{m[2], m[3]};
      return;
    }
    if (has(body, "Avg bus bandwidth") && std::regex_search(body, m, avg_re)) {
      current().avg_busbw = std::strtod(m[1].str().c_str(), nullptr);
      return;
    }
    const auto toks = tokens(body);
    if (toks.empty()) return;
    if (!is_integer(toks[0]) && !(pending_ && is_number(toks[0]))) {
      // A header, a comment or a command line.
      if (std::find(toks.begin(), toks.end(), "size") != toks.end() &&
          std::find(toks.begin(), toks.end(), "count") != toks.end()) {
        if (auto c = columns_from_header(toks)) current().columns = *c;
        return;
      }
      if (!hashed && has(body, "_perf") && std::regex_search(body, m, binary_re)) {
        const std::string binary = m[1].str() + "_perf";
        const std::string before = body.substr(0, static_cast<std::size_t>(m.position(0)));
        std::smatch pn;
        std::optional<int> per_node;
        if (std::regex_search(before, pn, per_node_re)) per_node = to_small_int(pn[1].matched ? pn[1] : pn[2], file_, n, "processes per node");
        if (current().rows.empty()) {
          current().binary = current().binary ? current().binary : std::optional<std::string>(binary);
          if (!current().binary_line) current().binary_line = n;
          current().command = body;
          if (per_node) current().per_node = per_node;
        } else {
          next_binary_ = binary;
          next_binary_line_ = n;
        }
      }
      return;
    }
    row(toks, n);
  }

  Columns columns_for(std::size_t ntok) const {
    if (current_const().columns) return *current_const().columns;
    return default_columns(ntok != 12 && ntok != 4 && ntok != 8);
  }
  const Block& current_const() const { return blocks_.back(); }

  void row(const std::vector<std::string>& toks, int n) {
    std::vector<std::string> all = toks;
    int first_line = n;
    if (pending_) {
      // A row whose first columns came before interleaved NCCL lines: these are its next columns
      // (the rest of it, or the out-of-place timing when the in-place one comes on a later line).
      const Columns c = columns_for(pending_->size() + toks.size());
      const std::size_t have = pending_->size() + toks.size();
      if (c.split_point(pending_->size()) && static_cast<int>(have) <= c.total &&
          (static_cast<int>(have) == c.total || c.split_point(have))) {
        all = *pending_;
        all.insert(all.end(), toks.begin(), toks.end());
        first_line = pending_line_;
      } else {
        warnings_.push_back(file_ + ": line " + std::to_string(pending_line_) +
                            ": a table row without its timing columns was left out");
      }
      pending_.reset();
    }
    const Columns c = columns_for(all.size());
    if (static_cast<int>(all.size()) < c.total && c.split_point(all.size())) {
      pending_ = all;
      pending_line_ = first_line;
      return;
    }
    if (static_cast<int>(all.size()) != c.total) {
      fail(file_, first_line, "a table row with " + std::to_string(all.size()) + " columns; expected " +
                                  std::to_string(c.total) + " (" + c.describe + ")");
    }
    Row r;
    r.line = first_line;
    r.size = to_int(all[static_cast<std::size_t>(c.size)], file_, first_line, "in the size column");
    r.count = to_int(all[static_cast<std::size_t>(c.count)], file_, first_line, "in the count column");
    r.type = all[static_cast<std::size_t>(c.type)];
    r.redop = all[static_cast<std::size_t>(c.redop)];
    const std::int64_t root =
        c.root >= 0 ? to_int(all[static_cast<std::size_t>(c.root)], file_, first_line, "in the root column") : -1;
    // The results reader's bound: -1 (no root) or a rank below 2^24.
    if (root < -1 || root > (1 << 24)) {
      fail(file_, first_line, "root " + std::to_string(root) + " is neither -1 (no root) nor a rank up to 16777216");
    }
    r.root = static_cast<int>(root);
    auto timing = [&](int t, int a, int b, int w) {
      Timing x;
      x.time_us = to_number(all[static_cast<std::size_t>(t)], file_, first_line, "in a time column");
      x.algbw = to_number(all[static_cast<std::size_t>(a)], file_, first_line, "in an algbw column");
      x.busbw = to_number(all[static_cast<std::size_t>(b)], file_, first_line, "in a busbw column");
      x.wrong = to_wrong(all[static_cast<std::size_t>(w)], file_, first_line);
      if (!(x.time_us > 0) || x.algbw < 0 || x.busbw < 0) {
        fail(file_, first_line, "a time must be > 0 and bandwidths >= 0");
      }
      return x;
    };
    r.oop = timing(c.oop_time, c.oop_algbw, c.oop_busbw, c.oop_wrong);
    r.ip = timing(c.ip_time, c.ip_algbw, c.ip_busbw, c.ip_wrong);
    if (r.size < 0 || r.count < 0) fail(file_, first_line, "negative size or count");
    current().rows.push_back(r);
  }

  std::string file_;
  std::vector<Block> blocks_;
  std::vector<std::string> warnings_;
  std::optional<std::vector<std::string>> pending_;
  int pending_line_ = 0;
  std::optional<std::string> next_binary_;
  int next_binary_line_ = 0;
};

int type_size(const std::string& type, const std::string& file, int line) {
  static const std::map<std::string, int> sizes{{"int8", 1},   {"uint8", 1},   {"char", 1},     {"int32", 4},
                                                {"uint32", 4}, {"int", 4},     {"int64", 8},    {"uint64", 8},
                                                {"half", 2},   {"float", 4},   {"double", 8},   {"bfloat16", 2},
                                                {"f8e4m3", 1}, {"f8e5m2", 1}};
  const auto it = sizes.find(type);
  if (it == sizes.end()) fail(file, line, "unknown data type '" + type + "'");
  return it->second;
}

// nccl-tests src/common.cu: test_opnames is {"sum", "prod", "max", "min", "avg", "mulsum"}; ops
// that do not reduce print "none". The results reader accepts exactly these.
void check_redop(const std::string& redop, const std::string& file, int line) {
  static const std::set<std::string> names{"sum", "prod", "max", "min", "avg", "mulsum", "none"};
  if (names.count(redop) == 0) fail(file, line, "unknown reduction op '" + redop + "' in the redop column");
}

std::string algo_from_env(const std::string& v) {
  std::string s;
  for (const char c : v) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  static const std::map<std::string, std::string> names{{"ring", "ring"},
                                                        {"tree", "tree"},
                                                        {"nvls", "nvls"},
                                                        {"nvlstree", "nvls_tree"},
                                                        {"pat", "pat"},
                                                        {"collnetdirect", "collnet_direct"},
                                                        {"collnetchain", "collnet_chain"}};
  const auto it = names.find(s);
  return it == names.end() ? "auto" : it->second;
}

std::string proto_from_env(const std::string& v) {
  std::string s;
  for (const char c : v) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (s == "ll" || s == "ll128" || s == "simple") return s;
  return "auto";
}


struct BlockResult {
  std::vector<CollectiveSeries> series;
  std::optional<EnvironmentInfo> environment;
  std::optional<std::string> command;
  std::optional<std::string> tests_version;
};

BlockResult convert(const std::string& file, Block& b, const std::map<int, RankInfo>& inherited_ranks,
                    const NcclTestsImportOptions& opt, std::vector<std::string>& warnings) {
  BlockResult out;
  if (b.rows.empty()) return out;
  const int first_row = b.rows.front().line;

  // The op.
  std::optional<std::string> op;
  if (b.binary) {
    op = op_from_binary(*b.binary);
    if (!op) {
      fail(file, b.binary_line, "'" + *b.binary + "' is not one of the collectives clustersim calibrates (all_reduce, "
                                "all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv)");
    }
    if (opt.op && *opt.op != *op) fail(file, b.binary_line, "the log is " + *op + ", --op says " + *opt.op);
  } else if (opt.op) {
    op = opt.op;
  } else {
    static const std::regex file_binary(R"(([A-Za-z0-9_]+)_perf)");
    std::smatch m;
    if (std::regex_search(file, m, file_binary)) op = op_from_binary(m[1].str() + "_perf");
    if (!op) {
      fail(file, first_row, "cannot tell which collective this table measures: no '# Collective test starting' line "
                            "and no *_perf binary name in the log; pass --op");
    }
  }

  // Ranks, hosts, GPU.
  const auto& ranks = b.ranks.empty() ? inherited_ranks : b.ranks;
  int nranks = 0;
  if (!ranks.empty()) {
    nranks = ranks.rbegin()->first + 1;
    if (opt.nranks && *opt.nranks != nranks) {
      fail(file, first_row, "the log lists " + std::to_string(nranks) + " ranks, --nranks says " + std::to_string(*opt.nranks));
    }
  } else if (b.predicted_nodes && b.predicted_per_node) {
    nranks = *b.predicted_nodes * *b.predicted_per_node;
    if (opt.nranks && *opt.nranks != nranks) {
      fail(file, first_row, "the table predicts " + std::to_string(nranks) + " ranks, --nranks says " + std::to_string(*opt.nranks));
    }
  } else if (opt.nranks) {
    nranks = *opt.nranks;
  } else if (*op == "all_gather" || *op == "reduce_scatter" || *op == "alltoall") {
    for (const auto& r : b.rows) {
      if (r.count > 0) {
        // size = count x element size x ranks; a count too large for that product says nothing.
        const std::int64_t width = type_size(r.type, file, r.line);
        if (r.count > std::numeric_limits<std::int64_t>::max() / width) continue;
        const std::int64_t per = r.count * width;
        if (r.size % per == 0 && r.size / per <= (1 << 24)) {
          nranks = static_cast<int>(r.size / per);
          break;
        }
      }
    }
  }
  if (nranks < 1) {
    fail(file, first_row, "cannot tell the number of ranks: no '#  Rank ...' device lines; pass --nranks");
  }
  std::set<std::string> hosts;
  for (const auto& [r, info] : ranks) hosts.insert(info.host);
  int nodes = 1;
  int per_node = nranks;
  if (!hosts.empty()) {
    nodes = static_cast<int>(hosts.size());
    if (nranks % nodes != 0) {
      fail(file, first_row, std::to_string(nranks) + " ranks do not split evenly over " + std::to_string(nodes) + " hosts");
    }
    per_node = nranks / nodes;
  } else if (b.predicted_per_node && !opt.gpus_per_node) {
    per_node = *b.predicted_per_node;
    nodes = nranks / per_node;
  } else if (opt.gpus_per_node || b.per_node) {
    per_node = opt.gpus_per_node ? *opt.gpus_per_node : *b.per_node;
    if (per_node < 1 || nranks % per_node != 0) {
      fail(file, first_row, std::to_string(nranks) + " ranks do not split into nodes of " + std::to_string(per_node));
    }
    nodes = nranks / per_node;
  }

  // Algorithm, protocol, channels.
  std::string algo = "auto", proto = "auto";
  std::optional<int> channels;
  if (auto it = b.env.find("NCCL_ALGO"); it != b.env.end()) {
    algo = algo_from_env(it->second);
    if (opt.algo && *opt.algo != algo) fail(file, 0, "the log sets NCCL_ALGO=" + it->second + ", --algo says " + *opt.algo);
  } else if (opt.algo) {
    algo = *opt.algo;
  }
  if (auto it = b.env.find("NCCL_PROTO"); it != b.env.end()) {
    proto = proto_from_env(it->second);
    if (opt.proto && *opt.proto != proto) fail(file, 0, "the log sets NCCL_PROTO=" + it->second + ", --proto says " + *opt.proto);
  } else if (opt.proto) {
    proto = *opt.proto;
  }
  const auto mn = b.env.find("NCCL_MIN_NCHANNELS");
  const auto mx = b.env.find("NCCL_MAX_NCHANNELS");
  if (mn != b.env.end() && mx != b.env.end() && mn->second == mx->second && is_integer(mn->second)) {
    channels = to_small_int(mn->second, file, 0, "NCCL_MIN_NCHANNELS");
  }

  // The bus-bandwidth factor must match the op and rank count (catches a wrong --op or --nranks).
  const double factor = busbw_factor(*op, nranks);
  for (const auto& r : b.rows) {
    for (const Timing* t : {&r.oop, &r.ip}) {
      if (t->algbw < 1.0) continue;  // too few printed digits to tell
      const double tolerance = 0.02 + 0.01 * t->busbw + (t->algbw >= 1000 || t->busbw >= 1000 ? 1.0 : 0.0);
      if (std::fabs(t->busbw - t->algbw * factor) > tolerance) {
        fail(file, r.line, "busbw " + std::to_string(t->busbw) + " is not algbw " + std::to_string(t->algbw) + " x " +
                               std::to_string(factor) + " (nccl-tests' factor for " + *op + " on " +
                               std::to_string(nranks) + " ranks): wrong op or rank count?");
      }
    }
  }

  // Series: one per (type, redop, root) group and per run cycle, out-of-place and in-place.
  auto new_pair = [&](const Row& r) {
    CollectiveSeries s;
    s.op = *op;
    s.nodes = nodes;
    s.gpus_per_node = per_node;
    s.nranks = nranks;
    s.algo = algo;
    s.proto = proto;
    s.channels = channels;
    s.env = b.env;
    s.dtype = r.type;
    s.redop = r.redop;
    s.root = r.root;
    s.warmup_iters = b.warmup;
    s.iters = b.iters;
    s.threads_per_process = b.threads;
    s.gpus_per_thread = b.gpus_per_thread;
    CollectiveSeries ip = s;
    ip.in_place = true;
    return std::make_pair(s, ip);
  };
  std::vector<std::pair<CollectiveSeries, CollectiveSeries>> pairs;
  std::map<std::string, std::size_t> open;  // group key -> index into pairs
  std::map<std::string, std::int64_t> last_size;
  double sum_busbw = 0;
  int n_busbw = 0;
  int zero_rows = 0;
  for (const auto& r : b.rows) {
    type_size(r.type, file, r.line);
    check_redop(r.redop, file, r.line);
    sum_busbw += r.oop.busbw + r.ip.busbw;
    n_busbw += 2;
    if (r.size == 0) {
      // nccl-tests rounds the start size down to whole elements per rank (one rank's all-gather
      // of 8 B at -b 8 prints a 0-byte row): it times a call that moves nothing, which no fit can
      // use. It still counts in the log's average bus bandwidth (above).
      ++zero_rows;
      continue;
    }
    const std::string key = r.type + "/" + r.redop + "/" + std::to_string(r.root);
    const auto it = open.find(key);
    if (it == open.end() || r.size <= last_size[key]) {
      pairs.push_back(new_pair(r));
      open[key] = pairs.size() - 1;
    }
    last_size[key] = r.size;
    auto& [oop, ip] = pairs[open[key]];
    oop.points.push_back({r.size, r.count, r.oop.time_us, r.oop.algbw, r.oop.busbw, r.oop.wrong});
    ip.points.push_back({r.size, r.count, r.ip.time_us, r.ip.algbw, r.ip.busbw, r.ip.wrong});
  }
  if (zero_rows > 0) {
    warnings.push_back(file + ": skipped " + std::to_string(zero_rows) +
                       " row(s) of 0 bytes (the start size rounded down to whole elements per rank)");
  }
  for (auto& [oop, ip] : pairs) {
    out.series.push_back(std::move(oop));
    out.series.push_back(std::move(ip));
  }
  if (b.avg_busbw && n_busbw > 0) {
    const double mean = sum_busbw / n_busbw;
    if (std::fabs(mean - *b.avg_busbw) > 0.01 + 0.01 * std::fabs(*b.avg_busbw)) {
      warnings.push_back(file + ": the log's 'Avg bus bandwidth' " + std::to_string(*b.avg_busbw) +
                         " differs from the mean busbw of its rows " + std::to_string(mean) + " (rows missing?)");
    }
  }

  EnvironmentInfo env;
  if (!ranks.empty()) {
    env.hostname = ranks.begin()->second.host;
    env.gpu_name = ranks.begin()->second.gpu;
  }
  if (b.predicted_gpu) env.gpu_name = *b.predicted_gpu;
  if (b.predicted) {
    warnings.push_back(file + ": line " + std::to_string(b.start_line) +
                       ": a clustersim collective prediction, not a measurement; imported as its table says");
  }
  env.gpu_count = nranks;
  env.nccl_version = b.nccl_version;
  env.nccl_env = b.env;
  out.environment = env;
  out.command = b.command;
  out.tests_version = b.tests_version;
  return out;
}

}  // namespace

std::optional<std::string> op_from_binary(const std::string& binary) {
  std::string base = binary;
  const auto slash = base.find_last_of('/');
  if (slash != std::string::npos) base = base.substr(slash + 1);
  const std::string suffix = "_perf";
  if (base.size() > suffix.size() && base.compare(base.size() - suffix.size(), suffix.size(), suffix) == 0) {
    base = base.substr(0, base.size() - suffix.size());
  }
  const auto& ops = collective_ops();
  if (std::find(ops.begin(), ops.end(), base) != ops.end()) return base;
  return std::nullopt;
}

CalibrationResults import_nccl_tests_text(const std::vector<std::pair<std::string, std::string>>& logs,
                                          const NcclTestsImportOptions& options) {
  if (options.algo) {
    const auto& a = collective_algos();
    if (std::find(a.begin(), a.end(), *options.algo) == a.end()) throw InputError("--algo: unknown algorithm '" + *options.algo + "'");
  }
  if (options.proto) {
    const auto& p = collective_protos();
    if (std::find(p.begin(), p.end(), *options.proto) == p.end()) throw InputError("--proto: unknown protocol '" + *options.proto + "'");
  }
  if (options.op && !op_from_binary(*options.op)) throw InputError("--op: unknown collective '" + *options.op + "'");

  CalibrationResults results;
  results.tool.name = "nccl-tests";
  std::vector<std::string> warnings;
  for (const auto& [file, text] : logs) {
    results.tool.sources.push_back(file);
    LogParser parser(file);
    parser.parse(text);
    for (auto& w : parser.warnings()) warnings.push_back(w);
    std::map<int, RankInfo> ranks;
    bool any_rows = false;
    for (auto& b : parser.blocks()) {
      if (!b.ranks.empty()) ranks = b.ranks;
      if (b.rows.empty()) continue;
      any_rows = true;
      BlockResult r = convert(file, b, ranks, options, warnings);
      for (auto& s : r.series) results.collectives.push_back(std::move(s));
      if (!results.environment && r.environment) {
        results.environment = r.environment;
      } else if (results.environment && r.environment) {
        // The file-wide record holds what every log shares: the variables set alike in all of
        // them (each series keeps its own), the most GPUs any log ran on.
        auto& common = results.environment->nccl_env;
        for (auto it = common.begin(); it != common.end();) {
          const auto other = r.environment->nccl_env.find(it->first);
          it = other == r.environment->nccl_env.end() || other->second != it->second ? common.erase(it) : std::next(it);
        }
        if (r.environment->gpu_count && (!results.environment->gpu_count || *r.environment->gpu_count > *results.environment->gpu_count)) {
          results.environment->gpu_count = r.environment->gpu_count;
        }
      }
      if (results.tool.command.empty() && r.command) results.tool.command = *r.command;
      if (results.tool.version.empty() && r.tests_version) results.tool.version = *r.tests_version;
      if (!results.tool.nccl_version && r.environment && r.environment->nccl_version) {
        results.tool.nccl_version = r.environment->nccl_version;
      }
    }
    if (!any_rows) {
      throw InputError(file, "", "no nccl-tests result rows found (lines of size, count, type, redop, root, then "
                                 "time, algbw, busbw, #wrong out-of-place and in-place)");
    }
  }
  if (results.environment) {
    results.environment->warnings = warnings;
  } else if (!warnings.empty()) {
    EnvironmentInfo e;
    e.warnings = warnings;
    results.environment = e;
  }
  // What is imported must read back as calibration results: the reader's bounds (iteration counts,
  // channels, ...) apply to values the lines above do not check one by one.
  try {
    (void)read_calibration_results(parse_json_text(format_calibration_results(results), "import.json").root());
  } catch (const InputError& e) {
    throw InputError(logs.size() == 1 ? logs.front().first : std::string(), "",
                     "the import would not be valid calibration results: " + e.where() + ": " + e.message());
  }
  return results;
}

CalibrationResults import_nccl_tests_logs(const std::vector<std::string>& paths, const NcclTestsImportOptions& options) {
  if (paths.empty()) throw InputError("no nccl-tests log given");
  std::vector<std::pair<std::string, std::string>> logs;
  for (const auto& p : paths) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw InputError(p, "", "cannot read the file");
    std::ostringstream text;
    text << in.rdbuf();
    logs.emplace_back(p, text.str());
  }
  return import_nccl_tests_text(logs, options);
}

}  // namespace clustersim::calibrate
