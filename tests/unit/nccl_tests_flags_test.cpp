// `clustersim collective` in nccl-tests' words: -d, -o, -r, -w, -c, -z, -G, -a; its table in
// nccl-tests' layout and its import; the aws-ofi-nccl and EFA variables; release resolution.

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "calibrate/nccl_tests_import.hpp"
#include "models/scenario.hpp"
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;

namespace {
using Result = testing::CliResult;
constexpr auto run = &testing::run_cli;

std::vector<std::string> table_rows(const std::string& out) {
  std::vector<std::string> rows;
  std::istringstream in(out);
  std::string l;
  while (std::getline(in, l)) {
    if (!l.empty() && l[0] != '#') rows.push_back(l);
  }
  return rows;
}

std::vector<std::string> fields(const std::string& row) {
  std::vector<std::string> f;
  std::istringstream in(row);
  std::string t;
  while (in >> t) f.push_back(t);
  return f;
}

nlohmann::json json_of(std::vector<std::string> args) {
  args.insert(args.end(), {"--format", "json"});
  const Result r = run(args);
  REQUIRE(r.rc == 0);
  return nlohmann::json::parse(r.out);
}
}  // namespace

TEST_CASE("collective -d bfloat16 -w 5 -c 0 --format table prints nccl-tests' table, which imports",
          "[unit][cli][nccl]") {
  const Result t = run({"collective", "--op", "all_reduce", "--system", "hgx-h200", "--gpus", "4", "-b", "1M", "-e", "4M",
                        "-f", "2", "-d", "bfloat16", "-w", "5", "-c", "0", "--format", "table"});
  REQUIRE(t.rc == 0);
  // nccl-tests' header lines (src/util.cu writeResultHeader), character for character.
  CHECK_THAT(t.out, Catch::Contains("#                                                              out-of-place                       in-place          \n"));
  CHECK_THAT(t.out, Catch::Contains("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n"));
  CHECK_THAT(t.out, Catch::Contains("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n"));
  CHECK_THAT(t.out, Catch::Contains("# Collective test starting: all_reduce_perf\n") &&
                        Catch::Contains("warmup iters: 5 iters: 20 agg iters: 1 validation: 0 graph: 0") &&
                        Catch::Contains("note: -w 5: not modelled") && Catch::Contains("note: -c 0: not modelled"));
  const auto rows = table_rows(t.out);
  REQUIRE(rows.size() == 3);  // 1, 2 and 4 MiB
  const auto f = fields(rows[0]);
  REQUIRE(f.size() == 13);
  // 1 MiB of 2-byte elements: 524288 of them; no data check (-c 0): #wrong N/A.
  CHECK(f[0] == "1048576");
  CHECK(f[1] == "524288");
  CHECK(f[2] == "bfloat16");
  CHECK(f[3] == "sum");
  CHECK(f[4] == "-1");
  CHECK(f[8] == "N/A");
  CHECK(f[12] == "N/A");
  // The row's fixed widths: %12li  %12li  %8s  %6s  %6s, then  %7s  %6s  %6s    N/A twice.
  CHECK(rows[0].size() == 12 + 2 + 12 + 2 + 8 + 2 + 6 + 2 + 6 + 2 * (2 + 7 + 2 + 6 + 2 + 6 + 7));

  testing::TempDir dir;
  const auto log = dir.write("predicted.txt", t.out);
  const auto out = dir.path() / "results.json";
  const Result imp = run({"calibrate", "import-nccl-tests", log.string(), "-o", out.string()});
  REQUIRE(imp.rc == 0);
  CHECK_THAT(imp.err, Catch::Contains("a clustersim collective prediction, not a measurement"));
  const auto results = calibrate::import_nccl_tests_logs({log.string()}, {});
  REQUIRE(results.collectives.size() == 2);  // out of place and in place
  const auto& s = results.collectives[0];
  CHECK(s.op == "all_reduce");
  CHECK(s.nranks == 4);
  CHECK(s.dtype == "bfloat16");
  CHECK(s.points.size() == 3);
  CHECK(results.collectives[1].in_place);
  REQUIRE(results.environment);
  CHECK(results.environment->nccl_version == std::optional<std::string>("2.28.9"));
}

