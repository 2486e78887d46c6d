#pragma once
// Readers of a plan's own sections (job, pricing, checkpoint, search, sensitivity; the syntax is in
// plan_spec.hpp), and of its durations and amounts of money.

#include <string_view>

#include "hardware/json_reader.hpp"
#include "models/plan_spec.hpp"

namespace clustersim::models {

JobSpec read_job(ValueReader v);
PricingSpec read_pricing(ValueReader v);
CheckpointSpec read_checkpoint(ValueReader v);
GoodputSpec read_goodput(ValueReader v);
SearchSpec read_search(ValueReader v);
SensitivitySpec read_sensitivity(ValueReader v);

}  // namespace clustersim::models
