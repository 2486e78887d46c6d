#pragma once
// Every committed training-step measurement against its prediction, in one list: the residuals the
// step-time band (step_band.hpp) is calibrated on and checked against.
//
// The sets (tests/validation/data; each with its source and conditions there):
//   megatron_sc21_table1, megatron_h100_weak_scaling  published Megatron-LM rows (training_sets.json)
//   fsdp2_probes_4xh200                              this project's FSDP2 steps on 4 x H200
//   offload_probes_1xh100, eager_probes_1xh100       this project's one-GPU DeepSpeed/FSDP2 offload
//                                                    and eager steps (the host profile was fitted on
//                                                    some of them: in_sample)
//   impl_probes_1xh100                               plain PyTorch eager and compiled steps on shapes
//                                                    their kernel lists were not read from
//   deepspeed_published                              published DeepSpeed rows (deepspeed/published.json)
// A published throughput becomes a step time by the set's own FLOP count, so the residual is the
// same whichever is compared: r = ln(measured step / predicted step) (> 0: the model is too fast).

#include <functional>
#include <string>
#include <vector>

#include "hardware/catalog.hpp"
#include "models/step_band.hpp"
#include "models/step_estimate.hpp"

namespace clustersim::models {

struct StepResidual {
  std::string set;
  std::string row;
  double measured_s = 0;
  double predicted_s = 0;  // EVENT
  bool in_sample = false;  // a parameter the prediction used was fitted on this measurement's set
  StepEstimate estimate;   // the EVENT estimate (its band, regime and basis)
  double residual() const;  // ln(measured / predicted)
};

// `read(name)` returns the text of a file under tests/validation/data ("deepspeed/published.json").
std::vector<StepResidual> collect_step_residuals(const std::function<std::string(const std::string&)>& read,
                                                 const hardware::Catalog& catalog);

// The band's scores: every residual, in-sample ones marked (step_band.hpp).
StepBandTable step_band_table(const std::vector<StepResidual>& residuals);

// Whether each measurement lies in its band, the band made from `table` less the measurement's own
// score (leave-one-out: the width never comes from the point it is checked on).
struct BandCheck {
  const StepResidual* residual = nullptr;
  bool in68 = false, in90 = false;
  double half_width90 = 0;  // (high - low) / 2 over the predicted step, of the 90% band
  std::string cell;
};
std::vector<BandCheck> check_step_bands(const std::vector<StepResidual>& residuals, const StepBandTable& table);

// Coverage of a group of checks: the share inside each band and the 90% band's median half-width.
struct BandCoverage {
  std::string group;
  int measurements = 0;
  double within68 = 0, within90 = 0;
  double median_half_width90 = 0;
};
// Per set (in the residuals' order), per regime ("regime compute", ...), then "out of sample",
// "in sample" and "all".
std::vector<BandCoverage> band_coverage(const std::vector<BandCheck>& checks);

}  // namespace clustersim::models
