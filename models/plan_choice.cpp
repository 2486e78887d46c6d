#include "models/plan_choice.hpp"

#include <charconv>

#include "hardware/errors.hpp"

namespace clustersim::models {

namespace {

using Json = nlohmann::json;

constexpr IntRange kDim{.min = 1, .max = 1 << 20};

}  // namespace

// The fields plan_spec.hpp lists, with their types and ranges (the scenario reader's).
const std::vector<ChoiceField>& plan_choice_fields() {
  static const std::vector<ChoiceField> fields = {
      {"/cluster/system", ChoiceKind::STRING},
      {"/cluster/nodes", ChoiceKind::INT, {.min = 1, .max = 1'000'000}},
      {"/cluster/gpus_per_node", ChoiceKind::INT, {.min = 1, .max = 1024}},
      {"/cluster/p2p", ChoiceKind::STRING, {}, {"write", "read", "disabled"}},
      {"/training/seq_len", ChoiceKind::INT, {.min = 1, .max = 1 << 24}},
      {"/training/global_batch_size", ChoiceKind::INT, {.min = 1, .max = 1LL << 32}},
      {"/training/micro_batch_size", ChoiceKind::INT, {.min = 1, .max = 1 << 20}, {}, true},
      {"/training/activation_checkpointing", ChoiceKind::STRING, {}, {"none", "selective", "full"}, true},
      {"/training/precision", ChoiceKind::STRING, {}, {"bf16", "fp16", "fp8", "fp32"}},
      {"/training/fine_tuning", ChoiceKind::OBJECT},
      {"/parallelism/framework", ChoiceKind::STRING, {}, {"pytorch", "megatron", "deepspeed"}},
      {"/parallelism/data", ChoiceKind::INT, kDim, {}, true},
      {"/parallelism/tensor", ChoiceKind::INT, kDim, {}, true},
      {"/parallelism/pipeline", ChoiceKind::INT, kDim, {}, true},
      {"/parallelism/context", ChoiceKind::INT, kDim, {}, true},
      {"/parallelism/expert", ChoiceKind::INT, kDim, {}, true},
      {"/parallelism/zero_stage", ChoiceKind::INT, {.min = 0, .max = 3}, {}, true},
      {"/parallelism/sequence_parallel", ChoiceKind::BOOL, {}, {}, true},
      {"/parallelism/virtual_stages", ChoiceKind::INT, {.min = 1, .max = 1024}, {}, true},
      {"/parallelism/pipeline_schedule", ChoiceKind::STRING, {}, {"gpipe", "1f1b", "interleaved_1f1b"}, true},
      {"/parallelism/offload", ChoiceKind::OBJECT},
  };
  return fields;
}

const std::vector<std::string_view>& auto_parallelism_fields() {
  static const std::vector<std::string_view> fields = {"/parallelism/data",
                                                       "/parallelism/tensor",
                                                       "/parallelism/pipeline",
                                                       "/parallelism/context",
                                                       "/parallelism/expert",
                                                       "/parallelism/zero_stage",
                                                       "/parallelism/sequence_parallel",
                                                       "/parallelism/virtual_stages",
                                                       "/parallelism/pipeline_schedule"};
  return fields;
}

namespace {

std::vector<Json> expand_range(const ValueReader& v, IntRange range) {
  std::int64_t lo = 0, hi = 0;
  std::string scale = "x2";
  v.read_object([&](ObjectReader& o) {
    lo = o.at("min").as_int(range);
    hi = o.at("max").as_int(range);
    if (auto s = o.maybe("scale")) scale = s->as_string();
    if (hi < lo) o.at("max").fail("a maximum >= min (" + std::to_string(lo) + ")");
  });
  const std::string where = v.pointer() + "/scale";
  auto bad_scale = [&]() {
    throw InputError(v.file(), where,
                     "expected \"x<k>\" (multiply by an integer k >= 2) or \"+<k>\" (add k >= 1), got '" + scale + "'");
  };
  if (scale.size() < 2 || (scale[0] != 'x' && scale[0] != '+')) bad_scale();
  std::int64_t k = 0;
  const auto [ptr, ec] = std::from_chars(scale.data() + 1, scale.data() + scale.size(), k);
  if (ec != std::errc() || ptr != scale.data() + scale.size()) bad_scale();
  if ((scale[0] == 'x' && k < 2) || (scale[0] == '+' && k < 1)) bad_scale();
  if (scale[0] == 'x' && lo < 1) throw InputError(v.file(), v.pointer() + "/min", "a geometric range needs min >= 1");
  std::vector<Json> out;
  for (std::int64_t x = lo; x <= hi; x = scale[0] == 'x' ? x * k : x + k) {
    out.emplace_back(x);
    if (out.size() > 100000) throw InputError(v.file(), v.pointer(), "a range of at most 100000 values");
  }
  return out;
}

Json read_scalar(const ValueReader& v, const ChoiceField& f) {
  switch (f.kind) {
    case ChoiceKind::INT: return Json(v.as_int(f.range));
    case ChoiceKind::STRING: return Json(f.allowed.empty() ? v.as_string() : v.as_choice(f.allowed));
    case ChoiceKind::BOOL: return Json(v.as_bool());
    case ChoiceKind::OBJECT:
      if (!v.raw().is_object()) v.fail("an object");
      return v.raw();
    case ChoiceKind::ENV_VALUE:
      if (v.raw().is_number_integer() || v.raw().is_number_unsigned()) return Json(std::to_string(v.as_int()));
      return Json(v.as_string());
  }
  return Json();
}

}  // namespace

PlanChoice read_choice(const ValueReader& v, const ChoiceField& f) {
  PlanChoice c;
  c.pointer = v.pointer();
  const Json& raw = v.raw();
  if (raw.is_string() && raw.get<std::string>() == "auto" && f.auto_ok) {
    c.is_auto = true;
    return c;
  }
  if (raw.is_array()) {
    for (const auto& e : v.as_array(1)) c.values.push_back(read_scalar(e, f));
    for (std::size_t i = 0; i < c.values.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (c.values[i] == c.values[j]) {
          throw InputError(v.file(), v.pointer() + "/" + std::to_string(i), "a value not already listed");
        }
      }
    }
    return c;
  }
  if (raw.is_object() && f.kind == ChoiceKind::INT) {
    c.values = expand_range(v, f.range);
    return c;
  }
  try {
    c.values.push_back(read_scalar(v, f));
  } catch (const InputError&) {
    std::string expected = f.kind == ChoiceKind::INT
                               ? "an integer, a list [1, 2, 4] or a range {\"min\", \"max\", \"scale\"}"
                           : f.kind == ChoiceKind::OBJECT ? "an object or a list of objects"
                                                          : "a value or a list of values";
    if (f.auto_ok) expected += ", or \"auto\"";
    // Keep the precise message for a wrong scalar of the right type (an out-of-range integer).
    if ((f.kind == ChoiceKind::INT && raw.is_number()) || (f.kind == ChoiceKind::STRING && raw.is_string()) ||
        (f.kind == ChoiceKind::BOOL && raw.is_boolean())) {
      throw;
    }
    v.fail(expected);
  }
  return c;
}

}  // namespace clustersim::models
