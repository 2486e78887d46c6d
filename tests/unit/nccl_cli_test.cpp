// `clustersim collective` and `clustersim validate collectives`: the contract of DESIGN.md.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/app.hpp"
#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"
#include "sim/nccl/collective_validation.hpp"
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;

namespace {
using Result = testing::CliResult;
constexpr auto run = &testing::run_cli;
int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }
}  // namespace

TEST_CASE("collective --format csv has the contract's columns, one row per size", "[unit][cli][nccl]") {
  const Result r = run({"collective", "--op", "all_reduce", "--system", "hgx-h200", "--gpus", "4", "-b", "8", "-e", "8G",
                        "-f", "2", "--format", "csv"});
  REQUIRE(r.rc == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::StartsWith("size_bytes,time_us,algbw_GBps,busbw_GBps,algo,proto,channels,count,type,redop,root,"
                                      "in_place_time_us,in_place_algbw_GBps,in_place_busbw_GBps\n"));
  // 8 B to 8 GiB doubling: 2^3 .. 2^33, 31 sizes, plus the header.
  CHECK(lines(r.out) == 32);
}

TEST_CASE("collective --format table looks like nccl-tests; json carries points and provenance", "[unit][cli][nccl]") {
  const Result t = run({"collective", "--op", "all_gather", "--system", "p5.48xlarge", "--nodes", "2", "-b", "1M", "-e", "4M",
                        "-f", "2"});
  REQUIRE(t.rc == 0);
  CHECK_THAT(t.out, Catch::Contains("(elements)") && Catch::Contains("busbw") && Catch::Contains("NET/Libfabric/0/GDRDMA"));
  const Result j = run({"collective", "--op", "alltoall", "--system", "dgx-h100", "--nodes", "2", "-b", "64M", "-e", "64M",
                        "--format", "json"});
  REQUIRE(j.rc == 0);
  const auto doc = nlohmann::json::parse(j.out);
  // 2 nodes x 8 GPUs.
  CHECK(doc.at("nranks") == 16);
  CHECK(doc.at("points").size() == 1);
  CHECK(doc.at("calibrated") == false);
  CHECK_FALSE(doc.at("parameters").empty());
}

TEST_CASE("collective --calibration none leaves out the profile the catalog names", "[unit][cli][nccl]") {
  // hgx-h200 names the built-in profile hgx-h200-4gpu-2026-11: used by default, not with "none".
  const std::vector<std::string> args{"collective", "--op", "all_reduce", "--system", "hgx-h200", "--gpus", "4",
                                      "-b", "1M", "-e", "1M", "--format", "json"};
  const Result with = run(args);
  std::vector<std::string> none_args = args;
  none_args.insert(none_args.end(), {"--calibration", "none"});
  const Result without = run(none_args);
  REQUIRE(with.rc == 0);
  REQUIRE(without.rc == 0);
  const auto calibrated = [](const std::string& out) {
    const auto doc = nlohmann::json::parse(out);
    int n = 0;
    for (const auto& p : doc.at("parameters")) n += p.at("calibrated").get<bool>() ? 1 : 0;
    return n;
  };
  CHECK(calibrated(with.out) > 0);
  CHECK(calibrated(without.out) == 0);
  CHECK_THAT(without.out, !Catch::Contains("hgx-h200-4gpu-2026-11"));
}

TEST_CASE("collective falls back the way NCCL does and says which algorithm ran", "[unit][cli][nccl]") {
  const Result r = run({"collective", "--op", "all_reduce", "--system", "hgx-a100", "--algo", "nvls", "-b", "1G", "-e",
                        "1G", "--format", "table"});
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("NCCL_ALGO=NVLS leaves no algorithm") && Catch::Contains(": ring/"));
  const Result pat = run({"collective", "--op", "all_gather", "--system", "p5.48xlarge", "--nodes", "4", "--algo", "pat",
                          "-b", "1M", "-e", "1M"});
  REQUIRE(pat.rc == 0);
  CHECK_THAT(pat.out, Catch::Contains("leaves no algorithm") && Catch::Contains(": ring/"));
}

