#include "models/plan_runner.hpp"

#include <catch2/catch.hpp>
#include <cmath>

#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"
#include "models/plan_sensitivity.hpp"
#include "reports/plan_report.hpp"
#include "reports/report_format.hpp"
#include "support/temp_dir.hpp"
#include "unit/plan_fakes.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = hardware::Catalog::load();
  return c;
}

// Llama-3-8B under FSDP on 1, 2, 4 or 8 p5 nodes; 1e9 tokens of 64 x 4096-token batches:
// 1e9 / 262,144 = 3,814.7 -> 3,815 steps.
// `job` continues the job section, `extra` adds top-level sections. Failures are left out (the
// figures below are of the step time alone; plan_costs_test.cpp covers goodput).
PlanSpec nodes_plan(const std::string& job, const std::string& extra = "") {
  const std::string text = R"({"schema_version": 1, "name": "nodes", "model": {"preset": "llama3-8b"},
      "training": {"seq_len": 4096, "global_batch_size": 64, "micro_batch_size": 1,
                   "activation_checkpointing": "full"},
      "parallelism": {"framework": "pytorch", "zero_stage": 3},
      "cluster": {"system": "p5.48xlarge", "nodes": [1, 2, 4, 8]},
      "goodput": {"enabled": false}, "job": {"tokens": 1e9)" +
                           job + "}" + extra + "}";
  return read_plan(parse_json_text(text, "plan.json"), ".");
}

std::size_t id_with_nodes(const PlanResult& r, int nodes) {
  for (const auto& c : r.space.candidates) {
    if (c.scenario.cluster.nodes == nodes) return c.index;
  }
  FAIL("no candidate");
  return 0;
}

const OptionCost& on_demand(const PlanCandidate& c) {
  for (const auto& o : c.costs) {
    if (o.option == PricingOption::ON_DEMAND) return o;
  }
  FAIL("no on-demand price");
  return c.costs.front();
}

}  // namespace

