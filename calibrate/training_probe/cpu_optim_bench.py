"""Measures what optimizer offload to host memory costs on this machine's CPUs and host links: the
throughput of AdamW steps on CPU fp32 tensors against the thread count, and pinned host <-> device
copy bandwidth, alone and while a CPU optimizer runs on every core.

  python3 calibrate/training_probe/cpu_optim_bench.py --params 128M --out cpu-optim.json

Optimizers: torch.optim.AdamW with foreach=False (the for-loop implementation, torch's default for
CPU tensors), foreach=True, and fused=True (where torch supports it on CPU), and DeepSpeed's
DeepSpeedCPUAdam (adamw_mode, fp32 states; JIT-built, skipped if it cannot be built). Each thread
count (default 1, 2, 4, 8 and all cores) runs in a fresh subprocess with OMP_NUM_THREADS and
torch.set_num_threads set to it; the parameters are split into tensors of --tensor-size elements
(like a model's weight matrices) with random gradients; after one warm-up step the median of
--steps steps gives parameters per second.

Copies: 256 MiB (--copy-bytes) between pinned host memory and the GPU through
tensor.copy_(non_blocking=True) (cudaMemcpyAsync), timed with CUDA events, median of --copy-reps:
host-to-device, device-to-host, and both at once on two streams. Then again while another process
runs a CPU optimizer step after step on all cores (each available optimizer in turn), to show
host-memory contention; that process's step times during the copies and after them are recorded
too. The copying process waits on blocking CUDA events, so it takes no core from the load;
--load-threads also runs the load on fewer threads than cores.
"""

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time


def parse_count(s):
    s = s.strip().upper()
    mult = {"K": 10**3, "M": 10**6, "G": 10**9}.get(s[-1], 1)
    return int(float(s[:-1] if s[-1] in "KMG" else s) * mult)


def omp_threads():
    try:
        return int(ctypes.CDLL("libgomp.so.1").omp_get_max_threads())
    except (OSError, AttributeError):
        return None


def make_params(n, tensor_size, torch):
    ps = []
    left = n
    while left > 0:
        k = min(tensor_size, left)
        p = torch.nn.Parameter(torch.randn(k, dtype=torch.float32) * 0.02)
        p.grad = torch.randn(k, dtype=torch.float32) * 1e-3
        ps.append(p)
        left -= k
    return ps


def build_optimizers(torch, ps, which):
    """name -> zero-argument factory of an optimizer over ps."""
    out = {}
    kw = dict(lr=1e-5, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    if "torch-forloop" in which:
        out["torch-forloop"] = lambda: torch.optim.AdamW(ps, foreach=False, **kw)
    if "torch-foreach" in which:
        out["torch-foreach"] = lambda: torch.optim.AdamW(ps, foreach=True, **kw)
    if "torch-fused" in which:
        out["torch-fused"] = lambda: torch.optim.AdamW(ps, fused=True, **kw)
    if "ds-cpuadam" in which:
        def ds():
            from deepspeed.ops.adam import DeepSpeedCPUAdam
            return DeepSpeedCPUAdam(ps, adamw_mode=True, **kw)
        out["ds-cpuadam"] = ds
    return out


def child_bench(args):
    """One thread count: time every optimizer; print one JSON line."""
    import torch
    n = int(os.environ.get("OMP_NUM_THREADS", "0")) or os.cpu_count()
    torch.set_num_threads(n)
    ps = make_params(args.params, args.tensor_size, torch)
    res = {"threads": n, "torch_num_threads": torch.get_num_threads(), "libgomp_max_threads": omp_threads(),
           "optimizers": {}}
    for name, factory in build_optimizers(torch, ps, args.optimizers.split(",")).items():
        try:
            opt = factory()
            opt.step()  # warm-up: allocates the states
            ts = []
            for _ in range(args.steps):
                t0 = time.perf_counter()
                opt.step()
                ts.append(time.perf_counter() - t0)
            med = statistics.median(ts)
            res["optimizers"][name] = {"step_times_s": ts, "step_time_s": med,
                                       "params_per_s": args.params / med}
            del opt
        except Exception as e:  # e.g. fused AdamW not supported on CPU, or CPU Adam not buildable
            res["optimizers"][name] = {"error": f"{type(e).__name__}: {e}"[:500]}
    print("RESULT " + json.dumps(res), flush=True)


def child_load(args):
    """Runs one optimizer on all cores step after step until killed; prints each step's end time."""
    import torch
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "0")) or os.cpu_count())
    ps = make_params(args.params, args.tensor_size, torch)
    opt = build_optimizers(torch, ps, [args.load_optimizer])[args.load_optimizer]()
    opt.step()
    print("READY", flush=True)
    t_end = time.time() + args.load_seconds
    while time.time() < t_end:
        t0 = time.perf_counter()
        opt.step()
        print(f"STEP {time.time():.6f} {time.perf_counter() - t0:.6f}", flush=True)


