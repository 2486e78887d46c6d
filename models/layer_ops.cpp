#include "models/layer_ops.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

namespace clustersim::models {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// A forward op and what its backward looks like.
struct Entry {
  KernelOp op;
  bool frozen_weight = false;    // GEMM: no wgrad (LoRA base weights)
  double backward_factor = 1.0;  // MEMORY: backward bytes / forward bytes (0: no backward kernel)
  bool recompute_selective = false;
  std::vector<KernelOp> backward_ops{};  // MEMORY: the backward kernels when listed one by one (eager)
};

// Kernels of one eager PyTorch op (layer_ops.hpp, "hf_eager"), in units of the op's tensor of e
// elements: bytes per element moved, strided elements per element, kernel launches. A group of
// vectorized kernels and a group of strided ones (strided kernels are bound by their element
// rate, so their elements add up; vectorized ones by bytes, which add up too).
struct EagerKernels {
  double vector_bytes = 0;   // x e
  int vector_kernels = 0;
  double strided_bytes = 0;  // x e
  double strided_elements = 0;  // x e
  int strided_kernels = 0;
  double tiny_bytes = 0;     // absolute (per-row statistics)
  int tiny_kernels = 0;
};

class Builder {
 public:
  Builder(const TransformerConfig& m, const ParallelLayout& l, const TrainingSpec& t, std::int64_t layer)
      : m_(m), l_(l), t_(t), layer_(layer) {
    act_ = t.precision == Precision::FP32 ? 4 : 2;
    gemm_dtype_ = t.precision;
    lora_ = t.fine_tuning == FineTuning::LORA;
    fused_ = l.framework() == Framework::MEGATRON;
    eager_ = t.implementation == Implementation::HF_EAGER;
    plain_ = t.implementation == Implementation::EAGER;
    compiled_ = t.implementation == Implementation::COMPILED;
    T_ = l.tokens();
    Tsp_ = l.sp_tokens();
    tp_ = l.tp();
    // Megatron accumulates weight gradients into fp32 main_grad (read + write); others write the
    // gradient in the activation dtype.
    wgrad_out_bytes_ =
        (l.framework() == Framework::MEGATRON && t.grad_reduce_dtype == Precision::FP32) ? 8 : act_;
  }

  std::vector<Entry> entries;

  // A GEMM of this layer. `frozen`: a weight without gradient.
  void gemm(const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k, bool frozen,
            std::int64_t batch = 1, std::optional<Precision> dtype = std::nullopt) {
    KernelOp op;
    op.name = name;
    op.layer = layer_;
    op.kind = OpKind::GEMM;
    op.role = GemmRole::FPROP;
    op.dtype = dtype.value_or(gemm_dtype_);
    op.gemm = {.m = m, .n = n, .k = k, .batch = batch};
    fill_gemm(op, act_);
    entries.push_back({.op = op, .frozen_weight = frozen});
  }

  void memory(const std::string& name, double bytes, double flops, double backward_factor, int kernels = 1) {
    KernelOp op = memory_op(name, bytes, kernels, MemoryPath::VECTORIZED, 0);
    op.flops = FlopCount::of(flops);
    entries.push_back({.op = op, .backward_factor = backward_factor});
  }

  KernelOp memory_op(const std::string& name, double bytes, int kernels, MemoryPath path, double elements) const {
    KernelOp op;
    op.name = name;
    op.layer = layer_;
    op.kind = OpKind::MEMORY;
    op.dtype = t_.precision;
    op.bytes = Bytes::from_double(bytes);
    op.flops = FlopCount::of(elements > 0 ? elements : bytes / act_);
    op.kernels = std::max(1, kernels);
    op.path = path;
    op.elements = static_cast<std::int64_t>(elements);
    return op;
  }

  // The ops of one eager kernel group over a tensor of e elements, strided kernels first (the
  // named vectorized op last, where the collectives of items_of attach in the forward).
  std::vector<KernelOp> eager_ops(const std::string& name, double e, const EagerKernels& k, bool named_first) const {
    std::vector<KernelOp> out;
    if (k.strided_kernels > 0) {
      out.push_back(memory_op(name + ".strided", k.strided_bytes * e, k.strided_kernels, MemoryPath::STRIDED,
                              k.strided_elements * e));
    }
    if (k.vector_kernels + k.tiny_kernels > 0) {
      out.push_back(memory_op(name, k.vector_bytes * e + k.tiny_bytes, k.vector_kernels + k.tiny_kernels,
                              MemoryPath::VECTORIZED, 0));
    }
    if (named_first) std::reverse(out.begin(), out.end());
    return out;
  }

