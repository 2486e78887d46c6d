// NCCL_* variables parsed as NCCL parses them, and the release tables.

#include <algorithm>
#include <catch2/catch.hpp>

#include "hardware/errors.hpp"
#include "sim/nccl/nccl_env.hpp"
#include "sim/nccl/nccl_release.hpp"
#include "sim/nccl/nccl_version.hpp"

using namespace clustersim;
using namespace clustersim::sim::nccl;

TEST_CASE("NCCL_ALGO and NCCL_PROTO follow NCCL's parseList", "[unit][nccl]") {
  SECTION("a plain list enables only its elements, for every function") {
    const NcclEnv e = NcclEnv::parse({{"NCCL_ALGO", "Ring,Tree"}});
    CHECK(e.algo.allows(CollectiveOp::ALL_REDUCE, static_cast<int>(Algorithm::RING)));
    CHECK(e.algo.allows(CollectiveOp::BROADCAST, static_cast<int>(Algorithm::TREE)));
    CHECK_FALSE(e.algo.allows(CollectiveOp::ALL_REDUCE, static_cast<int>(Algorithm::NVLS)));
  }
  SECTION("a caret disables its elements") {
    const NcclEnv e = NcclEnv::parse({{"NCCL_PROTO", "^LL128"}});
    CHECK(e.proto.allows(CollectiveOp::ALL_REDUCE, static_cast<int>(Protocol::LL)));
    CHECK_FALSE(e.proto.allows(CollectiveOp::ALL_REDUCE, static_cast<int>(Protocol::LL128)));
  }
  SECTION("per-function entries (2.24+ syntax) change only their function") {
    const NcclEnv e = NcclEnv::parse({{"NCCL_ALGO", "ring;allreduce:tree"}});
    CHECK(e.algo.allows(CollectiveOp::ALL_REDUCE, static_cast<int>(Algorithm::TREE)));
    CHECK_FALSE(e.algo.allows(CollectiveOp::ALL_REDUCE, static_cast<int>(Algorithm::RING)));
    CHECK(e.algo.allows(CollectiveOp::ALL_GATHER, static_cast<int>(Algorithm::RING)));
  }
  SECTION("an unknown word is an error naming the variable and the choices") {
    try {
      NcclEnv::parse({{"NCCL_ALGO", "Rnig"}});
      FAIL("expected an InputError");
    } catch (const InputError& err) {
      CHECK_THAT(err.what(), Catch::Contains("NCCL_ALGO=Rnig") && Catch::Contains("Ring"));
    }
  }
  SECTION("entries after the first need a function prefix") {
    CHECK_THROWS_AS(NcclEnv::parse({{"NCCL_ALGO", "ring;tree"}}), InputError);
  }
}

TEST_CASE("P2P and GDR levels follow ncclGetLevel", "[unit][nccl]") {
  CHECK(NcclEnv::parse({{"NCCL_P2P_LEVEL", "NVL"}}).p2p_level == PathType::NVL);
  // Old numbering: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and 5 SYS (paths.cc levelsOldToNew).
  CHECK(NcclEnv::parse({{"NCCL_P2P_LEVEL", "3"}}).p2p_level == PathType::PHB);
  CHECK(NcclEnv::parse({{"NCCL_P2P_LEVEL", "9"}}).p2p_level == PathType::SYS);
  // NCCL_P2P_DISABLE=1 wins over NCCL_P2P_LEVEL: level LOC, no P2P between two GPUs.
  CHECK(NcclEnv::parse({{"NCCL_P2P_DISABLE", "1"}, {"NCCL_P2P_LEVEL", "SYS"}}).p2p_level == PathType::LOC);
  CHECK(NcclEnv::parse({{"NCCL_NET_GDR_LEVEL", "PHB"}}).net_gdr_level == PathType::PHB);
  CHECK_THROWS_AS(NcclEnv::parse({{"NCCL_P2P_LEVEL", "nvl"}}), InputError);  // NCCL compares case-sensitively
}

