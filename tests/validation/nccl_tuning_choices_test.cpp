// The tuner against NCCL's own log: the algorithm, protocol and number of channels NCCL 2.28.9
// ran at each nccl-tests size on 4 x H200 (NVSwitch, NVLS off), over P2P write, P2P read, SHM
// and NET/Socket, for the five tuned collectives (h200x4-nccl-tuning-choices.json, read from
// rank 0's NCCL_DEBUG_SUBSYS=TUNING lines: calibrate/results/lent-4xh200-2026-11-27-tuning).
// Every choice must match: the tuner decides what the simulator runs, so a wrong protocol or
// channel count is an error no rate can make up for.

#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hardware/catalog.hpp"
#include "sim/nccl/collective_predictor.hpp"
#include "support/source_text.hpp"

using namespace clustersim;
using namespace clustersim::sim::nccl;

TEST_CASE("the tuner chooses what NCCL 2.28.9 chose on 4 x H200", "[validation][nccl]") {
  const hardware::Catalog catalog = hardware::Catalog::load();
  const auto data = nlohmann::json::parse(testing::read_validation_data("h200x4-nccl-tuning-choices.json"));
  int checked = 0;
  for (const auto& run : data.at("runs")) {
    PredictorConfig cfg;
    cfg.node = hardware::resolve_node(catalog, data.at("system").get<std::string>());
    cfg.shape = {1, data.at("gpus").get<int>()};
    cfg.env = run.at("env").get<std::map<std::string, std::string>>();
    cfg.version = data.at("nccl_version").get<std::string>();
    const CollectivePredictor predictor(cfg);
    const CollectiveOp op = parse_op(run.at("op").get<std::string>()).value();
    for (const auto& point : run.at("points")) {
      const Bytes size = Bytes::of(point.at("size_bytes").get<std::int64_t>());
      const TunerChoice c = predictor.choice(op, size);
      std::ostringstream where;
      where << run.at("op").get<std::string>() << " " << size.count() << " B, env " << run.at("env").dump() << ": NCCL "
            << point.at("algo").get<std::string>() << "/" << point.at("proto").get<std::string>() << " on "
            << point.at("channels").get<int>() << ", the tuner " << to_string(c.algorithm) << "/" << to_string(c.protocol)
            << " on " << c.channels;
      INFO(where.str());
      CHECK(c.algorithm == parse_algorithm(point.at("algo").get<std::string>()).value());
      CHECK(c.protocol == parse_protocol(point.at("proto").get<std::string>()).value());
      CHECK(c.channels == point.at("channels").get<int>());
      ++checked;
    }
  }
  // 20 runs (5 ops x 4 transports), 8 B to 128 MiB by 4x (NET to 32 MiB): 13 sizes an op (12 over
  // NET); all-gather and reduce-scatter start at 128 B (nccl-tests ran 8 and 32 B as 0 bytes on 4
  // ranks), 11 (10). 3 x (3 x 13 + 2 x 11) + (3 x 12 + 2 x 10) = 183 + 56 = 239.
  CHECK(checked == 239);
}
