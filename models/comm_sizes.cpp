#include "models/comm_sizes.hpp"

#include <algorithm>
#include <cmath>

#include "models/memory_model.hpp"
#include "models/parameter_tensors.hpp"

namespace clustersim::models {

namespace {

double param_bytes(const TrainingSpec& t) { return t.precision == Precision::FP32 ? 4 : 2; }
double act_bytes(const TrainingSpec& t) { return t.precision == Precision::FP32 ? 4 : 2; }

}  // namespace

LayerCommSizes layer_comm_sizes(const TransformerConfig& m, const ParallelLayout& l, const TrainingSpec& t,
                                std::int64_t layer) {
  LayerCommSizes c;
  const LoraSpec* lora = t.fine_tuning == FineTuning::LORA ? &t.lora : nullptr;
  const ShardFactors s = l.shard_factors();
  double dense = 0, expert = 0, dense_train = 0, expert_train = 0;
  for (const auto& p : layer_parameter_tensors(m, layer, lora)) {
    const double n = static_cast<double>(numel_on_rank(p, s));
    (p.shard == ShardKind::EXPERT ? expert : dense) += n;
    if (p.trainable) (p.shard == ShardKind::EXPERT ? expert_train : dense_train) += n;
  }
  const double pb = param_bytes(t);
  const double gb = bytes_per_element(t.grad_reduce_dtype);
  c.dense_params = Bytes::from_double(dense * pb);
  c.expert_params = Bytes::from_double(expert * pb);
  c.dense_grads = Bytes::from_double(dense_train * gb);
  c.expert_grads = Bytes::from_double(expert_train * gb);
  const double a = act_bytes(t);
  const double T = static_cast<double>(l.tokens());
  const double h = static_cast<double>(m.hidden_size);
  if (l.tp() > 1) {
    c.tp_activation = Bytes::from_double(T * h * a);
    c.tp_collectives_forward = l.sequence_parallel() ? 4 : 2;
    c.tp_collectives_backward = c.tp_collectives_forward;
  }
  if (l.ep() > 1 && m.is_moe_layer(layer)) {
    c.ep_alltoall = Bytes::from_double(static_cast<double>(l.sp_tokens()) * m.moe.experts_per_token * h * a);
    c.ep_alltoalls_forward = 2;
    c.ep_alltoalls_backward = 2;
  }
  if (l.cp() > 1) {
    const double kv_heads = std::max(1.0, static_cast<double>(m.attention == AttentionKind::MLA ? m.num_heads
                                                                                              : m.num_kv_heads) /
                                              l.tp());
    c.cp_kv_block = Bytes::from_double(static_cast<double>(l.micro_batch()) * (static_cast<double>(l.seq_len()) / l.cp()) *
                                       kv_heads * (m.qk_head_dim() + m.v_head_dim()) * a);
    c.cp_ring_steps = l.cp() - 1;
  }
  return c;
}

StageCommSizes stage_comm_sizes(const TransformerConfig& m, const ParallelLayout& l, const TrainingSpec& t) {
  StageCommSizes c;
  const double a = act_bytes(t);
  const double h = static_cast<double>(m.hidden_size);
  if (l.pp() > 1) c.pp_activation = Bytes::from_double(static_cast<double>(l.sp_tokens()) * h * a);
  if (l.tp() > 1) {
    c.embedding_tp_activation = Bytes::from_double(static_cast<double>(l.tokens()) * h * a);
    if (l.sequence_parallel()) c.head_tp_activation = Bytes::from_double(static_cast<double>(l.tokens()) * h * a);
  }
  if (m.tied_embeddings && l.pp() > 1 && t.fine_tuning == FineTuning::FULL) {
    c.tied_embedding_grads = Bytes::from_double(std::ceil(static_cast<double>(m.vocab_size) / l.tp()) * h *
                                                bytes_per_element(t.grad_reduce_dtype));
  }
  return c;
}

Bytes gradient_bucket_bytes(const ParallelismSpec& p, const TrainingSpec& t, std::int64_t hidden_size) {
  const double gb = bytes_per_element(t.grad_reduce_dtype);
  switch (p.framework) {
    case Framework::PYTORCH: return Bytes::mib(25);  // DistributedDataParallel bucket_cap_mb = 25
    case Framework::MEGATRON:
      // Megatron-Core DistributedDataParallel: bucket_size = max(40000000, 1000000 * dp) elements.
      return Bytes::from_double(std::max(4e7, 1e6 * p.data * p.context) * gb);
    case Framework::DEEPSPEED:
      return Bytes::from_double(resolve_zero_knobs(p.zero, hidden_size).reduce_bucket_size * gb);
  }
  return Bytes::mib(25);
}

}  // namespace clustersim::models