TEST_CASE("collective rejects bad input with exit 2 and the expectation", "[unit][cli][nccl]") {
  auto bad = [](std::vector<std::string> args, const std::string& needle) {
    const Result r = run(args);
    CHECK(r.rc == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains(needle));
  };
  bad({"collective", "--op", "allsum", "--system", "hgx-h100"}, "all_reduce");
  bad({"collective", "--op", "all_reduce", "--system", "hgx-h100", "--gpus", "16"}, "1 to 8");
  bad({"collective", "--op", "all_reduce", "--system", "no-such-box"}, "--system");
  bad({"collective", "--op", "all_reduce", "--system", "hgx-h100", "-b", "1G", "-e", "1M"}, "-e");
  bad({"collective", "--op", "all_reduce", "--system", "hgx-h100", "-b", "1T", "-e", "1T"}, "GPU memory");
  bad({"collective", "--op", "all_reduce", "--system", "hgx-h100", "--env", "NCCL_ALGO=Rnig"}, "NCCL_ALGO");
  bad({"collective", "--op", "all_reduce", "--system", "hgx-h100", "--env", "NCCL_ALGO"}, "NAME=VALUE");
  bad({"collective", "--op", "all_reduce", "--system", "hgx-h100", "-b", "1M", "-e", "8M", "-i", "0"}, "-i");
  bad({"collective", "--op", "all_reduce", "--system", "hgx-h100", "-b", "1", "-e", "8G", "-i", "1"}, "at most");
  bad({"collective", "--op", "all_reduce", "--system", "hgx-h100", "--nccl-version", "1.0"}, "2.28");
  // -t x -g GPUs must fit the node's 8.
  bad({"collective", "--op", "all_reduce", "--system", "hgx-h100", "-t", "3", "-g", "4"}, "threads per process");
  bad({"collective", "--op", "all_reduce", "--system", "hgx-h100", "-t", "0"}, "-t");
}

TEST_CASE("collective --nccl-version: a patch release is warned about, an unknown minor release refused",
          "[unit][cli][nccl]") {
  const std::vector<std::string> base{"collective", "--op", "all_reduce", "--system", "hgx-h100", "-b", "1M", "-e", "1M",
                                      "--format", "json", "--nccl-version"};
  auto with = [&](const std::string& v) {
    std::vector<std::string> args = base;
    args.push_back(v);
    return run(args);
  };
  // 2.28.3 has no table; of 2.28.7 and 2.28.9 the nearer is 2.28.7, which predicts exactly as if
  // named, and the warning names both releases.
  const Result patch = with("2.28.3");
  REQUIRE(patch.rc == 0);
  CHECK_THAT(patch.err, Catch::Contains("warning: --nccl-version 2.28.3") && Catch::Contains("NCCL 2.28.7"));
  const auto doc = nlohmann::json::parse(patch.out);
  CHECK(doc.at("nccl_version") == "2.28.7");
  const auto named = nlohmann::json::parse(with("2.28.7").out);
  CHECK(doc.at("points") == named.at("points"));
  CHECK_THAT(doc.at("notes").front().get<std::string>(), Catch::Contains("2.28.3"));
  // 2.27 is no minor release with a table: exit 2, naming the flag and the known releases.
  const Result minor = with("2.27");
  CHECK(minor.rc == 2);
  CHECK(minor.out.empty());
  CHECK_THAT(minor.err, Catch::Contains("--nccl-version: unknown NCCL version '2.27'") && Catch::Contains("2.26.2 (2.26)") &&
                            Catch::Contains("2.28.9 (2.28)"));
  // Results measured under NCCL 2.27.7 (no 2.27 table): refused where the file says so.
  testing::TempDir dir;
  const auto results = dir.write("r.json", R"({
    "schema_version": 1, "kind": "clustersim-calibration-results",
    "environment": {"gpu_name": "NVIDIA H200", "gpu_count": 4, "nccl_version": "2.27.7", "instance_type": null},
    "collectives": [{"op": "all_reduce", "nodes": 1, "gpus_per_node": 4, "nranks": 4,
      "points": [{"size_bytes": 1048576, "time_us": 20.0}]}]})");
  const Result v = run({"validate", "collectives", "--results", results.string(), "--system", "hgx-h200"});
  CHECK(v.rc == 2);
  CHECK_THAT(v.err, Catch::Contains("r.json: /environment/nccl_version: unknown NCCL version '2.27.7'"));
}