TEST_CASE("numeric variables are checked; unknown NCCL names are kept as unknown", "[unit][nccl]") {
  const NcclEnv e = NcclEnv::parse(
      {{"NCCL_MAX_NCHANNELS", "4"}, {"NCCL_BUFFSIZE", "8388608"}, {"NCCL_DEBUG", "INFO"}, {"NCCL_P2P_DIRECT_READ", "0"}});
  CHECK(e.max_nchannels == 4);
  CHECK(e.buffsize == Bytes::mib(8));
  CHECK(e.ignored == std::vector<std::string>{"NCCL_DEBUG"});
  CHECK(e.unknown == std::vector<std::string>{"NCCL_P2P_DIRECT_READ"});
  CHECK_THROWS_AS(NcclEnv::parse({{"NCCL_MAX_NCHANNELS", "0"}}), InputError);
  CHECK_THROWS_AS(NcclEnv::parse({{"NCCL_NVLS_ENABLE", "yes"}}), InputError);
  CHECK_THROWS_AS(NcclEnv::parse({{"NCCL_BUFFSIZE", "-1"}}), InputError);
  // The NVLS chunk variables (2.24+ src/transport/nvls.cc, enqueue.cc) are modelled: 524288 B =
  // 512 KiB, as aws-ofi-nccl exports them on p5.
  const NcclEnv nv = NcclEnv::parse({{"NCCL_NVLS_CHUNKSIZE", "524288"}, {"NCCL_NVLSTREE_MAX_CHUNKSIZE", "524288"}});
  CHECK(nv.nvls_chunksize == Bytes::kib(512));
  CHECK(nv.nvlstree_max_chunksize == Bytes::kib(512));
  CHECK(nv.ignored.empty());
  CHECK_THROWS_AS(NcclEnv::parse({{"NCCL_NVLS_CHUNKSIZE", "0"}}), InputError);
}

TEST_CASE("release tables load by name and alias", "[unit][nccl]") {
  const auto list = NcclVersion::builtin_list();
  REQUIRE(list.size() == 6);  // 2.18.5, 2.20.5, 2.21.5, 2.26.2, 2.28.7, 2.28.9
  const NcclVersion v228 = NcclVersion::builtin("2.28");
  CHECK(v228.name == "2.28.9");
  // NCCL 2.28 tuning.cc hwLatencies[NVLINK][Ring][Simple] = 3.4 us; baseLatencies[Ring][LL] = 6.6 us.
  CHECK(v228.tuner.hw_latency_us[0][1][2] == Approx(3.4));
  CHECK(v228.tuner.base_latency_us[1][0] == Approx(6.6));
  // device.h MAXCHANNELS 64 (2.26+), 32 before; topo.h SM90_NVLINK_BW 20.6 (2.20+), 20.0 in 2.18.
  CHECK(v228.device.max_channels == 64);
  const NcclVersion v218 = NcclVersion::builtin("2.18.5");
  CHECK(v218.device.max_channels == 32);
  CHECK(v218.topology.nvlink_per_link(90).gigabytes_per_second() == Approx(20.0));
  CHECK(v228.topology.nvlink_per_link(90).gigabytes_per_second() == Approx(20.6));
  // 2.21.5 (tag v2.21.5-1 tuning.cc): hwLat[NVLINK][NVLS][Simple] 25 us (23 in 2.20.5), the Hopper
  // llMaxBws row {141.0, 45.0, 35.0} ({87.7, 22.5, 19.0} in 2.20.5), Ring LL busBw x 0.5.
  const NcclVersion v221 = NcclVersion::builtin("2.21");
  CHECK(v221.name == "2.21.5");
  CHECK(v221.tuner.hw_latency_us[0][4][2] == Approx(25));
  CHECK(NcclVersion::builtin("2.20").tuner.hw_latency_us[0][4][2] == Approx(23));
  CHECK(v221.tuner.ll_max_bw[2][0] == Approx(141.0));
  CHECK(v221.tuner.ring_ll_factor_other == Approx(0.5));
  CHECK(v221.tuner.bandwidth_model == "2.20");
  // LL buffer: 8 lines/thread x 512 threads x 8 steps x 16 B = 512 KiB (init.cc DEFAULT_LL_BUFFSIZE).
  CHECK(v228.device.buffsize[0] == Bytes::kib(512));
  try {
    NcclVersion::builtin("2.99");
    FAIL("expected an InputError");
  } catch (const InputError& err) {
    CHECK_THAT(err.what(), Catch::Contains("2.28.9") && Catch::Contains("2.18.5"));
  }
}

