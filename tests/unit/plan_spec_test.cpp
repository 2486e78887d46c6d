#include "models/plan_spec.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <sstream>

#include "cli/app.hpp"
#include "hardware/errors.hpp"
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

PlanSpec parse(const std::string& text) { return read_plan(parse_json_text(text, "plan.json"), "."); }

// A small valid plan; `cluster`, `training` and `extra` replace or add parts.
std::string plan_text(const std::string& cluster = R"({"system": "p5.48xlarge", "nodes": 2})",
                      const std::string& extra = "",
                      const std::string& training = R"({"seq_len": 4096, "global_batch_size": 64})") {
  return R"({"schema_version": 1, "model": {"preset": "llama3-8b"}, "training": )" + training +
         R"(, "parallelism": {"framework": "megatron", "tensor": [1, 2, 4, 8]}, "cluster": )" + cluster +
         R"(, "job": {"tokens": 1e9})" + extra + "}";
}

std::vector<std::int64_t> ints(const PlanChoice* c) {
  std::vector<std::int64_t> out;
  for (const auto& v : c->values) out.push_back(v.get<std::int64_t>());
  return out;
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("plan choices: one value, a list, a geometric or arithmetic range, auto", "[unit][plan]") {
  const PlanSpec p = parse(plan_text(R"({"system": ["p4d.24xlarge", "p5.48xlarge"],
                                         "nodes": {"min": 8, "max": 256, "scale": "x2"}})",
                                     "", R"({"seq_len": {"min": 2048, "max": 8192, "scale": "+2048"},
                                             "global_batch_size": 512, "micro_batch_size": "auto"})"));
  REQUIRE(p.choice("/cluster/system") != nullptr);
  CHECK(p.choice("/cluster/system")->values.size() == 2);
  // 8 x 2^k up to 256: 8, 16, 32, 64, 128, 256.
  CHECK(ints(p.choice("/cluster/nodes")) == std::vector<std::int64_t>{8, 16, 32, 64, 128, 256});
  // 2048 + 2048 k up to 8192: 2048, 4096, 6144, 8192.
  CHECK(ints(p.choice("/training/seq_len")) == std::vector<std::int64_t>{2048, 4096, 6144, 8192});
  CHECK(ints(p.choice("/training/global_batch_size")) == std::vector<std::int64_t>{512});
  CHECK(ints(p.choice("/parallelism/tensor")) == std::vector<std::int64_t>{1, 2, 4, 8});
  CHECK(p.choice("/training/micro_batch_size")->is_auto);
  // Plans enumerate recomputation unless told otherwise.
  CHECK(p.choice("/training/activation_checkpointing")->is_auto);
  // The choice fields are taken out of the scenario template.
  CHECK_FALSE(p.scenario_template["cluster"].contains("nodes"));
  CHECK(p.job.tokens_for(4096) == 1e9);
  // Defaults: on-demand only (no option is priced that the plan does not list), a Savings Plan
  // paid for its whole term; ranked by time, top 3 re-checked.
  CHECK(p.pricing.options == std::vector<PricingOption>{PricingOption::ON_DEMAND});
  CHECK_FALSE(p.pricing.options_listed);
  CHECK(p.pricing.commitment == SavingsPlanCommitment::DEDICATED);
  CHECK_FALSE(p.pricing.commitment_stated);
  CHECK(p.search.rank_by == RankBy::TIME);
  CHECK(p.search.top_k == 3);
}

TEST_CASE("\"parallelism\": \"auto\" enumerates every layout field under Megatron", "[unit][plan]") {
  std::string text = plan_text();
  const std::string layout = R"({"framework": "megatron", "tensor": [1, 2, 4, 8]})";
  text.replace(text.find(layout), layout.size(), R"("auto")");
  const PlanSpec p = parse(text);
  CHECK(p.parallelism_auto);
  CHECK(p.choice("/parallelism/framework")->values.front() == "megatron");
  for (const char* ptr : {"/parallelism/data", "/parallelism/tensor", "/parallelism/pipeline", "/parallelism/context",
                          "/parallelism/expert", "/parallelism/zero_stage", "/parallelism/virtual_stages"}) {
    INFO(ptr);
    REQUIRE(p.choice(ptr) != nullptr);
    CHECK(p.choice(ptr)->is_auto);
  }
}