TEST_CASE("validate collectives prints every published set and reads results JSON", "[unit][cli][nccl]") {
  const Result r = run({"validate", "collectives"});
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("azure-nd-a100-v4-allreduce") && Catch::Contains("p5-alltoall-2-to-32-nodes") &&
                        Catch::Contains("hgx-h100-ib-allreduce-2-nodes") && Catch::Contains("median"));
  testing::TempDir dir;
  const auto results = dir.write("h200.json", R"({
    "schema_version": 1, "kind": "clustersim-calibration-results",
    "tool": {"name": "nccl-tests", "version": "2.16.9", "command": "all_reduce_perf -b 1M -e 1G -f 32"},
    "environment": {"gpu_name": "NVIDIA H200", "gpu_count": 4, "nccl_version": "2.28.9", "instance_type": null},
    "collectives": [{"op": "all_reduce", "nodes": 1, "gpus_per_node": 4, "nranks": 4, "algo": "auto", "proto": "auto",
      "channels": null, "env": {"NCCL_NVLS_ENABLE": "0"}, "dtype": "float", "redop": "sum", "root": 0, "in_place": false,
      "warmup_iters": 5, "iters": 20,
      "points": [{"size_bytes": 1048576, "count": 262144, "time_us": 20.0, "algbw_GBps": 52.4, "busbw_GBps": 78.6, "errors": 0},
                 {"size_bytes": 1073741824, "count": 268435456, "time_us": 4000.0, "algbw_GBps": 268.4, "busbw_GBps": 402.6, "errors": 0}]}]
  })");
  const Result v = run({"validate", "collectives", "--results", results.string(), "--system", "hgx-h200", "--format", "json"});
  REQUIRE(v.rc == 0);
  const auto doc = nlohmann::json::parse(v.out);
  const auto& last = doc.at("sets").back();
  CHECK(last.at("points").size() == 2);
  // The results' set joins the group of the machine's measurements of its kind (P2P: no variable
  // turns it off; NCCL's own algorithm and protocol), which it grows by its 2 counted points; the
  // text ends with the same table.
  const auto p2p_all_reduce = [](const nlohmann::json& d) {
    for (const auto& g : d.at("groups")) {
      if (g.at("source") == "hgx-h200 measured" && g.at("transport") == "P2P" && g.at("op") == "all_reduce" &&
          g.at("algo") == "auto" && g.at("proto") == "auto") {
        return g.at("counted_points").get<int>();
      }
    }
    return 0;
  };
  const Result built_in = run({"validate", "collectives", "--format", "json"});
  REQUIRE(built_in.rc == 0);
  CHECK(p2p_all_reduce(doc) == p2p_all_reduce(nlohmann::json::parse(built_in.out)) + 2);
  CHECK_THAT(r.out, Catch::Contains("Groups (counted points pooled by source, transport, op, forced algorithm and "
                                    "protocol)"));
  // Every group's counted points fall in its size bands (JSON lists the bands that hold any), and
  // the text has the bands' table.
  const auto built_in_doc = nlohmann::json::parse(built_in.out);
  for (const auto& g : built_in_doc.at("groups")) {
    int in_bands = 0;
    for (const auto& b : g.at("by_size")) in_bands += b.at("points").get<int>();
    CHECK(in_bands == g.at("counted_points").get<int>());
  }
  CHECK_THAT(r.out, Catch::Contains("Signed error by size") && Catch::Contains("256 MiB-4 GiB"));
  // The built-in measurements pool by the machine they ran on (collective_sets.json "machine"):
  // the 2 x H200 and 1 x H200 virtual machines' sets stay out of the 4 x H200 host's groups. The
  // host's own measurements have no 2-rank NET Tree/Simple all-reduce beside its 4-rank one, so
  // its group holds the tuning session's 2 sets; the 2-GPU machine's, its long-rings session's 2.
  std::map<std::string, int> tree_sets_by_source;
  for (const auto& g : built_in_doc.at("groups")) {
    if (g.at("transport") == "NET" && g.at("op") == "all_reduce" && g.at("algo") == "tree" &&
        g.at("proto") == "simple") {
      tree_sets_by_source[g.at("source").get<std::string>()] = g.at("sets").get<int>();
    }
  }
  CHECK(tree_sets_by_source == std::map<std::string, int>{{"hgx-h200 measured", 2}, {"lent 2 x H200 measured", 2}});
  CHECK(last.at("nccl_version") == "2.28.9");
  // Without --system and without an instance type the results name no catalog system.
  CHECK(run({"validate", "collectives", "--results", results.string()}).rc == 2);
  // Fallbacks only: nothing is in sample; the output says where the parameters come from.
  CHECK(doc.at("parameters").get<std::string>().find("no calibration profile") != std::string::npos);
  CHECK_FALSE(last.at("in_sample").get<bool>());
  // A profile fitted on that very file scores its sets in sample, and says so.
  const auto profile = dir.write("profile.json", R"({"schema_version": 1, "name": "fitted-on-h200",
    "provenance": {"machine": "m", "gpu": "NVIDIA H200", "gpu_count": 4, "driver": "d", "cuda": "13.0",
                   "nccl": "2.28.9", "date": "2026-11-21", "results": ["somewhere/h200.json"], "notes": ""},
    "parameters": {"nccl.store_fraction": {"value": 0.5, "uncertainty": 0.05, "samples": 10}}})");
  const Result f = run({"validate", "collectives", "--results", results.string(), "--system", "hgx-h200",
                        "--calibration", profile.string(), "--format", "json"});
  REQUIRE(f.rc == 0);
  const auto fdoc = nlohmann::json::parse(f.out);
  CHECK(fdoc.at("sets").back().at("in_sample").get<bool>());
  CHECK_FALSE(fdoc.at("sets").front().at("in_sample").get<bool>());
  CHECK(fdoc.at("parameters").get<std::string>().find("fitted-on-h200") != std::string::npos);
  // The profile is an H200's: the H200 results run on it, the first published set (8 x A100) on
  // the fallbacks, and each set says which.
  CHECK(fdoc.at("sets").back().at("parameters").get<std::string>().find("calibration profile fitted-on-h200") == 0);
  CHECK(fdoc.at("sets").front().at("parameters").get<std::string>() ==
        "NCCL and catalog fallbacks (profile fitted on NVIDIA H200; this set runs on A100-SXM4-80GB)");
  const Result ft = run({"validate", "collectives", "--calibration", profile.string()});
  REQUIRE(ft.rc == 0);
  CHECK_THAT(ft.out, Catch::Contains("   parameters: NCCL and catalog fallbacks (profile fitted on NVIDIA H200; this "
                                     "set runs on H100-SXM5-80GB)"));
}

