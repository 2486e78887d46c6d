#include "models/parallel_layout.hpp"

#include <algorithm>
#include <cmath>

#include "hardware/errors.hpp"

namespace clustersim::models {

namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

}  // namespace

ParallelLayout::ParallelLayout(const TransformerConfig& m, const ParallelismSpec& p, const TrainingSpec& t,
                               std::string file)
    : dp_(p.data),
      tp_(p.tensor),
      pp_(p.pipeline),
      cp_(p.context),
      ep_(p.expert),
      vp_(p.virtual_stages),
      sp_(p.sequence_parallel && p.tensor > 1),
      framework_(p.framework),
      schedule_(p.pipeline_schedule),
      micro_batch_(t.micro_batch_size),
      seq_len_(t.seq_len),
      global_batch_(t.global_batch_size),
      num_layers_(m.num_layers),
      training_(t) {
  auto fail = [&](const std::string& pointer, const std::string& message) {
    throw InputError(file, pointer, message);
  };
  // Tensor parallelism splits heads (Megatron: num_attention_heads % TP == 0 and, for GQA,
  // num_query_groups % TP == 0) and MLP columns (ffn_hidden_size % TP == 0).
  if (m.num_heads % tp_ != 0) {
    fail("/parallelism/tensor", "expected a divisor of the model's num_attention_heads = " + str(m.num_heads) +
                                    " (tensor parallelism splits attention heads), got " + str(tp_));
  }
  if (m.attention == AttentionKind::GQA && m.num_kv_heads % tp_ != 0) {
    fail("/parallelism/tensor", "expected a divisor of the model's num_key_value_heads = " + str(m.num_kv_heads) +
                                    " (tensor parallelism splits key/value head groups), got " + str(tp_));
  }
  if (m.intermediate_size % tp_ != 0) {
    fail("/parallelism/tensor", "expected a divisor of the model's intermediate_size = " + str(m.intermediate_size) +
                                    " (tensor parallelism splits MLP columns), got " + str(tp_));
  }
  if (m.moe.enabled()) {
    if (m.moe.expert_intermediate_size % tp_ != 0) {
      fail("/parallelism/tensor", "expected a divisor of the expert width " + str(m.moe.expert_intermediate_size) +
                                      " (experts are split across tensor-parallel ranks), got " + str(tp_));
    }
    if (m.moe.num_experts % ep_ != 0) {
      fail("/parallelism/expert",
           "expected a divisor of the model's " + str(m.moe.num_experts) + " routed experts, got " + str(ep_));
    }
  } else if (ep_ > 1) {
    fail("/parallelism/expert", "expert parallelism needs a mixture-of-experts model; '" + m.name + "' is dense");
  }
  if (cp_ > 1 && seq_len_ % (2 * cp_) != 0) {
    // Megatron's context parallelism cuts the sequence into 2 cp chunks for causal load balance.
    fail("/training/seq_len", "expected a multiple of 2 x context = " + str(2 * cp_) + ", got " + str(seq_len_));
  }
  if (pp_ * vp_ > m.num_layers) {
    fail("/parallelism/pipeline", "expected pipeline x virtual_stages <= num_hidden_layers = " + str(m.num_layers) +
                                      ", got " + str(pp_) + " x " + str(vp_));
  }
  if (vp_ > 1 && m.num_layers % (pp_ * vp_) != 0 && !p.uneven_pipeline) {
    fail("/parallelism/virtual_stages", "expected pipeline x virtual_stages to divide num_hidden_layers = " +
                                            str(m.num_layers) + " (interleaved schedules need equal chunks; set parallelism.uneven_pipeline for an uneven split), got " +
                                            str(pp_) + " x " + str(vp_));
  }
  if (t.fine_tuning == FineTuning::LORA) {
    for (std::size_t i = 0; i < t.lora.target_modules.size(); ++i) {
      if (t.lora.target_modules[i] == "gate_proj" && m.mlp != MlpKind::GATED_SILU) {
        fail("/training/fine_tuning/target_modules/" + std::to_string(i),
             "the model's MLP (" + std::string(to_string(m.mlp)) + ", " + m.model_type +
                 ") has no gate projection; expected one of q_proj, k_proj, v_proj, o_proj, up_proj, down_proj");
      }
    }
  }
  const std::int64_t per_step = micro_batch_ * dp_;
  num_micro_batches_ = std::max<std::int64_t>(1, global_batch_ / per_step);
}

std::vector<std::int64_t> ParallelLayout::layers_of(int stage, int virtual_stage) const {
  const std::int64_t chunks = static_cast<std::int64_t>(pp_) * vp_;
  const std::int64_t chunk = static_cast<std::int64_t>(virtual_stage) * pp_ + stage;
  const std::int64_t base = num_layers_ / chunks;
  const std::int64_t extra = num_layers_ % chunks;
  const std::int64_t first = chunk * base + std::min(chunk, extra);
  const std::int64_t count = base + (chunk < extra ? 1 : 0);
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < count; ++i) out.push_back(first + i);
  return out;
}

std::vector<std::int64_t> ParallelLayout::layers_of_stage(int stage) const {
  std::vector<std::int64_t> out;
  for (int v = 0; v < vp_; ++v) {
    auto l = layers_of(stage, v);
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

double ParallelLayout::in_flight_layer_activations(int stage) const {
  const double layers = static_cast<double>(layers_of_stage(stage).size());
  const double m = static_cast<double>(num_micro_batches_);
  if (pp_ == 1) return layers;
  switch (schedule_) {
    case PipelineSchedule::GPIPE: return m * layers;
    case PipelineSchedule::ONE_F_ONE_B: return std::min<double>(pp_ - stage, m) * layers;
    case PipelineSchedule::INTERLEAVED_1F1B: {
      const double passes = 2.0 * (pp_ - stage - 1) + static_cast<double>(vp_ - 1) * pp_ + 1;
      return std::min(passes, m * vp_) * layers / vp_;
    }
  }
  return layers;
}

std::int64_t ParallelLayout::in_flight_micro_batches(int stage) const {
  if (pp_ == 1) return 1;
  switch (schedule_) {
    case PipelineSchedule::GPIPE: return num_micro_batches_;
    case PipelineSchedule::ONE_F_ONE_B: return std::min<std::int64_t>(pp_ - stage, num_micro_batches_);
    case PipelineSchedule::INTERLEAVED_1F1B: {
      const std::int64_t passes = 2 * (pp_ - stage - 1) + static_cast<std::int64_t>(vp_ - 1) * pp_ + 1;
      return std::min<std::int64_t>((passes + vp_ - 1) / vp_, num_micro_batches_);
    }
  }
  return 1;
}

}  // namespace clustersim::models
