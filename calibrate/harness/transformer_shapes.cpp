#include "calibrate/harness/transformer_shapes.hpp"

#include <algorithm>

namespace clustersim::harness {

ModelDims model_dims(const std::string& name) {
  if (name == "llama3-8b") return {name, 4096, 14336, 32, 8, 128, 128256};
  if (name == "llama3-70b") return {name, 8192, 28672, 64, 8, 128, 128256};
  throw UsageError("unknown model '" + name + "': expected llama3-8b or llama3-70b");
}

namespace {

void add_passes(std::vector<GemmShape>& out, const Options& opt, GemmShape base, std::int64_t tokens,
                std::int64_t n_out, std::int64_t k_in) {
  for (const auto& dtype : opt.gemm_dtypes) {
    for (const auto& pass : opt.gemm_passes) {
      GemmShape g = base;
      g.dtype = dtype;
      g.pass = pass;
      if (pass == "fwd") {
        g.m = tokens, g.n = n_out, g.k = k_in;
        g.a_transposed = false, g.b_transposed = true;
      } else if (pass == "dgrad") {
        g.m = tokens, g.n = k_in, g.k = n_out;
        g.a_transposed = false, g.b_transposed = false;
      } else {
        g.m = n_out, g.n = k_in, g.k = tokens;
        g.a_transposed = true, g.b_transposed = false;
      }
      if (dtype == "fp8") g.a_transposed = false, g.b_transposed = true;
      out.push_back(g);
    }
  }
}

}  // namespace

std::vector<GemmShape> gemm_shapes(const Options& opt) {
  std::vector<GemmShape> out;
  for (const auto& model : opt.gemm_models) {
    const ModelDims d = model_dims(model);
    for (const int tp : opt.gemm_tp) {
      for (const std::int64_t tokens : opt.gemm_tokens) {
        GemmShape base;
        base.model = model;
        base.tp = tp;
        base.tokens = tokens;
        const std::int64_t kv = std::max<std::int64_t>(1, d.kv_heads / tp) * tp;  // replicated when tp > kv_heads
        struct Layer {
          const char* name;
          std::int64_t n, k;
        };
        const Layer layers[] = {
            {"qkv", (d.heads + 2 * kv) * d.head_dim / tp, d.hidden},
            {"attn_out", d.hidden, d.heads * d.head_dim / tp},
            {"mlp_up", d.intermediate / tp, d.hidden},
            {"mlp_down", d.hidden, d.intermediate / tp},
            {"lm_head", (d.vocab + tp - 1) / tp, d.hidden},
        };
        for (const auto& l : layers) {
          GemmShape g = base;
          g.name = l.name;
          add_passes(out, opt, g, tokens, l.n, l.k);
        }
      }
    }
  }
  if (opt.gemm_square > 0) {
    for (const auto& dtype : opt.gemm_dtypes) {
      GemmShape g;
      g.name = "square";
      g.dtype = dtype;
      g.pass = "fwd";
      g.m = g.n = g.k = opt.gemm_square;
      g.tokens = opt.gemm_square;
      out.push_back(g);
    }
  }
  return out;
}

double AttentionShape::flops() const {
  const double fwd = 4.0 * batch * heads * static_cast<double>(seq_len) * seq_len * head_dim / 2.0;
  return direction == "bwd" ? 2.5 * fwd : fwd;
}

std::vector<AttentionShape> attention_shapes(const Options& opt) {
  std::vector<AttentionShape> out;
  for (const auto& model : opt.attn_models) {
    const ModelDims d = model_dims(model);
    for (const int tp : opt.attn_tp) {
      for (const std::int64_t s : opt.attn_seqlens) {
        for (const auto& dir : opt.attn_directions) {
          AttentionShape a;
          a.model = model;
          a.tp = tp;
          a.seq_len = s;
          a.batch = std::max<std::int64_t>(1, opt.attn_tokens / s);
          a.heads = std::max<std::int64_t>(1, d.heads / tp);
          a.kv_heads = std::max<std::int64_t>(1, d.kv_heads / tp);
          a.head_dim = d.head_dim;
          a.direction = dir;
          out.push_back(a);
        }
      }
    }
  }
  return out;
}

}  // namespace clustersim::harness