TEST_CASE("ranking by time and cost, the Pareto frontier, and the EVENT re-check rounds", "[unit][plan]") {
  const PlanSpec plan = nodes_plan("", R"(, "search": {"top_k": 1}, "sensitivity": {"enabled": false})");
  const PlanResult r = run_plan(plan, catalog(), testing::FakeStepModel{});
  REQUIRE(r.candidates.size() == 4);
  const std::size_t n1 = id_with_nodes(r, 1), n2 = id_with_nodes(r, 2), n4 = id_with_nodes(r, 4),
                    n8 = id_with_nodes(r, 8);
  // FAST step (fake): 320 s / GPUs + 0.5 s on more than one node: 40, 20.5, 10.5, 5.5 s. Node-seconds
  // per step (what every price multiplies): 40, 41, 42, 44: more nodes are faster and dearer.
  CHECK(r.candidates[n1].fast.step_time_s == Approx(40));
  CHECK(r.candidates[n8].fast.step_time_s == Approx(5.5));
  // Re-check rounds with top_k 1 (EVENT = 1.1 x FAST):
  //   1: best by time n8, by cost n1 -> EVENT: n8 6.05 s (48.4 node-s), n1 44 s (44 node-s);
  //      by cost n2 (41, FAST) now leads
  //   2: n2 -> 22.55 s (45.1); n4 (42, FAST) leads
  //   3: n4 -> 11.55 s (46.2); n1 (44) leads again: every best has been re-checked.
  CHECK(r.rechecked == std::vector<std::size_t>{n1, n2, n4, n8});
  CHECK(r.counts.rechecked == 4);
  CHECK(r.candidates[n8].estimate().fidelity == Fidelity::EVENT);
  CHECK(r.candidates[n8].estimate().step_time_s == Approx(6.05));
  // Time ranking: n8 (6.05 s) < n4 (11.55) < n2 (22.55) < n1 (44).
  CHECK(r.by_time == std::vector<std::size_t>{n8, n4, n2, n1});
  // Cost ranking (on-demand, the only option a plan without a list prices): node-seconds
  // 44 < 45.1 < 46.2 < 48.4.
  CHECK(r.by_cost == std::vector<std::size_t>{n1, n2, n4, n8});
  CHECK(r.best == n8);  // ranked by time (the default)
  // Every candidate is on the frontier: each faster one costs more.
  CHECK(r.frontier == std::vector<std::size_t>{n8, n4, n2, n1});
  // n8: 3,815 steps x 6.05 s = 23,080.75 s; 8 nodes x 55.04 $/h x 23,080.75 s / 3600 = $2,823.03.
  CHECK(r.candidates[n8].wall.nominal_s == Approx(23'080.75));
  REQUIRE(r.candidates[n8].costs.size() == 1);
  CHECK(on_demand(r.candidates[n8]).usd == Approx(2'823.032).epsilon(1e-5));
  CHECK(r.counts.evaluated == 4);
  CHECK(r.counts.feasible == 4);
}

TEST_CASE("deadline, budget and step-model failures make candidates infeasible, with reasons", "[unit][plan]") {
  SECTION("a deadline of 10 h") {
    // FAST x 3,815 steps: n8 5.5 s -> 20,982.5 s (EVENT 23,080.75 s) meets 36,000 s; n4 10.5 s ->
    // 40,057.5 s does not, nor do n2 and n1.
    const PlanResult r = run_plan(nodes_plan(R"(, "deadline": "10 h")"), catalog(), testing::FakeStepModel{});
    CHECK(r.counts.feasible == 1);
    CHECK(r.counts.misses_deadline == 3);
    const auto& c = r.candidates[id_with_nodes(r, 4)];
    CHECK(c.status == CandidateStatus::MISSES_DEADLINE);
    CHECK_THAT(c.reason, Catch::Contains("past the deadline of 0.417 days"));
  }
  SECTION("a budget of 2,400 USD on demand, no re-check") {
    // On-demand 55.04 $/h: node-seconds 3,815 x (40, 41, 42, 44) = 152,600, 156,415, 160,230,
    // 167,860 -> $2,333.08, $2,391.41, $2,449.74, $2,566.39.
    const PlanResult r = run_plan(
        nodes_plan(R"(, "budget": "2400 USD")", R"(, "pricing": {"options": ["on_demand"]}, "search": {"top_k": 0})"),
        catalog(), testing::FakeStepModel{});
    CHECK(r.counts.feasible == 2);
    CHECK(r.counts.over_budget == 2);
    CHECK(r.candidates[id_with_nodes(r, 2)].costs[0].usd == Approx(2'391.41).epsilon(1e-5));
    CHECK_THAT(r.candidates[id_with_nodes(r, 4)].reason, Catch::Contains("$2450") && Catch::Contains("$2400"));
  }
  SECTION("the step model rejects a layout") {
    testing::FakeStepModel fake;
    fake.fail_when = [](const Scenario& s) { return s.cluster.nodes == 2; };
    const PlanResult r = run_plan(nodes_plan(""), catalog(), fake);
    CHECK(r.counts.evaluation_failed == 1);
    CHECK(r.counts.evaluated == 4);
    CHECK_THAT(r.candidates[id_with_nodes(r, 2)].reason, Catch::Contains("unsupported layout"));
  }
}

TEST_CASE("no candidate feasible: the nearest misses, by how much and what would fix them", "[unit][plan]") {
  SECTION("a deadline of 5 h") {
    // FAST x 3,815 steps against 18,000 s (nothing feasible, so nothing is re-checked):
    //   n8 5.5 s -> 20,982.5 s, late 20,982.5 / 18,000 - 1 = 16.57%; n4 40,057.5 s (+122.5%);
    //   n2 78,207.5 s (+334.5%); n1 152,600 s (+747.8%).
    const PlanResult r = run_plan(nodes_plan(R"(, "deadline": "5 h")"), catalog(), testing::FakeStepModel{});
    CHECK(r.counts.feasible == 0);
    REQUIRE(r.near_misses.size() == 4);
    const NearMiss& m = r.near_misses.front();
    CHECK(m.id == id_with_nodes(r, 8));
    CHECK(r.near_misses[1].id == id_with_nodes(r, 4));
    CHECK(m.late == Approx(20'982.5 / 18'000 - 1));
    CHECK(m.over == 0);
    // 2,982.5 s = 0.0345 days late; a deadline of 20,982.5 s = 0.24285 days, rounded up to 0.243;
    // nodes ceil(8 x 1.1657) = 10, more than the plan's largest count, 8.
    CHECK_THAT(m.miss, Catch::Contains("0.0345 days past the deadline (+16.6%) on on-demand"));
    CHECK_THAT(m.fix, Catch::Contains("a deadline of at least 0.243 days") &&
                          Catch::Contains("about 10 nodes instead of 8") && Catch::Contains("at most 8"));
    REQUIRE_FALSE(r.notes.empty());
    CHECK_THAT(r.notes.front().text, Catch::StartsWith("No candidate meets the deadline (0.208 days). Nearest: "));
  }
  SECTION("a budget of 1,000 USD on demand") {
    // n1 costs 152,600 node-s x 55.04 $/h / 3600 = $2,333.08, 133.3% over; the others cost more.
    const PlanResult r = run_plan(nodes_plan(R"(, "budget": "1000 USD")", R"(, "search": {"top_k": 0})"), catalog(),
                                  testing::FakeStepModel{});
    REQUIRE_FALSE(r.near_misses.empty());
    const NearMiss& m = r.near_misses.front();
    CHECK(m.id == id_with_nodes(r, 1));
    CHECK(m.over == Approx(2'333.08 / 1000 - 1).epsilon(1e-5));
    // $1,333.08 over (+133%); a budget of at least $2,333.08 rounded up to 3 digits: $2.34k.
    CHECK_THAT(m.miss, Catch::Contains("$1.33k over the budget (+133%)"));
    CHECK(m.fix == "a budget of at least $2.34k");
  }
  SECTION("a deadline of 5 h and a budget of 1,000 USD: one fix for each") {
    // Shortfall max(late, over) on on-demand (node-seconds x 3,815 x 55.04 $/h / 3600):
    //   n4: late 40,057.5 / 18,000 - 1 = 1.2254, over $2,449.74 / 1,000 - 1 = 1.4497 -> 1.4497
    //   n8: late 0.1657, over 167,860 node-s -> $2,566.39 -> 1.5664
    //   n2: late 3.3449 (over 1.3914); n1: late 7.4778 (over 1.3331)
    const PlanResult r = run_plan(nodes_plan(R"(, "deadline": "5 h", "budget": "1000 USD")"), catalog(),
                                  testing::FakeStepModel{});
    REQUIRE(r.near_misses.size() == 4);
    CHECK(r.near_misses[0].id == id_with_nodes(r, 4));
    CHECK(r.near_misses[1].id == id_with_nodes(r, 8));
    CHECK(r.near_misses[0].shortfall == Approx(2'449.74 / 1000 - 1).epsilon(1e-5));
    // Time: 40,057.5 s = 0.46363 days -> 0.464; nodes ceil(4 x 2.2254) = 9. Money: $2,449.74 -> $2.45k.
    CHECK(r.near_misses[0].fix ==
          "a deadline of at least 0.464 days, or about 9 nodes instead of 4 if the step time fell as 1 / nodes "
          "(the plan tries at most 8); and a budget of at least $2.45k");
    CHECK_THAT(r.notes.front().text,
               Catch::StartsWith("No candidate meets the deadline (0.208 days) and the budget ($1k). Nearest: "));
  }
  SECTION("feasible plans list none") {
    CHECK(run_plan(nodes_plan(""), catalog(), testing::FakeStepModel{}).near_misses.empty());
  }
}

TEST_CASE("sensitivity of the best candidate: 2x network, NCCL settings, GEMM efficiency +-10%", "[unit][plan]") {
  testing::TempDir scratch;
  PlanRunOptions o;
  o.scratch_dir = scratch.path();
  const PlanResult r = run_plan(nodes_plan("", R"(, "search": {"top_k": 1})"), catalog(), testing::FakeStepModel{}, o);
  REQUIRE(r.best == id_with_nodes(r, 8));
  REQUIRE(r.sensitivity.size() == 5);
  // Best: 8 nodes, EVENT 1.1 x (320/64 = 5 s compute + 0.5 s comm) = 6.05 s, 3,815 steps.
  const auto& nic = r.sensitivity[0];
  CHECK(nic.applied);
  CHECK(nic.fidelity == Fidelity::EVENT);
  CHECK_THAT(nic.label, Catch::Contains("EFA bandwidth x2") && Catch::Contains("100 Gb/s -> 200 Gb/s"));
  // 2x NIC: comm 0.5 x 12.5 / 25 = 0.25 s: 1.1 x 5.25 = 5.775 s, -0.275 s per step;
  // x 3,815 steps = -1,049.125 s = -0.012143 days.
  CHECK(nic.delta_step_s == Approx(-0.275));
  CHECK(nic.delta_days == Approx(-1049.125 / 86400));
  // Dollars under the best's cheapest option (on-demand): 8 x 55.04 $/h x -1,049.125 s / 3600.
  CHECK(nic.delta_usd == Approx(8 * 55.04 * -1049.125 / 3600));
  // NCCL_ALGO=Ring changes nothing in the fake; Tree cuts comm to 0.4 s: 1.1 x 5.4 = 5.94 s.
  CHECK(r.sensitivity[1].label == "NCCL_ALGO=Ring");
  CHECK(r.sensitivity[1].delta_step_s == Approx(0).margin(1e-12));
  CHECK(r.sensitivity[2].delta_step_s == Approx(-0.11));
  // GEMM +10%: the compute model's bf16 default 0.75 -> 0.825, compute 5 x 0.75 / 0.825 = 4.545 s:
  // 1.1 x 5.045 = 5.55 s (-0.5 s). -10%: 0.675, compute 5.556 s: 1.1 x 6.056 = 6.661 s (+0.611 s).
  CHECK_THAT(r.sensitivity[3].label, Catch::Contains("+10%") && Catch::Contains("0.825"));
  CHECK(r.sensitivity[3].delta_step_s == Approx(-0.5));
  CHECK(r.sensitivity[4].delta_step_s == Approx(1.1 * (5 * 0.75 / 0.675 + 0.5) - 6.05));
  // The derived profile is a valid profile file the scenario names.
  const auto derived = hardware::CalibrationProfile::load((scratch.path() / "sensitivity-gemm-up.json").string());
  CHECK(derived.find("compute.gemm.bf16.max_efficiency")->value == Approx(0.825));

  // Without a scratch directory the GEMM rows are skipped, with the reason.
  const PlanResult q = run_plan(nodes_plan("", R"(, "search": {"top_k": 0})"), catalog(), testing::FakeStepModel{});
  CHECK_FALSE(q.sensitivity[3].applied);
  CHECK_THAT(q.sensitivity[3].skipped_reason, Catch::Contains("scratch directory"));
  CHECK(q.sensitivity[0].fidelity == Fidelity::FAST);
}

TEST_CASE("plan output is byte-identical whatever the thread count", "[unit][plan]") {
  const std::string text = R"({"schema_version": 1, "name": "determinism", "model": {"preset": "llama3-8b"},
      "training": {"seq_len": 4096, "global_batch_size": 64},
      "parallelism": {"framework": "megatron", "tensor": "auto", "pipeline": "auto"},
      "cluster": {"system": ["p4de.24xlarge", "p5.48xlarge"], "nodes": [1, 2, 4]},
      "nccl": {"env": {"NCCL_ALGO": ["Ring", "Tree"]}},
      "job": {"tokens": 1e10, "deadline": "20 days"},
      "pricing": {"spot": {"discount": 0.6, "interruptions_per_node_day": 0.05, "restart_time": "10 min"}},
      "checkpoint": {"storage": "fsx-lustre-12tib", "interval": "auto"}})";
  const PlanSpec plan = read_plan(parse_json_text(text, "determinism.json"), ".");
  auto render = [&](int threads) {
    testing::TempDir scratch;
    PlanRunOptions o;
    o.threads = threads;
    o.scratch_dir = scratch.path();
    const PlanResult r = run_plan(plan, catalog(), testing::FakeStepModel{}, o);
    const auto report = reports::build_plan_report(r, catalog(), {.generated_by = "clustersim test", .created = "", .inputs = {}});
    return std::make_pair(reports::render_plan_result(r, report),
                          reports::render_report(report, reports::ReportFormat::HTML));
  };
  const auto one = render(1);
  const auto four = render(4);
  CHECK(one.first.size() > 100000);
  CHECK(one.first == four.first);
  CHECK(one.second == four.second);
}
