"""Times PyTorch's element-wise kernels on one GPU, for the compute model's memory-bound kernels
(models/compute_model.hpp): contiguous ops that PyTorch runs through its vectorized kernel, and
ops on transposed views, broadcast operands or up-casts that it runs through its generic
(non-vectorized) TensorIterator kernel ("strided": bound by per-element offset arithmetic, so
timed against the elements produced). Writes calibration results (the "memory" section) that
`clustersim calibrate fit` reads beside the harness's:

  python3 calibrate/training_probe/torch_kernels.py --out results-torch-kernels.json

Each op is timed with CUDA events over 30 back-to-back launches after 3 warm-ups. Sizes whose
working set fits in the L2 (or whose launch is bound by Python's dispatch) are not kept.
"""

import argparse
import datetime
import json
import os

import torch


def timed(fn, iters=30):
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters * 1e3  # microseconds


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--min-log2", type=int, default=24, help="smallest size kept, log2 elements")
    args = p.parse_args()
    bf16, fp32, dev = torch.bfloat16, torch.float32, "cuda"
    rows = []

    def rec(kernel, op, n, nbytes, fn):
        t = timed(fn)
        rows.append({"kernel": kernel, "op": op, "elements": n, "bytes_moved": nbytes, "time_us": round(t, 3),
                     "bandwidth_GBps": round(nbytes / t / 1e3, 2)})

    for p2 in range(args.min_log2, 29):
        n = 2 ** p2
        x, y = torch.randn(n, dtype=bf16, device=dev), torch.randn(n, dtype=bf16, device=dev)
        o = torch.empty_like(x)
        rec("elementwise", "add_bf16", n, 6 * n, lambda: torch.add(x, y, out=o))
    for p2 in range(args.min_log2, 28):
        n = 2 ** p2
        heads, d = 32, 128
        s = n // (heads * d)
        q = torch.randn(s, heads, d, dtype=bf16, device=dev).transpose(0, 1)  # as q.view(...).transpose(1, 2)
        cos = torch.randn(s, d, dtype=bf16, device=dev)
        qo = torch.empty(heads, s, d, dtype=bf16, device=dev)
        rec("strided", "mul_transposed_broadcast_bf16", n, 4 * n, lambda: torch.mul(q, cos, out=qo))
        rec("strided", "neg_transposed_bf16", n, 4 * n, lambda: torch.neg(q, out=qo))
        h = 4096
        a = torch.randn(n // h, h, dtype=bf16, device=dev)
        w = torch.randn(h, dtype=bf16, device=dev)
        ao = torch.empty_like(a)
        a32 = torch.empty(n // h, h, dtype=fp32, device=dev)
        rec("strided", "mul_weight_broadcast_bf16", n, 4 * n, lambda: torch.mul(a, w, out=ao))
        rec("strided", "cast_bf16_to_fp32", n, 6 * n, lambda: a32.copy_(a))
        rec("elementwise", "cast_fp32_to_bf16", n, 6 * n, lambda: ao.copy_(a32))
        x32 = torch.randn(n // h, h, dtype=fp32, device=dev)
        r = torch.empty(n // h, 1, dtype=fp32, device=dev)
        rec("strided", "mul_rowbroadcast_fp32", n, 8 * n, lambda: torch.mul(x32, r, out=a32))
        rec("reduce", "mean_lastdim_fp32", n, 4 * n, lambda: torch.mean(x32, -1, keepdim=True, out=r))
    doc = {
        "schema_version": 1,
        "kind": "clustersim-calibration-results",
        "tool": {"name": "torch-kernel-probe", "version": "torch " + torch.__version__,
                 "command": "python3 calibrate/training_probe/torch_kernels.py --out " + os.path.basename(args.out)},
        "environment": {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                        "gpu_name": torch.cuda.get_device_name(0), "gpu_count": 1},
        "memory": rows,
    }
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, args.out)
    print(f"{len(rows)} kernels -> {args.out}")


if __name__ == "__main__":
    main()
