#include "models/plan_costs.hpp"

#include <catch2/catch.hpp>
#include <cmath>

#include "hardware/catalog.hpp"
#include "hardware/errors.hpp"
#include "models/plan_runner.hpp"
#include "models/plan_spec.hpp"
#include "models/transformer_config.hpp"
#include "unit/plan_fakes.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

PlanSpec parse(const std::string& text) { return read_plan(parse_json_text(text, "plan.json"), "."); }

// Llama-3-8B on 64 p5 nodes, one fixed layout, 2e12 tokens of 1024 x 8192-token batches; failures
// are left out unless `extra` brings them back (the goodput test below).
std::string p5_plan(const std::string& extra, const std::string& goodput = R"(, "goodput": {"enabled": false})") {
  return R"({"schema_version": 1, "name": "arith", "model": {"preset": "llama3-8b"},
    "training": {"seq_len": 8192, "global_batch_size": 1024, "micro_batch_size": 1,
                 "activation_checkpointing": "full"},
    "parallelism": {"framework": "pytorch", "zero_stage": 3},
    "cluster": {"system": "p5.48xlarge", "nodes": 64},
    "sensitivity": {"enabled": false}, "job": {"tokens": 2e12})" +
         goodput + extra + "}";
}

const OptionCost& option(const PlanCandidate& c, PricingOption o) {
  for (const auto& x : c.costs) {
    if (x.option == o) return x;
  }
  FAIL("option missing");
  return c.costs.front();
}

}  // namespace

