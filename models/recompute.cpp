#include "models/recompute.hpp"

#include <algorithm>

namespace clustersim::models {

LayerRecompute layer_recompute(const TrainingSpec& t, std::int64_t layer, std::int64_t num_layers,
                               std::int64_t chunks) {
  LayerRecompute r;
  if (t.activation_checkpointing != Checkpointing::FULL || layer < 0 || num_layers <= 0) return r;
  chunks = std::clamp<std::int64_t>(chunks, 1, num_layers);
  const std::int64_t base = num_layers / chunks;
  const std::int64_t extra = num_layers % chunks;
  const std::int64_t long_span = extra * (base + 1);  // layers in the longer chunks
  std::int64_t pos = 0, len = 0;
  if (layer < long_span) {
    len = base + 1;
    pos = layer % len;
  } else {
    len = base;
    pos = (layer - long_span) % len;
  }
  const std::int64_t n = std::max<std::int64_t>(1, t.recompute_num_layers);
  if (t.recompute_method == RecomputeMethod::UNIFORM) {
    r.replayed = true;
    r.keeps_input = pos % n == 0;
    r.group_layers = r.keeps_input ? std::min(n, len - pos) : 0;
  } else {
    r.replayed = pos < n;
    r.keeps_input = r.replayed;
    r.group_layers = r.replayed ? 1 : 0;
  }
  return r;
}

std::string_view to_string(RecomputeMethod m) { return m == RecomputeMethod::BLOCK ? "block" : "uniform"; }

}  // namespace clustersim::models
