#include "models/pipeline_schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace clustersim::models {

namespace {

std::vector<PipelinePass> no_pipeline(std::int64_t m, int v) {
  std::vector<PipelinePass> out;
  out.reserve(static_cast<std::size_t>(2 * m * v));
  for (std::int64_t mb = 0; mb < m; ++mb) {
    for (int c = 0; c < v; ++c) out.push_back({true, mb, c});
    for (int c = v - 1; c >= 0; --c) out.push_back({false, mb, c});
  }
  return out;
}

std::vector<PipelinePass> gpipe(std::int64_t m, int v) {
  std::vector<PipelinePass> out;
  for (std::int64_t mb = 0; mb < m; ++mb)
    for (int c = 0; c < v; ++c) out.push_back({true, mb, c});
  for (std::int64_t mb = 0; mb < m; ++mb)
    for (int c = v - 1; c >= 0; --c) out.push_back({false, mb, c});
  return out;
}

std::vector<PipelinePass> one_f_one_b(int stage, int p, std::int64_t m) {
  std::vector<PipelinePass> out;
  out.reserve(static_cast<std::size_t>(2 * m));
  const std::int64_t warmup = std::min<std::int64_t>(p - stage - 1, m);
  std::int64_t next_f = 0, next_b = 0;
  for (; next_f < warmup; ++next_f) out.push_back({true, next_f, 0});
  while (next_f < m) {
    out.push_back({true, next_f++, 0});
    out.push_back({false, next_b++, 0});
  }
  while (next_b < m) out.push_back({false, next_b++, 0});
  return out;
}

PipelinePass interleaved_pass(std::int64_t k, bool forward, int p, int v) {
  const std::int64_t group = static_cast<std::int64_t>(p) * v;
  const std::int64_t in_group = k % group;
  int chunk = static_cast<int>(in_group / p);
  if (!forward) chunk = v - 1 - chunk;
  const std::int64_t mb = (k / group) * p + (k % p);
  return {forward, mb, chunk};
}

std::vector<PipelinePass> interleaved(int stage, int p, std::int64_t m, int v) {
  const std::int64_t total = m * v;
  std::int64_t warmup = 0;
  if (m == p) {
    warmup = total;  // Megatron: all forwards first when there are exactly p micro-batches
  } else {
    warmup = std::min<std::int64_t>(static_cast<std::int64_t>(p - stage - 1) * 2 + static_cast<std::int64_t>(v - 1) * p,
                                    total);
  }
  std::vector<PipelinePass> out;
  out.reserve(static_cast<std::size_t>(2 * total));
  std::int64_t next_f = 0, next_b = 0;
  for (; next_f < warmup; ++next_f) out.push_back(interleaved_pass(next_f, true, p, v));
  while (next_f < total) {
    out.push_back(interleaved_pass(next_f++, true, p, v));
    out.push_back(interleaved_pass(next_b++, false, p, v));
  }
  while (next_b < total) out.push_back(interleaved_pass(next_b++, false, p, v));
  return out;
}

}  // namespace

std::vector<PipelinePass> pipeline_order(PipelineSchedule schedule, int stage, int stages, std::int64_t micro_batches,
                                         int chunks) {
  if (stages < 1 || stage < 0 || stage >= stages || micro_batches < 1 || chunks < 1) {
    throw std::logic_error("pipeline_order: bad arguments");
  }
  if (stages == 1) return no_pipeline(micro_batches, chunks);
  switch (schedule) {
    case PipelineSchedule::GPIPE: return gpipe(micro_batches, chunks);
    case PipelineSchedule::ONE_F_ONE_B:
      if (chunks == 1) return one_f_one_b(stage, stages, micro_batches);
      return interleaved(stage, stages, micro_batches, chunks);
    case PipelineSchedule::INTERLEAVED_1F1B:
      if (chunks == 1) return one_f_one_b(stage, stages, micro_batches);
      return interleaved(stage, stages, micro_batches, chunks);
  }
  return one_f_one_b(stage, stages, micro_batches);
}

}  // namespace clustersim::models