  // An eager op: forward kernels `f`, backward kernels `b`, over e elements.
  void eager(const std::string& name, double e, const EagerKernels& f, const EagerKernels& b) {
    auto fwd = eager_ops(name, e, f, false);
    auto bwd = eager_ops(name, e, b, true);
    for (std::size_t i = 0; i < fwd.size(); ++i) {
      Entry en{.op = fwd[i]};
      if (i + 1 == fwd.size()) {
        en.backward_ops = bwd;
        for (auto& o : en.backward_ops) o.pass = Pass::BACKWARD;
      } else {
        en.backward_factor = 0;  // the whole backward hangs on the last forward op of the group
      }
      entries.push_back(std::move(en));
    }
  }

  void attention(std::int64_t heads, std::int64_t kv_heads, std::int64_t qk, std::int64_t v) {
    if (t_.attention_kernel == AttentionKernel::UNFUSED) {
      unfused_attention(heads, qk, v);
      return;
    }
    KernelOp op;
    op.name = "flash_attn";
    op.layer = layer_;
    op.kind = OpKind::ATTENTION;
    op.dtype = t_.precision == Precision::FP8 ? Precision::BF16 : t_.precision;
    op.attention = {.batch = l_.micro_batch(),
                    .heads = heads / tp_,
                    .kv_heads = std::max<std::int64_t>(1, kv_heads / tp_),
                    .seq_q = l_.seq_len() / l_.cp(),
                    .seq_kv = l_.seq_len(),
                    .qk_dim = qk,
                    .v_dim = v,
                    .causal = true};
    fill_attention(op, false);
    entries.push_back({.op = op, .recompute_selective = true});
    if (plain_ || compiled_) {
      // PyTorch's SDPA on Hopper (cuDNN's flash attention under torch 2.11) adds four kernels to
      // the backward over e = T x heads x d of the query: dO . O per row (reads both: 4 B/e), the
      // fp32 dQ accumulator down-cast (6), and under grouped-query attention dK and dV summed over
      // each group's query heads (reads fp32 per query head 4, writes per kv head 2 x Hkv/H)
      // (impl-kernels.json: compute_dot_do_o, convert_dq_to_16bits, fmha_reduce_head x 2).
      const double e = static_cast<double>(l_.micro_batch()) * (l_.seq_len() / l_.cp()) * (heads / tp_) * qk;
      const bool grouped = kv_heads < heads;
      const double bytes = e * (4 + 6 + (grouped ? 2 * (4 + 2.0 * kv_heads / heads) : 0));
      KernelOp aux = memory_op("attn_bwd_aux", bytes, grouped ? 4 : 2, MemoryPath::VECTORIZED, 0);
      aux.pass = Pass::BACKWARD;
      entries.back().backward_ops = {aux};
    }
  }

  // Megatron-LM's attention before flash attention (CoreAttention): per (micro-batch, head) a
  // QK^T GEMM (s_q x d by d x s_kv, the whole square: the causal mask is applied in the softmax),
  // the fused scale-mask-softmax (reads the scores, writes the probabilities: 2 + 2 bytes per score
  // in 16 bits), dropout (reads them, writes the result and a 1-byte mask: 5 bytes), and the PV
  // GEMM (s_q x s_kv by s_kv x d). Backward: the GEMMs' two gradients each (dQ and dK, dP and dV,
  // counted as dgrad and wgrad), dropout backward (2 + 1 + 2 bytes) and softmax backward
  // (probabilities, gradient, result: 6 bytes). All four are the attention core that selective
  // recomputation replays.
  void unfused_attention(std::int64_t heads, std::int64_t qk, std::int64_t v) {
    const std::int64_t h = heads / tp_;
    const std::int64_t sq = l_.seq_len() / l_.cp();
    const std::int64_t skv = l_.seq_len();
    const std::int64_t batch = l_.micro_batch() * h;
    const double scores = static_cast<double>(batch) * sq * skv;
    const double e = act_;
    const Precision dt = t_.precision == Precision::FP8 ? Precision::BF16 : t_.precision;
    gemm("attn_scores", sq, skv, qk, false, batch, dt);
    entries.back().recompute_selective = true;
    memory("attn_softmax", scores * 2 * e, 4 * scores, 6.0 / 4.0);
    entries.back().recompute_selective = true;
    memory("attn_dropout", scores * (2 * e + 1), scores, 5.0 / 5.0);
    entries.back().recompute_selective = true;
    gemm("attn_values", sq, v, skv, false, batch, dt);
    entries.back().recompute_selective = true;
  }