TEST_CASE("the job: tokens, epochs over a data set, deadline and budget", "[unit][plan]") {
  const PlanSpec q = parse(R"({"schema_version": 1, "model": {"preset": "llama3-8b"},
      "training": {"seq_len": 4096, "global_batch_size": 64}, "parallelism": {},
      "cluster": {"system": "p5.48xlarge", "nodes": 2},
      "job": {"epochs": 3, "dataset_samples": 1000, "deadline": "2 weeks", "budget": "2.5e4 USD"}})");
  // 3 epochs x 1,000 samples x 4,096 tokens = 12,288,000 tokens.
  CHECK(q.job.tokens_for(4096) == 12'288'000);
  // 2 weeks = 14 x 86,400 s = 1,209,600 s.
  CHECK(*q.job.deadline_s == 1'209'600);
  CHECK(*q.job.budget_usd == 25'000);
  CHECK(parse_plan_duration("15 min") == 900);
  CHECK(parse_plan_duration("1.5 days") == 129'600);
  CHECK(parse_usd("1e6 USD") == 1e6);
}

TEST_CASE("pricing: listed options, a commitment's share and a negotiated discount", "[unit][plan]") {
  const std::string nodes2 = "{\"system\": \"p5.48xlarge\", \"nodes\": 2}";
  const PlanSpec shared = parse(plan_text(nodes2, R"(, "pricing": {"options": ["savings_plan_3yr", "on_demand"],
      "negotiated_discount": 0.12, "savings_plan": {"share": 0.4, "after_job": "the serving fleet"}})"));
  CHECK(shared.pricing.options_listed);
  CHECK(shared.pricing.options ==
        std::vector<PricingOption>{PricingOption::SAVINGS_PLAN_3YR, PricingOption::ON_DEMAND});
  CHECK(shared.pricing.commitment == SavingsPlanCommitment::SHARED);
  CHECK(shared.pricing.commitment_share == 0.4);
  CHECK(shared.pricing.after_job == "the serving fleet");
  CHECK(*shared.pricing.negotiated_discount == 0.12);
  // Existing plans keep working: "utilized" is the plan's statement that other work uses the rest.
  const PlanSpec used = parse(plan_text(nodes2, R"(, "pricing": {"savings_plan": {"commitment": "utilized"}})"));
  CHECK(used.pricing.commitment == SavingsPlanCommitment::UTILIZED);
  CHECK(used.pricing.commitment_stated);
}

TEST_CASE("plan errors name the file, the key and what was expected", "[unit][plan]") {
  // Unknown top-level key, with a suggestion among plan and scenario keys.
  CHECK_THAT(error_of(plan_text("{\"system\": \"p5.48xlarge\", \"nodes\": 2}", R"(, "pricng": {})")),
             Catch::Contains("plan.json: /pricng: unknown key 'pricng'; did you mean 'pricing'?"));
  // Unknown key inside a plan section.
  CHECK_THAT(error_of(plan_text("{\"system\": \"p5.48xlarge\", \"nodes\": 2}", R"(, "search": {"top": 2})")),
             Catch::Contains("plan.json: /search/top: unknown key 'top'; did you mean 'top_k'?"));
  // A range with a bad scale.
  CHECK_THAT(error_of(plan_text(R"({"system": "p5.48xlarge", "nodes": {"min": 1, "max": 8, "scale": "*2"}})")),
             Catch::Contains("/cluster/nodes/scale") && Catch::Contains("x<k>"));
  // A range upside down.
  CHECK_THAT(error_of(plan_text(R"({"system": "p5.48xlarge", "nodes": {"min": 8, "max": 1}})")),
             Catch::Contains("/cluster/nodes/max") && Catch::Contains(">= min"));
  // A repeated value in a list.
  CHECK_THAT(error_of(plan_text(R"({"system": "p5.48xlarge", "nodes": [2, 4, 2]})")),
             Catch::Contains("/cluster/nodes/2") && Catch::Contains("not already listed"));
  // A wrong type in a list, and "auto" where it is not offered.
  CHECK_THAT(error_of(plan_text(R"({"system": "p5.48xlarge", "nodes": [2, "four"]})")),
             Catch::Contains("/cluster/nodes/1: expected an integer"));
  CHECK_THAT(error_of(plan_text(R"({"system": "p5.48xlarge", "nodes": "auto"})")),
             Catch::Contains("/cluster/nodes") && Catch::Contains("a range"));
  // A choice outside the allowed values suggests the nearest.
  CHECK_THAT(error_of(plan_text("{\"system\": \"p5.48xlarge\", \"nodes\": 2}", "",
                                R"({"seq_len": 4096, "global_batch_size": 64, "activation_checkpointing": ["ful"]})")),
             Catch::Contains("/training/activation_checkpointing/0") && Catch::Contains("did you mean 'full'?"));
  // Spot needs its assumptions; without a checkpoint section the defaults apply. "auto" intervals
  // need an interruption rate: failures (goodput) or spot.
  CHECK_THAT(
      error_of(plan_text("{\"system\": \"p5.48xlarge\", \"nodes\": 2}", R"(, "pricing": {"options": ["spot"]})")),
      Catch::Contains("/pricing") && Catch::Contains("needs a \"spot\" section"));
  const PlanSpec spot = parse(plan_text("{\"system\": \"p5.48xlarge\", \"nodes\": 2}",
                                        R"(, "pricing": {"spot": {"discount": 0.6, "interruptions_per_node_day": 0.1,
                                                                  "restart_time": "10 min"}},
                                             "goodput": {"enabled": false})"));
  REQUIRE(spot.checkpoint);
  CHECK(spot.checkpoint->storage == "s3");
  CHECK(spot.checkpoint->interval == CheckpointSpec::Interval::AUTO);
  CHECK_FALSE(spot.checkpoint->stated);
  CHECK_THAT(error_of(plan_text("{\"system\": \"p5.48xlarge\", \"nodes\": 2}",
                                R"(, "checkpoint": {"storage": "s3", "interval": "auto"}, "goodput": {"enabled": false})")),
             Catch::Contains("/checkpoint/interval") && Catch::Contains("spot"));
  CHECK(!parse(plan_text("{\"system\": \"p5.48xlarge\", \"nodes\": 2}", R"(, "goodput": {"enabled": false})"))
             .checkpoint);
  // Goodput and storage overrides: units are checked, both rates at once is an error.
  CHECK_THAT(error_of(plan_text("{\"system\": \"p5.48xlarge\", \"nodes\": 2}",
                                R"(, "goodput": {"interruptions_per_gpu_hour": 1e-5, "interruptions_per_node_day": 0.01})")),
             Catch::Contains("/goodput/interruptions_per_node_day") && Catch::Contains("not both"));
  CHECK_THAT(error_of(plan_text("{\"system\": \"p5.48xlarge\", \"nodes\": 2}",
                                R"(, "goodput": {"restart_time": "ten minutes"})")),
             Catch::Contains("/goodput/restart_time") && Catch::Contains("\"15 min\""));
  CHECK_THAT(error_of(plan_text("{\"system\": \"p5.48xlarge\", \"nodes\": 2}",
                                R"(, "checkpoint": {"price": "0.023 USD/GB"})")),
             Catch::Contains("/checkpoint/price") && Catch::Contains("'0.023 USD/GB-month'"));
  CHECK_THAT(error_of(plan_text("{\"system\": \"p5.48xlarge\", \"nodes\": 2}",
                                R"(, "checkpoint": {"aggregate_bandwidth": "100"})")),
             Catch::Contains("/checkpoint/aggregate_bandwidth"));
  CHECK_THAT(error_of(plan_text("{\"system\": \"p5.48xlarge\", \"nodes\": 2}", R"(, "goodput": {"enable": false})")),
             Catch::Contains("/goodput") && Catch::Contains("did you mean 'enabled'?"));
  CHECK_THAT(error_of(plan_text("{\"system\": \"p5.48xlarge\", \"nodes\": 2}",
                                R"(, "checkpoint": {"storage": "s3", "interval": "2 hours"})")),
             Catch::Contains("/checkpoint/interval") && Catch::Contains("\"30 days\""));
  CHECK_THAT(error_of(plan_text("{\"system\": \"p5.48xlarge\", \"nodes\": 2}",
                                R"(, "pricing": {"spot": {"discount": 1.5, "interruptions_per_node_day": 0.1,
                                                          "restart_time": "10 min"}})")),
             Catch::Contains("/pricing/spot/discount"));
  // A Savings Plan's share goes with "shared" (or alone), "shared" needs it, and it is in (0, 1].
  const std::string nodes2 = "{\"system\": \"p5.48xlarge\", \"nodes\": 2}";
  CHECK_THAT(error_of(plan_text(nodes2, R"(, "pricing": {"savings_plan": {"commitment": "dedicated", "share": 0.5}})")),
             Catch::Contains("/pricing/savings_plan/share") && Catch::Contains("\"shared\""));
  CHECK_THAT(error_of(plan_text(nodes2, R"(, "pricing": {"savings_plan": {"commitment": "shared"}})")),
             Catch::Contains("/pricing/savings_plan") && Catch::Contains("needs \"share\""));
  CHECK_THAT(error_of(plan_text(nodes2, R"(, "pricing": {"savings_plan": {"share": 1.5}})")),
             Catch::Contains("/pricing/savings_plan/share"));
  CHECK_THAT(error_of(plan_text(nodes2, R"(, "pricing": {"negotiated_discount": 1})")),
             Catch::Contains("/pricing/negotiated_discount") && Catch::Contains("below 1"));
  // No tokens anywhere.
  CHECK_THAT(error_of(R"({"schema_version": 1, "model": {"preset": "llama3-8b"},
      "training": {"seq_len": 4096, "global_batch_size": 64}, "parallelism": {},
      "cluster": {"system": "p5.48xlarge", "nodes": 2}})"),
             Catch::Contains("/job") && Catch::Contains("tokens to train"));
}

