"""Measures one-GPU training steps of a Llama decoder as frameworks run it, for the compute model's
implementations and the CPU side of a step (models/layer_ops.hpp, docs/models/host-and-offload.md):

  python3 calibrate/training_probe/eager_step.py --preset models/presets/llama3.2-1b.json \
      --impl eager --shapes 1x32,1x512,1x2048,4x2048 --out eager.json

Implementations (--impl):
  eager     the decoder written with plain PyTorch modules: nn.Linear q, k, v, o and gate, up, down
            (no bias), F.rms_norm, rotary embedding as x cos + rotate_half(x) sin,
            F.scaled_dot_product_attention (causal, enable_gqa), F.silu(gate) * up, the loss as
            F.cross_entropy over fp32 logits
  hf_eager  transformers' LlamaForCausalLM from the preset's config, sdpa attention
  compiled  torch.compile of the eager model (default mode)
  dtensor   the eager model with its linears under tensor parallelism (ColwiseParallel q, k, v, gate,
            up; RowwiseParallel o, down) on a one-rank device mesh: every linear is a DTensor op
Parameters are bf16 (no autocast) unless --autocast (fp32 parameters, torch.autocast bf16); AdamW
fused (its for-loop form under dtensor: the fused and foreach ones take no mix of DTensor and plain
parameters). Random weights and random token ids; labels are the inputs.

Per shape (micro-batch x sequence): the median of --steps synchronised steps, the phase split, the
CPU's issue time (from the step's start until the optimizer's zero_grad returns, before the final
synchronisation: equal to the step when the CPU sets the pace), torch.cuda.max_memory_allocated,
and from one profiled step (torch.profiler, CPU and CUDA), in all and per phase (forward, backward,
optimizer step): the kernels launched, the aten ops called from Python (top-level CPU ops) and the
GPU's busy time (sum of kernel durations). A one-rank process group is initialised only for
dtensor. Output is written whole or not at all. NVLink multicast stays off (probe_common).
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_common import dist, hf_config, randomize_, torch, write_json  # noqa: E402

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, d = c.hidden_size, c.hidden_size // c.num_attention_heads
        self.nh, self.nkv, self.d = c.num_attention_heads, c.num_key_value_heads, d
        self.eps = c.rms_norm_eps
        self.input_layernorm = nn.Parameter(torch.ones(h))
        self.post_attention_layernorm = nn.Parameter(torch.ones(h))
        self.q_proj = nn.Linear(h, self.nh * d, bias=False)
        self.k_proj = nn.Linear(h, self.nkv * d, bias=False)
        self.v_proj = nn.Linear(h, self.nkv * d, bias=False)
        self.o_proj = nn.Linear(self.nh * d, h, bias=False)
        self.gate_proj = nn.Linear(h, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(h, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, h, bias=False)

    def forward(self, x, cos, sin):
        b, t, h = x.shape
        r = x
        x = F.rms_norm(x, (h,), self.input_layernorm, self.eps)
        # -1 heads: under tensor parallelism each rank holds a share of them.
        q = self.q_proj(x).view(b, t, -1, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, -1, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, -1, self.d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = r + self.o_proj(o.transpose(1, 2).reshape(b, t, -1))
        r = x
        x = F.rms_norm(x, (h,), self.post_attention_layernorm, self.eps)
        return r + self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Decoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(Block(c) for _ in range(c.num_hidden_layers))
        self.norm = nn.Parameter(torch.ones(c.hidden_size))
        self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        if getattr(c, "tie_word_embeddings", False):
            self.lm_head.weight = self.embed_tokens.weight
        d = c.hidden_size // c.num_attention_heads
        inv = 1.0 / (getattr(c, "rope_theta", 10000.0) ** (torch.arange(0, d, 2).float() / d))
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, ids):
        t = ids.shape[1]
        pos = torch.arange(t, device=ids.device, dtype=torch.float32)
        f = torch.outer(pos, self.inv_freq)
        emb = torch.cat((f, f), dim=-1)
        x = self.embed_tokens(ids)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        x = F.rms_norm(x, (x.shape[-1],), self.norm, self.c.rms_norm_eps)
        logits = self.lm_head(x)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), ids.view(-1))


def build(impl, config, autocast):
    dtype = torch.float32 if autocast else torch.bfloat16
    if impl == "hf_eager":
        from transformers import AutoModelForCausalLM

        with torch.device("cuda"):
            m = AutoModelForCausalLM.from_config(config, torch_dtype=dtype)
        randomize_(m)
        return m, (lambda ids: m(input_ids=ids, labels=ids).loss)
    with torch.device("cuda"):
        m = Decoder(config).to(dtype)
    randomize_(m)
    if impl == "dtensor":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        mesh = init_device_mesh("cuda", (1,))
        plan = {n: ColwiseParallel() for n in ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")}
        plan.update({n: RowwiseParallel() for n in ("o_proj", "down_proj")})
        for layer in m.layers:
            parallelize_module(layer, mesh, plan)
    fn = torch.compile(m) if impl == "compiled" else m
    return m, fn


def profile_counts(fn):
    """Runs fn() once under torch.profiler (CPU and CUDA) and counts what it launched."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        out = fn()
        torch.cuda.synchronize()
    kernels, gpu_us, top_ops, launches = 0, 0.0, 0, 0
    for e in prof.events():
        dev = str(getattr(e, "device_type", ""))
        if dev.endswith("CUDA") and not e.name.startswith(("Memcpy", "Memset")):
            kernels += 1
            gpu_us += e.device_time if hasattr(e, "device_time") else e.cuda_time
        elif dev.endswith("CPU"):
            if e.name in ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx"):
                launches += 1
            if e.name.startswith("aten::") and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::")):
                top_ops += 1
    return out, {"kernels": kernels, "kernel_launch_calls": launches, "top_level_aten_ops": top_ops,
                 "gpu_busy_s": gpu_us * 1e-6}


