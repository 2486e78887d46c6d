// The store-and-forward stage of a network step (collective_program.hpp net_forward_time,
// net_forward_stage; NCCL 2.28 src/transport/net.cc sendProxyProgress, aws-ofi-nccl v1.16.3
// src/nccl_ofi_scheduler.cpp).

#include <catch2/catch.hpp>

#include "hardware/catalog.hpp"
#include "sim/nccl/collective_predictor.hpp"

using namespace clustersim;
using namespace clustersim::sim::nccl;

namespace {

CollectivePredictor predictor(const std::string& node, int nodes) {
  static const hardware::Catalog catalog = hardware::Catalog::load();
  PredictorConfig cfg;
  cfg.node = hardware::resolve_node(catalog, node);
  cfg.shape = {nodes, 8};
  cfg.version = "2.28.7";
  return CollectivePredictor(cfg);
}

}  // namespace

TEST_CASE("a network message crosses as many rails as aws-ofi-nccl stripes it over", "[unit][nccl]") {
  const CollectivePredictor p = predictor("p5.48xlarge", 4);
  const ProgramContext ctx{p.system(), p.channels(), p.version(), p.env(), p.rates()};
  const HopTransport net = p.system().transport(0, 8);
  REQUIRE(net.kind == TransportKind::NET);
  // p5: 4 EFA rails of 100 Gb/s per device at nccl.net.efficiency 0.88: 11 GB/s per rail.
  const double rail = 12.5e9 * 0.88;
  // A Tree/LL128 step of 72000 payload bytes is 76800 wire bytes, under the 128 KiB minimum
  // stripe: one rail.
  CHECK(net_forward_time(ctx, net, 76800).seconds() == Approx(76800 / rail));
  // 139810 wire bytes: ceil(139810 / 131072) = 2 stripes (2 divides 4), each ceil(69905 / 128) x
  // 128 = 70016 bytes.
  CHECK(net_forward_time(ctx, net, 139810).seconds() == Approx(70016 / rail));
  // 3 x 128 KiB: 3 stripes, lowered to 2 (a divisor of 4 rails): 196608 bytes each.
  CHECK(net_forward_time(ctx, net, 3 * 131072.0).seconds() == Approx(196608 / rail));
  // 1 MiB: 4 stripes of 256 KiB.
  CHECK(net_forward_time(ctx, net, 1048576).seconds() == Approx(262144 / rail));
  // Inside a node there is no network stage.
  CHECK(net_forward_time(ctx, p.system().transport(0, 1), 1048576).seconds() == 0.0);
}

TEST_CASE("without striping a network message crosses the whole device", "[unit][nccl]") {
  const CollectivePredictor p = predictor("dgx-h100", 2);
  const ProgramContext ctx{p.system(), p.channels(), p.version(), p.env(), p.rates()};
  const HopTransport net = p.system().transport(0, 8);
  REQUIRE(net.kind == TransportKind::NET);
  // One 400 Gb/s NIC at the device's payload rate (nccl.net rate).
  CHECK(net_forward_time(ctx, net, 524288).seconds() == Approx(524288 / p.rates().nic.bytes_per_second()));
}

TEST_CASE("the forward stage adds the slower of a step's two stages that the transfer left out", "[unit][nccl]") {
  const CollectivePredictor p = predictor("p5.48xlarge", 4);
  const ProgramContext ctx{p.system(), p.channels(), p.version(), p.env(), p.rates()};
  Hop h;
  h.transport = p.system().transport(0, 8);
  h.wire_factor = 16.0 / 15.0;
  const double rail = 12.5e9 * 0.88;
  // Kernel-bound (cap 13.75 GB/s, links 29 GB/s): the transfer is the kernel's stage; the
  // message's 76800 wire bytes on one rail follow: forward = 76800 / rail.
  h.channel_cap = Bandwidth::bytes_per_second(13.75e9);
  h.link_rate = Bandwidth::bytes_per_second(29e9);
  h.rate = h.channel_cap;
  CHECK(net_forward_stage(ctx, h, 72000).seconds() == Approx(76800 / rail));
  // Link-bound (links 5.5 GB/s, cap 17 GB/s): the transfer is the network's stage (72000 / 5.5
  // GB/s, longer than the rail's); the kernel's 72000 / 17 GB/s came before it.
  h.channel_cap = Bandwidth::bytes_per_second(17e9);
  h.link_rate = Bandwidth::bytes_per_second(5.5e9);
  h.rate = h.link_rate;
  CHECK(net_forward_stage(ctx, h, 72000).seconds() == Approx(72000 / 17e9));
}