TEST_CASE("collective -d sizes follow the element and nccl-tests' per-rank rounding", "[unit][cli][nccl]") {
  // all_gather on 4 ranks at -b 100 -d int8: count = 100 / 1 = 100 elements, per rank 100 / 4 = 25,
  // rounded down to a multiple of 16 bytes (16 / 1 elements): 16; the size printed 16 x 4 x 1 = 64.
  const auto j = json_of({"collective", "--op", "all_gather", "--system", "hgx-h200", "--gpus", "4", "-b", "100", "-e",
                          "100", "-d", "int8"});
  CHECK(j.at("points")[0].at("count") == 16);
  CHECK(j.at("points")[0].at("size_bytes") == 64);
  // all_reduce -d double at 1000 B: 1000 / 8 = 125 elements, 1000 bytes.
  const auto d = json_of({"collective", "--op", "all_reduce", "--system", "hgx-h200", "--gpus", "4", "-b", "1000", "-e",
                          "1000", "-d", "double"});
  CHECK(d.at("points")[0].at("count") == 125);
  CHECK(d.at("points")[0].at("type") == "double");
}

TEST_CASE("collective -o: NVLS only for the types and ops NCCL reduces with it", "[unit][cli][nccl]") {
  // 8 x H200 at 1 GiB: float sum runs NVLS (device.h ncclNvlsSupported: float sum); prod is not
  // one of NVLS's ops, nor is int8 one of its types.
  const std::vector<std::string> base{"collective", "--op", "all_reduce", "--system", "hgx-h200", "-b", "1G", "-e", "1G"};
  auto algo = [&](std::vector<std::string> extra) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return json_of(args).at("points")[0].at("algo").get<std::string>();
  };
  CHECK(algo({}) == "nvls");
  CHECK(algo({"-o", "max", "-d", "bfloat16"}) == "nvls");
  CHECK(algo({"-o", "prod"}) != "nvls");
  CHECK(algo({"-o", "max"}) != "nvls");  // float: sum only
  CHECK(algo({"-d", "int8"}) != "nvls");
  CHECK(algo({"-o", "avg"}) != "nvls");  // PreMulSum
  // -o all runs each reduction in turn: six series of one size.
  CHECK(json_of({"collective", "--op", "all_reduce", "--system", "hgx-h200", "-b", "1M", "-e", "1M", "-o", "all"})
            .at("points")
            .size() == 6);
}

TEST_CASE("collective -z and -G change how nccl-tests' loop is timed", "[unit][cli][nccl]") {
  const std::vector<std::string> base{"collective", "--op", "all_reduce", "--system", "hgx-h200", "--gpus", "4",
                                      "-b", "8", "-e", "8"};
  auto point = [&](std::vector<std::string> extra) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return json_of(args).at("points")[0];
  };
  const auto plain = point({});
  const auto blocking = point({"-z", "1"});
  const auto graph = point({"-G", "10"});
  const double gpu = plain.at("gpu_time_us");
  const double host = plain.at("host_time_us");
  // -z: nothing overlaps, host + GPU + the closing wait of every call, above the overlapped loop.
  CHECK(blocking.at("time_us").get<double>() > host + gpu);
  CHECK(blocking.at("time_us").get<double>() > plain.at("time_us").get<double>());
  // -G 10: 20 launches replayed 10 times; the host's share is (10 x 4 us + wait) / 200, so the GPU
  // bounds an 8-byte all-reduce's iteration.
  CHECK(graph.at("time_us").get<double>() == Approx(std::max(gpu, graph.at("host_time_us").get<double>())));
  CHECK(graph.at("host_time_us").get<double>() < 0.5);
  CHECK(graph.at("time_us").get<double>() <= plain.at("time_us").get<double>());
}

TEST_CASE("collective refuses bad nccl-tests flags with exit 2", "[unit][cli][nccl]") {
  auto bad = [](std::vector<std::string> extra, const std::string& what) {
    std::vector<std::string> args{"collective", "--op", "all_reduce", "--system", "hgx-h200"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = run(args);
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains(what));
    CHECK(r.out.empty());
  };
  bad({"-d", "float32"}, "bfloat16");
  bad({"-o", "out.txt"}, "-o/--op");  // -o is the reduction now; the file is --output
  bad({"-o", "sum", "-o", "max"}, "one reduction");
  bad({"-z", "4"}, "-z/--blocking");
  bad({"--cudagraph=-1"}, "-G/--cudagraph");
  bad({"-a", "7"}, "-a/--average");
  bad({"--warmup_iters=-1"}, "-w/--warmup_iters");
  bad({"-r", "8"}, "-r/--root");
  bad({"-d", "f8e4m3", "--nccl-version", "2.20"}, "2.24");
  const Result none = run({"collective", "-o", "sum", "--system", "hgx-h200"});
  CHECK(none.rc == 2);
  CHECK_THAT(none.err, Catch::Contains("no collective given"));
}