def copy_buffers(torch, nbytes):
    n = nbytes // 4
    host = torch.empty(n, dtype=torch.float32).pin_memory()
    host.normal_()
    host2 = torch.empty(n, dtype=torch.float32).pin_memory()
    dev = torch.empty(n, dtype=torch.float32, device="cuda")
    dev.normal_()
    dev2 = torch.empty(n, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()
    return host, host2, dev, dev2, torch.cuda.Stream(), torch.cuda.Stream()


def copy_bench(torch, nbytes, reps, bufs):
    """The buffers are allocated beforehand, and every wait blocks on a blocking CUDA event rather
    than spinning, so that this process takes no core from a CPU load running beside it."""
    host, host2, dev, dev2, s1, s2 = bufs

    def ev():
        return torch.cuda.Event(enable_timing=True, blocking=True)

    def timed(fn, stream):
        with torch.cuda.stream(stream):
            fn()  # warm-up
        out = []
        for _ in range(reps):
            a, b = ev(), ev()
            with torch.cuda.stream(stream):
                a.record()
                fn()
                b.record()
            b.synchronize()
            out.append(a.elapsed_time(b) / 1e3)
        return out

    res = {}
    h2d = timed(lambda: dev2.copy_(host, non_blocking=True), s1)
    d2h = timed(lambda: host2.copy_(dev, non_blocking=True), s1)
    res["h2d_GBps"] = nbytes / statistics.median(h2d) / 1e9
    res["d2h_GBps"] = nbytes / statistics.median(d2h) / 1e9
    # both directions at once: one copy on each stream, timed from a common start to both ends
    both = []
    for _ in range(reps):
        e0, e1, e2 = ev(), ev(), ev()
        e0.record(s1)
        s2.wait_event(e0)
        with torch.cuda.stream(s1):
            dev2.copy_(host, non_blocking=True)
        with torch.cuda.stream(s2):
            host2.copy_(dev, non_blocking=True)
        e1.record(s1)
        e2.record(s2)
        e1.synchronize()
        e2.synchronize()
        both.append(max(e0.elapsed_time(e1), e0.elapsed_time(e2)) / 1e3)
    res["bidir_total_GBps"] = 2 * nbytes / statistics.median(both) / 1e9
    res["h2d_times_s"], res["d2h_times_s"], res["bidir_times_s"] = h2d, d2h, both
    res["window"] = [time.time()]
    return res


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--params", type=parse_count, default=parse_count("128M"))
    p.add_argument("--tensor-size", type=parse_count, default=parse_count("8M"))
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--threads", default="", help="comma-separated thread counts (default 1,2,4,8,all)")
    p.add_argument("--optimizers", default="torch-forloop,torch-foreach,torch-fused,ds-cpuadam")
    p.add_argument("--copy-bytes", type=parse_count, default=256 * 2**20)
    p.add_argument("--copy-reps", type=int, default=50)
    p.add_argument("--load-optimizers", default="ds-cpuadam,torch-fused",
                   help="optimizers run as the CPU load during the copies")
    p.add_argument("--load-seconds", type=float, default=10.0)
    p.add_argument("--load-threads", default="", help="comma-separated thread counts of the load (default: all)")
    p.add_argument("--child", choices=["bench", "load"])
    p.add_argument("--load-optimizer", default="")
    p.add_argument("--out", default="")
    args = p.parse_args()
    if args.child == "bench":
        return child_bench(args)
    if args.child == "load":
        return child_load(args)

    ncpu = os.cpu_count()
    threads = [int(t) for t in args.threads.split(",")] if args.threads else sorted({1, 2, 4, 8, ncpu})
    me = os.path.abspath(__file__)
    base = [sys.executable, me, "--params", str(args.params), "--tensor-size", str(args.tensor_size),
            "--steps", str(args.steps), "--optimizers", args.optimizers]
    doc = {"schema_version": 1, "kind": "clustersim-cpu-optimizer", "params": args.params,
           "tensor_size": args.tensor_size, "steps": args.steps, "cpu_count": ncpu, "by_threads": [],
           "copies": {}}
    for t in threads:
        env = dict(os.environ, OMP_NUM_THREADS=str(t))
        r = subprocess.run(base + ["--child", "bench"], env=env, capture_output=True, text=True, timeout=300)
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
        if line:
            doc["by_threads"].append(json.loads(line[-1][7:]))
        else:
            doc["by_threads"].append({"threads": t, "error": (r.stderr or r.stdout)[-1500:]})
        row = doc["by_threads"][-1]
        print(f"threads {t:3d}: " + ", ".join(
            f"{k} {v['params_per_s'] / 1e6:.0f} Mparam/s" if "params_per_s" in v else f"{k} failed"
            for k, v in row.get("optimizers", {}).items()), flush=True)

    import torch
    bufs = copy_buffers(torch, args.copy_bytes)
    doc["copies"]["alone"] = copy_bench(torch, args.copy_bytes, args.copy_reps, bufs)
    a = doc["copies"]["alone"]
    print(f"copies alone: H2D {a['h2d_GBps']:.1f} GB/s, D2H {a['d2h_GBps']:.1f} GB/s, both "
          f"{a['bidir_total_GBps']:.1f} GB/s total", flush=True)
    loads = [(lo, int(lt)) for lo in args.load_optimizers.split(",") if lo
             for lt in (args.load_threads.split(",") if args.load_threads else [str(ncpu)])]
    for lo, lt in loads:
        key = f"under_{lo}" if lt == ncpu else f"under_{lo}_{lt}threads"
        ok = [r for r in doc["by_threads"] if "params_per_s" in r.get("optimizers", {}).get(lo, {})]
        if not ok:
            doc["copies"][key] = {"error": f"{lo} did not run in the thread sweep"}
            continue
        env = dict(os.environ, OMP_NUM_THREADS=str(lt))
        proc = subprocess.Popen(base + ["--child", "load", "--load-optimizer", lo, "--load-seconds",
                                        str(args.load_seconds)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        lines = []
        ready = False
        for ln in proc.stdout:
            lines.append(ln)
            if ln.startswith("READY"):
                ready = True
                break
        if not ready:
            doc["copies"][key] = {"error": "load process did not start: " + "".join(lines)[-500:]}
            continue
        time.sleep(1.0)
        t0 = time.time()
        r = copy_bench(torch, args.copy_bytes, args.copy_reps, bufs)
        t1 = time.time()
        out, _ = proc.communicate(timeout=args.load_seconds + 60)
        steps = [ln.split() for ln in out.splitlines() if ln.startswith("STEP ")]
        during = [float(s[2]) for s in steps if t0 <= float(s[1]) - float(s[2]) and float(s[1]) <= t1]
        after = [float(s[2]) for s in steps if float(s[1]) - float(s[2]) > t1]
        r["load_optimizer"] = lo
        r["load_threads"] = lt
        r["load_step_times_during_s"] = during
        r["load_step_times_after_s"] = after
        r["load_params_per_s_during"] = args.params / statistics.median(during) if during else None
        r["load_params_per_s_after"] = args.params / statistics.median(after) if after else None
        r["window"] = [t0, t1]
        doc["copies"][key] = r
        print(f"copies under {lo} on {lt} threads: H2D {r['h2d_GBps']:.1f} GB/s, D2H {r['d2h_GBps']:.1f} GB/s, "
              f"both {r['bidir_total_GBps']:.1f} GB/s total; the optimizer during: "
              f"{(r['load_params_per_s_during'] or 0) / 1e6:.0f} Mparam/s, after: "
              f"{(r['load_params_per_s_after'] or 0) / 1e6:.0f} Mparam/s", flush=True)
    doc["torch"] = torch.__version__
    doc["gpu_name"] = torch.cuda.get_device_name(0)
    try:
        import deepspeed
        doc["deepspeed"] = deepspeed.__version__
    except Exception as e:
        doc["deepspeed"] = f"unavailable: {type(e).__name__}"
    if args.out:
        with open(args.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(args.out + ".tmp", args.out)
    print("\nCPU AdamW, Mparam/s per step, by threads")
    names = args.optimizers.split(",")
    print("threads | " + " | ".join(names))
    for row in doc["by_threads"]:
        o = row.get("optimizers", {})
        print(f"{row['threads']:7d} | " + " | ".join(
            f"{o[n]['params_per_s'] / 1e6:.0f}" if "params_per_s" in o.get(n, {}) else "-" for n in names))


if __name__ == "__main__":
    main()
