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

// The executed task graph of an EVENT estimate, for traces: one simulated rank per pipeline stage.
struct StepTimeline {
  sim::exec::TaskGraph graph;
  std::vector<sim::exec::TaskTiming> timings;
  std::vector<std::string> rank_names;                          // per simulated rank
  std::vector<std::pair<sim::exec::TaskId, sim::exec::TaskId>> arrows;  // sends and collectives
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