  // A linear of this layer with its LoRA adapters. Column-parallel: output split across TP;
  // row-parallel: input split; replicated: neither.
  void linear(const std::string& name, std::int64_t in, std::int64_t out, bool column_parallel, bool replicated,
              std::initializer_list<std::string_view> targets, std::int64_t fused_out = 0) {
    const std::int64_t n_total = fused_out > 0 ? fused_out : out;
    const std::int64_t n = (column_parallel && !replicated) ? ceil_div(n_total, tp_) : n_total;
    const std::int64_t k = (!column_parallel && !replicated) ? in / tp_ : in;
    gemm(name, T_, n, k, lora_);
    if (!lora_) return;
    bool hit = false;
    for (auto tgt : targets) {
      hit = hit || std::find(t_.lora.target_modules.begin(), t_.lora.target_modules.end(), tgt) !=
                       t_.lora.target_modules.end();
    }
    if (!hit) return;
    const std::int64_t r = t_.lora.rank;
    // Column-parallel: A whole (in -> r), B split (r -> out/tp). Row-parallel: A split, B whole.
    const std::int64_t a_in = (!column_parallel && !replicated) ? in / tp_ : in;
    const std::int64_t b_out = (column_parallel && !replicated) ? ceil_div(out, tp_) : out;
    gemm("lora." + name + ".A", T_, r, a_in, false, 1, Precision::BF16);
    gemm("lora." + name + ".B", T_, b_out, r, false, 1, Precision::BF16);
    // result += scale * B(A(x)): read both, write the sum.
    memory("lora." + name + ".add", 3.0 * T_ * b_out * act_, 2.0 * T_ * b_out, 2.0 / 3.0);
  }

  // `fanout`: consumers of the norm's output whose gradients autograd adds up (eager only).
  void norm(const std::string& name, std::int64_t tokens, std::int64_t width, int fanout = 1) {
    const double elems = static_cast<double>(tokens) * width;
    if (eager_ && m_.norm == NormKind::RMS_NORM) {
      eager(name, elems, eager_rms_norm_forward(static_cast<double>(tokens)),
            eager_rms_norm_backward(static_cast<double>(tokens), fanout));
      return;
    }
    if (plain_) {
      // F.rms_norm (F.layer_norm): one kernel reads x and writes y and the per-row statistics;
      // backward: the input gradient (reads x, dy, writes dx: 6 B/e) and the weight gradient's
      // partial sums (reads x, dy: 4); one add (6) per extra consumer whose gradient autograd sums.
      const int adds = std::max(0, fanout - 1);
      eager(name, elems, {.vector_bytes = 2.0 * act_, .vector_kernels = 1, .tiny_bytes = 4 * static_cast<double>(tokens)},
            {.vector_bytes = 3.0 * act_ + 2.0 * act_ + 3.0 * act_ * adds, .vector_kernels = 2 + adds});
      return;
    }
    if (compiled_ && (name == "input_norm" || name == "post_attn_norm" || name == "final_norm")) {
      return;  // Inductor runs the norm inside the kernel of the residual add before it (residual())
    }
    // Forward reads x and writes y; backward reads x and dy and writes dx (norm statistics are
    // recomputed or tiny). RMSNorm ~4 FLOP per element, LayerNorm ~8.
    memory(name, 2 * elems * act_, (m_.norm == NormKind::RMS_NORM ? 4 : 8) * elems, 1.5);
  }

  // Hugging Face LlamaRMSNorm in eager mode, x bf16 of e elements in `rows` rows:
  //   x32 = x.float() (strided: up-cast, 6 B/e) | x32.pow(2) (8) | .mean(-1) (4) | + eps, rsqrt
  //   (per row) | x32 * rstd (strided: row broadcast, 8) | .to(bf16) (6) | weight * y (strided:
  //   broadcast weight, 4).
  static EagerKernels eager_rms_norm_forward(double rows) {
    return {.vector_bytes = 8 + 4 + 6, .vector_kernels = 3, .strided_bytes = 6 + 8 + 4, .strided_elements = 3,
            .strided_kernels = 3, .tiny_bytes = 2 * 8 * rows, .tiny_kernels = 2};
  }
  // Its autograd backward: dy * weight (strided 4) and dy * y for the weight gradient (6) with its
  // sum over tokens (2); the up-cast's gradient (strided 6); d(x32 * rstd): g * rstd (strided 8),
  // g * x32 (12) and its row sum (4); rsqrt, add and mean backward per row, the mean's expand
  // (strided 4); pow backward 2 x32 (8) times g (12) after a copy (8); the two x32 gradients added
  // (12); the down-cast back to bf16 (6); plus one add (6) per extra consumer of the output
  // (q, k, v: two; gate, up: one).
  static EagerKernels eager_rms_norm_backward(double rows, int fanout) {
    const int adds = std::max(0, fanout - 1);
    return {.vector_bytes = 6 + 2 + 12 + 4 + 8 + 8 + 12 + 12 + 6 + 6.0 * adds,
            .vector_kernels = 9 + adds,
            .strided_bytes = 4 + 6 + 8 + 4,
            .strided_elements = 4,
            .strided_kernels = 4,
            .tiny_bytes = 3 * 8 * rows,
            .tiny_kernels = 3};
  }
  // apply_rotary_pos_emb on q and k (transposed [b, h, s, d] views, so every kernel is strided):
  // x * cos (4 B/e), -x2 (2 B/e over half), cat(-x2, x1) (4), * sin (4), + (6): five kernels per
  // tensor. Backward: g * sin (4), -g (half, 2), zero-filled slices of the cat's gradient (fills
  // 2, copies strided 4), + (6), g * cos (4), + (strided 6).
  static EagerKernels eager_rotary_forward(int tensors) {
    return {.strided_bytes = 20, .strided_elements = 4.5, .strided_kernels = 5 * tensors};
  }
  static EagerKernels eager_rotary_backward(int tensors) {
    return {.vector_bytes = 2 + 6, .vector_kernels = 3 * tensors, .strided_bytes = 4 + 2 + 4 + 4 + 6,
            .strided_elements = 4.5, .strided_kernels = 6 * tensors};
  }

