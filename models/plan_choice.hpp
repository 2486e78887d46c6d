#pragma once
// The choice syntax of plan files (plan_spec.hpp lists the fields that take it):
//   8                                        one value
//   [1, 2, 4]                                each of these, in this order (no repeats)
//   {"min": 8, "max": 256, "scale": "x2"}    8, 16, ..., 256 (geometric, integer factor >= 2)
//   {"min": 8, "max": 64, "scale": "+8"}     8, 16, ..., 64 (arithmetic, step >= 1)
//   "auto"                                   the planner enumerates the valid values
// Object-valued fields take one object or a list of objects. Values are validated here (types,
// ranges, allowed words); whether a combination of them is valid is the enumerator's business.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/json_reader.hpp"

namespace clustersim::models {

// One plan field that holds one or more values.
struct PlanChoice {
  std::string pointer;                 // JSON pointer in the plan ("/cluster/nodes")
  std::vector<nlohmann::json> values;  // validated values in the order given; empty when is_auto
  bool is_auto = false;                // "auto": the planner enumerates the valid values
};

enum class ChoiceKind { INT, STRING, BOOL, OBJECT, ENV_VALUE };

// A field that takes choices, and what each value must be.
struct ChoiceField {
  std::string_view pointer;
  ChoiceKind kind;
  IntRange range{};
  std::vector<std::string> allowed{};  // STRING: the accepted values (empty: any string)
  bool auto_ok = false;
};

// Every field of a plan's scenario sections that takes choices (not the NCCL variables, which are
// ENV_VALUE fields named by the plan).
const std::vector<ChoiceField>& plan_choice_fields();
// The fields that "parallelism": "auto" sets to "auto".
const std::vector<std::string_view>& auto_parallelism_fields();

// Reads the choice at `v` for `field`; InputError naming the file, pointer and expectation.
PlanChoice read_choice(const ValueReader& v, const ChoiceField& field);

}  // namespace clustersim::models
