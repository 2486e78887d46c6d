"""Profiles one-GPU training steps of a Llama decoder kernel by kernel, for the compute model's
implementations `eager` and `compiled` (models/layer_ops.hpp, calibrate/training_probe/fit_impl.py):

  python3 calibrate/training_probe/impl_profile.py --preset models/presets/llama3.2-1b.json \
      --impls eager,compiled --shapes 1x2048,4x2048,1x1024,2x2048,1x4096,2x4096,4x4096 \
      --layer-shape 1x2048 --out impl-profile.json

The model is eager_step.py's Decoder: plain PyTorch modules (nn.Linear q, k, v, o, gate, up, down
without bias, F.rms_norm, rotary embedding as x cos + rotate_half(x) sin, causal
F.scaled_dot_product_attention with enable_gqa, F.silu(gate) * up, F.cross_entropy over fp32
logits), bf16 parameters, fused AdamW, random weights and token ids.
  eager     the modules as written
  compiled  torch.compile(model) (default mode and dynamic-shape policy, as a user writes it)

Per implementation and shape (micro-batch x sequence): the median of --steps synchronised steps,
the CPU's issue time (the step's start until zero_grad returns), torch.cuda.max_memory_allocated and
max_memory_reserved over the timed steps, and one step profiled phase by phase (forward, backward,
optimizer step) with torch.profiler (CPU and CUDA, shapes recorded): every kernel grouped by its
name and the aten op that launched it (the innermost CPU op with the kernel's External id), with
count, total/min/max duration, the launching op's input shapes and dtypes, and per phase the kernel
count, GPU busy time and launch calls. The per-layer kernel list comes from the difference between
the full model and a --layer-layers model at --layer-shape (fit_impl.py does the subtraction).
Output is written whole or not at all. NVLink multicast stays off (probe_common).
"""

import argparse
import gzip
import json
import os
import platform
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_common import hf_config, randomize_, torch, write_json  # noqa: E402
from eager_step import Decoder  # noqa: E402

LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx")


def trace_kernels(prof):
    """Kernels of a finished profiler, grouped by (kernel name, launching aten op), from its trace."""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    finally:
        os.unlink(path)
    ops = {}
    for e in events:
        if e.get("cat") == "cpu_op":
            ext = e.get("args", {}).get("External id")
            # The innermost op wins: a later-starting op with the same id is nested in the first.
            if ext is not None and (ext not in ops or e["ts"] >= ops[ext]["ts"]):
                ops[ext] = e
    groups, launches, busy, n = {}, 0, 0.0, 0
    for e in events:
        cat = e.get("cat")
        if cat == "cuda_runtime" and e.get("name") in LAUNCHES:
            launches += 1
        if cat != "kernel":
            continue
        args = e.get("args", {})
        op = ops.get(args.get("External id"))
        opname = op["name"] if op else "?"
        key = (e["name"], opname)
        g = groups.get(key)
        dur = float(e.get("dur", 0.0))
        n += 1
        busy += dur
        if g is None:
            oa = op.get("args", {}) if op else {}
            g = groups[key] = {"kernel": e["name"], "op": opname, "count": 0, "total_us": 0.0, "min_us": dur,
                               "max_us": dur, "grid": args.get("grid"), "block": args.get("block"),
                               "op_input_dims": oa.get("Input Dims"), "op_input_types": oa.get("Input type")}
        g["count"] += 1
        g["total_us"] += dur
        g["min_us"] = min(g["min_us"], dur)
        g["max_us"] = max(g["max_us"], dur)
    rows = sorted(groups.values(), key=lambda g: -g["total_us"])
    for g in rows:
        g["total_us"] = round(g["total_us"], 3)
    return {"kernels": n, "launch_calls": launches, "gpu_busy_us": round(busy, 3), "groups": rows}


def profiled(fn):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        t0 = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    k = trace_kernels(prof)
    k["wall_s_profiled"] = wall
    return out, k


def run_shape(fn, opt, mb, seq, vocab, steps, warmup, profile_it=True):
    ids = torch.randint(0, vocab, (mb, seq), device="cuda")

    def optim():
        opt.step()
        opt.zero_grad(set_to_none=True)

    def step(issue=None):
        t0 = time.perf_counter()
        fn(ids).backward()
        optim()
        if issue is not None:
            issue.append(time.perf_counter() - t0)

    t_warm = time.perf_counter()
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    warm_s = time.perf_counter() - t_warm
    torch.cuda.reset_peak_memory_stats()
    times, issue = [], []
    for _ in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step(issue)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    row = {"micro_batch_size": mb, "seq_len": seq, "warmup_s": warm_s, "step_times_s": times,
           "step_time_s": statistics.median(times), "issue_time_s": statistics.median(issue),
           "peak_allocated_bytes": int(torch.cuda.max_memory_allocated()),
           "peak_reserved_bytes": int(torch.cuda.max_memory_reserved())}
    if profile_it:
        loss, fwd = profiled(lambda: fn(ids))
        _, bwd = profiled(lambda: loss.backward())
        _, stp = profiled(optim)
        row["phases"] = {"forward": fwd, "backward": bwd, "step": stp}
    return row


