#pragma once
// Time to train and dollars under each pricing option, with checkpoints, failures, spot
// interruptions and storage.
//
// Work (s: seconds, N: nodes, G: GPUs):
//   steps      S = ceil(tokens / (global_batch x seq_len))
//   compute    T_c = S x t_step                      (t_step from the step model; its band
//                                                      low_s..high_s gives T_c's band, and every
//                                                      figure below is computed again at each end)
// Checkpoints (synchronous save: training waits while the shards are written):
//   size       B = weights + optimizer state of the whole model (bytes per element as in
//              memory_model.hpp: weights 2 bytes (bf16/fp16/fp8 training) or 4 (fp32, and PyTorch AMP
//              which keeps fp32 parameters); Adam 8 bytes of moments + 4 of fp32 master copy (none
//              when the parameters are already fp32), SGD 4; LoRA saves only its adapters and their
//              optimizer state, the frozen base is written once before training)
//   bandwidth  W = min(N x write_bandwidth_per_node, aggregate_limit)  (catalog storage entry, or the
//              plan's overrides; every node writes its share, as Megatron's fully parallel save and
//              PyTorch DCP do)
//   write      C = B / W;  restart read C_r = B / min(N x read_bandwidth_per_node, aggregate_limit)
//   interval   I = the plan's duration, or {steps: k}: k x t_step, or "auto" (the default): Young/Daly's
//              sqrt(2 C / lambda) with lambda the job's interruption rate (below; spot's counted when
//              the plan lists spot)
//   count      n = floor(T_c / I);  failure-free wall time T_0 = T_c + n C
// Interruptions (failures on every option; on spot, also spot's):
//   failures   lambda_f = interruptions per GPU-hour x G / 3600 s  (catalog failure_rates entry, or the
//              plan's; one GPU lost stops a synchronous job)
//   spot       lambda_s = interruptions per node-day x N / 86400 s
//   per interruption the job loses L = R + C_r + (I + C) / 2: the restart R (failures: the failure
//              rate's restart time; spot: the plan's), reading the checkpoint back, and on average
//              half a checkpoint cycle of work
//   expected wall time T = T_0 / (1 - sum lambda L)  (each second of progress costs sum lambda L
//              seconds of rework; no finite T when sum lambda L >= 1: the job never finishes)
//   expected interruptions = sum lambda x T;  goodput = T_c / T
// Dollars (p: the option's price per instance-hour), all of T:
//   on-demand, spot              N x p x T / 3600   (on-demand: p = the catalog's rate x (1 - the
//                                plan's negotiated_discount), stated as the plan's assumption)
//   Savings Plan: the commitment K = N x p x 8760 h x years x ceil(T / term), bought whole
//     dedicated (default)        K: the job pays the whole term for the nodes it commits
//     shared                     share x K: the plan states the share this job carries
//     utilized                   N x p x T / 3600: the plan states that other work uses the
//                                commitment every hour the job does not
//   Capacity Blocks              N x p x 24 h x D, paid upfront, with D the days booked under the
//                                catalog's booking rules (capacity_block_rules, as AWS publishes
//                                them): a block lasts 1 to 14 days in 1-day steps, then up to 182
//                                days in 7-day steps, and holds at most 64 instances. With
//                                d = ceil(T / 1 day): ceil(d / 182) blocks in a row, each full but
//                                the last, whose d - 182 (k - 1) days are booked as is up to 14 and
//                                rounded up to whole weeks beyond (20 days -> 21); ceil(N / 64)
//                                side by side. Splitting is flagged (a block in a row can be
//                                booked at most 8 weeks before it starts, capacity permitting) and
//                                infeasible when the plan forbids it; more than 256 instances (the
//                                most an account may hold across blocks) is infeasible.
//   storage, added to each       (keep x B + data set bytes) / 1e9 GB x USD per GB-month x T / 730 h
//                                (the storage's price; a month of 730 h = 8,760 h / 12, as AWS bills
//                                GB-months; data set: 4 bytes per token unless the plan says)
// GPU-hours and node-hours are of T.
//
// Confidence (job.confidence = q): the step model's band low_s..high_s is T_step (1 -+ u) with u
// the root-mean-square of its parameters' relative uncertainties, each one standard deviation
// (calibration_profile.hpp), so the band is read as a central interval of 68.3% coverage of a
// normal step time: sigma_high = high - T_step above, sigma_low = T_step - low below. Its quantile
//   T_step,q = T_step + z_q sigma_high  (q >= 0.5),   T_step - |z_q| sigma_low  (q < 0.5)
// with z_q the standard normal quantile (z_0.9 = 1.2816), gives T_c,q = S x T_step,q; every figure
// above is a non-decreasing function of T_c, so it is computed again at T_c,q to give its own
// quantile (wall time and dollars at q). The deadline and the budget are judged there; without a
// confidence, at the point estimate.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hardware/catalog.hpp"
#include "models/plan_spec.hpp"
#include "models/scenario.hpp"
#include "models/transformer_config.hpp"

