#include "models/step_plan.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "models/layer_ops.hpp"
#include "models/parameter_tensors.hpp"
#include "sim/exec/task_graph.hpp"

namespace clustersim::models {

namespace nc = sim::nccl;

std::string_view to_string(WorkClass c) {
  switch (c) {
    case WorkClass::COMPUTE: return "compute";
    case WorkClass::TP_COMM: return "tensor-parallel";
    case WorkClass::CP_COMM: return "context-parallel";
    case WorkClass::EP_COMM: return "expert-parallel";
    case WorkClass::PP_COMM: return "pipeline";
    case WorkClass::DP_COMM: return "data-parallel";
    case WorkClass::OFFLOAD: return "offload";
    case WorkClass::HOST: return "host";
    case WorkClass::OPTIMIZER: return "optimizer";
    case WorkClass::CPU_OPTIMIZER: return "cpu-optimizer";
    case WorkClass::MARKER: return "marker";
  }
  return "?";
}

namespace {

enum class Attach { PATH, PREV, NEXT };

struct Atom {
  int op = -1;    // index into the section's ops
  int comm = -1;  // index into StagePlan::comms
  Attach attach = Attach::PATH;
  int split = 1;  // the GEMM beside it runs in this many chunks (Transformer Engine overlap)
};

// Megatron --tp-comm-overlap runs Transformer Engine's userbuffers overlap with its default
// configuration (transformer_engine/pytorch/module/base.py, initialize_ub, get_default_config):
//   ring_exchange  qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad: the all-gather moves by copy
//                  engine (num_sm 1) while the GEMM runs in tp chunks of T/tp rows (num_splits = tp)
//   pipeline       proj_fprop, fc2_fprop: the reduce-scatter on 16 SMs (num_sm 16) while the GEMM
//                  runs in 4 chunks (num_splits 4)
//   bulk           qkv/fc1 dgrad and wgrad: the collective on 16 SMs beside the whole GEMM
// Megatron requires sequence parallelism for it; without SP the all-reduces stay on the path.
constexpr int kUserbufferCommSms = 16;
constexpr int kPipelineSplits = 4;

bool starts_with(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

PassItem compute_item(Duration time, std::string name) {
  PassItem it;
  it.time = time;
  it.name = std::move(name);
  return it;
}

PassItem comm_item(int comm, int beside, std::string name) {
  PassItem it;
  it.is_comm = true;
  it.comm = comm;
  it.beside = beside;
  it.name = std::move(name);
  return it;
}

// DeepSpeed ZeRO-3's parameter reuse (runtime/zero/partitioned_param_coordinator.py,
// __params_to_release): after a module runs, its hook releases the module's parameters unless the
// traced order uses them again before stage3_max_reuse_distance elements of module parameters have
// been walked past (the modules in between, repeats counted); a released module's next use
// gathers it again. Parameters below stage3_param_persistence_threshold elements are persistent:
// gathered once, never released. The trace of one micro-batch on a stage: the units' forwards in
// order, then per unit in reverse its backward, which for a layer under full activation
// checkpointing is the recomputed forward (modules in order) followed by the backward (modules in
// reverse). `modules[u]`: unit u's modules in forward order, each its elements on this rank split
// into dense and expert. Returns per unit the elements gathered before its forward and during its
// backward (the recompute's fetch and any fetch again after it).
struct ModuleNumel {
  double dense = 0, expert = 0;
  double all() const { return dense + expert; }
};
struct Zero3Fetch {
  ModuleNumel forward, backward;
};
std::vector<Zero3Fetch> zero3_fetches(const std::vector<std::vector<ModuleNumel>>& modules,
                                      const std::vector<bool>& recomputed, double max_reuse_distance) {
  struct Use {
    int unit, module, id;  // id: the module's index over all units
    bool backward;
  };
  std::vector<Use> trace;
  const int n = static_cast<int>(modules.size());
  std::vector<int> first(modules.size() + 1, 0);  // id of unit u's first module
  for (int u = 0; u < n; ++u) first[u + 1] = first[u] + static_cast<int>(modules[u].size());
  for (int u = 0; u < n; ++u) {
    for (int m = 0; m < static_cast<int>(modules[u].size()); ++m) trace.push_back({u, m, first[u] + m, false});
  }
  for (int u = n - 1; u >= 0; --u) {
    const int mods = static_cast<int>(modules[u].size());
    if (recomputed[u]) {
      for (int m = 0; m < mods; ++m) trace.push_back({u, m, first[u] + m, true});
    }
    for (int m = mods - 1; m >= 0; --m) trace.push_back({u, m, first[u] + m, true});
  }
  // prefix[i]: elements of trace[0 .. i-1]; next[i]: the next use of the same module, or -1.
  const std::size_t len = trace.size();
  std::vector<double> prefix(len + 1, 0.0);
  for (std::size_t i = 0; i < len; ++i) prefix[i + 1] = prefix[i] + modules[trace[i].unit][trace[i].module].all();
  std::vector<long> next(len, -1), later(static_cast<std::size_t>(first[n]), -1);
  for (long i = static_cast<long>(len) - 1; i >= 0; --i) {
    long& seen = later[static_cast<std::size_t>(trace[i].id)];
    next[i] = seen;
    seen = i;
  }
  std::vector<Zero3Fetch> out(modules.size());
  std::vector<char> available(static_cast<std::size_t>(first[n]), 0);
  for (std::size_t i = 0; i < len; ++i) {
    const Use& use = trace[i];
    const ModuleNumel& mod = modules[use.unit][use.module];
    char& here = available[static_cast<std::size_t>(use.id)];
    if (!here) {
      ModuleNumel& f = use.backward ? out[use.unit].backward : out[use.unit].forward;
      f.dense += mod.dense;
      f.expert += mod.expert;
    }
    // Kept when the next use comes before the walk past the modules in between reaches the limit.
    here = next[i] >= 0 && prefix[static_cast<std::size_t>(next[i])] - prefix[i + 1] < max_reuse_distance;
  }
  return out;
}

// Kernels with their times, built once per plan: every stage's layers of one kind run the same
// kernels (layer_ops.hpp depends on the layer only through whether it is a MoE layer).
struct OpsCache {
  std::map<int, LayerOps> layers;  // key: 1 for a MoE layer, 0 for a dense one; + 2 when recomputed
  std::map<int, LayerCommSizes> comm;  // the same key
  std::optional<LayerOps> embedding, head;
};

class StageBuilder {
 public:
  StageBuilder(const PlanInputs& in, PredictorCache& cache, StepPlan& plan, int stage, OpsCache& ops)
      : in_(in), cache_(cache), plan_(plan), L_(in.training.layout()), ops_(ops) {
    st_.stage = stage;
    st_.rank = in.grid.stage_rank(stage);
  }

  StagePlan build() {
    make_groups();
    make_units();
    make_data_parallel();
    make_pipeline();
    make_optimizer();
    st_.memory = in_.training.memory(st_.stage, *in_.node.gpu, in_.params, &in_.scenario.nccl.env);
    if (st_.memory.activations.count() > 0) {
      auto detail = [&](const char* key) {
        auto it = st_.memory.details.find(key);
        return it == st_.memory.details.end() ? 0.0 : it->second.as_double();
      };
      const double layers = L_.in_flight_layer_activations(st_.stage);
      const double mbs = static_cast<double>(L_.in_flight_micro_batches(st_.stage));
      if (layers > 0) st_.saved_per_layer = Bytes::from_double(detail("activations.layers") / layers);
      if (mbs > 0) {
        st_.saved_embedding = Bytes::from_double(detail("activations.embedding") / mbs);
        st_.saved_head = Bytes::from_double(detail("activations.head") / mbs);
      }
    }
    return std::move(st_);
  }

 private:
  // ---- groups and comms ----
  void make_groups() {
    const CommContext ctx{in_.scenario, in_.node, in_.profile, in_.grid};
    auto add = [&](GroupKind k) {
      st_.groups.push_back(make_group(ctx, cache_, st_.rank, k));
      return static_cast<int>(st_.groups.size() - 1);
    };
    g_tp_ = add(GroupKind::TENSOR);
    g_cp_ = add(GroupKind::CONTEXT);
    g_ep_ = add(GroupKind::EXPERT);
    g_dp_ = add(GroupKind::DATA);
    g_edp_ = add(GroupKind::EXPERT_DATA);
    const int p = L_.pp();
    if (p > 1) {
      const int next = in_.grid.stage_rank((st_.stage + 1) % p);
      const int prev = in_.grid.stage_rank((st_.stage + p - 1) % p);
      st_.groups.push_back(make_pair_group(ctx, cache_, st_.rank, next));
      g_next_ = static_cast<int>(st_.groups.size() - 1);
      st_.groups.push_back(make_pair_group(ctx, cache_, st_.rank, prev));
      g_prev_ = static_cast<int>(st_.groups.size() - 1);
      if (in_.model.tied_embeddings && (st_.stage == 0 || st_.stage == p - 1)) {
        const int other = in_.grid.stage_rank(st_.stage == 0 ? p - 1 : 0);
        st_.groups.push_back(make_pair_group(ctx, cache_, st_.rank, other));
        g_tied_ = static_cast<int>(st_.groups.size() - 1);
      }
    }
  }

  int account(const std::string& name, const GroupComm* g) {
    const std::string group = g ? std::string(to_string(g->kind)) : std::string("host");
    for (std::size_t i = 0; i < plan_.accounts.size(); ++i) {
      if (plan_.accounts[i].name == name && plan_.accounts[i].group == group) return static_cast<int>(i);
    }
    plan_.accounts.push_back(CommAccount{name, group, "", g ? g->transport : std::string("PCIe")});
    return static_cast<int>(plan_.accounts.size() - 1);
  }

  // A collective on a group (deduplicated by name, size and repeat).
  int comm(const std::string& name, WorkClass cls, int group, nc::CollectiveOp op, Bytes size, int repeat = 1,
           double sm_share = -1) {
    if (group < 0 || st_.groups[group].single() || size.count() <= 0) return -1;
    for (std::size_t i = 0; i < st_.comms.size(); ++i) {
      const CommSpec& c = st_.comms[i];
      if (c.name == name && c.group == group && c.size == size && c.repeat == repeat && c.op == op)
        return static_cast<int>(i);
    }
    CommSpec c;
    c.name = name;
    c.cls = cls;
    c.group = group;
    c.op = op;
    c.size = size;
    c.repeat = std::max(1, repeat);
    c.cost = collective_cost(cache_, st_.groups[group], op, size);
    const int sms = std::max(1, in_.node.gpu->sm_count);
    c.sm_share = std::min(sim::exec::kMaxSmShare, sm_share >= 0 ? sm_share : static_cast<double>(c.cost.channels) / sms);
    c.account = account(name, &st_.groups[group]);
    if (plan_.accounts[c.account].algorithm.empty()) plan_.accounts[c.account].algorithm = c.cost.algorithm;
    st_.comms.push_back(c);
    return static_cast<int>(st_.comms.size() - 1);
  }

  // A host <-> device copy of `bytes` while every GPU of the node copies the same way.
  int host_copy(const std::string& name, Bytes bytes, bool h2d, std::optional<bool> pinned = std::nullopt) {
    if (bytes.count() <= 0) return -1;
    for (std::size_t i = 0; i < st_.comms.size(); ++i) {
      const CommSpec& c = st_.comms[i];
      if (c.name == name && c.group == -1 && c.size == bytes) return static_cast<int>(i);
    }
    CommSpec c;
    c.name = name;
    c.cls = WorkClass::OFFLOAD;
    c.size = bytes;
    c.host_to_device = h2d;
    c.pinned = pinned.value_or(in_.scenario.parallelism.zero.pin_memory);
    const int concurrent = std::max(1, in_.scenario.cluster.gpus_per_node);
    const Bandwidth bw = in_.host.copy_bandwidth(h2d, c.pinned, concurrent);
    c.cost.time = transfer_time(bytes, bw);
    c.cost.bandwidth_time = c.cost.time;
    c.cost.bus_bytes = bytes.as_double();
    c.cost.algorithm = h2d ? "cudaMemcpy H2D" : "cudaMemcpy D2H";
    c.account = account(name, nullptr);
    plan_.accounts[c.account].algorithm = c.cost.algorithm;
    st_.comms.push_back(c);
    return static_cast<int>(st_.comms.size() - 1);
  }

  bool tp_overlap() const {
    return in_.scenario.parallelism.framework == Framework::MEGATRON && in_.scenario.parallelism.megatron.tp_comm_overlap;
  }

  // ---- passes ----
  // Items from one section of ops (same pass kind), with the collectives inserted by `rules`.
  std::vector<PassItem> items_of(const std::vector<KernelOp>& ops, std::size_t b, std::size_t e, bool backward,
                                 const LayerCommSizes& c, bool moe_layer) {
    std::vector<Atom> atoms;
    const bool sp = L_.sequence_parallel();
    const bool tp = L_.tp() > 1;
    const bool overlap = tp_overlap() && sp;
    const Attach out_attach = overlap ? Attach::PREV : Attach::PATH;
    const Attach in_attach = overlap ? Attach::NEXT : Attach::PATH;
    const int sms = std::max(1, in_.node.gpu->sm_count);
    // Overlapped: forward reduce-scatter "pipeline", backward reduce-scatter "bulk" (16 SMs);
    // all-gathers "ring_exchange" (copy engine: one SM).
    const int tp_out = !tp ? -1
                       : overlap ? comm("TP reduce-scatter (overlapped)", WorkClass::TP_COMM, g_tp_,
                                        nc::CollectiveOp::REDUCE_SCATTER, c.tp_activation, 1,
                                        static_cast<double>(kUserbufferCommSms) / sms)
                                 : comm(sp ? "TP reduce-scatter" : "TP all-reduce", WorkClass::TP_COMM, g_tp_,
                                        sp ? nc::CollectiveOp::REDUCE_SCATTER : nc::CollectiveOp::ALL_REDUCE,
                                        c.tp_activation);
    const int tp_ag = !(tp && sp) ? -1
                      : overlap   ? comm("TP all-gather (overlapped)", WorkClass::TP_COMM, g_tp_,
                                         nc::CollectiveOp::ALL_GATHER, c.tp_activation, 1, 1.0 / sms)
                                  : comm("TP all-gather", WorkClass::TP_COMM, g_tp_, nc::CollectiveOp::ALL_GATHER,
                                         c.tp_activation);
    const int out_split = overlap && !backward ? kPipelineSplits : 1;
    const int in_split = overlap ? L_.tp() : 1;
    const bool ep = moe_layer && c.ep_alltoalls_forward > 0;
    const int a2a = ep ? comm("EP all-to-all", WorkClass::EP_COMM, g_ep_, nc::CollectiveOp::ALLTOALL, c.ep_alltoall) : -1;
    const int cp = c.cp_ring_steps > 0 ? comm(backward ? "CP ring attention (bwd)" : "CP ring attention",
                                              WorkClass::CP_COMM, g_cp_, nc::CollectiveOp::SENDRECV,
                                              backward ? c.cp_kv_block * 2 : c.cp_kv_block, c.cp_ring_steps)
                                       : -1;
    std::size_t first_expert = e, last_expert = e;
    for (std::size_t i = b; i < e; ++i) {
      if (starts_with(ops[i].name, "expert_")) {
        if (first_expert == e) first_expert = i;
        last_expert = i;
      }
    }
    auto push_comm = [&](int idx, Attach a, int split = 1) {
      if (idx >= 0) atoms.push_back({-1, idx, a, split});
    };
    for (std::size_t i = b; i < e; ++i) {
      const std::string& n = ops[i].name;
      if (!backward) {
        if (n == "attn_residual" || n == "mlp_residual") push_comm(tp_out, out_attach, out_split);
      } else {
        if (n == "post_attn_norm" || n == "input_norm") push_comm(tp_out, out_attach, out_split);
      }
      if (ep && i == first_expert) push_comm(a2a, Attach::PATH);
      atoms.push_back({static_cast<int>(i), -1, Attach::PATH});
      if (ops[i].kind == OpKind::ATTENTION) push_comm(cp, Attach::PREV);
      if (ep && i == last_expert) push_comm(a2a, Attach::PATH);
      if (!backward) {
        if (n == "input_norm" || n == "post_attn_norm") push_comm(tp_ag, in_attach, in_split);
      } else {
        if (n == "mlp_residual" || n == "attn_residual") push_comm(tp_ag, in_attach, in_split);
      }
    }
    return to_items(ops, atoms, backward);
  }

  std::vector<PassItem> to_items(const std::vector<KernelOp>& ops, const std::vector<Atom>& atoms, bool backward) {
    const std::size_t n = atoms.size();
    std::vector<bool> pinned(n, false);
    std::vector<int> split(n, 1);
    for (std::size_t k = 0; k < n; ++k) {
      if (atoms[k].comm < 0) continue;
      if (atoms[k].attach == Attach::PREV && k > 0 && atoms[k - 1].op >= 0) {
        pinned[k - 1] = true;
        split[k - 1] = std::max(split[k - 1], atoms[k].split);
      }
      if (atoms[k].attach == Attach::NEXT && k + 1 < n && atoms[k + 1].op >= 0) {
        pinned[k + 1] = true;
        split[k + 1] = std::max(split[k + 1], atoms[k].split);
      }
    }
    std::vector<PassItem> items;
    const std::string prefix = backward ? "bwd " : "fwd ";
    PassItem seg;
    int seg_ops = 0;
    auto flush = [&]() {
      if (seg_ops == 0) return;
      items.push_back(seg);
      seg = PassItem{};
      seg_ops = 0;
    };
    int pending_next = -1;
    for (std::size_t k = 0; k < n; ++k) {
      const Atom& a = atoms[k];
      if (a.op >= 0) {
        const KernelOp& op = ops[static_cast<std::size_t>(a.op)];
        const std::string label = prefix + (op.pass == Pass::RECOMPUTE ? "recompute " : "") + op.name;
        if (pinned[k]) {
          flush();
          items.push_back(compute_item(split_time(op, split[k]), split[k] > 1 ? label + " (x" + std::to_string(split[k]) + ")" : label));
          if (pending_next >= 0) {
            items.push_back(comm_item(pending_next, static_cast<int>(items.size() - 1), st_.comms[pending_next].name));
            pending_next = -1;
          }
        } else {
          if (seg_ops == 0) seg.name = label;
          seg.time += op.time;
          ++seg_ops;
        }
        continue;
      }
      const std::string& cname = st_.comms[a.comm].name;
      if (a.attach == Attach::PREV && k > 0 && pinned[k - 1] && !items.empty() && !items.back().is_comm) {
        items.push_back(comm_item(a.comm, static_cast<int>(items.size() - 1), cname));
      } else if (a.attach == Attach::NEXT && k + 1 < n && pinned[k + 1]) {
        flush();
        pending_next = a.comm;
      } else {
        flush();
        items.push_back(comm_item(a.comm, -1, cname));
      }
    }
    flush();
    return items;
  }

  // A GEMM run as `splits` chunks of m / splits rows (overlapped execution), else its own time.
  Duration split_time(const KernelOp& op, int splits) const {
    if (splits <= 1 || op.kind != OpKind::GEMM) return op.time;
    KernelOp chunk = op;
    chunk.gemm.m = std::max<std::int64_t>(1, (op.gemm.m + splits - 1) / splits);
    chunk.flops = op.flops * (1.0 / splits);
    chunk.bytes = Bytes::from_double(op.bytes.as_double() / splits);
    return in_.compute.time(chunk) * splits;
  }

  // Layers differ in their kernels only by being MoE or dense and by being replayed or not
  // (partial recompute, recompute.hpp).
  static int pass_key(bool moe, bool replayed) { return (moe ? 1 : 0) + (replayed ? 2 : 0); }

  const LayerOps& layer_ops(std::int64_t layer, bool moe) {
    const int key = pass_key(moe, L_.layer_recompute(layer).replayed);
    auto it = ops_.layers.find(key);
    if (it == ops_.layers.end()) {
      LayerOps ops = in_.training.layer_ops(layer);
      in_.compute.annotate(ops.forward);
      in_.compute.annotate(ops.backward);
      it = ops_.layers.emplace(key, std::move(ops)).first;
    }
    return it->second;
  }

  UnitPass make_pass(const LayerOps& ops, const LayerCommSizes& c, bool moe_layer) {
    UnitPass p;
    p.forward = items_of(ops.forward, 0, ops.forward.size(), false, c, moe_layer);
    // Full recomputation replays the whole forward (with its collectives) at the head of the
    // backward list; selective recomputation leaves its attention kernels inside the backward.
    std::size_t split = 0;
    if (in_.training.training().activation_checkpointing == Checkpointing::FULL) {
      while (split < ops.backward.size() && ops.backward[split].pass == Pass::RECOMPUTE) ++split;
      p.backward = items_of(ops.backward, 0, split, false, c, moe_layer);
    }
    auto rest = items_of(ops.backward, split, ops.backward.size(), true, c, moe_layer);
    const int offset = static_cast<int>(p.backward.size());
    for (auto& it : rest) {
      if (it.beside >= 0) it.beside += offset;
      p.backward.push_back(std::move(it));
    }
    for (const auto& op : ops.forward) p.forward_compute += op.time;
    for (const auto& op : ops.backward) p.backward_compute += op.time;
    set_dispatch(p, ops);
    return p;
  }

  // Recomputed forward kernels are issued from Python as the forward's are; backward kernels by
  // autograd's engine.
  void set_dispatch(UnitPass& p, const LayerOps& ops) const {
    std::int64_t fwd = 0, recompute = 0, bwd = 0;
    for (const auto& op : ops.forward) fwd += op.kernels;
    for (const auto& op : ops.backward) (op.pass == Pass::BACKWARD ? bwd : recompute) += op.kernels;
    const Duration f = in_.host.dispatch_per_kernel(false);
    p.forward_kernels = fwd;
    p.backward_kernels = recompute + bwd;
    p.forward_dispatch = f * fwd;
    p.backward_dispatch = f * recompute + in_.host.dispatch_per_kernel(true) * bwd;
    // PyTorch's tensor parallelism runs each parallelized linear as a DTensor op (forward, any
    // recomputed forward, and backward).
    if (in_.scenario.parallelism.framework == Framework::PYTORCH && L_.tp() > 1) {
      std::int64_t linears = 0;
      for (const auto& op : ops.forward) {
        linears += op.kind == OpKind::GEMM && op.role == GemmRole::FPROP && !starts_with(op.name, "lora") ? 1 : 0;
      }
      const bool full = in_.training.training().activation_checkpointing == Checkpointing::FULL;
      const std::int64_t replays = recompute > 0 && full ? 1 : 0;
      p.forward_dispatch += in_.host.dtensor_per_linear(false) * linears;
      p.backward_dispatch += in_.host.dtensor_per_linear(false) * (linears * replays) +
                             in_.host.dtensor_per_linear(true) * linears;
    }
  }

  UnitPass embedding_pass(const StageCommSizes& sc) {
    if (!ops_.embedding) {
      ops_.embedding = LayerOpBuilder(in_.model, L_, in_.training.training()).embedding();
      in_.compute.annotate(ops_.embedding->forward);
      in_.compute.annotate(ops_.embedding->backward);
    }
    const LayerOps& ops = *ops_.embedding;
    UnitPass p;
    Duration f, b;
    for (const auto& op : ops.forward) f += op.time;
    for (const auto& op : ops.backward) b += op.time;
    p.forward_compute = f;
    p.backward_compute = b;
    set_dispatch(p, ops);
    p.forward.push_back(compute_item(f, "fwd embedding"));
    if (L_.tp() > 1) {
      const bool sp = L_.sequence_parallel();
      const int c = comm(sp ? "TP reduce-scatter" : "TP all-reduce", WorkClass::TP_COMM, g_tp_,
                         sp ? nc::CollectiveOp::REDUCE_SCATTER : nc::CollectiveOp::ALL_REDUCE, sc.embedding_tp_activation);
      if (c >= 0) p.forward.push_back(comm_item(c, -1, st_.comms[c].name));
    }
    p.backward.push_back(compute_item(b, "bwd embedding"));
    return p;
  }

  UnitPass head_pass(const StageCommSizes& sc) {
    if (!ops_.head) {
      ops_.head = LayerOpBuilder(in_.model, L_, in_.training.training()).head();
      in_.compute.annotate(ops_.head->forward);
      in_.compute.annotate(ops_.head->backward);
    }
    const LayerOps& ops = *ops_.head;
    UnitPass p;
    const bool sp = L_.sequence_parallel() && L_.tp() > 1;
    const Bytes act = sc.head_tp_activation.count() > 0 ? sc.head_tp_activation : sc.embedding_tp_activation;
    const int ag = sp ? comm("TP all-gather", WorkClass::TP_COMM, g_tp_, nc::CollectiveOp::ALL_GATHER, act) : -1;
    const int back = L_.tp() > 1 ? comm(sp ? "TP reduce-scatter" : "TP all-reduce", WorkClass::TP_COMM, g_tp_,
                                        sp ? nc::CollectiveOp::REDUCE_SCATTER : nc::CollectiveOp::ALL_REDUCE, act)
                                 : -1;
    Duration norm_f, rest_f, norm_b, rest_b;
    for (const auto& op : ops.forward) (starts_with(op.name, "final_norm") ? norm_f : rest_f) += op.time;
    for (const auto& op : ops.backward) (starts_with(op.name, "final_norm") ? norm_b : rest_b) += op.time;
    p.forward.push_back(compute_item(norm_f, "fwd final_norm"));
    if (ag >= 0) p.forward.push_back(comm_item(ag, -1, st_.comms[ag].name));
    p.forward.push_back(compute_item(rest_f, "fwd lm_head+loss"));
    p.backward.push_back(compute_item(rest_b, "bwd lm_head+loss"));
    if (back >= 0) p.backward.push_back(comm_item(back, -1, st_.comms[back].name));
    p.backward.push_back(compute_item(norm_b, "bwd final_norm"));
    p.forward_compute = norm_f + rest_f;
    p.backward_compute = norm_b + rest_b;
    set_dispatch(p, ops);
    return p;
  }

  static double tensor_bytes(const std::vector<ParamTensor>& ts, const ShardFactors& s, double bytes, bool grads,
                             bool expert) {
    double sum = 0;
    for (const auto& t : ts) {
      if ((t.shard == ShardKind::EXPERT) != expert) continue;
      if (grads && !t.trainable) continue;
      sum += static_cast<double>(numel_on_rank(t, s)) * bytes;
    }
    return sum;
  }

  void make_units() {
    const TrainingSpec& t = in_.training.training();
    const StageCommSizes sc = in_.training.stage_comm();
    const ShardFactors sf = L_.shard_factors();
    const double pb = t.precision == Precision::FP32 ? 4 : 2;
    const double gb = bytes_per_element(t.grad_reduce_dtype);
    const bool frozen = t.fine_tuning == FineTuning::LORA;
    std::map<int, int> layer_pass;  // by pass_key
    for (int v = 0; v < L_.vp(); ++v) {
      ChunkPlan chunk;
      const RankPosition pos{.pipeline_stage = st_.stage, .virtual_stage = v};
      if (L_.has_embedding(st_.stage, v)) {
        st_.passes.push_back(embedding_pass(sc));
        UnitPlan u;
        u.name = "embedding";
        u.modules = 3;  // the model's root, embed_tokens and the rotary embedding
        u.pass = static_cast<int>(st_.passes.size() - 1);
        const auto ts = embedding_parameter_tensors(in_.model, frozen);
        u.dense_params = Bytes::from_double(tensor_bytes(ts, sf, pb, false, false));
        u.dense_grads = Bytes::from_double(tensor_bytes(ts, sf, gb, true, false));
        st_.units.push_back(u);
        chunk.units.push_back(static_cast<int>(st_.units.size() - 1));
      }
      for (std::int64_t layer : L_.layers_of(st_.stage, v)) {
        const bool moe = in_.model.is_moe_layer(layer);
        auto cit = ops_.comm.find(moe ? 1 : 0);
        if (cit == ops_.comm.end()) cit = ops_.comm.emplace(moe ? 1 : 0, in_.training.layer_comm(layer)).first;
        const LayerCommSizes& c = cit->second;
        const int key = pass_key(moe, L_.layer_recompute(layer).replayed);
        auto it = layer_pass.find(key);
        if (it == layer_pass.end()) {
          st_.passes.push_back(make_pass(layer_ops(layer, moe), c, moe));
          it = layer_pass.emplace(key, static_cast<int>(st_.passes.size() - 1)).first;
        }
        UnitPlan u;
        u.name = "layer " + std::to_string(layer);
        u.layer = layer;
        // A Hugging Face decoder layer: the layer, self_attn, q/k/v/o_proj, two norms, mlp,
        // gate/up/down_proj and act_fn (13); a MoE block has its router and per expert three
        // projections and the activation instead of the MLP's four.
        u.modules = moe ? 11 + 2 + 4 * static_cast<int>(std::max<std::int64_t>(0, in_.model.moe.num_experts)) : 13;
        u.pass = it->second;
        u.dense_params = c.dense_params;
        u.expert_params = c.expert_params;
        u.dense_grads = c.dense_grads;
        u.expert_grads = c.expert_grads;
        st_.units.push_back(u);
        chunk.units.push_back(static_cast<int>(st_.units.size() - 1));
      }
      if (L_.has_head(st_.stage, v)) {
        st_.passes.push_back(head_pass(sc));
        UnitPlan u;
        u.name = "head";
        u.modules = 3;  // the final norm, lm_head and the causal-LM wrapper
        u.pass = static_cast<int>(st_.passes.size() - 1);
        const auto ts = head_parameter_tensors(in_.model, in_.model.tied_embeddings && L_.pp() > 1, frozen);
        u.dense_params = Bytes::from_double(tensor_bytes(ts, sf, pb, false, false));
        u.dense_grads = Bytes::from_double(tensor_bytes(ts, sf, gb, true, false));
        st_.units.push_back(u);
        chunk.units.push_back(static_cast<int>(st_.units.size() - 1));
      }
      (void)pos;
      st_.chunks.push_back(std::move(chunk));
    }
  }

  // ---- data parallelism ----
  void make_buckets(std::vector<BucketPlan>& out, const std::string& name, nc::CollectiveOp op, Bytes bucket,
                    bool params, bool backward_order) {
    const double cap = std::max(1.0, bucket.as_double());
    for (int c = 0; c < static_cast<int>(st_.chunks.size()); ++c) {
      const auto& units = st_.chunks[c].units;
      for (int expert = 0; expert < 2; ++expert) {
        const int group = expert ? g_edp_ : g_dp_;
        double acc = 0;
        const int n = static_cast<int>(units.size());
        for (int k = 0; k < n; ++k) {
          const int pos = backward_order ? n - 1 - k : k;
          const UnitPlan& u = st_.units[units[pos]];
          const Bytes b = params ? (expert ? u.expert_params : u.dense_params) : (expert ? u.expert_grads : u.dense_grads);
          acc += b.as_double();
          while (acc >= cap) {
            const int ci = comm(name, WorkClass::DP_COMM, group, op, Bytes::from_double(cap));
            if (ci >= 0) out.push_back(BucketPlan{c, pos, ci});
            acc -= cap;
          }
        }
        if (acc > 0.5) {
          const int last = backward_order ? 0 : n - 1;
          const int ci = comm(name, WorkClass::DP_COMM, group, op, Bytes::from_double(acc));
          if (ci >= 0) out.push_back(BucketPlan{c, last, ci});
        }
      }
    }
  }

  // Elements each unit gathers before its forward and during its backward under DeepSpeed ZeRO-3
  // (zero3_fetches), from the unit's parameter tensors grouped into modules by name.
  std::vector<Zero3Fetch> zero3_unit_fetches(const ResolvedZeroKnobs& z) const {
    const TrainingSpec& t = in_.training.training();
    const bool frozen = t.fine_tuning == FineTuning::LORA;
    const ShardFactors sf = L_.shard_factors();
    auto modules_of = [&](const UnitPlan& u) {
      std::vector<ParamTensor> ts;
      if (u.layer >= 0) {
        ts = layer_parameter_tensors(in_.model, u.layer, frozen ? &t.lora : nullptr);
      } else if (u.name == "embedding") {
        ts = embedding_parameter_tensors(in_.model, frozen);
      } else {
        ts = head_parameter_tensors(in_.model, in_.model.tied_embeddings && L_.pp() > 1, frozen);
      }
      std::vector<ModuleNumel> mods;
      std::string current;
      for (const auto& p : ts) {
        if (static_cast<double>(p.numel_each()) < z.param_persistence_threshold) continue;
        const std::string module = p.name.substr(0, p.name.rfind('.'));
        if (mods.empty() || module != current) mods.emplace_back();
        current = module;
        const double n = static_cast<double>(numel_on_rank(p, sf));
        (p.shard == ShardKind::EXPERT ? mods.back().expert : mods.back().dense) += n;
      }
      return mods;
    };
    std::vector<Zero3Fetch> out(st_.units.size());
    for (const ChunkPlan& ch : st_.chunks) {
      std::vector<std::vector<ModuleNumel>> mods;
      std::vector<bool> recomputed;
      for (int ui : ch.units) {
        mods.push_back(modules_of(st_.units[ui]));
        recomputed.push_back(st_.units[ui].layer >= 0 && L_.layer_recompute(st_.units[ui].layer).replayed);
      }
      const auto f = zero3_fetches(mods, recomputed, z.max_reuse_distance);
      for (std::size_t k = 0; k < ch.units.size(); ++k) out[ch.units[k]] = f[k];
    }
    return out;
  }

  void make_data_parallel() {
    const ParallelismSpec& par = in_.scenario.parallelism;
    const TrainingSpec& t = in_.training.training();
    const double gb = bytes_per_element(t.grad_reduce_dtype);
    const double pb = t.precision == Precision::FP32 ? 4 : 2;
    const ResolvedZeroKnobs z = resolve_zero_knobs(par.zero, in_.model.hidden_size);
    const Bytes bucket = in_.training.gradient_bucket();
    const bool offload_opt = par.offload_optimizer == OffloadTarget::CPU;
    const bool offload_par = par.offload_params == OffloadTarget::CPU;
    const double D = L_.dense_shard_group();
    const double De = L_.expert_shard_group();
    auto per_unit = [&](bool gather_bwd, bool deepspeed, bool overlapped) {
      st_.per_unit_gather = true;
      st_.gather_for_backward = gather_bwd;
      st_.per_unit_reduce = true;
      st_.unit_comm_overlapped = overlapped;
      const std::string tag = deepspeed ? "ZeRO-3" : (par.zero_stage == 2 ? "FSDP (shard_grad_op)" : "FSDP");
      const std::vector<Zero3Fetch> fetch = deepspeed ? zero3_unit_fetches(z) : std::vector<Zero3Fetch>{};
      for (std::size_t ui = 0; ui < st_.units.size(); ++ui) {
        UnitPlan& u = st_.units[ui];
        auto gather = [&](Bytes b, int group) {
          if (b.count() <= 0) return -1;
          const double elems = b.as_double() / pb;
          const int rep = deepspeed ? std::max(1, static_cast<int>(std::ceil(elems / std::max(1.0, z.prefetch_bucket_size))))
                                    : 1;
          return comm(tag + " all-gather", WorkClass::DP_COMM, group, nc::CollectiveOp::ALL_GATHER,
                      Bytes::from_double(b.as_double() / rep), rep);
        };
        auto reduce = [&](Bytes b, int group) {
          if (b.count() <= 0) return -1;
          const double elems = b.as_double() / gb;
          const int rep = deepspeed ? std::max(1, static_cast<int>(std::ceil(elems / std::max(1.0, z.reduce_bucket_size))))
                                    : 1;
          return comm(tag + " reduce-scatter", WorkClass::DP_COMM, group, nc::CollectiveOp::REDUCE_SCATTER,
                      Bytes::from_double(b.as_double() / rep), rep);
        };
        if (deepspeed) {
          const Zero3Fetch& f = fetch[ui];
          u.gather = gather(Bytes::from_double(f.forward.dense * pb), g_dp_);
          u.gather_expert = gather(Bytes::from_double(f.forward.expert * pb), g_edp_);
          u.gather_bwd = gather(Bytes::from_double(f.backward.dense * pb), g_dp_);
          u.gather_expert_bwd = gather(Bytes::from_double(f.backward.expert * pb), g_edp_);
        } else {
          u.gather = u.gather_bwd = gather(u.dense_params, g_dp_);
          u.gather_expert = u.gather_expert_bwd = gather(u.expert_params, g_edp_);
        }
        u.reduce = reduce(u.dense_grads, g_dp_);
        u.reduce_expert = reduce(u.expert_grads, g_edp_);
        if (offload_par && deepspeed) {
          // Each fetch first copies the rank's partition of what it gathers to the GPU.
          auto fetch_copy = [&](const ModuleNumel& n) {
            return n.all() > 0 ? host_copy("parameter fetch (offload_param)",
                                           Bytes::from_double(pb * (n.dense / D + n.expert / De)), true)
                               : -1;
          };
          u.h2d = fetch_copy(fetch[ui].forward);
          u.h2d_bwd = fetch_copy(fetch[ui].backward);
        } else if (offload_par) {
          // FSDP2 CPUOffloadPolicy (_fsdp_param.py all_gather_inputs): the fp32 shard is copied
          // to the GPU before each all-gather's copy-in, then cast to the parameter dtype.
          u.h2d = host_copy("parameter copy-in (CPUOffloadPolicy)",
                            Bytes::from_double(4.0 / pb * (u.dense_params.as_double() / D + u.expert_params.as_double() / De)),
                            true);
          u.h2d_bwd = u.h2d;
        }
        if (offload_opt) {
          // Stage 3 (stage3.py partition_grads): the reduced partition goes into the fp32
          // accumulation buffer in pinned host memory, and comes back to the GPU to be added to
          // (or, at the first micro-step, to stay there): a device-to-host and a host-to-device
          // copy of 4 B an element on the reduce stream, one after the other, counted as 8 B
          // through the device-to-host path. FSDP2 (foreach_reduce) copies the reduced shard to
          // the host in the reduce dtype.
          const double elems = u.dense_grads.as_double() / gb / D + u.expert_grads.as_double() / gb / De;
          u.d2h = host_copy(deepspeed ? "gradient offload (offload_optimizer)" : "gradient copy-out (CPUOffloadPolicy)",
                            Bytes::from_double(deepspeed ? 8.0 * elems : elems * gb), false);
        }
        if (deepspeed) {
          // ZeRO-3's pre- and post-hooks run for every module's forward and backward
          // (parameter_offload.py, partitioned_param_coordinator.py) on the rank's Python thread.
          u.host_forward = in_.host.zero3_module_hook(false) * u.modules;
          u.host_backward = in_.host.zero3_module_hook(true) * u.modules;
        }
      }
    };
    switch (par.framework) {
      case Framework::PYTORCH:
        if (par.zero_stage >= 2) {
          per_unit(par.zero_stage == 3 && par.fsdp.reshard_after_forward, false, true);
          add_fsdp_copies();
        } else {
          st_.grad_sync = GradSync::LAST_MICRO_BATCH_OVERLAPPED;
          make_buckets(st_.grad_buckets, "DDP all-reduce", nc::CollectiveOp::ALL_REDUCE, bucket, false, true);
          if (par.zero_stage == 1) {
            make_buckets(st_.param_buckets, "ZeRO-1 parameter all-gather", nc::CollectiveOp::ALL_GATHER,
                         Bytes::from_double(bucket.as_double() / gb * pb), true, false);
          }
        }
        break;
      case Framework::MEGATRON: {
        const bool distopt = par.megatron.distributed_optimizer || par.zero_stage >= 1;
        st_.grad_sync = par.megatron.overlap_grad_reduce ? GradSync::LAST_MICRO_BATCH_OVERLAPPED : GradSync::AFTER_BACKWARD;
        make_buckets(st_.grad_buckets, distopt ? "DP reduce-scatter" : "DP all-reduce",
                     distopt ? nc::CollectiveOp::REDUCE_SCATTER : nc::CollectiveOp::ALL_REDUCE, bucket, false, true);
        if (distopt) {
          make_buckets(st_.param_buckets, "DP parameter all-gather", nc::CollectiveOp::ALL_GATHER,
                       Bytes::from_double(bucket.as_double() / gb * pb), true, false);
          st_.param_gather_next_forward = par.megatron.overlap_param_gather;
        }
        break;
      }
      case Framework::DEEPSPEED:
        if (par.zero_stage == 3) {
          per_unit(true, true, par.zero.overlap_comm);
        } else {
          const bool every = par.zero_stage == 2;
          st_.grad_sync = every ? GradSync::EVERY_MICRO_BATCH : GradSync::AFTER_BACKWARD;
          st_.unit_comm_overlapped = !every || par.zero.overlap_comm;
          const bool rs = par.zero_stage >= 1 && par.zero.reduce_scatter;
          make_buckets(st_.grad_buckets, rs ? "ZeRO reduce-scatter" : "DP all-reduce",
                       rs ? nc::CollectiveOp::REDUCE_SCATTER : nc::CollectiveOp::ALL_REDUCE, bucket, false, true);
          if (par.zero_stage >= 1) {
            make_buckets(st_.param_buckets, "ZeRO parameter all-gather", nc::CollectiveOp::ALL_GATHER,
                         Bytes::from_double(z.allgather_bucket_size * pb), true, false);
          }
        }
        break;
    }
    if (g_tied_ >= 0) {
      const StageCommSizes sc = in_.training.stage_comm();
      st_.tied_embedding_comm = comm("tied embedding all-reduce", WorkClass::DP_COMM, g_tied_,
                                     nc::CollectiveOp::ALL_REDUCE, sc.tied_embedding_grads);
    }
    // The gradient norm for clipping: one small all-reduce across the data and model-parallel ranks.
    st_.grad_norm_comm = comm("gradient-norm all-reduce", WorkClass::DP_COMM, g_dp_, nc::CollectiveOp::ALL_REDUCE,
                              Bytes::of(4 * L_.pp()));
  }

  // FSDP2's copies on the compute stream (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py):
  // after each all-gather, foreach_all_gather_copy_out splits the gathered flat buffer into the
  // unit's parameters (split_with_sizes_copy: read and write every gathered byte) before the
  // unit's forward, and again before its backward when it was resharded; after the unit's
  // backward, foreach_reduce packs the unsharded gradients into the reduce-scatter input in the
  // reduce dtype (torch._chunk_cat, which casts as it copies: a strided kernel over every gradient
  // element) before the reduce-scatter starts. Both are kernels of the critical path.
  void add_fsdp_copies() {
    const TrainingSpec& t = in_.training.training();
    const double gb = bytes_per_element(t.grad_reduce_dtype);
    const double pb = t.precision == Precision::FP32 ? 4 : 2;
    std::vector<bool> done(st_.passes.size(), false);
    for (const UnitPlan& u : st_.units) {
      if (u.pass < 0 || done[static_cast<std::size_t>(u.pass)]) continue;
      done[static_cast<std::size_t>(u.pass)] = true;
      UnitPass& p = st_.passes[static_cast<std::size_t>(u.pass)];
      const double gathered = u.dense_params.as_double() + u.expert_params.as_double();
      const double grad_elems = (u.dense_grads.as_double() + u.expert_grads.as_double()) / gb;
      if (gathered > 0) {
        KernelOp out;
        out.name = "FSDP all-gather copy-out";
        out.kind = OpKind::MEMORY;
        out.bytes = Bytes::from_double(2 * gathered);
        out.kernels = 2;  // the split sizes' host-to-device copy and the split copy
        const Duration d = in_.compute.time(out);
        insert_front(p.forward, compute_item(d, "fwd " + out.name));
        p.forward_compute += d;
        if (st_.gather_for_backward) {
          insert_front(p.backward, compute_item(d, "bwd " + out.name));
          p.backward_compute += d;
        }
      }
      if (grad_elems > 0) {
        KernelOp in;
        in.name = "FSDP reduce-scatter copy-in";
        in.kind = OpKind::MEMORY;
        in.path = MemoryPath::STRIDED;
        in.elements = static_cast<std::int64_t>(grad_elems);
        in.bytes = Bytes::from_double(grad_elems * (pb + gb));
        const Duration d = in_.compute.time(in);
        p.backward.push_back(compute_item(d, "bwd " + in.name));
        p.backward_compute += d;
      }
    }
  }

  static void insert_front(std::vector<PassItem>& items, PassItem it) {
    for (auto& x : items) {
      if (x.beside >= 0) ++x.beside;
    }
    items.insert(items.begin(), std::move(it));
  }

  void make_pipeline() {
    if (L_.pp() <= 1) return;
    const Bytes act = in_.training.stage_comm().pp_activation;
    st_.pp_send_next = comm("PP send", WorkClass::PP_COMM, g_next_, nc::CollectiveOp::SENDRECV, act);
    st_.pp_send_prev = comm("PP send", WorkClass::PP_COMM, g_prev_, nc::CollectiveOp::SENDRECV, act);
  }

  void make_optimizer() {
    const ParallelismSpec& par = in_.scenario.parallelism;
    const HostThreads threads = host_threads(in_.scenario.cluster, in_.node);
    plan_.host_threads = threads;
    const OptimizerStep o = in_.training.optimizer_step(st_.stage, in_.compute, &in_.host,
                                                        std::max(1, in_.scenario.cluster.gpus_per_node), &threads);
    st_.optimizer.gpu_time = o.gpu_time;
    st_.optimizer.cpu_time = o.cpu_time;
    st_.optimizer.cpu_adam_time = o.cpu_adam_time;
    if (par.offload_optimizer == OffloadTarget::CPU) {
      if (par.zero_stage < 3) {
        // ZeRO-1/2 offload: the reduced gradient shard goes to the host once the buckets are done.
        st_.optimizer.d2h = host_copy("gradient offload (offload_optimizer)", o.d2h_bytes, false);
      } else if (par.framework == Framework::DEEPSPEED) {
        // Stage 3 at the accumulation boundary (_offload_grad_partition_at_boundary): the
        // accumulated partition, back on the GPU, is copied into the optimizer's fp32 gradients.
        st_.optimizer.d2h = host_copy("gradient partition to CPU Adam (offload_optimizer)",
                                      Bytes::from_double(4.0 * static_cast<double>(o.params)), false);
      }
      if (par.offload_params != OffloadTarget::CPU) {
        st_.optimizer.h2d = host_copy("updated parameters (offload_optimizer)", o.h2d_bytes, true,
                                      pinned_parameter_copy(par));
      }
    }
  }

  const PlanInputs& in_;
  PredictorCache& cache_;
  StepPlan& plan_;
  const ParallelLayout& L_;
  OpsCache& ops_;
  StagePlan st_;
  int g_tp_ = -1, g_cp_ = -1, g_ep_ = -1, g_dp_ = -1, g_edp_ = -1, g_next_ = -1, g_prev_ = -1, g_tied_ = -1;
};

}  // namespace

StepPlan build_step_plan(const PlanInputs& in, PredictorCache& cache) {
  StepPlan plan;
  const ParallelLayout& L = in.training.layout();
  plan.pp = L.pp();
  plan.vp = L.vp();
  plan.micro_batches = L.num_micro_batches();
  plan.schedule = L.schedule();
  plan.blocking_p2p = L.vp() == 1;
  OpsCache ops;
  for (int s = 0; s < L.pp(); ++s) plan.stages.push_back(StageBuilder(in, cache, plan, s, ops).build());
  return plan;
}

}  // namespace clustersim::models