  void residual(const std::string& name) {
    const double elems = static_cast<double>(Tsp_) * m_.hidden_size;
    const bool dropout = m_.hidden_dropout > 0;
    if (compiled_) {
      // torch.compile: the residual add and the next norm (post_attn_norm after attn_residual; the
      // next layer's input_norm, or the final norm, after mlp_residual) in one reduction kernel:
      // reads the residual and the branch, writes the sum and the normalized output (4 x 2 B/e).
      // Backward, per norm, three kernels of 22.9 B/e together: the input gradient with the
      // residual's gradient and the consumers' gradients summed in, and the weight gradient in two
      // reduction stages (calibrate/results/lent-1xh100-2026-12-07-impl/impl-kernels.json,
      // compiled backward: 17.57 + 10.59 + 9.68 + 7.95 + 3.48 B per token x hidden over two norms,
      // durations at the measured 3.0 TB/s).
      eager(name, elems, {.vector_bytes = 4.0 * act_, .vector_kernels = 1}, compiled_norm_backward());
      return;
    }
    // Fused bias-dropout-add: read the branch and the residual, write the sum (and a 1-byte mask).
    memory(name, 3 * elems * act_ + (dropout ? elems : 0), (dropout ? 3 : 1) * elems, 1.0);
  }

  static EagerKernels compiled_norm_backward() { return {.vector_bytes = 22.9, .vector_kernels = 3}; }

  void finish_gemm_backward(std::vector<KernelOp>& out, const Entry& e) const {
    const GemmShape& f = e.op.gemm;
    KernelOp d = e.op;
    d.pass = Pass::BACKWARD;
    d.role = GemmRole::DGRAD;
    d.gemm = {.m = f.m, .n = f.k, .k = f.n, .batch = f.batch};
    fill_gemm(d, act_);
    out.push_back(d);
    if (e.frozen_weight) return;
    KernelOp w = e.op;
    w.pass = Pass::BACKWARD;
    w.role = GemmRole::WGRAD;
    w.gemm = {.m = f.k, .n = f.n, .k = f.m, .batch = f.batch};
    fill_gemm(w, wgrad_out_bytes_);
    out.push_back(w);
  }

  LayerOps finish() const {
    LayerOps ops;
    for (const auto& e : entries) ops.forward.push_back(e.op);
    const Checkpointing ckpt = t_.activation_checkpointing;
    if (ckpt == Checkpointing::FULL && layer_ >= 0 && l_.layer_recompute(layer_).replayed) {
      for (const auto& e : entries) {
        KernelOp r = e.op;
        r.pass = Pass::RECOMPUTE;
        ops.backward.push_back(r);
      }
    }
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
      const Entry& e = *it;
      if (ckpt == Checkpointing::SELECTIVE && e.recompute_selective && e.op.kind != OpKind::ATTENTION) {
        // The unfused attention core (its GEMMs and element-wise kernels) replayed before its backward.
        KernelOp r = e.op;
        r.pass = Pass::RECOMPUTE;
        ops.backward.push_back(r);
      }
      switch (e.op.kind) {
        case OpKind::GEMM: finish_gemm_backward(ops.backward, e); break;
        case OpKind::ATTENTION: {
          if (ckpt == Checkpointing::SELECTIVE && e.recompute_selective) {
            KernelOp r = e.op;
            r.pass = Pass::RECOMPUTE;
            ops.backward.push_back(r);
          }
          KernelOp b = e.op;
          b.pass = Pass::BACKWARD;
          fill_attention(b, true);
          ops.backward.push_back(b);
          for (const auto& x : e.backward_ops) ops.backward.push_back(x);
          break;
        }
        case OpKind::MEMORY: {
          if (!e.backward_ops.empty()) {
            for (const auto& b : e.backward_ops) ops.backward.push_back(b);
            break;
          }
          if (e.backward_factor <= 0) break;
          KernelOp b = e.op;
          b.pass = Pass::BACKWARD;
          b.bytes = Bytes::from_double(e.op.bytes.as_double() * e.backward_factor);
          b.flops = e.op.flops * e.backward_factor;
          ops.backward.push_back(b);
          break;
        }
      }
    }
    return ops;
  }