TEST_CASE("clustersim plan: bad plans exit 2 with file, key and expectation on stderr", "[unit][plan][cli]") {
  testing::TempDir dir;
  auto run = [](const std::vector<std::string>& args) {
    auto r = testing::run_cli(args);
    return std::make_tuple(r.rc, std::move(r.out), std::move(r.err));
  };
  const auto typo = dir.write("typo.json", plan_text(R"({"system": "p5.48xlarge", "nodez": 2})"));
  auto [rc, out, err] = run({"plan", typo.string()});
  CHECK(rc == 2);
  CHECK(out.empty());
  CHECK_THAT(err, Catch::Contains("typo.json: /cluster/nodez: unknown key 'nodez'; did you mean 'nodes'?"));

  const auto machine = dir.write("machine.json", plan_text(R"({"system": ["p5.48xlarge", "p5.48xlarg"], "nodes": 2})"));
  std::tie(rc, out, err) = run({"plan", machine.string()});
  CHECK(rc == 2);
  CHECK_THAT(err, Catch::Contains("machine.json: /cluster/system/1") && Catch::Contains("p5.48xlarge"));

  const auto storage = dir.write("storage.json", plan_text(R"({"system": "p5.48xlarge", "nodes": 2})",
                                                           R"(, "checkpoint": {"storage": "s4", "interval": "1 h"})"));
  std::tie(rc, out, err) = run({"plan", storage.string()});
  CHECK(rc == 2);
  CHECK_THAT(err, Catch::Contains("storage.json: /checkpoint/storage"));

  // Nothing valid: the most frequent reason is named.
  // 16 GPUs with tensor <= 8: data >= 2 never divides a global batch of 7.
  const auto none = dir.write("none.json", plan_text(R"({"system": "p5.48xlarge", "nodes": 2})", "",
                                                     R"({"seq_len": 4096, "global_batch_size": 7})"));
  std::tie(rc, out, err) = run({"plan", none.string()});
  CHECK(rc == 2);
  CHECK_THAT(err, Catch::Contains("none.json") && Catch::Contains("no valid layout"));

  // A region the catalog has no price in: exit 2 before the search, naming /pricing/region and
  // the regions that price the plan's system.
  const auto region = dir.write("region.json", plan_text(R"({"system": "p5.48xlarge", "nodes": 2})",
                                                         R"(, "pricing": {"region": "us-west-2"})"));
  std::tie(rc, out, err) = run({"plan", region.string(), "--quiet"});
  CHECK(rc == 2);
  CHECK(out.empty());
  CHECK_THAT(err, Catch::Contains("region.json: /pricing/region") && Catch::Contains("p5.48xlarge") &&
                      Catch::Contains("\"us-east-1\"") && Catch::Contains("got \"us-west-2\""));

  std::tie(rc, out, err) = run({"plan", (dir.path() / "missing.json").string()});
  CHECK(rc == 2);
  std::tie(rc, out, err) = run({"plan", typo.string(), "--format", "yaml"});
  CHECK(rc == 2);
}

