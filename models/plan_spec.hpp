#pragma once
// The plan file of `clustersim plan`: a scenario (scenario.hpp) whose fields may hold choices or
// ranges, plus the job to price (tokens, deadline, budget), pricing options, checkpointing, and
// how to search and report. Read strictly (hardware/json_reader.hpp): an unknown key, a wrong type
// or an out-of-range value is an InputError naming the plan file, the JSON pointer and what was
// expected.
//
// Choice syntax (plan_choice.hpp): 8, [1, 2, 4], {"min": 8, "max": 256, "scale": "x2" | "+8"}, or
// "auto" (the planner enumerates every valid value) in the fields marked A below. Object-valued
// fields (fine_tuning, offload) take one object or an array of objects.
//
// Fields that take choices (pointer: values; default when absent in a plan):
//   /cluster/system                     catalog names
//   /cluster/nodes                      integers >= 1
//   /cluster/gpus_per_node              integers; absent: the catalog's GPU count of each system
//   /cluster/p2p                        "write" | "read" | "disabled"
//   /training/seq_len, /training/global_batch_size   integers
//   /training/micro_batch_size      A   absent = "auto": 1, 2, 4, 8 dividing global batch / data
//   /training/activation_checkpointing  A   absent = "auto": none, selective, full
//   /training/precision                 "bf16" | "fp16" | "fp8" | "fp32"
//   /training/fine_tuning               objects ({"method": "full"}, {"method": "lora", "rank": 16})
//   /parallelism                        "auto" = {"framework": "megatron", every field below "auto"}
//   /parallelism/framework              "pytorch" | "megatron" | "deepspeed"
//   /parallelism/data               A   absent = "auto": GPUs / (tensor x pipeline x context)
//   /parallelism/tensor             A   "auto": powers of two up to gpus_per_node
//   /parallelism/pipeline           A   "auto": 1, 2, 4, ..., 64 up to the layer count
//   /parallelism/context            A   "auto": powers of two while seq_len / context >= 4096
//   /parallelism/expert             A   "auto": 1 for dense models; MoE: powers of two dividing
//                                       the expert count and data x context
//   /parallelism/zero_stage         A   "auto": megatron 1 with the distributed optimizer (else 0);
//                                       pytorch and deepspeed 0-3 (deepspeed 0-1 with pipeline > 1)
//   /parallelism/sequence_parallel  A   "auto": true when tensor > 1
//   /parallelism/virtual_stages     A   "auto": 1, and with pipeline > 1 every v in 2, 3, 4, 5, 6, 8
//                                       with layers % (pipeline x v) == 0 and micro-batches %
//                                       pipeline == 0 (Megatron's interleaved-schedule checks)
//   /parallelism/pipeline_schedule  A   absent = "auto": "interleaved_1f1b" when virtual_stages > 1,
//                                       else "1f1b"
//   /parallelism/offload                objects
//   /nccl/env/NAME                      strings or integers (NCCL_ALGO: ["Ring", "Tree"])
// Every other scenario key is passed to each candidate as written and read by the scenario reader.
//
// Plan-only sections (all optional but the tokens to train):
//   "job": {"tokens": 2e12 | "epochs": 3 with "dataset_tokens": 1.2e9 or "dataset_samples": 1e6
//           (samples x seq_len tokens per epoch); "deadline": "30 days"; "budget": "2.5e6 USD";
//           "confidence": 0.9 (deadline and budget judged at this quantile of the step-time band,
//           plan_costs.hpp; absent: at the point estimate)}
//          Without job.tokens / epochs, training.tokens is used.
//   "pricing": {"region": "us-east-1", "options": ["on_demand", "capacity_block",
//           "savings_plan_1yr", "savings_plan_3yr", "spot"]  (absent: on-demand, and spot when
//           a "spot" section is given: no option is priced that the plan does not list),
//           "negotiated_discount": 0.15  (fraction off the catalog's on-demand rate),
//           "savings_plan": {"commitment": "dedicated" (default) | "utilized",
//                            "share": 0.25, "after_job": "inference fleet for the rest of the term"},
//           "capacity_block": {"allow_split": true},
//           "spot": {"discount": 0.6 | "price": "20 USD/h", "interruptions_per_node_day": 0.02,
//                    "restart_time": "15 min"}}
//   "checkpoint": {"storage": "s3" (catalog storage entry; default "s3"), "interval": "2 h" |
//           {"steps": 500} | "auto" (default: Young/Daly from the job's interruption rate, plan_costs.hpp),
//           "write_bandwidth_per_node": "5 GB/s", "read_bandwidth_per_node": "8 GB/s",
//           "aggregate_bandwidth": "29.36 GB/s" (each overrides the catalog's storage entry),
//           "price": "0.023 USD/GB-month" (overrides the storage's price), "keep": 2 (checkpoints
//           stored at once, default 2), "dataset_size": "8 TB" (the training data set on the same
//           storage; default 4 bytes per token of the data set: token ids as int32)}
//          Absent: the defaults above (goodput needs checkpoints). With goodput disabled and no
//          checkpoint section, no checkpoint is counted.
//   "goodput": {"enabled": true, "failure_rate": "h100-llama3-405b" (catalog failure_rates entry,
//           the default), "interruptions_per_gpu_hour": 1.973e-5 | "interruptions_per_node_day": 0.0038
//           (either overrides the entry's rate), "restart_time": "10 min" (overrides its restart time)}
//   "search": {"rank_by": "time" | "cost", "top_k": 3, "max_combinations": 200000,
//           "report_rows": 25}
//   "sensitivity": {"enabled": true, "nic_bandwidth_factor": 2, "gemm_efficiency_change": 0.1,
//           "nccl_env": [{"NCCL_ALGO": "Ring"}, {"NCCL_ALGO": "Tree"}]}
// Durations: a number and one of s, min, h, day(s), week(s) ("30 days"); money: "<number> USD".

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/json_reader.hpp"
#include "models/plan_choice.hpp"