  static void fill_gemm(KernelOp& op, int out_bytes) {
    const GemmShape& g = op.gemm;
    const double in_b = bytes_per_element(op.dtype);
    op.flops = FlopCount::of(2.0 * g.m * g.n * g.k * g.batch);
    op.bytes = Bytes::from_double(g.batch * ((static_cast<double>(g.m) * g.k + static_cast<double>(g.k) * g.n) * in_b +
                                             static_cast<double>(g.m) * g.n * out_bytes));
  }

  void fill_attention(KernelOp& op, bool backward) const {
    const AttentionShape& a = op.attention;
    const double causal = a.causal ? 0.5 : 1.0;
    const double pairs = static_cast<double>(a.batch) * a.heads * a.seq_q * a.seq_kv * causal;
    const double elem = bytes_per_element(op.dtype);
    const double q = static_cast<double>(a.batch) * a.seq_q * a.heads * a.qk_dim * elem;
    const double k = static_cast<double>(a.batch) * a.seq_kv * a.kv_heads * a.qk_dim * elem;
    const double v = static_cast<double>(a.batch) * a.seq_kv * a.kv_heads * a.v_dim * elem;
    const double o = static_cast<double>(a.batch) * a.seq_q * a.heads * a.v_dim * elem;
    const double lse = static_cast<double>(a.batch) * a.heads * a.seq_q * 4;
    if (!backward) {
      op.flops = FlopCount::of(2 * pairs * (a.qk_dim + a.v_dim));
      op.bytes = Bytes::from_double(q + k + v + o + lse);
    } else {
      op.flops = FlopCount::of(2 * pairs * (3 * a.qk_dim + 2 * a.v_dim));
      // Read Q, K, V, O, dO, lse; write dQ, dK, dV.
      op.bytes = Bytes::from_double(2 * (q + k + v) + 2 * o + lse);
    }
  }

  const TransformerConfig& m_;
  const ParallelLayout& l_;
  const TrainingSpec& t_;
  std::int64_t layer_;
  int act_ = 2;
  int wgrad_out_bytes_ = 2;
  Precision gemm_dtype_ = Precision::BF16;
  bool lora_ = false;
  bool fused_ = false;
  bool eager_ = false;     // hf_eager
  bool plain_ = false;     // eager (plain PyTorch modules)
  bool compiled_ = false;  // compiled (torch.compile of them)
  std::int64_t T_ = 0, Tsp_ = 0, tp_ = 1;
};

void add_attention(Builder& b, const TransformerConfig& m) {
  const std::int64_t h = m.hidden_size;
  const std::int64_t T = b.T_;
  if (m.attention == AttentionKind::MLA) {
    const MlaSpec& a = m.mla;
    const std::int64_t q_out = m.num_heads * (a.qk_nope_head_dim + a.qk_rope_head_dim);
    if (a.q_lora_rank > 0) {
      b.linear("q_a", h, a.q_lora_rank, true, true, {});
      b.norm("q_a_norm", T, a.q_lora_rank);
      b.linear("q_b", a.q_lora_rank, q_out, true, false, {"q_proj"});
    } else {
      b.linear("q", h, q_out, true, false, {"q_proj"});
    }
    b.linear("kv_a", h, a.kv_lora_rank + a.qk_rope_head_dim, true, true, {});
    b.norm("kv_a_norm", T, a.kv_lora_rank);
    b.linear("kv_b", a.kv_lora_rank, m.num_heads * (a.qk_nope_head_dim + a.v_head_dim), true, false,
             {"k_proj", "v_proj"});
    // Rotary on the rope part of every query head and on the one shared rope key.
    const double rot = static_cast<double>(T) * (m.num_heads / b.tp_ + 1) * a.qk_rope_head_dim;
    b.memory("rotary", 2 * rot * b.act_, 3 * rot, 1.0);
    b.attention(m.num_heads, m.num_heads, a.qk_nope_head_dim + a.qk_rope_head_dim, a.v_head_dim);
    b.linear("attn_out", m.num_heads * a.v_head_dim, h, false, false, {"o_proj"});
    return;
  }
  if (b.fused_ && !b.lora_) {
    b.linear("qkv", h, m.q_width(), true, false, {}, m.q_width() + 2 * m.kv_width());
  } else {
    b.linear("q", h, m.q_width(), true, false, {"q_proj"});
    b.linear("k", h, m.kv_width(), true, false, {"k_proj"});
    b.linear("v", h, m.kv_width(), true, false, {"v_proj"});
  }
  if (m.position == PositionKind::ROTARY) {
    const double rot = static_cast<double>(T) * (m.q_width() + m.kv_width()) / b.tp_ * m.rotary_fraction;
    if (b.eager_) {
      b.eager("rotary", rot, Builder::eager_rotary_forward(2), Builder::eager_rotary_backward(2));
    } else if (b.plain_) {
      // x cos + rotate_half(x) sin as written: the forward as Hugging Face's (five kernels per q
      // and k); autograd's backward as profiled: g * cos and g * sin (strided 4 each), -g over half
      // (2), the slices' gradients joined by one cat (vectorized 4), the two gradients added
      // (strided 6) and the transposed gradient made contiguous for the GEMM (strided 4).
      b.eager("rotary", rot, Builder::eager_rotary_forward(2),
              {.vector_bytes = 4, .vector_kernels = 2, .strided_bytes = 4 + 4 + 2 + 6 + 4, .strided_elements = 4.5,
               .strided_kernels = 10});
    } else if (b.compiled_) {
      // One Inductor kernel per q and k (cos and sin computed in it); effective bytes from the
      // profiled durations at 3.0 TB/s over T (q + kv width) elements: forward 12.3 + 4.0 us,
      // backward 24.3 + 7.2 us at 1 x 2048 tokens of width 2048 + 512 (impl-kernels.json).
      b.eager("rotary", rot, {.vector_bytes = 9.3, .vector_kernels = 2}, {.vector_bytes = 18.0, .vector_kernels = 2});
    } else {
      b.memory("rotary", 2 * rot * b.act_, 3 * rot, 1.0);
    }
  }
  b.attention(m.num_heads, m.num_kv_heads, m.head_dim, m.head_dim);
  b.linear("attn_out", m.q_width(), h, false, false, {"o_proj"});
}

