#include "calibrate/results.hpp"

#include <limits>

#include <nlohmann/json.hpp>

#include "hardware/atomic_file.hpp"
#include "hardware/errors.hpp"

namespace clustersim::calibrate {

namespace {

using Json = nlohmann::ordered_json;

constexpr IntRange kNonNegative{0, std::numeric_limits<std::int64_t>::max()};
constexpr IntRange kPositive{1, std::numeric_limits<std::int64_t>::max()};
constexpr IntRange kSmallCount{0, 1 << 20};
constexpr NumberRange kPositiveNumber{0, std::numeric_limits<double>::infinity(), true};
constexpr NumberRange kNonNegativeNumber{0, std::numeric_limits<double>::infinity(), false};

int as_small_int(const ValueReader& v, IntRange r = {-(1 << 30), 1 << 30}) { return static_cast<int>(v.as_int(r)); }

std::optional<std::string> opt_string(ObjectReader& o, std::string_view key) {
  if (auto v = o.maybe(key)) return v->as_string();
  return std::nullopt;
}
std::optional<int> opt_int(ObjectReader& o, std::string_view key, IntRange r = {-(1 << 30), 1 << 30}) {
  if (auto v = o.maybe(key)) return as_small_int(*v, r);
  return std::nullopt;
}
std::optional<std::int64_t> opt_int64(ObjectReader& o, std::string_view key, IntRange r = kNonNegative) {
  if (auto v = o.maybe(key)) return v->as_int(r);
  return std::nullopt;
}
std::optional<double> opt_number(ObjectReader& o, std::string_view key, NumberRange r = {}) {
  if (auto v = o.maybe(key)) return v->as_number(r);
  return std::nullopt;
}
std::optional<bool> opt_bool(ObjectReader& o, std::string_view key) {
  if (auto v = o.maybe(key)) return v->as_bool();
  return std::nullopt;
}

std::map<std::string, std::string> string_map(const ValueReader& v) {
  std::map<std::string, std::string> out;
  v.read_object([&](ObjectReader& o) {
    for (const auto& k : o.keys()) out[k] = o.at(k).as_string();
  });
  return out;
}

std::map<std::string, std::string> opt_string_map(ObjectReader& o, std::string_view key) {
  if (auto v = o.maybe(key)) return string_map(*v);
  return {};
}

template <class T, class Fn>
std::vector<T> read_list(ObjectReader& o, std::string_view key, Fn fn) {
  std::vector<T> out;
  if (auto v = o.maybe(key)) {
    for (const auto& item : v->as_array()) out.push_back(item.read_object(fn));
  }
  return out;
}

std::vector<std::string> opt_string_list(ObjectReader& o, std::string_view key) {
  std::vector<std::string> out;
  if (auto v = o.maybe(key)) {
    for (const auto& item : v->as_array()) out.push_back(item.as_string());
  }
  return out;
}

ToolInfo read_tool(ObjectReader& o) {
  ToolInfo t;
  t.name = o.at("name").as_choice({"clustersim-calibrate", "nccl-tests", "torch-kernel-probe"});
  t.version = o.get_or("version", "");
  t.command = o.get_or("command", "");
  t.label = opt_string(o, "label");
  t.launcher = opt_string(o, "launcher");
  t.nccl_version = opt_string(o, "nccl_version");
  t.nvlink_centric_sched = opt_int(o, "nvlink_centric_sched", {0, 1});
  t.alloc = opt_string(o, "alloc");
  t.nonblocking = opt_bool(o, "nonblocking");
  t.sources = opt_string_list(o, "sources");
  return t;
}

EnvironmentInfo read_environment(ObjectReader& o) {
  EnvironmentInfo e;
  e.hostname = opt_string(o, "hostname");
  e.date = opt_string(o, "date");
  e.gpu_name = opt_string(o, "gpu_name");
  e.gpu_count = opt_int(o, "gpu_count", kSmallCount);
  e.driver = opt_string(o, "driver");
  e.cuda_runtime = opt_string(o, "cuda_runtime");
  e.nccl_version = opt_string(o, "nccl_version");
  e.nccl_env = opt_string_map(o, "nccl_env");
  e.instance_type = opt_string(o, "instance_type");
  if (auto v = o.maybe("fabric_manager")) e.fabric_manager = v->as_choice({"running", "not running", "unknown"});
  e.fabric_manager_evidence = opt_string(o, "fabric_manager_evidence");
  e.nvlink = read_list<NvlinkInfo>(o, "nvlink", [](ObjectReader& n) {
    NvlinkInfo l;
    l.gpu = as_small_int(n.at("gpu"), kSmallCount);
    l.peer = opt_int(n, "peer", kSmallCount);
    l.via = opt_string(n, "via");
    l.links = as_small_int(n.at("links"), kSmallCount);
    l.links_present = opt_int(n, "links_present", kSmallCount);
    l.link_GBps = opt_number(n, "link_GBps", kNonNegativeNumber);
    l.nvlink_version = opt_int(n, "nvlink_version", kSmallCount);
    return l;
  });
  e.pcie = read_list<PcieInfo>(o, "pcie", [](ObjectReader& p) {
    PcieInfo x;
    x.gpu = as_small_int(p.at("gpu"), kSmallCount);
    x.bus_id = p.get_or("bus_id", "");
    x.numa_node = opt_int(p, "numa_node");
    x.gen = opt_int(p, "gen", kSmallCount);
    x.width = opt_int(p, "width", kSmallCount);
    x.max_gen = opt_int(p, "max_gen", kSmallCount);
    x.max_width = opt_int(p, "max_width", kSmallCount);
    x.sysfs_link_speed = opt_string(p, "sysfs_link_speed");
    x.local_cpus = opt_string(p, "local_cpus");
    return x;
  });
  e.nics = read_list<NicInfo>(o, "nics", [](ObjectReader& n) {
    NicInfo x;
    x.name = n.at("name").as_string();
    x.provider = n.get_or("provider", "unknown");
    x.speed_Gbps = opt_number(n, "speed_Gbps", kNonNegativeNumber);
    x.rate = opt_string(n, "rate");
    x.state = opt_string(n, "state");
    x.numa_node = opt_int(n, "numa_node");
    return x;
  });
  e.warnings = opt_string_list(o, "warnings");
  // Written by the harness for people; accepted and not typed (README: "Results JSON").
  o.allow({"cuda_driver_api", "nccl_headers", "other_env", "instance_type_source", "gpus", "gpu_pairs", "libfabric",
           "kernel", "host"});
  return e;
}

CollectiveSeries read_collective(ObjectReader& o) {
  CollectiveSeries c;
  c.op = o.at("op").as_choice(collective_ops());
  c.nodes = as_small_int(o.at("nodes"), {1, 1 << 20});
  c.gpus_per_node = as_small_int(o.at("gpus_per_node"), {1, 1 << 20});
  c.nranks = as_small_int(o.at("nranks"), {1, 1 << 24});
  if (static_cast<std::int64_t>(c.nodes) * c.gpus_per_node != c.nranks) {
    o.fail("nranks (" + std::to_string(c.nranks) + ") is not nodes x gpus_per_node (" + std::to_string(c.nodes) + " x " +
           std::to_string(c.gpus_per_node) + ")");
  }
  c.algo = o.at("algo").as_choice(collective_algos());
  c.proto = o.at("proto").as_choice(collective_protos());
  c.channels = opt_int(o, "channels", {1, 1024});
  c.env = opt_string_map(o, "env");
  c.dtype = o.at("dtype").as_choice({"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double",
                                     "bfloat16", "f8e4m3", "f8e5m2", "char", "int"});
  c.redop = o.at("redop").as_choice({"sum", "prod", "max", "min", "avg", "mulsum", "none"});
  c.root = as_small_int(o.at("root"), {-1, 1 << 24});
  c.in_place = o.at("in_place").as_bool();
  c.warmup_iters = opt_int(o, "warmup_iters", {0, 1 << 30});
  c.iters = opt_int(o, "iters", {1, 1 << 30});
  c.threads_per_process = opt_int(o, "threads_per_process", {1, 1 << 16});
  c.gpus_per_thread = opt_int(o, "gpus_per_thread", {1, 1 << 16});
  for (const auto& p : o.at("points").as_array()) {
    c.points.push_back(p.read_object([](ObjectReader& q) {
      CollectivePoint x;
      x.size_bytes = q.at("size_bytes").as_int(kNonNegative);
      x.count = q.at("count").as_int(kNonNegative);
      x.time_us = q.at("time_us").as_number(kPositiveNumber);
      x.algbw_GBps = q.at("algbw_GBps").as_number(kNonNegativeNumber);
      x.busbw_GBps = q.at("busbw_GBps").as_number(kNonNegativeNumber);
      x.errors = opt_int64(q, "errors");
      return x;
    }));
  }
  // In-place alltoall and sendrecv have no defined result in NCCL (nccl-tests reports N/A); a
  // count a tool wrote for them anyway says nothing about the run, so it is dropped.
  if (c.in_place && (c.op == "alltoall" || c.op == "sendrecv"))
    for (auto& x : c.points) x.errors.reset();
  return c;
}

P2pSeries read_p2p(ObjectReader& o) {
  P2pSeries p;
  p.src = as_small_int(o.at("src"), kSmallCount);
  p.dst = as_small_int(o.at("dst"), kSmallCount);
  p.src_device = opt_int(o, "src_device", kSmallCount);
  p.dst_device = opt_int(o, "dst_device", kSmallCount);
  p.mode = o.at("mode").as_choice({"nccl_p2p_write", "nccl_p2p_read", "nccl_shm", "cuda_memcpy_peer"});
  p.env = opt_string_map(o, "env");
  p.peer_access = opt_bool(o, "peer_access");
  p.iters = opt_int(o, "iters", {1, 1 << 30});
  for (const auto& v : o.at("points").as_array()) {
    p.points.push_back(v.read_object([](ObjectReader& q) {
      P2pPoint x;
      x.size_bytes = q.at("size_bytes").as_int(kNonNegative);
      x.time_us = q.at("time_us").as_number(kPositiveNumber);
      x.bandwidth_GBps = q.at("bandwidth_GBps").as_number(kNonNegativeNumber);
      x.errors = opt_int64(q, "errors");
      return x;
    }));
  }
  return p;
}

GemmResult read_gemm(ObjectReader& o) {
  GemmResult g;
  g.name = o.at("name").as_choice({"qkv", "attn_out", "mlp_up", "mlp_gate", "mlp_down", "lm_head", "square", "sustained"});
  g.dtype = o.at("dtype").as_choice({"bf16", "fp8", "fp16", "fp32", "tf32"});
  g.m = o.at("m").as_int(kPositive);
  g.n = o.at("n").as_int(kPositive);
  g.k = o.at("k").as_int(kPositive);
  g.transa = o.at("transa").as_choice({"N", "T"});
  g.transb = o.at("transb").as_choice({"N", "T"});
  g.time_us = o.at("time_us").as_number(kPositiveNumber);
  g.tflops = o.at("tflops").as_number(kNonNegativeNumber);
  if (auto v = o.maybe("pass")) g.pass = v->as_choice({"fwd", "dgrad", "wgrad"});
  g.model = opt_string(o, "model");
  g.tp = opt_int(o, "tp", {1, 1 << 20});
  g.tokens = opt_int64(o, "tokens");
  g.iters = opt_int(o, "iters", {1, 1 << 30});
  g.max_rel_error = opt_number(o, "max_rel_error", kNonNegativeNumber);
  g.gpu = opt_int(o, "gpu", kSmallCount);
  g.gpu_name = opt_string(o, "gpu_name");
  g.fast_accum = opt_bool(o, "fast_accum");
  // The continuous-load test says how it ran; the compute fitter picks its entries by phase.
  if (g.name == "sustained") {
    g.phase = o.at("phase").as_choice({"harness", "burst", "sustained", "mixed"});
  } else if (auto v = o.maybe("phase")) {
    g.phase = v->as_choice({"harness", "burst", "sustained", "mixed"});
  }
  g.launches = opt_int(o, "launches", {1, 1 << 30});
  g.busy_ms = opt_number(o, "busy_ms", kNonNegativeNumber);
  g.gemm_share = opt_number(o, "gemm_share", {0, 1, false});
  g.sm_clock_MHz = opt_number(o, "sm_clock_MHz", kNonNegativeNumber);
  g.power_W = opt_number(o, "power_W", kNonNegativeNumber);
  return g;
}

AttentionResult read_attention(ObjectReader& o) {
  AttentionResult a;
  a.impl = o.at("impl").as_string();
  a.dtype = o.at("dtype").as_choice({"bf16", "fp16", "fp8"});
  a.batch = o.at("batch").as_int(kPositive);
  a.heads = o.at("heads").as_int(kPositive);
  a.kv_heads = o.at("kv_heads").as_int(kPositive);
  a.seq_len = o.at("seq_len").as_int(kPositive);
  a.head_dim = o.at("head_dim").as_int(kPositive);
  a.causal = o.at("causal").as_bool();
  a.direction = o.at("direction").as_choice({"fwd", "bwd"});
  a.time_us = o.at("time_us").as_number(kPositiveNumber);
  a.tflops = o.at("tflops").as_number(kNonNegativeNumber);
  a.model = opt_string(o, "model");
  a.tp = opt_int(o, "tp", {1, 1 << 20});
  a.layout = opt_string(o, "layout");
  a.cudnn_version = opt_int64(o, "cudnn_version");
  a.max_rel_error = opt_number(o, "max_rel_error", kNonNegativeNumber);
  a.gpu = opt_int(o, "gpu", kSmallCount);
  a.gpu_name = opt_string(o, "gpu_name");
  return a;
}

MemoryResult read_memory(ObjectReader& o) {
  MemoryResult m;
  m.kernel = o.at("kernel").as_choice(
      {"copy", "read", "write", "elementwise", "cuda_memcpy", "strided", "reduce", "launch_gap"});
  m.time_us = o.at("time_us").as_number(kPositiveNumber);
  if (m.kernel == "launch_gap") {  // empty kernels: nothing moved
    m.op = o.at("op").as_string();
  } else {
    m.bytes_moved = o.at("bytes_moved").as_int(kPositive);
    m.bandwidth_GBps = o.at("bandwidth_GBps").as_number(kNonNegativeNumber);
    m.op = opt_string(o, "op");
  }
  // A strided kernel is timed against its element count (the compute fitter's strided model).
  m.elements = m.kernel == "strided" ? o.at("elements").as_int(kPositive) : opt_int64(o, "elements");
  m.kernels = opt_int(o, "kernels", {1, 1 << 30});
  m.blocks = opt_int(o, "blocks", {1, 1 << 30});
  m.threads = opt_int(o, "threads", {1, 1 << 30});
  m.queue_full = opt_bool(o, "queue_full");
  m.buffer_bytes = opt_int64(o, "buffer_bytes");
  m.iters = opt_int(o, "iters", {1, 1 << 30});
  m.check = opt_string(o, "check");
  m.gpu = opt_int(o, "gpu", kSmallCount);
  m.gpu_name = opt_string(o, "gpu_name");
  return m;
}

HostTransferResult read_host(ObjectReader& o) {
  HostTransferResult h;
  h.direction = o.at("direction").as_choice({"h2d", "d2h"});
  h.pinned = o.at("pinned").as_bool();
  for (const auto& g : o.at("gpus").as_array(1)) h.gpus.push_back(as_small_int(g, kSmallCount));
  h.size_bytes = o.at("size_bytes").as_int(kPositive);
  h.time_us = o.at("time_us").as_number(kPositiveNumber);
  h.bandwidth_GBps = o.at("bandwidth_GBps").as_number(kPositiveNumber);  // bytes moved in a positive time
  h.iters = opt_int(o, "iters", {1, 1 << 30});
  h.concurrent = opt_bool(o, "concurrent");
  h.numa_bound = opt_bool(o, "numa_bound");
  h.numa_node = opt_int(o, "numa_node");
  if (auto v = o.maybe("per_gpu_GBps")) {
    for (const auto& x : v->as_array()) h.per_gpu_GBps.push_back(x.as_number(kNonNegativeNumber));
  }
  h.aggregate_GBps = opt_number(o, "aggregate_GBps", kNonNegativeNumber);
  return h;
}

CpuAdamResult read_cpu_adam(ObjectReader& o) {
  CpuAdamResult c;
  c.threads = as_small_int(o.at("threads"), {1, 1 << 20});
  c.params = o.at("params").as_int(kPositive);
  c.time_us = o.at("time_us").as_number(kPositiveNumber);
  c.params_per_second = o.at("params_per_second").as_number(kNonNegativeNumber);
  c.bytes_per_param = opt_int(o, "bytes_per_param", {1, 1 << 20});
  c.steps = opt_int(o, "steps", {1, 1 << 30});
  c.hardware_threads = opt_int(o, "hardware_threads", {1, 1 << 20});
  c.vector_isa = opt_string(o, "vector_isa");
  return c;
}

// --- writing -------------------------------------------------------------------------------

template <class T>
void put(Json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

Json env_json(const std::map<std::string, std::string>& env) {
  Json j = Json::object();
  for (const auto& [k, v] : env) j[k] = v;
  return j;
}

Json to_json(const ToolInfo& t) {
  Json j{{"name", t.name}, {"version", t.version}, {"command", t.command}};
  put(j, "label", t.label);
  put(j, "launcher", t.launcher);
  put(j, "nccl_version", t.nccl_version);
  put(j, "nvlink_centric_sched", t.nvlink_centric_sched);
  put(j, "alloc", t.alloc);
  put(j, "nonblocking", t.nonblocking);
  if (!t.sources.empty()) j["sources"] = t.sources;
  return j;
}

Json to_json(const EnvironmentInfo& e) {
  Json j = Json::object();
  put(j, "hostname", e.hostname);
  put(j, "date", e.date);
  put(j, "gpu_name", e.gpu_name);
  put(j, "gpu_count", e.gpu_count);
  put(j, "driver", e.driver);
  put(j, "cuda_runtime", e.cuda_runtime);
  put(j, "nccl_version", e.nccl_version);
  j["nccl_env"] = env_json(e.nccl_env);
  j["instance_type"] = e.instance_type ? Json(*e.instance_type) : Json(nullptr);
  put(j, "fabric_manager", e.fabric_manager);
  put(j, "fabric_manager_evidence", e.fabric_manager_evidence);
  Json nv = Json::array();
  for (const auto& l : e.nvlink) {
    Json x{{"gpu", l.gpu}, {"peer", l.peer ? Json(*l.peer) : Json(nullptr)}};
    put(x, "via", l.via);
    x["links"] = l.links;
    put(x, "links_present", l.links_present);
    x["link_GBps"] = l.link_GBps ? Json(*l.link_GBps) : Json(nullptr);
    put(x, "nvlink_version", l.nvlink_version);
    nv.push_back(x);
  }
  j["nvlink"] = nv;
  Json pc = Json::array();
  for (const auto& p : e.pcie) {
    Json x{{"gpu", p.gpu}, {"bus_id", p.bus_id}, {"numa_node", p.numa_node ? Json(*p.numa_node) : Json(nullptr)}};
    put(x, "gen", p.gen);
    put(x, "width", p.width);
    put(x, "max_gen", p.max_gen);
    put(x, "max_width", p.max_width);
    put(x, "sysfs_link_speed", p.sysfs_link_speed);
    put(x, "local_cpus", p.local_cpus);
    pc.push_back(x);
  }
  j["pcie"] = pc;
  Json ni = Json::array();
  for (const auto& n : e.nics) {
    Json x{{"name", n.name}, {"provider", n.provider}, {"speed_Gbps", n.speed_Gbps ? Json(*n.speed_Gbps) : Json(nullptr)}};
    put(x, "rate", n.rate);
    put(x, "state", n.state);
    put(x, "numa_node", n.numa_node);
    ni.push_back(x);
  }
  j["nics"] = ni;
  j["warnings"] = e.warnings;
  return j;
}

Json to_json(const CollectiveSeries& c) {
  Json points = Json::array();
  for (const auto& p : c.points) {
    points.push_back(Json{{"size_bytes", p.size_bytes},
                          {"count", p.count},
                          {"time_us", p.time_us},
                          {"algbw_GBps", p.algbw_GBps},
                          {"busbw_GBps", p.busbw_GBps},
                          {"errors", p.errors ? Json(*p.errors) : Json(nullptr)}});
  }
  return Json{{"op", c.op},
              {"nodes", c.nodes},
              {"gpus_per_node", c.gpus_per_node},
              {"nranks", c.nranks},
              {"algo", c.algo},
              {"proto", c.proto},
              {"channels", c.channels ? Json(*c.channels) : Json(nullptr)},
              {"env", env_json(c.env)},
              {"dtype", c.dtype},
              {"redop", c.redop},
              {"root", c.root},
              {"in_place", c.in_place},
              {"warmup_iters", c.warmup_iters ? Json(*c.warmup_iters) : Json(nullptr)},
              {"iters", c.iters ? Json(*c.iters) : Json(nullptr)},
              {"threads_per_process", c.threads_per_process ? Json(*c.threads_per_process) : Json(nullptr)},
              {"gpus_per_thread", c.gpus_per_thread ? Json(*c.gpus_per_thread) : Json(nullptr)},
              {"points", points}};
}

Json to_json(const P2pSeries& p) {
  Json points = Json::array();
  for (const auto& x : p.points) {
    points.push_back(Json{{"size_bytes", x.size_bytes},
                          {"time_us", x.time_us},
                          {"bandwidth_GBps", x.bandwidth_GBps},
                          {"errors", x.errors ? Json(*x.errors) : Json(nullptr)}});
  }
  Json j{{"src", p.src}, {"dst", p.dst}};
  put(j, "src_device", p.src_device);
  put(j, "dst_device", p.dst_device);
  j["mode"] = p.mode;
  j["env"] = env_json(p.env);
  put(j, "peer_access", p.peer_access);
  put(j, "iters", p.iters);
  j["points"] = points;
  return j;
}

Json to_json(const GemmResult& g) {
  Json j{{"name", g.name}, {"dtype", g.dtype}, {"m", g.m},         {"n", g.n},           {"k", g.k},
         {"transa", g.transa}, {"transb", g.transb}, {"time_us", g.time_us}, {"tflops", g.tflops}};
  put(j, "pass", g.pass);
  put(j, "model", g.model);
  put(j, "tp", g.tp);
  put(j, "tokens", g.tokens);
  put(j, "iters", g.iters);
  put(j, "max_rel_error", g.max_rel_error);
  put(j, "gpu", g.gpu);
  put(j, "gpu_name", g.gpu_name);
  put(j, "fast_accum", g.fast_accum);
  put(j, "phase", g.phase);
  put(j, "launches", g.launches);
  put(j, "busy_ms", g.busy_ms);
  put(j, "gemm_share", g.gemm_share);
  put(j, "sm_clock_MHz", g.sm_clock_MHz);
  put(j, "power_W", g.power_W);
  return j;
}

Json to_json(const AttentionResult& a) {
  Json j{{"impl", a.impl},       {"dtype", a.dtype},         {"batch", a.batch},   {"heads", a.heads},
         {"kv_heads", a.kv_heads}, {"seq_len", a.seq_len},   {"head_dim", a.head_dim}, {"causal", a.causal},
         {"direction", a.direction}, {"time_us", a.time_us}, {"tflops", a.tflops}};
  put(j, "model", a.model);
  put(j, "tp", a.tp);
  put(j, "layout", a.layout);
  put(j, "cudnn_version", a.cudnn_version);
  put(j, "max_rel_error", a.max_rel_error);
  put(j, "gpu", a.gpu);
  put(j, "gpu_name", a.gpu_name);
  return j;
}

Json to_json(const MemoryResult& m) {
  Json j{{"kernel", m.kernel}, {"time_us", m.time_us}};
  if (m.kernel != "launch_gap") {
    j["bytes_moved"] = m.bytes_moved;
    j["bandwidth_GBps"] = m.bandwidth_GBps;
  }
  put(j, "op", m.op);
  put(j, "elements", m.elements);
  put(j, "kernels", m.kernels);
  put(j, "blocks", m.blocks);
  put(j, "threads", m.threads);
  put(j, "queue_full", m.queue_full);
  put(j, "buffer_bytes", m.buffer_bytes);
  put(j, "iters", m.iters);
  put(j, "check", m.check);
  put(j, "gpu", m.gpu);
  put(j, "gpu_name", m.gpu_name);
  return j;
}

Json to_json(const HostTransferResult& h) {
  Json j{{"direction", h.direction}, {"pinned", h.pinned},   {"gpus", h.gpus},
         {"size_bytes", h.size_bytes}, {"time_us", h.time_us}, {"bandwidth_GBps", h.bandwidth_GBps}};
  put(j, "iters", h.iters);
  put(j, "concurrent", h.concurrent);
  put(j, "numa_bound", h.numa_bound);
  put(j, "numa_node", h.numa_node);
  if (!h.per_gpu_GBps.empty()) j["per_gpu_GBps"] = h.per_gpu_GBps;
  put(j, "aggregate_GBps", h.aggregate_GBps);
  return j;
}

Json to_json(const CpuAdamResult& c) {
  Json j{{"threads", c.threads}, {"params", c.params}, {"time_us", c.time_us}, {"params_per_second", c.params_per_second}};
  put(j, "bytes_per_param", c.bytes_per_param);
  put(j, "steps", c.steps);
  put(j, "hardware_threads", c.hardware_threads);
  put(j, "vector_isa", c.vector_isa);
  return j;
}

Json to_json(const RunRecord& r) {
  return Json{{"section", r.section},     {"subrun", r.subrun},       {"status", r.status}, {"message", r.message},
              {"elapsed_s", r.elapsed_s}, {"processes", r.processes}, {"env", env_json(r.env)}};
}

Json to_json(const FailureRecord& f) {
  return Json{{"section", f.section}, {"subrun", f.subrun}, {"test", f.test}, {"status", f.status}, {"message", f.message}};
}

// Text copied from logs (an nccl-tests command line, a host name) may hold bytes that are not
// UTF-8; they are written as U+FFFD instead of making the whole file unwritable.
std::string dump_text(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

template <class T>
void append_list(std::string& out, const char* key, const std::vector<T>& items, bool last = false) {
  out += "  \"";
  out += key;
  out += "\": [";
  for (std::size_t i = 0; i < items.size(); ++i) {
    out += i == 0 ? "\n    " : ",\n    ";
    out += dump_text(to_json(items[i]));
  }
  out += items.empty() ? "]" : "\n  ]";
  out += last ? "\n" : ",\n";
}

}  // namespace

const std::vector<std::string>& collective_ops() {
  static const std::vector<std::string> v{"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                          "reduce",     "alltoall",   "sendrecv"};
  return v;
}

const std::vector<std::string>& collective_algos() {
  static const std::vector<std::string> v{"auto", "ring", "tree", "nvls", "nvls_tree", "pat", "collnet_direct",
                                          "collnet_chain"};
  return v;
}

const std::vector<std::string>& collective_protos() {
  static const std::vector<std::string> v{"auto", "ll", "ll128", "simple"};
  return v;
}

double busbw_factor(const std::string& op, int nranks) {
  const double n = nranks;
  if (op == "all_reduce") return 2 * (n - 1) / n;
  if (op == "all_gather" || op == "reduce_scatter" || op == "alltoall") return (n - 1) / n;
  return 1.0;
}

CalibrationResults read_calibration_results(const ValueReader& root) {
  return root.read_object([](ObjectReader& o) {
    CalibrationResults r;
    r.schema_version = as_small_int(o.at("schema_version"), {kResultsSchemaVersion, kResultsSchemaVersion});
    o.at("kind").as_choice({kResultsKind});
    r.tool = o.at("tool").read_object(read_tool);
    if (auto e = o.maybe("environment")) r.environment = e->read_object(read_environment);
    r.collectives = read_list<CollectiveSeries>(o, "collectives", read_collective);
    r.p2p = read_list<P2pSeries>(o, "p2p", read_p2p);
    r.gemm = read_list<GemmResult>(o, "gemm", read_gemm);
    r.attention = read_list<AttentionResult>(o, "attention", read_attention);
    r.memory = read_list<MemoryResult>(o, "memory", read_memory);
    r.host = read_list<HostTransferResult>(o, "host", read_host);
    r.cpu_adam = read_list<CpuAdamResult>(o, "cpu_adam", read_cpu_adam);
    r.runs = read_list<RunRecord>(o, "runs", [](ObjectReader& x) {
      RunRecord rr;
      rr.section = x.at("section").as_string();
      rr.subrun = x.at("subrun").as_string();
      rr.status = x.at("status").as_choice({"ok", "failed", "timeout", "skipped"});
      rr.message = x.get_or("message", "");
      rr.elapsed_s = x.get_or("elapsed_s", 0.0, kNonNegativeNumber);
      rr.processes = static_cast<int>(x.get_or("processes", 0, kSmallCount));
      rr.env = opt_string_map(x, "env");
      return rr;
    });
    r.failures = read_list<FailureRecord>(o, "failures", [](ObjectReader& x) {
      FailureRecord f;
      f.section = x.at("section").as_string();
      f.subrun = x.get_or("subrun", "");
      f.test = x.get_or("test", "");
      f.status = x.at("status").as_choice({"failed", "timeout", "unavailable", "skipped"});
      f.message = x.get_or("message", "");
      return f;
    });
    return r;
  });
}

CalibrationResults load_calibration_results(const std::string& path) {
  const JsonDocument doc = load_json_file(path);
  return read_calibration_results(doc.root());
}

std::string format_calibration_results(const CalibrationResults& r) {
  std::string out = "{\n";
  out += "  \"schema_version\": " + std::to_string(r.schema_version) + ",\n";
  out += "  \"kind\": " + Json(kResultsKind).dump() + ",\n";
  out += "  \"tool\": " + dump_text(to_json(r.tool)) + ",\n";
  out += "  \"environment\": " + (r.environment ? dump_text(to_json(*r.environment)) : std::string("null")) + ",\n";
  append_list(out, "collectives", r.collectives);
  append_list(out, "p2p", r.p2p);
  append_list(out, "gemm", r.gemm);
  append_list(out, "attention", r.attention);
  append_list(out, "memory", r.memory);
  append_list(out, "host", r.host);
  append_list(out, "cpu_adam", r.cpu_adam);
  append_list(out, "runs", r.runs);
  append_list(out, "failures", r.failures, true);
  out += "}\n";
  return out;
}

void write_calibration_results(const std::string& path, const CalibrationResults& results) {
  write_file_atomically(path, format_calibration_results(results));
}

}  // namespace clustersim::calibrate