namespace clustersim::models {

enum class PricingOption { ON_DEMAND, CAPACITY_BLOCK, SAVINGS_PLAN_1YR, SAVINGS_PLAN_3YR, SPOT };
std::string_view to_string(PricingOption o);      // "on_demand", ...
std::string_view pricing_label(PricingOption o);  // "on-demand", "Capacity Blocks", ...
const std::vector<PricingOption>& all_pricing_options();

// How a Savings Plan commitment (nodes x rate, every hour of a 1- or 3-year term) is charged to the
// job. A commitment is bought for its whole term, so unless the plan says otherwise the job pays
// all of it.
//   DEDICATED  the default: nothing else is known to use it, the job pays the whole term
//   SHARED     the plan states the share of the whole term's cost this job carries
//              (savings_plan.share; the rest is carried by what runs on it after the job)
//   UTILIZED   the plan states that other work uses the commitment for every hour the job does
//              not, so the job is charged the plan rate for the hours it runs
enum class SavingsPlanCommitment { DEDICATED, SHARED, UTILIZED };
std::string_view to_string(SavingsPlanCommitment c);  // "dedicated", "shared", "utilized"

struct SpotSpec {
  std::optional<double> discount;        // fraction off on-demand: the user's assumption
  std::optional<double> price_per_hour;  // USD per instance-hour: the user's assumption
  double interruptions_per_node_day = 0;
  double restart_s = 0;  // replace the node, start containers, NCCL init, load
};

struct PricingSpec {
  std::string region;                  // empty: the first region (by name) pricing each instance
  std::vector<PricingOption> options;  // in the order to show
  bool options_listed = false;         // false: the default (on-demand, and spot with a spot section)
  SavingsPlanCommitment commitment = SavingsPlanCommitment::DEDICATED;
  bool commitment_stated = false;  // the plan has a savings_plan section saying how it is carried
  double commitment_share = 1;     // SHARED: fraction (0, 1] of the whole term's cost
  std::string after_job;           // the plan's words on what uses the commitment after the job
  std::optional<double> negotiated_discount;  // fraction off the catalog's on-demand rate
  bool capacity_block_allow_split = true;
  std::optional<SpotSpec> spot;
};

struct CheckpointSpec {
  enum class Interval { DURATION, STEPS, AUTO };
  std::string storage = "s3";
  std::string storage_pointer = "/checkpoint/storage";  // for errors
  bool stated = false;  // the plan has a checkpoint section
  Interval interval = Interval::AUTO;
  double interval_s = 0;
  std::int64_t interval_steps = 0;
  // Overrides of the catalog's storage entry (B/s; USD per GB-month).
  std::optional<double> write_bandwidth_per_node;
  std::optional<double> read_bandwidth_per_node;
  std::optional<double> aggregate_bandwidth;
  std::optional<double> usd_per_gb_month;
  int keep = 2;                          // checkpoints stored at once
  std::optional<double> dataset_bytes;  // absent: 4 bytes per token of the data set
};

// Failures of the hardware interrupt a synchronous job; each costs a restart, reading the
// checkpoint back, and the work since the last checkpoint (plan_costs.hpp).
struct GoodputSpec {
  bool enabled = true;
  std::string failure_rate = "h100-llama3-405b";  // catalog failure_rates entry
  std::string failure_rate_pointer = "/goodput/failure_rate";
  bool failure_rate_stated = false;
  std::optional<double> interruptions_per_gpu_hour;  // overrides the entry's rate
  std::optional<double> interruptions_per_node_day;  // the same, per node (converted per candidate)
  std::optional<double> restart_s;                   // overrides the entry's restart time
};

struct JobSpec {
  std::optional<double> tokens;  // job.tokens or training.tokens
  std::optional<double> epochs;  // with one of the two below
  std::optional<double> dataset_tokens;
  std::optional<double> dataset_samples;  // sequences of seq_len tokens
  std::optional<double> deadline_s;
  std::optional<double> budget_usd;
  std::optional<double> confidence;  // in (0, 1): the quantile at which deadline and budget are judged
  // Tokens to train for a candidate with this sequence length.
  double tokens_for(std::int64_t seq_len) const;
  std::string describe() const;  // "2e+12 tokens", "3 epochs of 1e+06 samples"
};

enum class RankBy { TIME, COST };
std::string_view to_string(RankBy r);

struct SearchSpec {
  RankBy rank_by = RankBy::TIME;
  int top_k = 3;                           // best K by each ranking re-checked with EVENT
  std::int64_t max_combinations = 200000;  // enumeration limit (an InputError beyond it)
  int report_rows = 25;                    // candidates shown in report tables and charts
};

struct SensitivitySpec {
  bool enabled = true;
  double nic_bandwidth_factor = 2.0;
  double gemm_efficiency_change = 0.10;
  std::vector<std::map<std::string, std::string>> nccl_env{{{"NCCL_ALGO", "Ring"}}, {{"NCCL_ALGO", "Tree"}}};
};

struct PlanSpec {
  std::string file;
  std::filesystem::path base_dir;  // resolves paths inside the scenario sections
  std::string name;
  // The scenario sections as written, with every choice field removed (the enumerator sets them).
  nlohmann::json scenario_template;
  std::vector<PlanChoice> choices;  // every field that holds choices
  bool parallelism_auto = false;    // "parallelism": "auto"
  JobSpec job;
  PricingSpec pricing;
  std::optional<CheckpointSpec> checkpoint;  // absent only with goodput disabled and no section
  GoodputSpec goodput;
  SearchSpec search;
  SensitivitySpec sensitivity;

  // The choice at `pointer`, or null when the plan does not set that field.
  const PlanChoice* choice(std::string_view pointer) const;
};

PlanSpec load_plan(const std::string& path);
PlanSpec read_plan(const JsonDocument& doc, const std::filesystem::path& base_dir);

// "30 days", "2 h", "15 min", "90 s", "2 weeks" in seconds; InputError otherwise.
double parse_plan_duration(std::string_view text);
// "2.5e6 USD" in dollars; InputError otherwise.
double parse_usd(std::string_view text);

}  // namespace clustersim::models