// A dense MLP of width f on T tokens (also a shared expert, with a name prefix).
void add_mlp(Builder& b, const TransformerConfig& m, const std::string& prefix, std::int64_t f) {
  const std::int64_t h = m.hidden_size;
  const double tokens = static_cast<double>(b.T_);
  const double cols = static_cast<double>(f) / b.tp_;
  if (m.mlp == MlpKind::GATED_SILU) {
    if (b.fused_ && !b.lora_) {
      b.linear(prefix + "mlp_gate_up", h, f, true, false, {}, 2 * f);
    } else {
      b.linear(prefix + "mlp_gate", h, f, true, false, {"gate_proj"});
      b.linear(prefix + "mlp_up", h, f, true, false, {"up_proj"});
    }
    if (b.compiled_) {
      // One Inductor kernel: reads gate and up, writes the product (6 B/e); backward one kernel
      // reads gate, up and dy and writes both gradients (10).
      b.eager(prefix + "swiglu", tokens * cols, {.vector_bytes = 6, .vector_kernels = 1},
              {.vector_bytes = 10, .vector_kernels = 1});
    } else if (b.eager_ || b.plain_) {
      // act_fn(gate) * up in two kernels (silu: 4 B/e, product: 6); backward: g * up, g * silu
      // (6 each) and silu's backward (6).
      b.eager(prefix + "swiglu", tokens * cols, {.vector_bytes = 4 + 6, .vector_kernels = 2},
              {.vector_bytes = 6 + 6 + 6, .vector_kernels = 3});
    } else {
      // silu(gate) * up: read two, write one; backward reads gate, up, dy and writes dgate, dup.
      b.memory(prefix + "swiglu", 3 * tokens * cols * b.act_, 5 * tokens * cols, 5.0 / 3.0);
    }
  } else {
    b.linear(prefix + "mlp_up", h, f, true, false, {"up_proj"});
    b.memory(prefix + (m.mlp == MlpKind::GELU ? "gelu" : "relu"), 2 * tokens * cols * b.act_, 8 * tokens * cols, 1.5);
  }
  b.linear(prefix + "mlp_down", f, h, false, false, {"down_proj"});
}

void add_moe(Builder& b, const TransformerConfig& m) {
  const MoeSpec& e = m.moe;
  const std::int64_t h = m.hidden_size;
  const double Tsp = static_cast<double>(b.Tsp_);
  const double T = static_cast<double>(b.T_);
  // Router on the (sequence-parallel) tokens of this rank: h -> E logits, softmax/sigmoid, top-k.
  b.gemm("router", b.Tsp_, e.num_experts, h, b.lora_, 1, Precision::BF16);
  b.memory("router_topk", 3 * Tsp * e.num_experts * 4, 5 * Tsp * e.num_experts, 1.0, 3);
  // Balanced routing: T k token copies per rank, spread over E/ep local experts.
  const std::int64_t local = e.num_experts / b.l_.ep();
  const double routed = T * e.experts_per_token;
  const std::int64_t per_expert = ceil_div(b.T_ * e.experts_per_token, local);
  b.memory("moe_permute", 2 * routed * h * b.act_, 0, 1.0, 2);
  const std::int64_t fe = e.expert_intermediate_size;
  const std::int64_t fe_cols = fe / b.tp_;
  if (m.mlp == MlpKind::GATED_SILU) {
    b.gemm("expert_gate_up", per_expert, 2 * fe_cols, h, b.lora_, local);
    b.memory("expert_act", 3 * routed * fe_cols * b.act_, 5 * routed * fe_cols, 5.0 / 3.0);
  } else {
    b.gemm("expert_up", per_expert, fe_cols, h, b.lora_, local);
    b.memory("expert_act", 2 * routed * fe_cols * b.act_, 8 * routed * fe_cols, 1.5);
  }
  b.gemm("expert_down", per_expert, h, fe_cols, b.lora_, local);
  // Un-permute: read the k expert outputs of each token, weight and sum them.
  b.memory("moe_unpermute", (routed + T) * h * b.act_, 2 * routed * h, 1.0, 2);
  if (e.shared_intermediate_size > 0) {
    add_mlp(b, m, "shared_", e.shared_intermediate_size);
    if (e.shared_expert_gate) {
      b.gemm("shared_expert_gate", b.T_, 1, h, b.lora_, 1, Precision::BF16);
      b.memory("shared_gate_mul", 3 * T * h * b.act_, 2 * T * h, 1.0);
    }
    b.memory("shared_add", 3 * T * h * b.act_, T * h, 1.0);
  }
}

}  // namespace