TEST_CASE("an untabled patch release takes the nearest tabled patch of its minor release", "[unit][nccl]") {
  // Tables: 2.18.5, 2.20.5, 2.21.5, 2.26.2, 2.28.7, 2.28.9.
  SECTION("a tabled release or alias is itself, with nothing to say") {
    const ReleaseTable r = resolve_release("2.28");
    CHECK(r.table.name == "2.28.9");
    CHECK(r.note.empty());
  }
  SECTION("2.28.3: |3 - 7| = 4 beats |3 - 9| = 6, so 2.28.7, and the note names both") {
    const ReleaseTable r = resolve_release("2.28.3");
    CHECK(r.table.name == "2.28.7");
    CHECK(r.requested == "2.28.3");
    CHECK_THAT(r.note, Catch::Contains("NCCL 2.28.3") && Catch::Contains("NCCL 2.28.7") &&
                           Catch::Contains("nearest known patch release of 2.28"));
  }
  SECTION("2.28.8 is as near 2.28.7 as 2.28.9: the newer is taken") { CHECK(resolve_release("2.28.8").table.name == "2.28.9"); }
  SECTION("one table in the minor release: 2.20.3 and 2.26.6 take it") {
    CHECK(resolve_release("2.20.3").table.name == "2.20.5");
    CHECK(resolve_release("2.26.6").table.name == "2.26.2");
  }
  SECTION("an untabled minor release is an error listing the known releases, with no guess") {
    for (const char* release : {"2.27.7", "2.27", "2.28.x"}) {
      INFO(release);
      try {
        (void)resolve_release(release);
        FAIL("no error");
      } catch (const InputError& e) {
        CHECK_THAT(e.what(), Catch::Contains("unknown NCCL version '" + std::string(release) + "'") &&
                                 Catch::Contains("2.18.5 (2.18), 2.20.5 (2.20), 2.21.5 (2.21), 2.26.2 (2.26), 2.28.7, 2.28.9 (2.28)"));
        // 2.27 is one edit from 2.20 and 2.28 alike: an edit-distance guess would mislead.
        CHECK_THAT(e.what(), !Catch::Contains("did you mean"));
      }
    }
  }
  SECTION("NcclVersion::builtin stays exact: a scenario's pinned release is one with a table") {
    CHECK_THROWS_WITH(NcclVersion::builtin("2.28.3"), Catch::Contains("unknown NCCL version '2.28.3'"));
  }
}

TEST_CASE("a release table says which unmodelled variables that release reads", "[unit][nccl]") {
  const NcclVersion v228 = NcclVersion::builtin("2.28.9");
  // NCCL 2.28.9 reads NCCL_SOCKET_NTHREADS and NCCL_NSOCKS_PERTHREAD (transport/net_socket.cc),
  // which set how its socket transport splits a message; the model does not follow them.
  CHECK(v228.unmodelled_variable_note("NCCL_NSOCKS_PERTHREAD") ==
        "NCCL_NSOCKS_PERTHREAD: NCCL 2.28.9 reads it, this model does not follow it (predicted as if unset)");
  CHECK(v228.unmodelled_variable_note("NCCL_SOCKET_NTHREADS").find("NCCL 2.28.9 reads it") != std::string::npos);
  CHECK(v228.unmodelled_variable_note("NCCL_NOT_A_THING") == "NCCL_NOT_A_THING is not a variable NCCL 2.28.9 reads (ignored)");
  // NCCL_SYM_KERNEL (the symmetric kernels) is named in 2.28.9's sources, not in 2.18.5's or
  // 2.26.2's: the note follows the release asked for.
  CHECK(v228.unmodelled_variable_note("NCCL_SYM_KERNEL").find("reads it") != std::string::npos);
  CHECK(NcclVersion::builtin("2.18.5").unmodelled_variable_note("NCCL_SYM_KERNEL") ==
        "NCCL_SYM_KERNEL is not a variable NCCL 2.18.5 reads (ignored)");
  CHECK(NcclVersion::builtin("2.26.2").unmodelled_variable_note("NCCL_SYM_KERNEL") ==
        "NCCL_SYM_KERNEL is not a variable NCCL 2.26.2 reads (ignored)");
  // A table without a list says only what the model knows.
  NcclVersion bare = v228;
  bare.variables.clear();
  CHECK(bare.unmodelled_variable_note("NCCL_NSOCKS_PERTHREAD") ==
        "NCCL_NSOCKS_PERTHREAD is not a variable this model knows (ignored)");
  // The list holds only NCCL_* names, and every variable the model parses or ignores that NCCL's
  // sources name directly is on it (NCCL_BUFFSIZE, NCCL_SOCKET_IFNAME).
  for (const auto& n : v228.variables) CHECK(n.rfind("NCCL_", 0) == 0);
  CHECK(std::find(v228.variables.begin(), v228.variables.end(), "NCCL_BUFFSIZE") != v228.variables.end());
  CHECK(std::find(v228.variables.begin(), v228.variables.end(), "NCCL_SOCKET_IFNAME") != v228.variables.end());
}
