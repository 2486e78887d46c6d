#include <catch2/catch.hpp>

#include "calibrate/nccl_tests_import.hpp"
#include "hardware/errors.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;
using namespace clustersim::calibrate;

namespace {

std::string sample(const std::string& name) {
  return (testing::source_dir() / "tests/data/nccl_tests_logs" / name).string();
}

CalibrationResults import_one(const std::string& name, const NcclTestsImportOptions& opt = {}) {
  return import_nccl_tests_logs({sample(name)}, opt);
}

std::string error_of(const std::vector<std::pair<std::string, std::string>>& logs, const NcclTestsImportOptions& opt = {}) {
  try {
    import_nccl_tests_text(logs, opt);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// Every printed busbw is algbw times nccl-tests' factor, within the two printed decimals.
void check_factor(const CollectiveSeries& s, double factor) {
  for (const auto& p : s.points) {
    CHECK(p.busbw_GBps == Approx(p.algbw_GBps * factor).margin(0.02 + 0.01 * p.busbw_GBps));
  }
}

// A table with only its rows, the header and the device lines of a 4-rank run.
const char* kFourRankAllReduceRows =
    "#  Rank  0 Group  0 Pid 1 on h device  0 [0000:01:00] NVIDIA H200\n"
    "#  Rank  1 Group  0 Pid 2 on h device  1 [0000:02:00] NVIDIA H200\n"
    "#  Rank  2 Group  0 Pid 3 on h device  2 [0000:03:00] NVIDIA H200\n"
    "#  Rank  3 Group  0 Pid 4 on h device  3 [0000:04:00] NVIDIA H200\n"
    "     1048576        262144     float     sum      -1    20.00   52.43   78.64      0    20.00   52.43   78.64      0\n";

}  // namespace

TEST_CASE("nccl-tests import: current format with NCCL INFO lines mixed in", "[unit][calibrate]") {
  const auto r = import_one("all_reduce_4gpu_format_sample.log");
  CHECK(r.tool.name == "nccl-tests");
  CHECK(r.tool.version == "2.17.6");
  // "nccl-library=22809" and the INFO line "NCCL version 2.28.9+cuda13.0" agree: 22809 = 2*10000 + 28*100 + 9.
  CHECK(r.tool.nccl_version == "2.28.9");
  REQUIRE(r.environment);
  CHECK(r.environment->gpu_name == "NVIDIA H200");
  CHECK(r.environment->hostname == "gpu-node-a");
  // "NCCL_NVLS_ENABLE set by environment to 0." loses NCCL's trailing period.
  CHECK(r.environment->nccl_env.at("NCCL_NVLS_ENABLE") == "0");
  CHECK(r.environment->warnings.empty());

  // One out-of-place and one in-place series, in that order.
  REQUIRE(r.collectives.size() == 2);
  const auto& oop = r.collectives[0];
  const auto& ip = r.collectives[1];
  CHECK(oop.op == "all_reduce");
  CHECK_FALSE(oop.in_place);
  CHECK(ip.in_place);
  // Four "#  Rank" lines on one host.
  CHECK(oop.nranks == 4);
  CHECK(oop.nodes == 1);
  CHECK(oop.gpus_per_node == 4);
  CHECK(oop.algo == "auto");
  CHECK(oop.proto == "auto");
  CHECK_FALSE(oop.channels);
  CHECK(oop.dtype == "float");
  CHECK(oop.redop == "sum");
  CHECK(oop.root == -1);
  CHECK(oop.warmup_iters == 5);
  CHECK(oop.iters == 20);
  // "# nThread 1 nGpus 1": one thread a process driving one GPU (four processes, four Pids).
  CHECK(oop.threads_per_process == 1);
  CHECK(oop.gpus_per_thread == 1);
  CHECK(ip.threads_per_process == 1);
  // -b 8 -e 128M -f 2: 2^3 .. 2^27 bytes, 25 sizes; the first row was split by two INFO lines and rejoined.
  REQUIRE(oop.points.size() == 25);
  CHECK(oop.points.front().size_bytes == 8);
  // 8 bytes of float: 2 elements.
  CHECK(oop.points.front().count == 2);
  CHECK(oop.points.front().time_us == Approx(11.50));
  CHECK(oop.points.back().size_bytes == 134217728);
  CHECK(oop.points.back().count == 134217728 / 4);
  for (const auto& p : oop.points) CHECK(p.errors == 0);
  // all_reduce on 4 ranks: busbw = algbw * 2(n-1)/n = algbw * 1.5.
  check_factor(oop, 1.5);
  check_factor(ip, 1.5);
  // algbw = size / time: 134217728 B / t us = 134217728 / (t * 1e3) GB/s.
  const auto& last = oop.points.back();
  CHECK(last.algbw_GBps == Approx(134217728.0 / (last.time_us * 1e3)).epsilon(0.001));
}

TEST_CASE("nccl-tests import: older format, op from the command line, 8 GPUs in one process", "[unit][calibrate]") {
  const auto r = import_one("all_gather_8gpu_old_format_sample.log");
  REQUIRE(r.collectives.size() == 2);
  const auto& s = r.collectives[0];
  CHECK(s.op == "all_gather");
  CHECK(s.nranks == 8);
  CHECK(s.nodes == 1);
  // No root column: the root is nccl-tests' -1; all_gather prints "none" as its reduction.
  CHECK(s.root == -1);
  CHECK(s.redop == "none");
  // -b 1K -e 64M -f 4: 1 KiB, 4 KiB, ..., 64 MiB = 4^5 .. 4^13 bytes, 9 sizes.
  REQUIRE(s.points.size() == 9);
  // all_gather counts per rank: 1024 B / 4 B / 8 ranks = 32 elements.
  CHECK(s.points.front().count == 32);
  // The old error column "0e+00" is a count of zero.
  CHECK(s.points.front().errors == 0);
  // all_gather on 8 ranks: busbw = algbw * (n-1)/n = algbw * 7/8.
  check_factor(s, 7.0 / 8.0);
  CHECK(r.environment->gpu_name == "NVIDIA A100-SXM4-80GB");
  CHECK(r.tool.command.find("all_gather_perf") != std::string::npos);
  // "# nThread 1 nGpus 8": one thread driving all eight GPUs (nccl-tests -t 1 -g 8).
  CHECK(s.threads_per_process == 1);
  CHECK(s.gpus_per_thread == 8);
}

TEST_CASE("nccl-tests import: two hosts, pasted without '#', forced algorithm and protocol", "[unit][calibrate]") {
  const auto r = import_one("reduce_scatter_2node_pasted_format_sample.log");
  REQUIRE(r.collectives.size() == 2);
  const auto& s = r.collectives[0];
  CHECK(s.op == "reduce_scatter");
  // 16 device lines on hosts p5-node-0 and p5-node-1.
  CHECK(s.nranks == 16);
  CHECK(s.nodes == 2);
  CHECK(s.gpus_per_node == 8);
  // "NCCL_ALGO set by environment to Ring", "NCCL_PROTO ... Simple".
  CHECK(s.algo == "ring");
  CHECK(s.proto == "simple");
  CHECK(s.env.at("NCCL_ALGO") == "Ring");
  // -b 64M -e 1G -f 2: 64, 128, 256, 512, 1024 MiB.
  CHECK(s.points.size() == 5);
  // reduce_scatter on 16 ranks: busbw = algbw * 15/16.
  check_factor(s, 15.0 / 16.0);
  // The log's own algorithm wins over a matching --algo; a contradicting one is an error.
  NcclTestsImportOptions same;
  same.algo = "ring";
  CHECK(import_one("reduce_scatter_2node_pasted_format_sample.log", same).collectives[0].algo == "ring");
  NcclTestsImportOptions other;
  other.algo = "tree";
  CHECK_THROWS_AS(import_one("reduce_scatter_2node_pasted_format_sample.log", other), InputError);
}

TEST_CASE("nccl-tests import: run cycles become separate series; unchecked rows have no error count", "[unit][calibrate]") {
  const auto r = import_one("sendrecv_2gpu_cycles_format_sample.log");
  // -N 2: the table twice, each an out-of-place and an in-place series.
  REQUIRE(r.collectives.size() == 4);
  for (const auto& s : r.collectives) {
    CHECK(s.op == "sendrecv");
    CHECK(s.nranks == 2);
    // 1, 4, 16 MiB per cycle.
    CHECK(s.points.size() == 3);
    // -c 0 prints N/A.
    for (const auto& p : s.points) CHECK_FALSE(p.errors.has_value());
    // sendrecv: busbw = algbw.
    check_factor(s, 1.0);
  }
  CHECK_FALSE(r.collectives[0].in_place);
  CHECK(r.collectives[1].in_place);
}

TEST_CASE("nccl-tests import: bad logs name the file and the line", "[unit][calibrate]") {
  try {
    import_one("bad_truncated_row.log");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("bad_truncated_row.log") && Catch::Contains("line 11") &&
                                          Catch::Contains("expected 13"));
  }
  CHECK_THAT(error_of({{"empty.log", "# nothing here\n"}}), Catch::Contains("empty.log") && Catch::Contains("no nccl-tests result rows"));
  // Without a header, a binary name or --op, the op is unknown.
  CHECK_THAT(error_of({{"rows.log", kFourRankAllReduceRows}}), Catch::Contains("rows.log") && Catch::Contains("--op"));
  // A non-number in a time column.
  CHECK_THAT(error_of({{"x.log", "# Collective test starting: all_reduce_perf\n"
                                 "  1024  256  float  sum  -1  abc  0.05  0.05  0  5.0  0.2  0.2  0\n"}},
                      {.nranks = 2}),
             Catch::Contains("x.log: line 2") && Catch::Contains("expected a number"));
  // A log run with -G (a CUDA graph's replays): not what nccl-tests' host loop measures.
  CHECK_THAT(error_of({{"graph.log", "# Collective test starting: all_reduce_perf\n"
                                     "# nThread 1 nGpus 1 minBytes 8 maxBytes 256 step: 4(factor) warmup iters: 20 "
                                     "iters: 100 agg iters: 1 validation: 0 graph: 100 unalign: 0\n" +
                                         std::string(kFourRankAllReduceRows)}}),
             Catch::Contains("graph.log: line 2") && Catch::Contains("-G 100") && Catch::Contains("graph: 0"));
  // A binary that is not one of the seven collectives.
  CHECK_THAT(error_of({{"g.log", "# Collective test starting: gather_perf\n" + std::string(kFourRankAllReduceRows)}}),
             Catch::Contains("gather_perf") && Catch::Contains("not one of the collectives"));
}

TEST_CASE("nccl-tests import: the busbw factor exposes a wrong op or rank count", "[unit][calibrate]") {
  // The row: 1 MiB in 20 us = 1048576 / 20e3 = 52.43 GB/s algbw, busbw 78.64 = 52.43 * 1.5: all_reduce on 4 ranks.
  NcclTestsImportOptions reduce;
  reduce.op = "all_reduce";
  const auto ok = import_nccl_tests_text({{"rows.log", kFourRankAllReduceRows}}, reduce);
  REQUIRE(ok.collectives.size() == 2);
  CHECK(ok.collectives[0].points[0].busbw_GBps == Approx(52.43 * 1.5).margin(0.02));
  // Broadcast's factor is 1, not 1.5.
  NcclTestsImportOptions bcast;
  bcast.op = "broadcast";
  CHECK_THAT(error_of({{"rows.log", kFourRankAllReduceRows}}, bcast),
             Catch::Contains("rows.log: line 5") && Catch::Contains("wrong op or rank count"));
  // The device lines say 4 ranks; --nranks 8 contradicts them.
  NcclTestsImportOptions eight;
  eight.op = "all_reduce";
  eight.nranks = 8;
  CHECK_THAT(error_of({{"rows.log", kFourRankAllReduceRows}}, eight), Catch::Contains("--nranks"));
}

TEST_CASE("nccl-tests import: rank count from size/count when there are no device lines", "[unit][calibrate]") {
  // alltoall with 4 ranks: 1 MiB = 262144 floats; per-rank count 262144 / 4 = 65536; size / (count * 4 B) = 4 ranks.
  // algbw 1048576 B / 10 us = 104.86 GB/s; busbw * (n-1)/n = 78.64.
  const std::string log =
      "# Collective test starting: alltoall_perf\n"
      "     1048576         65536     float    none      -1    10.00  104.86   78.64      0    10.00  104.86   78.64      0\n";
  const auto r = import_nccl_tests_text({{"a2a.log", log}}, {});
  REQUIRE(r.collectives.size() == 2);
  CHECK(r.collectives[0].op == "alltoall");
  CHECK(r.collectives[0].nranks == 4);
  // For all_reduce the table cannot tell: --nranks is needed.
  CHECK_THAT(error_of({{"ar.log", "# Collective test starting: all_reduce_perf\n"
                                  "     1048576        262144     float     sum      -1    20.00   52.43   78.64      0    20.00   52.43   78.64      0\n"}}),
             Catch::Contains("--nranks"));
}

TEST_CASE("nccl-tests import: op names from binaries", "[unit][calibrate]") {
  CHECK(op_from_binary("all_reduce_perf") == "all_reduce");
  CHECK(op_from_binary("/opt/nccl-tests/build/alltoall_perf") == "alltoall");
  CHECK(op_from_binary("sendrecv_perf") == "sendrecv");
  CHECK_FALSE(op_from_binary("hypercube_perf"));
  CHECK_FALSE(op_from_binary("alltoallv_perf"));
}

TEST_CASE("nccl-tests import: several logs give one results file", "[unit][calibrate]") {
  const auto r = import_nccl_tests_logs(
      {sample("all_reduce_4gpu_format_sample.log"), sample("all_gather_8gpu_old_format_sample.log")}, {});
  // Two series per log.
  CHECK(r.collectives.size() == 4);
  CHECK(r.tool.sources.size() == 2);
  CHECK_THROWS_AS(import_nccl_tests_logs({sample("no-such-file.log")}, {}), InputError);
}

TEST_CASE("nccl-tests import: the file-wide environment holds only what every log shares", "[unit][calibrate]") {
  auto log = [](const std::string& channels, int ranks) {
    std::string text = "h:1:2 [0] NCCL INFO NCCL_PROTO set by environment to Simple\n";
    if (!channels.empty()) text += "h:1:2 [0] NCCL INFO NCCL_MAX_NCHANNELS set by environment to " + channels + "\n";
    for (int r = 0; r < ranks; ++r) {
      text += "#  Rank  " + std::to_string(r) + " Group  0 Pid 1 on h device  " + std::to_string(r) +
              " [0000:01:00] NVIDIA H200\n";
    }
    // broadcast: busbw = algbw; 1048576 B in 20 us = 52.43 GB/s.
    return text + "     1048576        262144     float    none       0    20.00   52.43   52.43      0    20.00   52.43   52.43      0\n";
  };
  NcclTestsImportOptions opt;
  opt.op = "broadcast";
  const auto r = import_nccl_tests_text({{"one.log", log("1", 2)}, {"auto.log", log("", 4)}, {"two.log", log("2", 4)}}, opt);
  REQUIRE(r.environment);
  // NCCL_PROTO is set alike in all three logs; NCCL_MAX_NCHANNELS differs (1, unset, 2), so only
  // the series carry it.
  CHECK(r.environment->nccl_env == std::map<std::string, std::string>{{"NCCL_PROTO", "Simple"}});
  CHECK(r.environment->gpu_count == 4);  // the most GPUs of any log
  REQUIRE(r.collectives.size() == 6);
  CHECK(r.collectives[0].env.at("NCCL_MAX_NCHANNELS") == "1");
  CHECK(r.collectives[2].env.count("NCCL_MAX_NCHANNELS") == 0);
}

TEST_CASE("nccl-tests import: a 0-byte row is skipped with a warning", "[unit][calibrate]") {
  // One rank's all_gather_perf at -b 8: 8 B is 2 floats over 1 rank, but nccl-tests prints its first
  // row as 0 bytes (rows as measured on one H200, calibrate/results/lent-4xh200-2026-11-22-tree-2rank).
  // A call that moves nothing has no transfer to fit (the fit rejects 0-byte points), so only the
  // 32-byte row is kept; the warning names the file.
  const std::string log =
      "# Collective test starting: all_gather_perf\n"
      "#  Rank  0 Group  0 Pid 1 on h device  0 [0000:01:00] NVIDIA H200\n"
      "           0             0     float    none      -1     0.30    0.00    0.00    N/A     0.31    0.00    0.00    N/A\n"
      "          32             8     float    none      -1     6.34    0.01    0.00    N/A     0.32    0.10    0.00    N/A\n";
  const auto r = import_nccl_tests_text({{"ag.log", log}}, {});
  REQUIRE(r.collectives.size() == 2);
  for (const auto& s : r.collectives) {
    REQUIRE(s.points.size() == 1);
    CHECK(s.points[0].size_bytes == 32);
  }
  CHECK(r.collectives[0].points[0].time_us == Approx(6.34));
  CHECK(r.collectives[1].points[0].time_us == Approx(0.32));
  REQUIRE(r.environment);
  REQUIRE(r.environment->warnings.size() == 1);
  CHECK_THAT(r.environment->warnings[0], Catch::Contains("ag.log") && Catch::Contains("0 bytes"));
}

TEST_CASE("nccl-tests import: a row cut in three by per-call NCCL INFO lines", "[unit][calibrate]") {
  // NCCL_DEBUG_SUBSYS=TUNING prints a line per call, so a broadcast row arrives in three pieces:
  // its first columns, then the out-of-place timing (its "N/A" glued to the next INFO line's host
  // name "vm"), then the in-place timing.
  const std::string info = "vm:2592:2592 [0] NCCL INFO Broadcast: 4194304 Bytes -> Algo RING proto SIMPLE\n";
  const std::string log =
      "#  Rank  0 Group  0 Pid 1 on vm device  0 [0000:01:00] NVIDIA H200\n"
      "#  Rank  1 Group  0 Pid 2 on vm device  1 [0000:02:00] NVIDIA H200\n"
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n"
      "     4194304       1048576     float    none       0" + info + info +
      "   203.27   20.63   20.63    N/A" + info + info +
      "   194.74   21.54   21.54    N/A\n";
  const auto r = import_nccl_tests_text({{"bcast.txt", log}}, {.op = std::string("broadcast")});
  REQUIRE(r.collectives.size() == 2);
  const auto& oop = r.collectives[0];
  REQUIRE(oop.points.size() == 1);
  CHECK(oop.root == 0);
  CHECK(oop.points[0].time_us == Approx(203.27));
  CHECK_FALSE(oop.points[0].errors);  // N/A: not checked
  REQUIRE(r.collectives[1].points.size() == 1);
  CHECK(r.collectives[1].points[0].time_us == Approx(194.74));
  // broadcast: busbw = algbw; 4194304 B / 203.27 us = 20.63 GB/s.
  check_factor(oop, 1.0);
}