def profile_step(forward, optim):
    """Counts per phase (forward, backward, optimizer step) of one step and their sum."""
    loss, fwd = profile_counts(forward)
    _, bwd = profile_counts(lambda: loss.backward())
    _, opt = profile_counts(optim)
    total = {k: fwd[k] + bwd[k] + opt[k] for k in fwd}
    total["phases"] = {"forward": fwd, "backward": bwd, "step": opt}
    return total


def run_shape(impl, model, fn, opt, mb, seq, vocab, args):
    ids = torch.randint(0, vocab, (mb, seq), device="cuda")
    ctx = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if args.autocast else None

    def forward():
        if ctx:
            with ctx():
                return fn(ids)
        return fn(ids)

    def optim():
        opt.step()
        opt.zero_grad(set_to_none=True)

    def step(split=None, issue=None):
        t0 = time.perf_counter()
        loss = forward()
        if split is not None:
            torch.cuda.synchronize()
            t1 = time.perf_counter()
        loss.backward()
        if split is not None:
            torch.cuda.synchronize()
            t2 = time.perf_counter()
        optim()
        if issue is not None:
            issue.append(time.perf_counter() - t0)
        if split is not None:
            torch.cuda.synchronize()
            t3 = time.perf_counter()
            split.update(forward=t1 - t0, backward=t2 - t1, step=t3 - t2)

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times, issue = [], []
    for _ in range(args.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step(issue=issue)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    peak = torch.cuda.max_memory_allocated()
    splits = []
    for _ in range(3):
        s = {}
        step(split=s)
        splits.append(s)
    prof = profile_step(forward, optim)
    return {
        "micro_batch_size": mb, "seq_len": seq,
        "step_times_s": times, "step_time_s": statistics.median(times),
        "issue_time_s": statistics.median(issue),
        "split_median_s": {k: statistics.median(s[k] for s in splits) for k in ("forward", "backward", "step")},
        "peak_allocated_bytes": int(peak),
        **prof,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", required=True)
    p.add_argument("--impl", choices=["eager", "hf_eager", "compiled", "dtensor"], required=True)
    p.add_argument("--shapes", default="1x32,1x512,1x2048,4x2048", help="micro-batch x sequence, comma-separated")
    p.add_argument("--layers", type=int, default=0)
    p.add_argument("--autocast", action="store_true")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    if args.impl == "dtensor":
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29511")
        dist.init_process_group("nccl", rank=0, world_size=1)
    torch.cuda.set_device(0)
    torch.manual_seed(1234)
    config = hf_config(args.preset, args.layers)
    model, fn = build(args.impl, config, args.autocast)
    # Fused and foreach AdamW take no mix of DTensor and plain parameters (the norms and embeddings
    # stay plain): the for-loop one then.
    opt_kind = "forloop" if args.impl == "dtensor" else "fused"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, **({"foreach": False} if opt_kind == "forloop" else {"fused": True}))
    rows = []
    for shape in args.shapes.split(","):
        mb, seq = (int(x) for x in shape.split("x"))
        try:
            r = run_shape(args.impl, model, fn, opt, mb, seq, config.vocab_size, args)
        except Exception as e:  # an out-of-memory shape is recorded, the rest still run
            r = {"micro_batch_size": mb, "seq_len": seq, "error": f"{type(e).__name__}: {e}"[:300]}
            torch.cuda.empty_cache()
        rows.append(r)
        print(f"{args.impl:9s} mb {mb} seq {seq}: " + (
            f"step {r['step_time_s'] * 1e3:.2f} ms issue {r['issue_time_s'] * 1e3:.2f} ms gpu "
            f"{r['gpu_busy_s'] * 1e3:.2f} ms kernels {r['kernels']} ops {r['top_level_aten_ops']} "
            f"peak {r['peak_allocated_bytes'] / 2**30:.2f} GiB" if "error" not in r else r["error"]), flush=True)
    doc = {
        "probe": "calibrate/training_probe/eager_step.py",
        "implementation": args.impl, "autocast": args.autocast,
        "preset": os.path.basename(args.preset), "num_hidden_layers": config.num_hidden_layers,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "precision": "bf16", "parameter_dtype": "fp32" if args.autocast else "bf16", "optimizer": f"adamw ({opt_kind})",
        "warmup_steps": args.warmup, "timed_steps": args.steps,
        "threads": {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"), "torch_num_threads": torch.get_num_threads(),
                    "cpu_count": os.cpu_count()},
        "torch": torch.__version__, "gpu_name": torch.cuda.get_device_name(0),
        "shapes": rows,
    }
    try:
        import transformers
        doc["transformers"] = transformers.__version__
    except Exception:
        pass
    write_json(args.out, doc)
    if args.impl == "dtensor":
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