TEST_CASE("clustersim plan: a plan nothing meets exits 0 with the nearest misses", "[unit][plan][cli]") {
  testing::TempDir dir;
  // Llama-3-8B, 1e11 tokens on 1 or 2 p5 nodes within 1 h: no layout is that fast.
  const auto late = dir.write("late.json", R"({"schema_version": 1, "model": {"preset": "llama3-8b"},
      "training": {"seq_len": 4096, "global_batch_size": 64, "micro_batch_size": 1, "activation_checkpointing": "none"},
      "parallelism": {"framework": "megatron", "tensor": 1}, "cluster": {"system": "p5.48xlarge", "nodes": [1, 2]},
      "job": {"tokens": 1e11, "deadline": "1 h"}, "sensitivity": {"enabled": false}})");
  const auto r = testing::run_cli({"plan", late.string(), "--quiet"});
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::Contains("No candidate meets the deadline (0.0417 days). Nearest: p5.48xlarge x 2") &&
                        Catch::Contains("past the deadline") && Catch::Contains("nodes instead of 2") &&
                        Catch::Contains("Nearest misses"));
  // Written to a file, the whole report is there.
  const auto html = dir.path() / "late.html";
  const auto w = testing::run_cli({"plan", late.string(), "--quiet", "--format", "html", "-o", html.string()});
  CHECK(w.rc == 0);
  std::ifstream in(html);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(page.find("Nearest misses") != std::string::npos);
  CHECK(page.find("</html>") != std::string::npos);
}