TEST_CASE("a profile applies to the GPU it was fitted on", "[unit][nccl]") {
  // The driver's name less "NVIDIA ", up to its first space, begins the catalog GPU's name (the
  // rule calibrate fit uses to find a results file's system).
  CHECK(sim::nccl::profile_gpu_matches("NVIDIA H200", "H200-SXM-141GB"));
  CHECK(sim::nccl::profile_gpu_matches("NVIDIA B200", "B200"));
  CHECK(sim::nccl::profile_gpu_matches("NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"));
  CHECK(sim::nccl::profile_gpu_matches("H100", "H100-SXM5-80GB"));
  CHECK_FALSE(sim::nccl::profile_gpu_matches("NVIDIA H200", "H100-SXM5-80GB"));
  CHECK_FALSE(sim::nccl::profile_gpu_matches("NVIDIA A100-SXM4-80GB", "H200-SXM-141GB"));
  CHECK_FALSE(sim::nccl::profile_gpu_matches("NVIDIA H100", "A100-SXM4-80GB"));
  // A profile that names no GPU cannot be told apart from any: it applies everywhere.
  CHECK(sim::nccl::profile_gpu_matches("", "A100-SXM4-80GB"));
}

TEST_CASE("a results file's single launches and repeated runs are sets of their own", "[unit][nccl]") {
  // The same broadcast back to back (-n 20) and one launch at a time (-n 1): nccl-tests times the
  // second without the overlap of one launch with the next, so it is scored apart.
  const auto entry = [](int iters) {
    return nlohmann::json{{"op", "broadcast"}, {"nodes", 1}, {"gpus_per_node", 4}, {"nranks", 4}, {"algo", "ring"},
                          {"proto", "simple"}, {"channels", 1}, {"env", {{"NCCL_PROTO", "Simple"}}}, {"dtype", "float"},
                          {"redop", "none"}, {"root", 0}, {"in_place", false}, {"warmup_iters", 5}, {"iters", iters},
                          {"points", {{{"size_bytes", 4194304}, {"count", 1048576}, {"time_us", 196.4}}}}};
  };
  const nlohmann::json results = {{"schema_version", 1},
                                  {"kind", "clustersim-calibration-results"},
                                  {"environment", {{"gpu_name", "NVIDIA H200"}, {"gpu_count", 4}, {"nccl_version", "2.28.9"}}},
                                  {"collectives", {entry(20), entry(1)}}};
  static const hardware::Catalog catalog = hardware::Catalog::load();
  const auto sets = sim::nccl::load_results_sets(results, "chain.json", catalog, "hgx-h200");
  REQUIRE(sets.size() == 2);
  CHECK(sets[0].name.ends_with("/broadcast/4ranks/ring/simple/1ch/out-of-place"));
  CHECK(sets[1].name == sets[0].name + "/single-launch");
  CHECK(sets[1].iters == 1);
  // The same configuration measured three times in one file: three sets, the second and third
  // named by their run, so that each keeps its own threshold.
  const nlohmann::json again = {{"schema_version", 1},
                                {"kind", "clustersim-calibration-results"},
                                {"environment", {{"gpu_name", "NVIDIA H200"}, {"gpu_count", 4}, {"nccl_version", "2.28.9"}}},
                                {"collectives", {entry(20), entry(20), entry(20)}}};
  const auto runs = sim::nccl::load_results_sets(again, "chain.json", catalog, "hgx-h200");
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].name == sets[0].name);
  CHECK(runs[1].name == sets[0].name + "/run2");
  CHECK(runs[2].name == sets[0].name + "/run3");
  // How nccl-tests launched: a series' -t and -g, or the harness's word for the whole file; a
  // thread driving several GPUs is a set of its own.
  nlohmann::json t2g2 = entry(20), t4 = entry(20);
  t2g2["threads_per_process"] = 2;
  t2g2["gpus_per_thread"] = 2;
  t4["threads_per_process"] = 4;
  t4["gpus_per_thread"] = 1;
  const nlohmann::json launches = {{"schema_version", 1},
                                   {"kind", "clustersim-calibration-results"},
                                   {"environment", {{"gpu_name", "NVIDIA H200"}, {"gpu_count", 4}, {"nccl_version", "2.28.9"}}},
                                   {"collectives", {t4, t2g2, entry(20)}}};
  const auto l = sim::nccl::load_results_sets(launches, "chain.json", catalog, "hgx-h200");
  REQUIRE(l.size() == 3);
  CHECK(l[0].name == sets[0].name);
  CHECK(l[0].threads_per_process == 4);
  CHECK(l[1].name == sets[0].name + "/t2g2");
  CHECK(l[1].gpus_per_thread == 2);
  CHECK(l[2].name == sets[0].name + "/run2");
  CHECK(l[2].threads_per_process == 1);  // a file that does not say: a process per GPU
  nlohmann::json harness = again;
  harness["tool"] = {{"name", "clustersim-calibrate"}, {"version", "0.1.0"}, {"command", "c"}, {"launcher", "threads"}};
  CHECK(sim::nccl::load_results_sets(harness, "h.json", catalog, "hgx-h200").front().threads_per_process == 4);
  // Two nodes of 4: a process per node, still 4 threads each.
  harness["collectives"][0]["nodes"] = 2;
  harness["collectives"][0]["nranks"] = 8;
  CHECK(sim::nccl::load_results_sets(harness, "h.json", catalog, "hgx-h200").front().threads_per_process == 4);
}

