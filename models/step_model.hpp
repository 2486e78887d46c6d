#pragma once
// One training step of a scenario: its time, where the time goes, and whether it fits in memory,
// at either fidelity (step_estimate.hpp). This is what `clustersim simulate` prints and what the
// planner calls (StepEvaluator).
//
//   StepSimulator sim(catalog);                        // keeps NCCL predictors, profiles and models
//   StepEstimate e = sim.estimate(scenario, Fidelity::EVENT);
//   models::StepEvaluator eval = sim.evaluator();      // for the planner: cheap repeated calls
//
// Resolution of a scenario (InputError, exit 2, naming the scenario file and key, when it cannot
// run): the model (preset, config.json or inline), the layout against the model (heads divisible
// by TP, layers by stages, ...; parallel_layout.hpp), the cluster (a catalog system or instance,
// gpus_per_node within the board), the batch (global batch a multiple of micro-batch x data
// parallelism; interleaved schedules need micro-batches a multiple of the stages), the GPU's
// precision support and the NCCL environment. Calibration: "default" uses the profile the catalog
// names for the system (NodeSpec::calibration); when it names none, or one that is not built in,
// the catalog defaults are used and a warning says so. A path loads that profile.
//
// FAST is the closed form of step_fast.cpp; EVENT runs the task graph of step_builder.hpp on the
// discrete-event simulator with the flow network. Both read the same StepPlan (step_plan.hpp).
//
// Memory: the largest per-GPU peak over the pipeline stages (memory_model.hpp). A layout that does
// not fit is still simulated: fits_in_memory is false, memory.shortfall says by how much and a
// warning names the stage (`simulate --require-fit` turns it into an error).
//
// Band: [low_s, high_s] holds the step with 68% probability, band.low90_s..high90_s with 90%;
// widths from the committed validation steps' residuals, by regime and calibration (step_band.hpp).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"
#include "models/scenario.hpp"
#include "models/step_comm.hpp"
#include "models/step_estimate.hpp"
#include "models/transformer_config.hpp"
#include "sim/exec/stream_executor.hpp"
#include "sim/exec/task_graph.hpp"

namespace clustersim::models {

// What a task of the timeline stands for (trace args); -1 where it does not apply.
struct TaskContext {
  std::int64_t micro_batch = -1;
  std::int32_t chunk = -1;  // virtual pipeline chunk
  std::int32_t unit = -1;   // index into StepTimeline::units of its stage
  std::int8_t pass = 0;     // 0: outside a pass, 1: forward, 2: backward
  std::int32_t comm = -1;   // index into StepTimeline::comms of its stage
};

// A collective or copy of a stage as the NCCL model priced it.
struct TimelineComm {
  std::string name;       // "TP all-reduce"
  std::string op;         // "all_reduce", "send"; "copy" for host copies
  Bytes size;             // one call (nccl-tests convention)
  int calls = 1;          // back-to-back calls the task stands for
  std::string algorithm;  // "ring", "cudaMemcpy H2D"
  std::string protocol;   // "simple", "ll", "ll128"; empty for copies
  int channels = 0;
  std::string transport;  // the group's slowest hop
  std::string group;      // "tensor", "data", "pipeline", ...; "host" for copies
  std::vector<int> ranks; // the group's global ranks
};

struct TimelineUnit {
  std::string name;  // "layer 12", "embedding", "head"
  std::int64_t layer = -1;
};

struct CounterSample {
  Duration time;
  double value = 0;
};

// A link's utilisation (load / bandwidth, in [0, 1]) at each time the flow rates changed.
struct LinkSeries {
  std::string name;  // Topology::describe_link
  double bytes = 0;  // carried over the step
  std::vector<CounterSample> utilisation;
};

// The executed task graph of an EVENT estimate, for traces: one simulated rank per pipeline stage.
struct StepTimeline {
  sim::exec::TaskGraph graph;
  std::vector<sim::exec::TaskTiming> timings;
  std::vector<std::string> rank_names;                          // per simulated rank
  std::vector<std::pair<sim::exec::TaskId, sim::exec::TaskId>> arrows;  // sends and collectives
  std::vector<TaskContext> context;                             // per task
  std::vector<std::vector<TimelineComm>> comms;                 // per stage, by StagePlan::comms index
  std::vector<std::vector<TimelineUnit>> units;                 // per stage, by StagePlan::units index
  std::vector<LinkSeries> links;                                // the busiest links, busiest first
  // Per stage: GPU memory over the step (step_timeline_memory.hpp) and the memory model's peak.
  std::vector<std::vector<CounterSample>> memory;
  std::vector<Bytes> memory_peak;
};

struct StepRunOptions {
  StepTimeline* timeline = nullptr;  // EVENT: filled with the executed graph when set
};

class StepSimulator {
 public:
  explicit StepSimulator(const hardware::Catalog& catalog);
  ~StepSimulator();
  StepSimulator(const StepSimulator&) = delete;
  StepSimulator& operator=(const StepSimulator&) = delete;

  StepEstimate estimate(const Scenario& scenario, Fidelity fidelity, const StepRunOptions& options = {});
  // The planner's hook: calls estimate() on this simulator (which must outlive the function).
  StepEvaluator evaluator();

  std::size_t cached_predictors() const { return predictors_.predictors(); }

 private:
  const hardware::CalibrationProfile* profile_for(const Scenario& s, const hardware::NodeSpec& node,
                                                  std::vector<std::string>& warnings);
  const TransformerConfig& model_for(const Scenario& s);

  const hardware::Catalog& catalog_;
  PredictorCache predictors_;
  std::map<std::string, std::unique_ptr<hardware::CalibrationProfile>> profiles_;
  std::map<std::string, TransformerConfig> models_;
};

// One estimate with a fresh simulator (no caching between calls).
StepEstimate estimate_step(const Scenario& scenario, const hardware::Catalog& catalog, Fidelity fidelity,
                           const StepRunOptions& options = {});

std::string_view to_string(Fidelity f);

}  // namespace clustersim::models