namespace clustersim::models {

// The price of one option for one instance, from the catalog or the plan's assumptions.
struct PriceQuote {
  PricingOption option = PricingOption::ON_DEMAND;
  bool available = false;
  std::string unavailable_reason;
  double per_hour = 0;  // USD per instance-hour
  std::string region;
  std::string source;  // catalog source id, or "plan"
  std::string source_title;
  std::string date;
  bool assumed = false;    // the user's assumption, not a price list
  std::string assumption;  // "60% off on-demand (the plan's assumption)"
  hardware::CapacityBlockRules block_rules;  // Capacity Blocks: the catalog's booking rules
};

// One quote per option of the plan, in the plan's order.
std::vector<PriceQuote> quote_prices(const hardware::Catalog& catalog, const std::string& instance,
                                     const PricingSpec& pricing);

// Bytes of one checkpoint of the whole model (weights + optimizer state; see above).
double checkpoint_bytes(const TransformerConfig& model, const TrainingSpec& training,
                        const ParallelismSpec& parallelism);

struct CheckpointCost {
  bool enabled = false;
  std::string storage;
  double size_bytes = 0;
  double write_bandwidth = 0;  // B/s, the whole cluster
  double read_bandwidth = 0;
  double write_s = 0;
  double read_s = 0;
  double interval_s = 0;  // compute time between checkpoints
  bool aggregate_limited = false;
};

// Checkpoint figures for N nodes; `interval_s` is resolved by the caller (see resolve_interval).
// `overrides` (the plan's checkpoint section) replaces the storage entry's bandwidths it gives.
CheckpointCost checkpoint_cost(double size_bytes, const hardware::StorageSpec& storage, int nodes,
                               const CheckpointSpec* overrides = nullptr);

// Interruptions of a job by one cause: a rate for the whole job and the restart each costs.
struct Interruptions {
  double rate_per_s = 0;
  double restart_s = 0;
};
// The interval of a plan's checkpoint section: a duration, k steps of `step_s`, or Young/Daly.
double resolve_interval(const CheckpointSpec& spec, double step_s, double write_s, double job_interruptions_per_s);

struct CostInputs {
  double compute_s = 0;  // steps x step time
  double compute_low_s = 0;
  double compute_high_s = 0;
  double compute_q_s = -1;  // at the plan's confidence (< 0: at the point estimate)
  int nodes = 1;
  CheckpointCost checkpoint;  // enabled = false: no checkpoint overhead
  Interruptions failures;     // on every option
  double storage_usd_per_s = 0;  // storage dollars per second of wall time
  const PricingSpec* pricing = nullptr;
  std::optional<double> deadline_s;
  std::optional<double> budget_usd;
};

struct WallTime {
  double nominal_s = 0;  // the expected wall time T (T_0 when no interruption is counted)
  double failure_free_s = 0;  // T_0 = T_c + n C
  double checkpoints = 0;
  double checkpoint_s = 0;
  double interruptions = 0;  // expected, lambda T
  double lost_s = 0;         // T - T_0: restarts, reloads and work done again
  bool finishes = true;      // false when interruptions outpace progress (T is infinite)
};
// T_0: compute plus checkpoint writes, no interruption.
WallTime nominal_wall(double compute_s, const CheckpointCost& ckpt);
// T: T_0 with the expected cost of each cause of interruption (see the header comment).
WallTime expected_wall(double compute_s, const CheckpointCost& ckpt, const std::vector<Interruptions>& causes);

struct OptionCost {
  PricingOption option = PricingOption::ON_DEMAND;
  PriceQuote quote;
  bool available = false;  // priced, and the job can run under it
  std::string reason;      // why not
  double wall_s = 0, wall_low_s = 0, wall_high_s = 0;
  double instance_hours = 0;  // billed, all nodes (nominal)
  double usd = 0, usd_low = 0, usd_high = 0;
  double wall_q_s = 0, usd_q = 0;  // at the plan's confidence (= wall_s, usd without one)
  double commitment_usd = 0;  // Savings Plans: the whole commitment K (see above)
  std::string basis;          // how the figure is charged, in a few words, shown beside it
  int blocks = 0;             // Capacity Blocks: side by side x in a row
  double billed_days = 0;             // Capacity Blocks
  double expected_interruptions = 0;  // failures, and on spot spot's
  double storage_usd = 0;             // included in usd
  bool meets_deadline = true;
  bool within_budget = true;
  std::vector<std::string> notes;
  bool feasible() const { return available && meets_deadline && within_budget; }
};

// The cost of one option (see the header comment).
OptionCost cost_option(const PriceQuote& quote, const CostInputs& in);

// The standard normal quantile z_p (0 < p < 1): Phi(z_p) = p.
double normal_quantile(double p);
// Compute time at confidence q from its point and band (see the header comment).
double compute_at_confidence(double point, double low, double high, double q);

// The job's spot interruption rate, per second (0 without spot).
double job_interruption_rate(const PricingSpec& pricing, int nodes);
// The job's failure rate, per second: interruptions per GPU-hour x GPUs / 3600.
double job_failure_rate(double per_gpu_hour, int gpus);

}  // namespace clustersim::models