TEST_CASE("steps, time to train, GPU-hours and dollars for a 5 s step on 64 p5 nodes", "[unit][plan]") {
  const PlanSpec plan = parse(p5_plan(
      R"(, "pricing": {"options": ["on_demand", "capacity_block", "savings_plan_1yr", "savings_plan_3yr"]})"));
  const PlanResult r = run_plan(plan, catalog(), testing::constant_step(5.0, 4.5, 5.5));
  REQUIRE(r.candidates.size() == 1);
  const PlanCandidate& c = r.candidates[0];
  REQUIRE(c.status == CandidateStatus::FEASIBLE);
  // 2e12 tokens / (1024 x 8192 = 8,388,608 tokens per step) = 238,418.58 -> 238,419 steps.
  CHECK(c.tokens_per_step == 8'388'608);
  CHECK(c.steps == 238'419);
  // 238,419 x 5.0 s = 1,192,095 s = 13.797 days (no checkpoint section: nothing added).
  CHECK(c.wall.nominal_s == Approx(1'192'095.0));
  CHECK(c.wall.nominal_s / 86400 == Approx(13.7974).epsilon(1e-4));
  // Band: 238,419 x 4.5 s = 1,072,885.5 s and x 5.5 s = 1,311,304.5 s.
  CHECK(c.wall_low_s == Approx(1'072'885.5));
  CHECK(c.wall_high_s == Approx(1'311'304.5));
  // 1,192,095 s = 331.1375 h; x 64 nodes = 21,192.8 node-hours; x 8 GPUs = 169,542.4 GPU-hours.
  CHECK(c.node_hours == Approx(21'192.8));
  CHECK(c.gpu_hours == Approx(169'542.4));
  // On-demand: 21,192.8 instance-hours x 55.04 $/h = $1,166,451.71 (band x 4.5/5 and x 5.5/5:
  // $1,049,806.54 to $1,283,096.88).
  const OptionCost& od = option(c, PricingOption::ON_DEMAND);
  CHECK(od.usd == Approx(1'166'451.712));
  CHECK(od.usd_low == Approx(1'049'806.5408));
  CHECK(od.usd_high == Approx(1'283'096.8832));
  CHECK(od.quote.region == "us-east-1");
  CHECK(od.quote.date == "2026-09-25");
  // Capacity Blocks: 13.797 days -> 14 whole days paid upfront; 64 instances fit one block:
  // 64 x 24 h x 14 days x 41.53 $/h = $893,061.12. At the slow end 15.18 days -> 16 days, past 14
  // days booked in whole weeks: 21 days, 64 x 24 x 21 x 41.53 = $1,339,591.68.
  const OptionCost& cb = option(c, PricingOption::CAPACITY_BLOCK);
  CHECK(cb.billed_days == 14);
  CHECK(cb.blocks == 1);
  CHECK(cb.usd == Approx(893'061.12));
  CHECK(cb.usd_high == Approx(1'339'591.68));
  // Savings Plans are bought for the whole term (the plan states no share): 64 nodes x 8,760 h
  // x 34.68 $/h = $19,442,995.20 (1 year); 64 x 26,280 h x 23.78 $/h = $39,996,057.60 (3 years).
  // The band does not move them: the job is shorter than a term at both ends.
  const OptionCost& sp1 = option(c, PricingOption::SAVINGS_PLAN_1YR);
  CHECK(sp1.usd == Approx(19'442'995.2));
  CHECK(sp1.usd_high == Approx(19'442'995.2));
  CHECK(sp1.instance_hours == Approx(64 * 8760.0));
  CHECK(option(c, PricingOption::SAVINGS_PLAN_3YR).usd == Approx(39'996'057.6));
  CHECK_THAT(sp1.basis, Catch::Contains("the whole 1-year term for 64 nodes") && Catch::Contains("states no share"));
  // The cheapest option is now Capacity Blocks ($893,061.12), no longer the 3-year plan priced by
  // the hour ($503,964.78 before commitments were priced as bought).
  REQUIRE(c.cheapest_cost() != nullptr);
  CHECK(c.cheapest_cost()->option == PricingOption::CAPACITY_BLOCK);
}

TEST_CASE("Savings Plans are priced as bought: the whole term unless the plan states a share", "[unit][plan]") {
  // The 405B plan's best candidate: 2,048 p5 nodes for 80 days, 3-year Savings Plan at 23.78 $/h.
  PricingSpec pricing;
  pricing.options = {PricingOption::SAVINGS_PLAN_3YR};
  PriceQuote sp;
  sp.option = PricingOption::SAVINGS_PLAN_3YR;
  sp.available = true;
  sp.per_hour = 23.78;
  CostInputs in;
  in.pricing = &pricing;
  in.nodes = 2048;
  in.compute_s = in.compute_low_s = in.compute_high_s = 80 * 86400.0;
  // Default, the whole term: 2,048 x 23.78 $/h = 48,701.44 $/h, x 3 x 8,760 h = 26,280 h
  // = $1,279,873,843.20 (the catalog's rate for 2,048 nodes over 3 years: about $1.28B).
  const OptionCost whole = cost_option(sp, in);
  CHECK(whole.usd == Approx(1'279'873'843.2));
  CHECK(whole.commitment_usd == Approx(1'279'873'843.2));
  CHECK_THAT(whole.basis, Catch::Contains("the whole 3-year term for 2048 nodes"));
  // A stated share of 0.25: $1,279,873,843.20 x 0.25 = $319,968,460.80.
  pricing.commitment = SavingsPlanCommitment::SHARED;
  pricing.commitment_share = 0.25;
  pricing.commitment_stated = true;
  pricing.after_job = "inference";
  const OptionCost shared = cost_option(sp, in);
  CHECK(shared.usd == Approx(319'968'460.8));
  CHECK(shared.instance_hours == Approx(2048 * 26'280 * 0.25));
  CHECK_THAT(shared.basis, Catch::Contains("25% of the whole 3-year term") && Catch::Contains("after the job: inference"));
  // Utilized (the plan states other work uses every other hour): the job's own hours,
  // 48,701.44 $/h x 80 days x 24 h = $93,506,764.80, which is 80 / 1,095 days = 7.31% of the term.
  pricing.commitment = SavingsPlanCommitment::UTILIZED;
  const OptionCost used = cost_option(sp, in);
  CHECK(used.usd == Approx(93'506'764.8));
  CHECK_THAT(used.basis, Catch::Contains("7.31% of the whole 3-year term"));
  // A job longer than the term buys whole terms: 1,200 days on a 1-year plan -> ceil(1,200 / 365)
  // = 4 terms of 8,760 h: 2,048 x 35,040 h x 34.68 $/h = $2,488,703,385.60.
  pricing.commitment = SavingsPlanCommitment::DEDICATED;
  sp.option = PricingOption::SAVINGS_PLAN_1YR;
  sp.per_hour = 34.68;
  in.compute_s = in.compute_low_s = in.compute_high_s = 1200 * 86400.0;
  const OptionCost terms = cost_option(sp, in);
  CHECK(terms.usd == Approx(2'488'703'385.6));
  CHECK_THAT(terms.basis, Catch::Contains("4 whole 1-year terms"));
}

TEST_CASE("a negotiated discount is the plan's assumption off the catalog's on-demand rate", "[unit][plan]") {
  PricingSpec pricing;
  pricing.options = {PricingOption::ON_DEMAND, PricingOption::SAVINGS_PLAN_1YR};
  pricing.negotiated_discount = 0.15;
  const auto q = quote_prices(catalog(), "p5.48xlarge", pricing);
  REQUIRE(q.size() == 2);
  // 55.04 $/h x (1 - 0.15) = 46.784 $/h, marked as assumed; the Savings Plan rate is untouched.
  CHECK(q[0].per_hour == Approx(46.784));
  CHECK(q[0].assumed);
  CHECK_THAT(q[0].assumption, Catch::Contains("15% negotiated discount") && Catch::Contains("55.04"));
  CHECK(q[1].per_hour == Approx(34.68));
  CHECK_FALSE(q[1].assumed);
}

TEST_CASE("deadlines at a confidence: the band read as +-1 standard deviation", "[unit][plan]") {
  // Standard normal quantiles: z_0.5 = 0, z_0.9 = 1.281552, z_0.975 = 1.959964, z_0.1 = -1.281552.
  CHECK(normal_quantile(0.5) == Approx(0).margin(1e-12));
  CHECK(normal_quantile(0.9) == Approx(1.2815516));
  CHECK(normal_quantile(0.975) == Approx(1.9599640));
  CHECK(normal_quantile(0.1) == Approx(-1.2815516));
  // 100 s with a band of 80 to 130 s: 100 + 1.281552 x 30 = 138.4465 s at 90%, and
  // 100 - 1.281552 x 20 = 74.369 s at 10%.
  CHECK(compute_at_confidence(100, 80, 130, 0.9) == Approx(138.44655));
  CHECK(compute_at_confidence(100, 80, 130, 0.1) == Approx(74.36897));

  // The 5 s step (4.5 to 5.5 s) on 64 p5 nodes, 238,419 steps: 1,192,095 s = 13.80 days at the point.
  // At 90%: 5 + 1.281552 x 0.5 = 5.640776 s, x 238,419 = 1,344,868.1 s = 15.566 days.
  auto plan = [](const std::string& job) {
    return R"({"schema_version": 1, "name": "conf", "model": {"preset": "llama3-8b"},
      "training": {"seq_len": 8192, "global_batch_size": 1024, "micro_batch_size": 1,
                   "activation_checkpointing": "full"},
      "parallelism": {"framework": "pytorch", "zero_stage": 3},
      "cluster": {"system": "p5.48xlarge", "nodes": 64},
      "sensitivity": {"enabled": false}, "goodput": {"enabled": false},
      "job": {"tokens": 2e12, "deadline": "15 days")" +
           job + "}}";
  };
  const auto step = testing::constant_step(5.0, 4.5, 5.5);
  const PlanResult point = run_plan(parse(plan("")), catalog(), step);
  REQUIRE(point.candidates[0].status == CandidateStatus::FEASIBLE);
  CHECK(point.candidates[0].wall_q_s == Approx(1'192'095.0));
  const PlanResult at90 = run_plan(parse(plan(R"(, "confidence": 0.9)")), catalog(), step);
  const PlanCandidate& c = at90.candidates[0];
  CHECK(c.wall.nominal_s == Approx(1'192'095.0));
  CHECK(c.wall_q_s == Approx(1'344'868.1));
  // 15.566 days > 15: late at 90% though on time at the point estimate.
  CHECK(c.status == CandidateStatus::MISSES_DEADLINE);
  CHECK_THAT(c.reason, Catch::Contains("takes 15.6 days at best at 90% confidence, past the deadline of 15 days"));
  // On-demand at 90%: 64 x 55.04 $/h x 1,344,868.1 s / 3600 = $1,315,938.5.
  REQUIRE(c.costs.size() == 1);
  CHECK(c.costs[0].usd_q == Approx(1'315'938.5).epsilon(1e-6));
  CHECK(c.costs[0].usd == Approx(1'166'451.712));
  // The near miss is judged at 90% too: 0.566 days late.
  REQUIRE(at90.near_misses.size() == 1);
  CHECK(at90.near_misses[0].wall_s == Approx(1'344'868.1));
  // A confidence of 1 or more is an error naming the key.
  try {
    (void)parse(plan(R"(, "confidence": 1)"));
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("/job/confidence") && Catch::Contains("below 1"));
  }
}

TEST_CASE("checkpoints: size from the memory model's bytes per element, storage bandwidth, interval", "[unit][plan]") {
  const auto model = builtin_model_preset("llama3-8b");
  TrainingSpec t;
  ParallelismSpec p;
  p.framework = Framework::MEGATRON;
  // Llama-3-8B has 8,030,261,248 parameters; bf16 weights 2 B + Adam moments 8 B + fp32 master 4 B
  // = 14 B each: 112,423,657,472 B.
  CHECK(checkpoint_bytes(model, t, p) == Approx(112'423'657'472.0));
  // PyTorch AMP keeps fp32 parameters (4 B) and so no separate master copy: weights 4 B + Adam
  // moments 8 B = 12 B each: 96,363,134,976 B.
  p.framework = Framework::PYTORCH;
  CHECK(checkpoint_bytes(model, t, p) == Approx(8'030'261'248.0 * 12));

  // FSx for Lustre, 64 nodes: min(64 x 6 GB/s, 12 GB/s aggregate) = 12 GB/s;
  // 112,423,657,472 B / 12e9 B/s = 9.3686 s.
  const auto& fsx = catalog().storage("fsx-lustre-12tib");
  const CheckpointCost c = checkpoint_cost(112'423'657'472.0, fsx, 64);
  CHECK(c.aggregate_limited);
  CHECK(c.write_bandwidth == Approx(12e9));
  CHECK(c.write_s == Approx(9.368638));
  // S3, 64 nodes x 5 GB/s = 320 GB/s, above the 29.36 GB/s of one prefix (3,500 PUT/s x 8 MiB):
  // 112,423,657,472 B / 29.36e9 B/s = 3.8291 s.
  const CheckpointCost s3 = checkpoint_cost(112'423'657'472.0, catalog().storage("s3"), 64);
  CHECK(s3.aggregate_limited);
  CHECK(s3.write_s == Approx(3.829144));
  // The plan's overrides replace the catalog's: 64 x 2 GB/s = 128 GB/s under a 100 GB/s limit:
  // 112,423,657,472 / 100e9 = 1.1242 s.
  CheckpointSpec fast;
  fast.write_bandwidth_per_node = 2e9;
  fast.aggregate_bandwidth = 100e9;
  CHECK(checkpoint_cost(112'423'657'472.0, catalog().storage("s3"), 64, &fast).write_s == Approx(1.124237));

  // Every 2 h of training over 1,192,095 s: floor(165.57) = 165 checkpoints x 9.3686 s = 1,545.8 s.
  CheckpointCost timed = c;
  timed.interval_s = 7200;
  const WallTime w = nominal_wall(1'192'095.0, timed);
  CHECK(w.checkpoints == 165);
  CHECK(w.nominal_s == Approx(1'193'640.825));

  // Young/Daly: sqrt(2 C / lambda), lambda = 0.01 per node-day x 64 nodes / 86400 s
  // = 7.407e-6 /s: sqrt(2 x 9.3686 / 7.407e-6) = 1,590.45 s.
  CheckpointSpec spec;
  spec.interval = CheckpointSpec::Interval::AUTO;
  CHECK(resolve_interval(spec, 5.0, c.write_s, 0.01 * 64 / 86400) == Approx(1590.45).epsilon(1e-5));
  spec.interval = CheckpointSpec::Interval::STEPS;
  spec.interval_steps = 500;
  // 500 steps x 5 s = 2,500 s.
  CHECK(resolve_interval(spec, 5.0, c.write_s, 0) == 2500);
}

TEST_CASE("failures: the Llama 3 rate, a Young/Daly interval, lost work and storage in time and cost",
          "[unit][plan]") {
  // The defaults: checkpoints on s3 every Young/Daly interval, failures at the catalog's rate.
  const PlanSpec plan = parse(p5_plan("", ""));
  REQUIRE(plan.goodput.enabled);
  REQUIRE(plan.checkpoint);
  CHECK_FALSE(plan.checkpoint->stated);
  const PlanResult r = run_plan(plan, catalog(), testing::constant_step(5.0, 5.0, 5.0));
  const PlanCandidate& c = r.candidates[0];
  REQUIRE(c.status == CandidateStatus::FEASIBLE);
  // Checkpoint: PyTorch keeps fp32 weights, 12 B x 8,030,261,248 = 96,363,134,976 B; 29.36 GB/s
  // (one S3 prefix) both ways: C = C_r = 3.28212 s.
  CHECK(c.checkpoint.write_s == Approx(3.282123));
  // Failures: 1.973e-5 per GPU-hour (419 in 54 days on 16,384 H100s) x 512 GPUs / 3600 s
  // = 2.80604e-6 /s, a mean time between failures of 356,374 s (99.0 h).
  CHECK(c.failures.rate_per_s == Approx(2.8060444e-6));
  CHECK(c.failures.restart_s == 600);
  // Young/Daly: sqrt(2 x 3.28212 / 2.80604e-6) = 1,529.48 s; floor(1,192,095 / 1,529.48) = 779
  // checkpoints: T_0 = 1,192,095 + 779 x 3.28212 = 1,194,651.77 s.
  CHECK(c.checkpoint.interval_s == Approx(1529.4848));
  CHECK(c.wall.checkpoints == 779);
  CHECK(c.wall.failure_free_s == Approx(1'194'651.774));
  // Each failure loses 600 + 3.28212 + (1,529.48 + 3.28212) / 2 = 1,369.67 s; lambda L = 0.0038433;
  // T = 1,194,651.77 / (1 - 0.0038433) = 1,199,260.94 s; lambda T = 3.3652 failures, goodput
  // 1,192,095 / 1,199,260.94 = 99.40%.
  CHECK(c.wall.nominal_s == Approx(1'199'260.944));
  CHECK(c.wall.interruptions == Approx(3.36518));
  CHECK(c.wall.lost_s == Approx(4'609.17).epsilon(1e-5));
  // Storage: 2 checkpoints kept + the data set at 4 B per token (8e12 B) = 8,192,726,269,952 B
  // = 8,192.73 GB x 0.023 USD per GB-month x 1,199,260.94 s / (730 h x 3600) = $85.99.
  CHECK(c.stored_bytes == Approx(8'192'726'269'952.0));
  const OptionCost& od = option(c, PricingOption::ON_DEMAND);
  CHECK(od.storage_usd == Approx(85.98934));
  // On-demand: 64 x 55.04 $/h x 1,199,260.94 s / 3600 = $1,173,463.51, + $85.99 storage.
  CHECK(od.usd == Approx(1'173'549.498));
  CHECK(od.expected_interruptions == Approx(3.36518));
  // The plan overrides the rate and the restart: 0.01 per node-day on 8-GPU nodes is
  // 0.01 / (24 x 8) = 5.2083e-5 per GPU-hour, x 512 / 3600 = 7.4074e-6 /s.
  const PlanSpec own = parse(p5_plan("", R"(, "goodput": {"interruptions_per_node_day": 0.01, "restart_time": "5 min"})"));
  const PlanResult r2 = run_plan(own, catalog(), testing::constant_step(5.0, 5.0, 5.0));
  CHECK(r2.candidates[0].failures.rate_per_s == Approx(7.4074074e-6));
  CHECK(r2.candidates[0].failures.restart_s == 300);
}

TEST_CASE("spot: expected interruptions, rework and the restart cost", "[unit][plan]") {
  PricingSpec pricing;
  pricing.options = {PricingOption::SPOT};
  pricing.spot =
      SpotSpec{.discount = std::nullopt, .price_per_hour = 20.0, .interruptions_per_node_day = 0.01, .restart_s = 900};
  PriceQuote q;
  q.option = PricingOption::SPOT;
  q.available = true;
  q.per_hour = 20;
  q.assumed = true;
  CostInputs in;
  in.compute_s = in.compute_low_s = in.compute_high_s = 1'192'095.0;
  in.nodes = 64;
  in.checkpoint = checkpoint_cost(112'423'657'472.0, catalog().storage("fsx-lustre-12tib"), 64);
  in.checkpoint.interval_s = 7200;
  in.pricing = &pricing;
  const OptionCost o = cost_option(q, in);
  REQUIRE(o.available);
  // lambda = 0.01 x 64 / 86400 = 7.407e-6 /s. Each interruption loses R + C_r + (I + C) / 2
  // = 900 + 9.3686 + (7200 + 9.3686) / 2 = 4,514.05 s; lambda L = 0.033437.
  // T_0 = 1,193,640.8 s (165 checkpoints); T = T_0 / (1 - 0.033437) = 1,234,933.8 s.
  CHECK(o.wall_s == Approx(1'234'933.84));
  // Expected interruptions lambda T = 9.148; cost 64 x 20 $/h x T / 3600 = $439,087.59.
  CHECK(o.expected_interruptions == Approx(9.14766));
  CHECK(o.usd == Approx(439'087.587));

  // At 2 interruptions per node-day, lambda L = 64 x 2 / 86400 x 4,514 = 6.7 >= 1: never finishes.
  pricing.spot->interruptions_per_node_day = 2;
  const OptionCost never = cost_option(q, in);
  CHECK_FALSE(never.available);
  CHECK_THAT(never.reason, Catch::Contains("outpace progress"));
}

TEST_CASE("Capacity Blocks split past 64 instances or 182 days; Savings Plans dedicated pay the term", "[unit][plan]") {
  PricingSpec pricing;
  pricing.options = {PricingOption::CAPACITY_BLOCK, PricingOption::SAVINGS_PLAN_1YR};
  PriceQuote cb;
  cb.option = PricingOption::CAPACITY_BLOCK;
  cb.available = true;
  cb.per_hour = 41.53;
  CostInputs in;
  in.pricing = &pricing;
  in.nodes = 130;
  // 200 days of compute: 200 whole days; 130 instances need ceil(130 / 64) = 3 blocks side by side,
  // 200 days need ceil(200 / 182) = 2 in a row: 6 blocks, flagged. The second block holds the
  // last 18 days, past 14 so booked in whole weeks: 21 days; 182 + 21 = 203 days booked.
  in.compute_s = in.compute_low_s = in.compute_high_s = 200 * 86400.0;
  OptionCost o = cost_option(cb, in);
  REQUIRE(o.available);
  CHECK(o.blocks == 6);
  CHECK(o.billed_days == 203);
  // 130 x 24 h x 203 days x 41.53 $/h = $26,303,440.80.
  CHECK(o.usd == Approx(26'303'440.8));
  CHECK_THAT(o.notes.front(), Catch::Contains("3 blocks side by side") && Catch::Contains("2 blocks in a row") &&
                                  Catch::Contains("8 weeks before it starts"));
  // 182 days exactly: one block in a row, no rounding: 130 x 24 x 182 x 41.53 = $23,582,395.20.
  in.compute_s = in.compute_low_s = in.compute_high_s = 182 * 86400.0;
  o = cost_option(cb, in);
  CHECK(o.blocks == 3);
  CHECK(o.billed_days == 182);
  CHECK(o.usd == Approx(23'582'395.2));
  // 257 instances: more than the 256 an account may hold across Capacity Blocks.
  in.nodes = 257;
  o = cost_option(cb, in);
  CHECK_FALSE(o.available);
  CHECK_THAT(o.reason, Catch::Contains("257 instances exceed the 256"));
  in.nodes = 130;
  in.compute_s = in.compute_low_s = in.compute_high_s = 200 * 86400.0;
  pricing.capacity_block_allow_split = false;
  o = cost_option(cb, in);
  CHECK_FALSE(o.available);
  CHECK_THAT(o.reason, Catch::Contains("does not allow splitting"));

  // A Savings Plan dedicated to the job: 1 year of 8,760 h for each of 130 instances at 34.68 $/h
  // = $39,493,584, whatever the job's length below a year.
  PriceQuote sp;
  sp.option = PricingOption::SAVINGS_PLAN_1YR;
  sp.available = true;
  sp.per_hour = 34.68;
  CHECK(cost_option(sp, in).usd == Approx(130 * 8760 * 34.68));
}

TEST_CASE("prices come from the catalog with date and region; spot from the plan is marked assumed", "[unit][plan]") {
  PricingSpec pricing;
  pricing.options = {PricingOption::ON_DEMAND, PricingOption::CAPACITY_BLOCK, PricingOption::SPOT};
  pricing.spot =
      SpotSpec{.discount = 0.6, .price_per_hour = std::nullopt, .interruptions_per_node_day = 0.01, .restart_s = 600};
  const auto q = quote_prices(catalog(), "p4d.24xlarge", pricing);
  REQUIRE(q.size() == 3);
  CHECK(q[0].available);
  CHECK(q[0].per_hour == Approx(21.96));
  CHECK(q[0].source == "aws-price-list-2026-09-25");
  // The booking rules come from the catalog with their source (and equal the defaults).
  CHECK(q[1].block_rules.source == "aws-capacity-blocks-guide");
  CHECK(q[1].block_rules.max_days == 182);
  CHECK(q[1].block_rules.daily_up_to_days == 14);
  CHECK(q[1].block_rules.max_instances_per_block == 64);
  CHECK(q[1].block_rules.max_instances_across_blocks == 256);
  CHECK(q[1].block_rules.max_lead_days == 56);
  // The catalog lists no Capacity Block price for p4d.
  CHECK_FALSE(q[1].available);
  CHECK_THAT(q[1].unavailable_reason, Catch::Contains("Capacity Blocks") && Catch::Contains("p4d.24xlarge"));
  // 60% off 21.96 $/h = 8.784 $/h, the plan's assumption.
  CHECK(q[2].available);
  CHECK(q[2].assumed);
  CHECK(q[2].per_hour == Approx(8.784));
  CHECK_THAT(q[2].assumption, Catch::Contains("60% off on-demand"));
  // A bare system has no price at all.
  CHECK_FALSE(quote_prices(catalog(), "hgx-h100", pricing)[0].available);
}
