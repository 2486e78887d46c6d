#pragma once
// One GPU kernel (or a fused group of small kernels) of a training step, with the work it does:
// floating-point operations and HBM bytes read plus written, and the shape that decides how
// efficiently the GPU runs it. The compute model (compute_model.hpp) turns it into a duration.
//
// Counting conventions
//   GEMM C[m,n] = A[m,k] B[k,n]: 2 m n k FLOP per GEMM of a batch; bytes (m k + k n) x input
//     bytes + m n x output bytes (one pass over each operand; tiles that re-read operands from L2
//     are the efficiency curve's business).
//   Backward of a linear layer Y = X W (X: m x k, W: k x n): dgrad dX = dY W^T is a GEMM with
//     (m, n, k) = (m, k, n); wgrad dW = X^T dY is (k, n, m). Each costs the forward's 2 m n k, so
//     a linear's backward is 2x its forward.
//   Causal flash attention (Dao 2023, "FlashAttention-2", Sec. 4.1 accounting): forward
//     2 b H s_q s_kv (d_qk + d_v) x 1/2 for the causal half (QK^T and PV, 4 b H s^2 d / 2 when
//     d_qk = d_v); backward recomputes S = QK^T and does dV, dP, dQ, dK: 2 b H s_q s_kv (3 d_qk +
//     2 d_v) x 1/2, i.e. 2.5x the forward. HBM bytes: Q, K, V read and O, log-sum-exp written
//     forward; Q, K, V, O, dO, log-sum-exp read and dQ, dK, dV written backward (no s^2 matrix).
//   Element-wise work (norms, activations, rotary, dropout, residual adds, permutations, loss):
//     bytes of every tensor read and written; FLOPs are counted but these kernels are bound by
//     memory bandwidth. PyTorch runs an element-wise op through a vectorized kernel only when
//     every operand is contiguous, of one dtype and not broadcast; otherwise (a transposed view,
//     a broadcast weight, an up-cast) its generic TensorIterator kernel computes each operand's
//     offset per element and is bound by that arithmetic rather than by HBM: such ops are
//     MemoryPath::STRIDED and carry the elements they produce.

#include <cstdint>
#include <string>
#include <vector>

#include "hardware/units.hpp"
#include "models/scenario.hpp"

namespace clustersim::models {

enum class OpKind { GEMM, ATTENTION, MEMORY };
enum class Pass { FORWARD, BACKWARD, RECOMPUTE };
enum class GemmRole { NONE, FPROP, DGRAD, WGRAD };
enum class MemoryPath { VECTORIZED, STRIDED };

struct GemmShape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t batch = 1;  // independent GEMMs of this shape (grouped experts)
};

struct AttentionShape {
  std::int64_t batch = 0;
  std::int64_t heads = 0;     // query heads on this rank
  std::int64_t kv_heads = 0;  // key/value heads on this rank
  std::int64_t seq_q = 0;     // query tokens on this rank
  std::int64_t seq_kv = 0;    // key tokens each query block sees (the whole sequence under context parallelism)
  std::int64_t qk_dim = 0;
  std::int64_t v_dim = 0;
  bool causal = true;
};

struct KernelOp {
  std::string name;         // "qkv", "flash_attn", "mlp_down", "input_norm", "lora.q_proj.B", ...
  std::int64_t layer = -1;  // transformer layer, -1 for embedding and head work
  OpKind kind = OpKind::MEMORY;
  Pass pass = Pass::FORWARD;
  GemmRole role = GemmRole::NONE;
  Precision dtype = Precision::BF16;  // GEMM input precision (fp8 GEMMs under fp8 training)
  FlopCount flops;
  Bytes bytes;
  GemmShape gemm;            // kind == GEMM
  AttentionShape attention;  // kind == ATTENTION
  int kernels = 1;           // kernel launches this op stands for
  MemoryPath path = MemoryPath::VECTORIZED;  // kind == MEMORY
  std::int64_t elements = 0;                 // STRIDED: elements produced (over all its kernels)
  Duration time;             // filled by ComputeModel::annotate
};

std::string_view to_string(Pass p);
std::string_view to_string(GemmRole r);
// Sums over a list of ops.
FlopCount total_flops(const std::vector<KernelOp>& ops);
Bytes total_bytes(const std::vector<KernelOp>& ops);
Duration total_time(const std::vector<KernelOp>& ops);

}  // namespace clustersim::models