TEST_CASE("a machine's measured sets pool into groups by transport, op, algorithm and protocol", "[unit][nccl]") {
  namespace nc = sim::nccl;
  // Hand-made results: errors given, the predicted time the measured one x (1 + error). Sizes of
  // 1 MiB count, 4 KiB does not.
  const auto set = [](std::string name, int gpus, std::map<std::string, std::string> env) {
    nc::ValidationSet s;
    s.name = std::move(name);
    s.gpus_per_node = gpus;
    s.env = std::move(env);
    return s;
  };
  const auto point = [](long long size, double error, double us = 100,
                        nc::CollectiveOp op = nc::CollectiveOp::ALL_REDUCE) {
    nc::PointResult p;
    p.point.system = "hgx-h200";
    p.point.op = op;
    p.point.size = Bytes::of(size);
    p.point.measured_time_us = us;
    p.error = error;
    p.prediction.time = Duration::from_seconds(us * (1 + error) * 1e-6);
    p.counted = size >= nc::kCountedFromBytes;
    return p;
  };
  const nc::ValidationSet sock = set("m/socket/all_reduce/4ranks", 4, {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}});
  const nc::ValidationSet sock2 =
      set("m/socket/all_reduce/4ranks/run2", 4, {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}});
  const nc::ValidationSet sock_other =
      set("m/other-session/all_reduce/4ranks", 4, {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}});
  const nc::ValidationSet shm_tree = set("m/shm/all_reduce/4ranks/tree", 4, {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_ALGO", "Tree"}});
  const nc::ValidationSet read = set("m/read/broadcast/4ranks", 4, {{"NCCL_P2P_READ_ENABLE", "1"}});
  const nc::ValidationSet one = set("m/1gpu/all_reduce/1ranks", 1, {});
  const nc::ValidationSet published = set("published-allreduce", 8, {{"NCCL_ALGO", "NVLS"}});
  std::vector<nc::SetResult> results(7);
  results[0].set = &sock;
  results[0].points = {point(1 << 20, 0.10, 100), point(1 << 22, -0.30, 400), point(4096, 0.9, 20)};
  results[1].set = &sock2;
  results[1].points = {point(1 << 20, 0.02, 110), point(1 << 22, -0.20, 380)};
  results[2].set = &shm_tree;
  results[2].points = {point(1 << 20, 0.05)};
  results[3].set = &read;
  results[3].points = {point(1 << 20, -0.04, 100, nc::CollectiveOp::BROADCAST)};
  results[4].set = &one;
  results[4].points = {point(1 << 20, 0.01)};
  results[5].set = &published;
  results[5].points = {point(1 << 20, 0.08), point(1 << 24, 0.12)};
  results[6].set = &sock_other;
  results[6].points = {point(1 << 20, 0.05, 90)};
  const auto groups = nc::group_results(results);
  REQUIRE(groups.size() == 5);
  // Ordered by source ("hgx-h200 measured" before "published-allreduce"), then transport: NET,
  // P2P read, SHM, local.
  const auto& net = groups[0];
  CHECK(net.source == "hgx-h200 measured");
  CHECK(net.transport == "NET");
  CHECK(net.op == "all_reduce");
  CHECK(net.algo == "auto");
  CHECK(net.proto == "auto");
  CHECK(net.sets == 3);
  // The run, its repeat and the other session's run pool: |errors| 0.02, 0.05, 0.10, 0.20, 0.30
  // (the 4 KiB point does not count), median 0.10.
  CHECK(net.points == 5);
  CHECK(net.median_abs_error == Approx(0.10));
  // All three measured one configuration. At 1 MiB 100, 110 and 90 us, median 100: deviations 0,
  // 0.1, 0.1; at 4 MiB 400 and 380, median 390: 10 / 390 twice. The median of the five deviations
  // is 10 / 390.
  CHECK(net.repeated == 5);
  CHECK(net.repeat_spread == Approx(10.0 / 390));
  // Sessions: "m/socket" (the run and its repeat) and "m/other-session" met at 1 MiB only. Session
  // medians 105 and 90, their median 97.5: each deviates by 7.5 / 97.5.
  CHECK(net.session_compared == 2);
  CHECK(net.session_spread == Approx(7.5 / 97.5));
  // Against each configuration's medians: at 1 MiB measured 100, 110, 90 (median 100) and
  // predicted 110, 112.2, 94.5 (median 110): 0.10; at 4 MiB measured 400, 380 (median 390) and
  // predicted 280, 304 (median 292): 98 / 390. The median of the two configurations' errors.
  CHECK(net.configurations == 2);
  CHECK(net.config_median_abs_error == Approx((0.10 + 98.0 / 390) / 2));
  // Signed error by size band: 1 MiB is the first byte of "1-16 MiB", 4 MiB in it too; nothing
  // below 1 MiB counts (4 KiB is under 64 KB). Band 1 holds +0.10, +0.02, +0.05, -0.30, -0.20:
  // median +0.02; the other bands are empty.
  CHECK(net.by_size[0].points == 0);
  CHECK(net.by_size[1].points == 5);
  CHECK(net.by_size[1].median_error == Approx(0.02));
  CHECK(net.by_size[2].points == 0);
  // The published set: +0.08 at 1 MiB (band 1), +0.12 at 16 MiB (band 2, which starts there).
  CHECK(groups[4].by_size[1].median_error == Approx(0.08));
  CHECK(groups[4].by_size[2].points == 1);
  CHECK(groups[4].by_size[2].median_error == Approx(0.12));
  // Band edges: [0, 1 MiB), [1, 16 MiB), [16, 256 MiB), [256 MiB, 4 GiB), [4 GiB, ...).
  CHECK(nc::size_band(65536) == 0);
  CHECK(nc::size_band((1LL << 20) - 1) == 0);
  CHECK(nc::size_band(1LL << 20) == 1);
  CHECK(nc::size_band(256LL << 20) == 3);
  CHECK(nc::size_band((4LL << 30) - 1) == 3);
  CHECK(nc::size_band(4LL << 30) == 4);
  CHECK(nc::size_band(1LL << 40) == 4);
  CHECK(groups[1].session_compared == 0);
  CHECK(groups[2].repeated == 0);  // SHM tree: measured once
  CHECK(groups[1].transport == "P2P read");
  CHECK(groups[1].op == "broadcast");
  CHECK(groups[1].median_abs_error == Approx(0.04));
  CHECK(groups[2].transport == "SHM");
  CHECK(groups[2].algo == "tree");  // NCCL_ALGO as given, lower case
  CHECK(groups[3].transport == "local");
  // A published set is its own group: median of 0.08 and 0.12.
  CHECK(groups[4].source == "published-allreduce");
  CHECK(groups[4].transport.empty());
  CHECK(groups[4].algo == "nvls");
  CHECK(groups[4].median_abs_error == Approx(0.10));
  // Its two sizes are two configurations measured once each: the same figure.
  CHECK(groups[4].configurations == 2);
  CHECK(groups[4].config_median_abs_error == Approx(0.10));

  // A family that names its machine pools apart from the system's other machines: the one-rank
  // set measured on another machine makes a group of its own (median of its one point, 0.30),
  // and leaves the first machine's local group as it was (0.01).
  nc::ValidationSet other_machine = set("m2/1gpu/all_reduce/1ranks", 1, {});
  other_machine.machine = "lent 1 x H200";
  results.resize(8);
  results[7].set = &other_machine;
  results[7].points = {point(1 << 20, -0.30)};
  const auto by_machine = nc::group_results(results);
  REQUIRE(by_machine.size() == 6);
  CHECK(by_machine[3].source == "hgx-h200 measured");
  CHECK(by_machine[3].transport == "local");
  CHECK(by_machine[3].median_abs_error == Approx(0.01));
  CHECK(by_machine[4].source == "lent 1 x H200 measured");
  CHECK(by_machine[4].transport == "local");
  CHECK(by_machine[4].median_abs_error == Approx(0.30));

  // NCCL_BUFFSIZE at NCCL 2.28's default (4 MiB) is the configuration run unset: the two sessions
  // compare (1 MiB at 100 and 110 us: session spread 5 / 105); at 1 MiB it is another one.
  const std::map<std::string, std::string> sock_env{{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}};
  nc::ValidationSet at_default = set("x/chain/all_reduce/4ranks/NCCL_BUFFSIZE=4194304", 4, sock_env);
  nc::ValidationSet unset = set("x/socket/all_reduce/4ranks", 4, sock_env);
  nc::ValidationSet smaller = set("x/buffers/all_reduce/4ranks/NCCL_BUFFSIZE=1048576", 4, sock_env);
  at_default.nccl_version = unset.nccl_version = smaller.nccl_version = "2.28.9";
  std::vector<nc::SetResult> buffers(3);
  buffers[0].set = &at_default;
  buffers[0].points = {point(1 << 20, 0.0, 100)};
  buffers[1].set = &unset;
  buffers[1].points = {point(1 << 20, 0.0, 110)};
  buffers[2].set = &smaller;
  buffers[2].points = {point(1 << 20, 0.0, 200)};
  const auto by_buffers = nc::group_results(buffers);
  REQUIRE(by_buffers.size() == 1);
  CHECK(by_buffers[0].session_compared == 2);
  CHECK(by_buffers[0].session_spread == Approx(5.0 / 105));
}

TEST_CASE("validate collectives --sets keeps the sets it names, --summary only the summaries", "[unit][cli][nccl]") {
  // The published p5 sets: 'p5-' names three (all-reduce 2 to 32 nodes, alltoall, all-reduce at
  // 2 nodes) and no measured set (those are named h200x...).
  const Result r = run({"validate", "collectives", "--sets", "^p5-", "--format", "json"});
  REQUIRE(r.rc == 0);
  const auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc.at("sets").size() == 3);
  for (const auto& s : doc.at("sets")) CHECK(s.at("name").get<std::string>().rfind("p5-", 0) == 0);
  // A group of some of the sets is not held to the whole pool's record.
  for (const auto& g : doc.at("groups")) CHECK_FALSE(g.contains("threshold"));
  const Result t = run({"validate", "collectives", "--sets", "^p5-alltoall", "--summary"});
  REQUIRE(t.rc == 0);
  CHECK_THAT(t.out, Catch::Contains("Summary (time error") && Catch::Contains("p5-alltoall-2-to-32-nodes") &&
                        !Catch::Contains("== p5-alltoall"));
  CHECK(run({"validate", "collectives", "--sets", "("}).rc == 2);
  CHECK(run({"validate", "collectives", "--sets", "no-such-set"}).rc == 2);
}