LayerOpBuilder::LayerOpBuilder(const TransformerConfig& model, const ParallelLayout& layout,
                               const TrainingSpec& training)
    : model_(model), layout_(layout), training_(training) {}

LayerOps LayerOpBuilder::layer(std::int64_t layer) const {
  Builder b(model_, layout_, training_, layer);
  const std::int64_t h = model_.hidden_size;
  // Eager autograd adds the gradients of a norm's consumers: q, k, v (one fused qkv GEMM under
  // MLA's q_a/kv_a too: two consumers) and gate, up.
  const bool separate_qkv = !b.fused_ || b.lora_;
  b.norm("input_norm", b.Tsp_, h, model_.attention == AttentionKind::MLA ? 2 : (separate_qkv ? 3 : 1));
  add_attention(b, model_);
  b.residual("attn_residual");
  b.norm("post_attn_norm", b.Tsp_, h, model_.mlp == MlpKind::GATED_SILU && !model_.is_moe_layer(layer) ? 2 : 1);
  if (model_.is_moe_layer(layer)) {
    add_moe(b, model_);
  } else {
    add_mlp(b, model_, "", model_.intermediate_size);
  }
  b.residual("mlp_residual");
  return b.finish();
}

LayerOps LayerOpBuilder::embedding() const {
  Builder b(model_, layout_, training_, -1);
  const double elems = static_cast<double>(b.T_) * model_.hidden_size;
  const double out_elems = static_cast<double>(b.Tsp_) * model_.hidden_size;
  // Vocabulary-parallel lookup: read the rows of this rank's vocabulary range, write the output.
  // Backward: the output gradient summed into the rows of the weight gradient it touches
  // (read-modify-write), into a dense gradient of the rank's whole vocabulary range that PyTorch
  // zero-fills first (aten/src/ATen/native/cuda/Embedding.cu, embedding_dense_backward_cuda:
  // A B per element of V/tp x h); Megatron's DDP hook then adds that dense gradient into the fp32
  // main_grad (core_r0.8.0 megatron/core/distributed/distributed_data_parallel.py, param_hook:
  // main_grad.add_(grad), read 4 + A, write 4).
  const double table = std::ceil(static_cast<double>(model_.vocab_size) / b.tp_) * model_.hidden_size;
  const bool megatron = layout_.framework() == Framework::MEGATRON;
  double backward_bytes = elems * (b.act_ + 8) + table * (b.act_ + (megatron ? 8.0 + b.act_ : 0.0));
  double forward_bytes = elems * b.act_ + out_elems * b.act_;
  int backward_kernels = megatron ? 3 : 2;
  if (b.compiled_) {
    // torch.compile: the lookup and the first layer's input norm in one kernel (the normalized
    // output written too); backward, that norm's three kernels (the residual's compiled backward),
    // the row sums fused into them, and the table's gradient accumulated in fp32 (zero fill 4 B,
    // down-cast 4 + 2 B per table element: triton_poi_fused_embedding_dense_backward x 2).
    forward_bytes += out_elems * b.act_;
    backward_bytes = elems * (b.act_ + 8) + out_elems * Builder::compiled_norm_backward().vector_bytes + table * 10.0;
    backward_kernels = 2 + Builder::compiled_norm_backward().vector_kernels;
  }
  b.memory("embedding", forward_bytes, 0, 1.0);
  if (b.lora_) {
    b.entries.back().backward_factor = 0;  // a frozen table has no gradient
  } else {
    // zero fill, the row sums, (Megatron) the main_grad add
    KernelOp bwd = b.memory_op("embedding", backward_bytes, backward_kernels, MemoryPath::VECTORIZED, 0);
    bwd.pass = Pass::BACKWARD;
    bwd.flops = FlopCount::of(0);
    b.entries.back().backward_ops = {bwd};
  }
  if (model_.position == PositionKind::LEARNED || model_.embedding_dropout > 0) {
    b.memory("embedding_add_dropout", 3 * out_elems * b.act_ + (model_.embedding_dropout > 0 ? out_elems : 0),
             2 * out_elems, 1.0);
  }
  return b.finish();
}

