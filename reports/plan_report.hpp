#pragma once
// The capacity-plan report: a reports::Report built from a plan result (models/plan_result.hpp),
// and the plan result JSON that embeds it.
//
// Report contents (section ids):
//   summary      the best candidate (time to train, and at the plan's confidence; cost under its
//                cheapest option, and at the confidence; GPUs, step
//                time, MFU, peak memory, layout) with uncertainty bands; layouts evaluated
//   systems      (first) the best candidate of each system: time, cost, option, MFU, how many are
//                feasible; for a system with none, its fastest evaluated candidate and the reason
//   candidates   the best `search.report_rows` by the plan's ranking, one cost column per option
//   frontier     cost against time to train, one series per system with feasible candidates (its
//                own frontier and an even sample of the rest by cost, at most 500), the Pareto
//                frontier with time and cost bands as error bars, each point's candidate in its
//                tooltip, the deadline and budget as reference lines; and the frontier's table
//   scaling      step time against GPU count, one line per layout shape of the best candidates
//   breakdown    where the step time goes, for the best candidates
//   memory       memory per rank of the best candidate by pipeline stage, with the GPU's capacity
//   costs        the best candidate under each pricing option (terms, notes)
//   checkpoints  checkpoint size, storage bandwidth, interval, count and overhead; failures (mean
//                time between, expected interruptions, time lost), goodput, storage stored and its cost
//   sensitivity  the best candidate re-evaluated with one change at a time
//   near-misses  (only when no candidate is feasible, first) the nearest misses: by how much each
//                fails the deadline or budget, and what would fix it
//   infeasible   counts by reason, rejected combinations, infeasible candidates with their reason
//   assumptions  prices with source, date and region; pricing terms; job; checkpoint storage;
//                calibration provenance; model, NCCL and program versions; provenance (date,
//                program, SHA-256 of each input and of their manifest)
//   csv_table    every evaluated candidate, feasible first by rank, with status and reason: the
//                CSV's one table
//
// Result JSON ("clustersim-plan-result", schema_version 1):
//   plan        name, file (name only), model, job, ranking, pricing terms (options and whether
//               the plan listed them, negotiated_discount, savings_plan_commitment, _stated, _share)
//   evaluated   layouts evaluated with the fast model;  feasible: feasible candidates
//   counts      combinations, rejected, layouts, does_not_fit, evaluated, evaluation_failed,
//               misses_deadline, over_budget, no_option, feasible, rechecked
//   best        id of the best candidate (null when none)
//   candidates  feasible candidates best first by the plan's ranking, each with id, rank,
//               rank_time, rank_cost, on_frontier, label, system, nodes, gpus_per_node, gpus,
//               parallelism, training, nccl_env, fidelity, step_time_s, uncertainty {low_s,
//               high_s}, fast_step_time_s, tokens_per_step, steps, tokens_per_s, mfu,
//               time_to_train_s, time_to_train_band {low_s, high_s}, time_to_train_confidence_s
//               (with job.confidence), compute_s, checkpoint,
//               gpu_hours, node_hours, cost_usd {OPTION: {available, usd, low, high, per_hour,
//               region, source, date, assumed, wall_s, instance_hours, wall_confidence_s,
//               usd_confidence (at job.confidence; the point without one), basis (how the figure is
//               charged), commitment_usd (Savings Plans: the whole commitment), meets_deadline,
//               within_budget, notes, ...}}, cheapest_option, peak_memory_bytes, fits_in_memory,
//               memory, breakdown, bottleneck, warnings
//   pareto      ids on the frontier, fastest first
//   infeasible  every valid layout that is not feasible, by id: its figures where known, status
//               and reason
//   near_misses when no candidate is feasible, the nearest (models/plan_misses.hpp): id, option,
//               time_to_train_s, cost_usd, late_fraction, over_budget_fraction, miss, fix
//   rejected_combinations  reason, count, example
//   sensitivity rows of the sensitivity analysis
//   report      the reports::Report (json_report.hpp), so `clustersim report` re-renders it
// Numbers that are not finite (a band end where spot never finishes) are written as null.

#include <nlohmann/json.hpp>
#include <string>

#include "hardware/catalog.hpp"
#include "hardware/json_reader.hpp"
#include "models/plan_result.hpp"
#include "reports/report_model.hpp"

namespace clustersim::reports {

inline constexpr std::string_view kPlanResultKind = "clustersim-plan-result";
inline constexpr int kPlanResultSchemaVersion = 1;

struct PlanReportOptions {
  std::string generated_by;  // "clustersim 0.1.0"
  std::string created;       // "2026-12-07T21:00:00Z" (the CLI: SOURCE_DATE_EPOCH if set, else now)
  // The inputs read besides the catalog's files (the plan file), with their SHA-256; the report's
  // inputs_sha256 is manifest_sha256 of these followed by catalog.inputs().
  std::vector<hardware::InputDigest> inputs;
};

Report build_plan_report(const models::PlanResult& result, const hardware::Catalog& catalog,
                         const PlanReportOptions& options = {});

nlohmann::ordered_json plan_result_to_json(const models::PlanResult& result, const Report& report);
// plan_result_to_json, two-space indented, with a final newline.
std::string render_plan_result(const models::PlanResult& result, const Report& report);

// The report inside a saved result: a plan result (its "report") or a report JSON itself.
Report load_saved_report(const std::string& path);
// The same from an already parsed document (fuzzers and tests).
Report read_saved_report(const JsonDocument& doc);

}  // namespace clustersim::reports