TEST_CASE("validate collectives --summary --check still fails on a set past its threshold", "[unit][cli][nccl]") {
  // The built-in data with the p5 alltoall set's thresholds set to nothing: its 5 points miss by
  // more than 0, so --check exits 1 though --summary prints no set's points, and the summary flags it.
  testing::TempDir dir;
  const auto data = dir.path() / "data";
  std::filesystem::copy(testing::source_dir() / "tests" / "validation" / "data", data);
  auto th = nlohmann::json::parse(std::ifstream(data / "collective_thresholds.json"));
  th["sets"]["p5-alltoall-2-to-32-nodes"] = {{"median_abs_error", 0.0}, {"worst_abs_error", 0.0}};
  std::ofstream(data / "collective_thresholds.json") << th.dump(2);
  const Result r = run({"validate", "collectives", "--data", data.string(), "--sets", "^p5-alltoall", "--summary", "--check"});
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("EXCEEDED"));
  CHECK(run({"validate", "collectives", "--data", data.string(), "--sets", "^p5-allreduce-2-nodes", "--check"}).rc == 0);
}

TEST_CASE("validate collectives takes further profiles for the sets of their own machine", "[unit][cli][nccl]") {
  // The lent 1 x H200 machine's 2026-12-02 one-rank sets with the built-in 4 x H200 profile first
  // and the machine's own (provenance machine "lent 1 x H200", its family's machine) second: each
  // set says it ran on the second.
  const Result r = run({"validate", "collectives", "--calibration", "hgx-h200-4gpu-2026-11", "--calibration",
                        "lent-1xh200-2026-12", "--sets", "^h200x1-host-profile/", "--format", "json"});
  REQUIRE(r.rc == 0);
  const auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc.at("sets").size() == 42);  // 7 ops x 3 runs x out of place and in place
  for (const auto& s : doc.at("sets")) CHECK_THAT(s.at("parameters").get<std::string>(), Catch::Contains("lent-1xh200-2026-12"));
  // The first profile alone: the same sets run on the 4 x H200 host's.
  const Result first = run({"validate", "collectives", "--calibration", "hgx-h200-4gpu-2026-11", "--sets",
                            "^h200x1-host-profile/", "--format", "json"});
  REQUIRE(first.rc == 0);
  const auto first_doc = nlohmann::json::parse(first.out);
  for (const auto& s : first_doc.at("sets")) {
    CHECK_THAT(s.at("parameters").get<std::string>(), Catch::Contains("hgx-h200-4gpu-2026-11"));
  }
  // A further profile that names no machine answers for nothing: exit 2, naming the key.
  testing::TempDir dir;
  auto profile = hardware::CalibrationProfile::builtin("lent-1xh200-2026-12").to_json();
  profile["provenance"]["machine"] = "";
  const auto path = dir.write("nameless.json", profile.dump());
  const Result bad = run({"validate", "collectives", "--calibration", "hgx-h200-4gpu-2026-11", "--calibration",
                          path.string(), "--summary"});
  CHECK(bad.rc == 2);
  CHECK_THAT(bad.err, Catch::Contains("provenance.machine"));
}