LayerOps LayerOpBuilder::head() const {
  Builder b(model_, layout_, training_, -1);
  const std::int64_t h = model_.hidden_size;
  b.norm("final_norm", b.Tsp_, h);
  const std::int64_t vocab_cols = ceil_div(model_.vocab_size, b.tp_);
  b.gemm("lm_head", b.T_, vocab_cols, h, b.lora_, 1, Precision::BF16);
  const double logits = static_cast<double>(b.T_) * vocab_cols;
  if (b.compiled_) {
    // Inductor's cross-entropy over N = T V logits: an online log-softmax reading the bf16 logits
    // twice (4 B) and the target's entry per row; backward one kernel reads the logits and writes
    // their gradient (4): profiled 4.1 and 4.5 B per logit (impl-kernels.json source, head).
    const double rows = static_cast<double>(b.T_);
    b.eager("cross_entropy", logits, {.vector_bytes = 4, .vector_kernels = 1, .tiny_bytes = 12 * rows, .tiny_kernels = 1},
            {.vector_bytes = 4, .vector_kernels = 1});
  } else if (b.eager_ || b.plain_) {
    // (eager: F.cross_entropy(logits.float()) runs the same kernels, as profiled.)
    // Hugging Face ForCausalLMLoss in eager mode over N = T V logits: logits.float() (strided
    // up-cast, 6 B), log_softmax over fp32 rows (a max/sum pass and a write pass: 16 B), nll per
    // row; backward: the zero-filled fp32 gradient (4), nll's scatter, log_softmax backward (16),
    // the down-cast to bf16 (6).
    const double rows = static_cast<double>(b.T_);
    b.eager("cross_entropy", logits,
            {.vector_bytes = 16, .vector_kernels = 1, .strided_bytes = 6, .strided_elements = 1, .strided_kernels = 1,
             .tiny_bytes = 12 * rows, .tiny_kernels = 1},
            {.vector_bytes = 4 + 16 + 6, .vector_kernels = 3, .tiny_bytes = 12 * rows, .tiny_kernels = 1});
  } else if (layout_.framework() == Framework::MEGATRON) {
    // Megatron's vocabulary-parallel cross-entropy as PyTorch ops over N = T V/tp logits
    // (core_r0.8.0 megatron/core/tensor_parallel/cross_entropy.py, unfused unless
    // --cross-entropy-loss-fusion): logits.float() (2 + 4 B), the row max (4), the max subtracted
    // in place (8), exp in place (8), the row sum (4), the division into the softmax in place (8):
    // 34 + A B per logit in 6 kernels, plus a few per row (target mask, predicted logit, log, loss);
    // backward: the target's entry of each row, the softmax times the loss gradient in place (8),
    // and the cast back to the activation dtype for the LM head's backward (4 + A): 12 + A B in 2.
    const double rows = static_cast<double>(b.T_);
    b.eager("cross_entropy", logits, {.vector_bytes = 34.0 + b.act_, .vector_kernels = 6, .tiny_bytes = 24 * rows,
                                      .tiny_kernels = 5},
            {.vector_bytes = 12.0 + b.act_, .vector_kernels = 2, .tiny_bytes = 12 * rows, .tiny_kernels = 2});
  } else {
    // Hugging Face: logits.float() (read, write fp32), log_softmax (read, write fp32), nll;
    // backward: the log_softmax gradient in fp32 and its cast back.
    b.memory("cross_entropy", logits * (b.act_ + 4 + 8), 5 * logits, (8.0 + 4 + b.act_) / (b.act_ + 12), 4);
  }
  return b.finish();
}

std::string_view to_string(Pass p) {
  switch (p) {
    case Pass::FORWARD: return "forward";
    case Pass::BACKWARD: return "backward";
    case Pass::RECOMPUTE: return "recompute";
  }
  return "forward";
}

std::string_view to_string(GemmRole r) {
  switch (r) {
    case GemmRole::NONE: return "";
    case GemmRole::FPROP: return "fprop";
    case GemmRole::DGRAD: return "dgrad";
    case GemmRole::WGRAD: return "wgrad";
  }
  return "";
}

FlopCount total_flops(const std::vector<KernelOp>& ops) {
  FlopCount f;
  for (const auto& o : ops) f += o.flops;
  return f;
}

Bytes total_bytes(const std::vector<KernelOp>& ops) {
  Bytes b;
  for (const auto& o : ops) b += o.bytes;
  return b;
}

Duration total_time(const std::vector<KernelOp>& ops) {
  Duration d;
  for (const auto& o : ops) d += o.time;
  return d;
}

}  // namespace clustersim::models