def build(impl, config):
    with torch.device("cuda"):
        m = Decoder(config).to(torch.bfloat16)
    randomize_(m)
    fn = torch.compile(m) if impl == "compiled" else m
    opt = torch.optim.AdamW(m.parameters(), lr=1e-5, fused=True)
    return m, fn, opt


def shape_list(s):
    return [tuple(int(x) for x in t.split("x")) for t in s.split(",") if t]


def save(args, runs):
    """Writes what has been measured so far (whole file or nothing; a killed run keeps its rows)."""
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except Exception:
        pass
    doc = {
        "probe": "calibrate/training_probe/impl_profile.py",
        "command": " ".join(sys.argv),
        "preset": os.path.basename(args.preset),
        "precision": "bf16", "parameter_dtype": "bf16", "optimizer": "adamw (fused)",
        "warmup_steps": args.warmup, "timed_steps": args.steps,
        "torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
        "python": sys.version.split()[0],
        "gpu_name": torch.cuda.get_device_name(0),
        "gpu_multiprocessors": torch.cuda.get_device_properties(0).multi_processor_count,
        "host_cpu": cpu, "host_cpu_count": os.cpu_count(), "torch_num_threads": torch.get_num_threads(),
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": runs,
    }
    try:
        import triton
        doc["triton"] = triton.__version__
    except Exception:
        pass
    write_json(args.out, doc)
    with gzip.open(args.out + ".gz", "wt") as f:  # a compact copy for the transfer
        json.dump(doc, f)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", required=True)
    p.add_argument("--impls", default="eager,compiled")
    p.add_argument("--shapes", default="1x2048,4x2048,1x1024,2x2048,1x4096,2x4096,4x4096",
                   help="micro-batch x sequence; the first compiles static under compiled, later ones dynamic")
    p.add_argument("--layer-shape", default="1x2048", help="shape of the small model's profile")
    p.add_argument("--layer-layers", type=int, default=2, help="layers of the small model (0: none)")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    torch.cuda.set_device(0)
    torch.manual_seed(1234)
    torch._dynamo.config.cache_size_limit = 64
    config = hf_config(args.preset)
    runs = []
    for impl in args.impls.split(","):
        model, fn, opt = build(impl, config)
        rows = []
        for mb, seq in shape_list(args.shapes):
            t0 = time.perf_counter()
            try:
                r = run_shape(fn, opt, mb, seq, config.vocab_size, args.steps, args.warmup)
            except Exception as e:  # an out-of-memory shape is recorded, the rest still run
                r = {"micro_batch_size": mb, "seq_len": seq, "error": f"{type(e).__name__}: {e}"[:300]}
                torch.cuda.empty_cache()
            rows.append(r)
            save(args, runs + [{"implementation": impl, "num_hidden_layers": config.num_hidden_layers,
                                "shapes": rows}])
            print(f"{impl:9s} {mb}x{seq}: " + (
                f"step {r['step_time_s'] * 1e3:.2f} ms issue {r['issue_time_s'] * 1e3:.2f} ms "
                f"peak {r['peak_allocated_bytes'] / 2**30:.2f} GiB kernels "
                + "/".join(str(r["phases"][k]["kernels"]) for k in ("forward", "backward", "step"))
                if "error" not in r else r["error"]) + f" ({time.perf_counter() - t0:.0f} s)", flush=True)
        runs.append({"implementation": impl, "num_hidden_layers": config.num_hidden_layers,
                     "parameters": int(sum(q.numel() for q in model.parameters())), "shapes": rows})
        del model, fn, opt
        torch.cuda.empty_cache()
        if args.layer_layers > 0:
            small = hf_config(args.preset, args.layer_layers)
            model, fn, opt = build(impl, small)
            (mb, seq), = shape_list(args.layer_shape)
            try:
                r = run_shape(fn, opt, mb, seq, small.vocab_size, 3, args.warmup)
            except Exception as e:
                r = {"micro_batch_size": mb, "seq_len": seq, "error": f"{type(e).__name__}: {e}"[:300]}
            runs.append({"implementation": impl, "num_hidden_layers": args.layer_layers,
                         "parameters": int(sum(q.numel() for q in model.parameters())), "shapes": [r]})
            print(f"{impl:9s} {args.layer_layers} layers {mb}x{seq}: "
                  + (f"step {r['step_time_s'] * 1e3:.2f} ms" if "error" not in r else r["error"]), flush=True)
            del model, fn, opt
            torch.cuda.empty_cache()
    save(args, runs)


if __name__ == "__main__":
    main()