TEST_CASE("several profiles: which one a set runs on, and the name their record goes under", "[unit][nccl]") {
  std::vector<hardware::CalibrationProfile> profiles{hardware::CalibrationProfile::builtin("hgx-h200-4gpu-2026-11"),
                                                     hardware::CalibrationProfile::builtin("lent-1xh200-2026-12")};
  // The record's name: the names in the order given, joined by " + "; none for no profile.
  CHECK(sim::nccl::profiles_record_name(profiles) == "hgx-h200-4gpu-2026-11 + lent-1xh200-2026-12");
  CHECK(sim::nccl::profiles_record_name({profiles.front()}) == "hgx-h200-4gpu-2026-11");
  CHECK(sim::nccl::profiles_record_name({}).empty());
  // A set of the second profile's machine runs on it; any other set, and one that names no
  // machine, on the first; the result carries the profile it was given.
  sim::nccl::ValidationSet own;
  own.name = "own";
  own.machine = "lent 1 x H200";
  sim::nccl::ValidationSet other = own;
  other.machine = "lent 4 x H200";
  sim::nccl::ValidationSet unnamed = own;
  unnamed.machine.clear();
  CHECK(sim::nccl::profile_for_set(profiles, own) == &profiles[1]);
  CHECK(sim::nccl::profile_for_set(profiles, other) == &profiles[0]);
  CHECK(sim::nccl::profile_for_set(profiles, unnamed) == &profiles[0]);
  CHECK(sim::nccl::profile_for_set({}, own) == nullptr);
  const hardware::Catalog catalog = hardware::Catalog::load();
  const auto r = sim::nccl::run_validation(own, catalog, sim::nccl::profile_for_set(profiles, own));
  CHECK(r.profile == &profiles[1]);
  CHECK(sim::nccl::run_validation(own, catalog, nullptr).profile == nullptr);
}
