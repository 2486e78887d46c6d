#include "models/layout_expander.hpp"

#include <algorithm>

#include "hardware/errors.hpp"

namespace clustersim::models::layout_expansion {

namespace {

std::int64_t as_int(const Json& v, std::int64_t fallback) { return v.is_number() ? v.get<std::int64_t>() : fallback; }
std::string as_str(const Json& v, const std::string& fallback) {
  return v.is_string() ? v.get<std::string>() : fallback;
}

std::string value_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::vector<Json> ints(std::initializer_list<std::int64_t> v) { return {v.begin(), v.end()}; }

}  // namespace

std::string describe(const State& s, const std::vector<std::string>& pointers, const std::vector<PlanSystem>& systems,
                     std::size_t upto) {
  std::string out;
  for (std::size_t i = 0; i < upto && i < s.size(); ++i) {
    if (s[i].is_null()) continue;
    const std::string& p = pointers[i];
    const std::string key = p.substr(p.rfind('/') + 1);
    if (!out.empty()) out += ' ';
    out +=
        key + "=" + (i == SYSTEM ? systems[static_cast<std::size_t>(s[i].get<std::int64_t>())].name : value_text(s[i]));
  }
  return out;
}

Json neutral_value(int level, const PlanChoice* c, const std::vector<PlanSystem>& systems) {
  switch (level) {
    case SYSTEM: return systems.front().name;
    case GPN:
    case NODES:
    case GBS:
    case MBS:
    case TP:
    case CP:
    case PP:
    case DP:
    case EP:
    case VP: return std::int64_t{1};
    case ZERO: return std::int64_t{0};
    case SCHEDULE: return "1f1b";
    case SP: return false;
    case RECOMPUTE: return "none";
    case OFFLOAD: return Json();
    default: break;
  }
  return c && !c->is_auto && !c->values.empty() ? c->values.front() : Json();
}

void Expander::bump() {
  if (++count > limit) {
    throw InputError(plan.file, "/search/max_combinations",
                     "the plan expands to more than " + std::to_string(limit) +
                         " combinations; narrow its choices or raise search.max_combinations");
  }
}

void Expander::rejected(const State& s, std::size_t level, const std::string& reason) {
  bump();
  reject(reason, describe(s, pointers, systems, level + 1));
}

std::vector<Json> Expander::values(int level, const State& s) const {
  const PlanChoice* c = choice(level);
  if (c && !c->is_auto) return c->values;
  const bool is_auto = c != nullptr;  // present and "auto"
  const PlanSystem& sys = systems[static_cast<std::size_t>(s[SYSTEM].get<std::int64_t>())];
  const std::int64_t gpn = level > GPN ? s[GPN].get<std::int64_t>() : 0;
  const std::int64_t world = level > NODES ? gpn * s[NODES].get<std::int64_t>() : 0;
  const std::int64_t tp = level > TP ? as_int(s[TP], 1) : 1;
  const std::int64_t cp = level > CP ? as_int(s[CP], 1) : 1;
  const std::int64_t pp = level > PP ? as_int(s[PP], 1) : 1;
  const std::int64_t dp = level > DP ? as_int(s[DP], 1) : 1;
  const std::string framework = level > FRAMEWORK ? as_str(s[FRAMEWORK], "pytorch") : "pytorch";
  switch (level) {
    case GPN: return {Json(static_cast<std::int64_t>(sys.node.gpus()))};
    case TP: {
      if (!is_auto) return {Json()};
      std::vector<Json> out;
      for (std::int64_t t = 1; t <= gpn; t *= 2) out.emplace_back(t);
      return out;
    }
    case CP: {
      if (!is_auto) return {Json()};
      const std::int64_t seq = s[SEQ].get<std::int64_t>();
      std::vector<Json> out{Json(std::int64_t{1})};
      for (std::int64_t c = 2; seq / c >= 4096; c *= 2) out.emplace_back(c);
      return out;
    }
    case PP: {
      if (!is_auto) return {Json()};
      std::vector<Json> out;
      for (std::int64_t p = 1; p <= std::min<std::int64_t>(64, model.num_layers); p *= 2) {
        if (world % (tp * cp * p) == 0) out.emplace_back(p);
      }
      return out;
    }
    case DP: return {Json(world % (tp * cp * pp) == 0 ? world / (tp * cp * pp) : 0)};
    case EP: {
      if (!is_auto) return {Json()};
      if (!model.moe.enabled()) return ints({1});
      std::vector<Json> out;
      for (std::int64_t e = 1; e <= model.moe.num_experts; e *= 2) {
        if (model.moe.num_experts % e == 0 && (dp * cp) % e == 0) out.emplace_back(e);
      }
      return out;
    }
    case ZERO: {
      if (!is_auto) return {Json()};
      if (framework == "megatron") {
        const Json& m = plan.scenario_template["parallelism"];
        const bool dist_opt =
            !(m.contains("megatron") && m["megatron"].is_object() && m["megatron"].contains("distributed_optimizer") &&
              m["megatron"]["distributed_optimizer"] == false);
        return ints({dist_opt ? 1 : 0});
      }
      if (framework == "deepspeed" && pp > 1) return ints({0, 1});
      return ints({0, 1, 2, 3});
    }
    case MBS: {
      // is_auto always: plans enumerate micro-batches unless told otherwise.
      const std::int64_t gbs = s[GBS].get<std::int64_t>();
      std::vector<Json> out;
      for (std::int64_t b = 1; b <= 8; b *= 2) {
        if (gbs % (b * dp) == 0) out.emplace_back(b);
      }
      return out;
    }
    case VP: {
      if (!is_auto || pp == 1) return {Json()};
      std::vector<Json> out{Json()};
      const std::int64_t micro = s[GBS].get<std::int64_t>() / (as_int(s[MBS], 1) * dp);
      for (std::int64_t v : {2, 3, 4, 5, 6, 8}) {
        if (model.num_layers % (pp * v) == 0 && micro % pp == 0) out.emplace_back(v);
      }
      return out;
    }
    case SCHEDULE: {
      // Absent or "auto": follows the virtual stages.
      const std::int64_t vp = as_int(s[VP], 1);
      return {Json(vp > 1 ? "interleaved_1f1b" : "1f1b")};
    }
    case SP: {
      if (!is_auto) return {Json()};
      return {Json(tp > 1)};
    }
    case RECOMPUTE: return {Json("none"), Json("selective"), Json("full")};
    default: return {Json()};
  }
}

std::string Expander::check(int level, const State& s) const {
  switch (level) {
    case DP: {
      const std::int64_t world = s[GPN].get<std::int64_t>() * s[NODES].get<std::int64_t>();
      const std::int64_t tp = as_int(s[TP], 1), cp = as_int(s[CP], 1), pp = as_int(s[PP], 1);
      const std::int64_t dp = as_int(s[DP], 1);
      if (dp == 0) return "GPUs (nodes x gpus_per_node) not divisible by tensor x pipeline x context";
      if (tp * cp * pp * dp != world) return "tensor x pipeline x context x data differs from the GPU count";
      return "";
    }
    case EP: {
      const std::int64_t ep = as_int(s[EP], 1);
      if (ep > 1 && (as_int(s[DP], 1) * as_int(s[CP], 1)) % ep != 0) return "expert does not divide data x context";
      return "";
    }
    case ZERO: {
      const std::string fw = as_str(s[FRAMEWORK], "pytorch");
      const std::int64_t z = as_int(s[ZERO], 0);
      if (fw == "megatron" && z > 1)
        return "Megatron shards optimizer state with its distributed optimizer (ZeRO 0 or 1)";
      if (fw == "deepspeed" && z > 1 && as_int(s[PP], 1) > 1) {
        return "DeepSpeed's pipeline engine accepts ZeRO stage 0 or 1 only";
      }
      return "";
    }
    case MBS: {
      const std::int64_t gbs = s[GBS].get<std::int64_t>();
      if (gbs % (as_int(s[MBS], 1) * as_int(s[DP], 1)) != 0) {
        return "global batch not a multiple of micro-batch x data";
      }
      return "";
    }
    case SCHEDULE: {
      const std::int64_t pp = as_int(s[PP], 1), vp = as_int(s[VP], 1);
      const std::string sched = as_str(s[SCHEDULE], "1f1b");
      if (sched == "interleaved_1f1b" && pp == 1) return "interleaved schedule needs pipeline > 1";
      if (vp > 1 && sched != "interleaved_1f1b") return "virtual stages need the interleaved schedule";
      if (sched == "interleaved_1f1b") {
        const std::int64_t micro = s[GBS].get<std::int64_t>() / (as_int(s[MBS], 1) * as_int(s[DP], 1));
        if (micro % pp != 0) return "interleaved schedule needs micro-batches per step divisible by pipeline";
        if (model.num_layers % (pp * vp) != 0)
          return "interleaved schedule needs layers divisible by pipeline x virtual stages";
      }
      return "";
    }
    default: return "";
  }
}

void Expander::expand(std::size_t level, State& s) {
  if (level == pointers.size()) {
    bump();
    leaf(s);
    return;
  }
  const int lv = static_cast<int>(level);
  std::vector<Json> vals;
  if (level < FIXED_LEVELS) {
    if (level == SYSTEM) {
      for (std::size_t i = 0; i < systems.size(); ++i) vals.emplace_back(static_cast<std::int64_t>(i));
    } else {
      vals = values(lv, s);
    }
  } else {
    vals = choices[level]->values;
  }
  if (vals.empty()) {
    rejected(s, level,
             level == MBS ? "global batch not divisible by data x a micro-batch of 1, 2, 4 or 8"
                          : "no valid value of " + pointers[level] + " fits the choices before it");
    return;
  }
  for (const auto& v : vals) {
    s[level] = v;
    if (level < FIXED_LEVELS) {
      const std::string why = check(lv, s);
      if (!why.empty()) {
        rejected(s, level, why);
        continue;
      }
    }
    expand(level + 1, s);
  }
  s[level] = Json();
}

}  // namespace clustersim::models::layout_expansion
