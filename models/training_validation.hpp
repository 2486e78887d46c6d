#pragma once
// Training-step predictions against published measurements (tests/validation/data: the Megatron-LM
// SC'21 Table 1 on Selene and the Megatron-Core H100 weak-scaling table), row by row.
//
// Each row becomes a scenario (the same reader as a user's file): a GPT of the row's width, depth
// and heads (LayerNorm, GELU MLP of 4h, learned positions: Megatron's GPT), the set's sequence
// length, vocabulary and precision, the row's TP x PP x DP on the set's catalog node, Megatron
// semantics with the set's flags and the row's micro-batch and virtual stages
// (training_sets.json, from the public run scripts). Nothing is fitted to the measurements:
// parameters come from the catalog and the calibration profile (defaults until one exists).
//
// Achieved TFLOP/s per GPU = F / (step time x GPUs), with F counted as the set counts it:
//   megatron_eq3  SC'21 Eq. 3 (includes the recomputation pass): 96 B s l h^2 (1 + s/6h + V/16lh)
//   model         Megatron-Core's num_floating_point_operations (no recomputation, full attention
//                 square): 72 B s l h^2 (1 + s/6h + V/12lh) for this GPT
// error = predicted / measured - 1 (on TFLOP/s; a step-time error of the opposite sign).

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "hardware/catalog.hpp"
#include "models/step_estimate.hpp"
#include "models/step_model.hpp"

namespace clustersim::models {

struct TrainingValidationRow {
  std::string label;              // "145.6B TP8 PP8 DP24 (1536 GPUs)"
  double measured_tflops = 0;     // per GPU
  double predicted_tflops = 0;    // EVENT
  double fast_tflops = 0;         // FAST
  double error = 0;               // predicted / measured - 1
  double step_s = 0;              // predicted (EVENT)
  double measured_step_s = 0;     // F / (measured TFLOP/s x GPUs)
  StepEstimate estimate;
};

struct TrainingValidationSet {
  std::string name;
  std::string description;
  std::string provenance;
  std::vector<TrainingValidationRow> rows;
  double median_abs_error = 0;
  double worst_abs_error = 0;
};

struct TrainingThreshold {
  double median_abs_error = 1;
  double worst_abs_error = 1;
};

// `sets_json`: the text of training_sets.json; `read` returns the text of a data file by name.
// `hopper_calibration`: a profile path for the sets on Hopper GPUs ("" keeps each system's default).
std::vector<TrainingValidationSet> run_training_validation(const std::string& sets_json,
                                                           const std::function<std::string(const std::string&)>& read,
                                                           const hardware::Catalog& catalog,
                                                           const std::string& hopper_calibration = "");

// This project's own measured training steps (training_fsdp2_probes.json: PyTorch FSDP2 steps of
// Hugging Face Llama models measured on the lent 4 x H200 machine), each row the scenario that
// describes the probe exactly: the step time (EVENT and FAST) and the peak memory the allocator
// handed out (MemorySummary::allocated) against torch.cuda.max_memory_allocated.
//   step error = predicted / measured - 1;  memory error = predicted / measured - 1.
struct ProbeValidationRow {
  std::string label;
  double measured_step_s = 0;
  double predicted_step_s = 0;  // EVENT
  double fast_step_s = 0;
  double step_error = 0;
  double measured_peak_bytes = 0;
  double predicted_peak_bytes = 0;
  double memory_error = 0;
  bool in_sample = false;  // "in_sample": a parameter the prediction uses was fitted on this step
  StepEstimate estimate;
};

struct ProbeValidationSet {
  std::string name;
  std::string description;
  std::string provenance;
  std::vector<ProbeValidationRow> rows;
  double median_step_error = 0, worst_step_error = 0;      // absolute
  double median_memory_error = 0, worst_memory_error = 0;  // absolute
};

// `calibration`: a profile path for every row ("" keeps the scenario's "calibration").
ProbeValidationSet run_probe_validation(const std::string& text, const hardware::Catalog& catalog,
                                        const std::string& calibration = "");
// training_thresholds.json: {"schema_version": 1, "sets": {"NAME": {"median_abs_error": 0.1, ...}}}.
std::map<std::string, TrainingThreshold> load_training_thresholds(const std::string& text, const std::string& file);

}  // namespace clustersim::models