TEST_CASE("aws-ofi-nccl and EFA variables are modelled or named", "[unit][cli][nccl]") {
  const std::vector<std::string> base{"collective", "--op", "all_reduce", "--system", "p5.48xlarge", "--nodes", "2",
                                      "-b", "1G", "-e", "1G"};
  auto with = [&](std::vector<std::string> env) {
    auto args = base;
    for (const auto& e : env) args.insert(args.end(), {"--env", e});
    return json_of(args);
  };
  const auto plain = with({});
  CHECK_THAT(plain.at("transports").at("inter_node").get<std::string>(), Catch::Contains("GDRDMA"));
  // FI_EFA_USE_DEVICE_RDMA=0: no GPUDirect RDMA, as NCCL_NET_GDR_LEVEL=LOC.
  const auto off = with({"FI_EFA_USE_DEVICE_RDMA=0"});
  const auto loc = with({"NCCL_NET_GDR_LEVEL=LOC"});
  CHECK_THAT(off.at("transports").at("inter_node").get<std::string>(), !Catch::Contains("GDRDMA"));
  CHECK(off.at("points")[0].at("time_us") == loc.at("points")[0].at("time_us"));
  CHECK_THAT(off.at("notes").dump(), Catch::Contains("FI_EFA_USE_DEVICE_RDMA=0") &&
                                         Catch::Contains("OFI_NCCL_DISABLE_GDR_REQUIRED_CHECK=1"));
  // NCCL_NET_PLUGIN=none: no plugin, NCCL's sockets.
  const auto none = with({"NCCL_NET_PLUGIN=none"});
  CHECK_THAT(none.at("transports").at("inter_node").get<std::string>(), Catch::Contains("Socket"));
  // Read but not modelled, by name; unknown names warned; a bad protocol refused.
  const auto proto = with({"OFI_NCCL_PROTOCOL=RDMA", "FI_EFA_FORK_SAFE=1", "FI_EFA_NO_SUCH=1"});
  CHECK(proto.at("points")[0].at("time_us") == plain.at("points")[0].at("time_us"));
  CHECK_THAT(proto.at("notes").dump(), Catch::Contains("OFI_NCCL_PROTOCOL=RDMA: read but not modelled") &&
                                           Catch::Contains("FI_EFA_FORK_SAFE=1: read but not modelled") &&
                                           Catch::Contains("FI_EFA_NO_SUCH: not a variable"));
  auto args = base;
  args.insert(args.end(), {"--env", "OFI_NCCL_PROTOCOL=WRITE"});
  const Result r = run(args);
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("OFI_NCCL_PROTOCOL") && Catch::Contains("SENDRECV or RDMA"));
}

TEST_CASE("--nccl-version 2.21 and its patch releases resolve to 2.21.5", "[unit][cli][nccl]") {
  const std::vector<std::string> base{"collective", "--op", "all_reduce", "--system", "hgx-h100", "-b", "1M", "-e", "1M",
                                      "--nccl-version"};
  auto with = [&](const std::string& v) {
    auto args = base;
    args.push_back(v);
    args.insert(args.end(), {"--format", "json"});
    return run(args);
  };
  const Result minor = with("2.21");
  REQUIRE(minor.rc == 0);
  CHECK(nlohmann::json::parse(minor.out).at("nccl_version") == "2.21.5");
  const Result patch = with("2.21.3");
  REQUIRE(patch.rc == 0);
  CHECK_THAT(patch.err, Catch::Contains("NCCL 2.21.5"));
}

TEST_CASE("a scenario's nccl.version resolves as --nccl-version does", "[unit][nccl]") {
  auto doc = nlohmann::json::parse(std::ifstream(testing::source_dir() / "scenarios/default.json"));
  testing::TempDir dir;
  doc["nccl"]["version"] = "2.21.3";  // no table: the nearest patch of 2.21 is 2.21.5, with a warning
  const auto path = dir.write("s.json", doc.dump());
  const models::Scenario s = models::load_scenario(path.string());
  CHECK(s.nccl.version == "2.21.5");
  REQUIRE_FALSE(s.warnings.empty());
  CHECK_THAT(s.warnings.back(), Catch::Contains("/nccl/version") && Catch::Contains("NCCL 2.21.3") &&
                                    Catch::Contains("NCCL 2.21.5"));
  doc["nccl"]["version"] = "2.27";  // an untabled minor release: exit-2 error naming the key
  const auto bad = dir.write("b.json", doc.dump());
  CHECK_THROWS_WITH(models::load_scenario(bad.string()), Catch::Contains("/nccl/version") && Catch::Contains("2.21.5 (2.21)"));
}
