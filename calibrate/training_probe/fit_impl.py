"""Derives the per-layer kernel lists of the `eager` and `compiled` implementations from
impl_profile.py's profile, and writes the measured steps as a validation set:

  python3 calibrate/training_probe/fit_impl.py calibrate/results/lent-1xh100-2026-12-07-impl \
      --kernels calibrate/results/lent-1xh100-2026-12-07-impl/impl-kernels.json \
      --probes tests/validation/data/training_impl_probes_1xh100.json

Per layer = (kernels of the full model - kernels of the small one) / (layers difference), per phase,
grouped by (kernel, launching aten op), at the profile's shape (--layer-shape, default 1 x 2048).
Each group gets its count per layer, its mean duration and the bytes it moves at the measured
duration and --hbm-tb-s (an effective-bytes figure for the memory-bound kernels: duration x rate,
over the layer's tokens x hidden elements), and a kind: gemm (nvjet/cutlass/cublas names),
attention (cuDNN/flash SDPA), memory (everything else). models/layer_ops.cpp cites the result.

The validation set holds the steps at the shapes the kernel lists were not read from (--fit-shapes
are left out), each with the scenario that describes it: implementation absent for eager (the
default under framework pytorch is what is judged), "compiled" for compiled.
"""

import argparse
import json
import os
import re
import statistics
import sys


def gkind(kernel, op):
    if re.search(r"nvjet|cutlass|gemm|sm90_xmma", kernel) and "attention" not in op:
        return "gemm"
    if "attention" in op or "fmha" in kernel or "flash" in kernel:
        return "attention"
    return "memory"


def per_layer(doc, impl, shape, small_layers):
    runs = [r for r in doc["runs"] if r["implementation"] == impl]
    big = next(r for r in runs if r["num_hidden_layers"] != small_layers)
    small = next(r for r in runs if r["num_hidden_layers"] == small_layers)
    dl = big["num_hidden_layers"] - small["num_hidden_layers"]

    def row(run):
        return next(r for r in run["shapes"] if (r["micro_batch_size"], r["seq_len"]) == shape)

    rb, rs = row(big), row(small)
    out = {}
    for phase in ("forward", "backward"):
        gb = {(g["kernel"], g["op"]): g for g in rb["phases"][phase]["groups"]}
        gs = {(g["kernel"], g["op"]): g for g in rs["phases"][phase]["groups"]}
        kernels = []
        for key in sorted(set(gb) | set(gs)):
            cb = gb.get(key, {}).get("count", 0)
            cs = gs.get(key, {}).get("count", 0)
            n = (cb - cs) / dl
            if abs(n) < 1e-9:
                continue
            tb = gb.get(key, {}).get("total_us", 0.0)
            ts = gs.get(key, {}).get("total_us", 0.0)
            g = gb.get(key) or gs.get(key)
            kernels.append({"kernel": key[0], "op": key[1], "kind": gkind(*key), "per_layer": round(n, 3),
                            "us_per_layer": round((tb - ts) / dl, 2),
                            "op_input_dims": g.get("op_input_dims"), "op_input_types": g.get("op_input_types")})
        kernels.sort(key=lambda k: (k["kind"], -k["us_per_layer"]))
        out[phase] = kernels
    return big["num_hidden_layers"], small["num_hidden_layers"], out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results_dir")
    p.add_argument("--layer-shape", default="1x2048")
    p.add_argument("--fit-shapes", default="1x2048,4x2048")
    p.add_argument("--hbm-tb-s", type=float, default=3.0, help="measured device-to-device copy rate")
    p.add_argument("--kernels", required=True)
    p.add_argument("--probes", required=True)
    p.add_argument("--calibration", default="lent-1xh100-2026-12-host")
    a = p.parse_args()
    src = os.path.join(a.results_dir, "impl-profile.json")
    doc = json.load(open(src))
    mb, seq = (int(x) for x in a.layer_shape.split("x"))
    preset = json.load(open(os.path.join("models/presets", doc["preset"])))
    h = preset["hidden_size"]
    tokens = mb * seq
    result = {"schema_version": 1,
              "source": os.path.relpath(src),
              "derivation": "calibrate/training_probe/fit_impl.py: per layer = (full model - small model) / layers "
                            "difference, per phase, by (kernel, launching aten op); bytes_per_token_hidden = "
                            "us_per_layer x hbm rate / (tokens x hidden) for memory kernels",
              "shape": {"micro_batch_size": mb, "seq_len": seq, "hidden_size": h},
              "hbm_tb_s": a.hbm_tb_s,
              "provenance": {k: doc[k] for k in ("torch", "cuda", "triton", "gpu_name", "host_cpu", "host_cpu_count",
                                                 "measured_utc", "probe", "command") if k in doc},
              "implementations": {}}
    for impl in sorted({r["implementation"] for r in doc["runs"]}):
        big_l, small_l, lists = per_layer(doc, impl, (mb, seq), 2)
        summary = {}
        for phase, ks in lists.items():
            for k in ks:
                if k["kind"] == "memory":
                    k["bytes_per_token_hidden"] = round(k["us_per_layer"] * 1e-6 * a.hbm_tb_s * 1e12 / (tokens * h), 2)
            summary[phase] = {kind: {"kernels": round(sum(k["per_layer"] for k in ks if k["kind"] == kind), 2),
                                     "us": round(sum(k["us_per_layer"] for k in ks if k["kind"] == kind), 1)}
                              for kind in ("gemm", "attention", "memory")}
        result["implementations"][impl] = {"layers_full": big_l, "layers_small": small_l, "per_layer": lists,
                                           "summary": summary}
    tmp = a.kernels + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, a.kernels)
    for impl, r in result["implementations"].items():
        for phase, s in r["summary"].items():
            print(impl, phase, s)

    fit = {tuple(int(x) for x in s.split("x")) for s in a.fit_shapes.split(",")}
    probes = []
    for run in doc["runs"]:
        if run["num_hidden_layers"] != preset["num_hidden_layers"]:
            continue
        impl = run["implementation"]
        for r in run["shapes"]:
            shape = (r["micro_batch_size"], r["seq_len"])
            if "error" in r or shape in fit:
                continue
            training = {"seq_len": shape[1], "micro_batch_size": shape[0], "global_batch_size": shape[0],
                        "precision": "bf16", "optimizer": "adamw", "activation_checkpointing": "none"}
            if impl != "eager":
                training["implementation"] = impl
            probes.append({
                "label": f"{impl} llama3.2-1b mb {shape[0]} seq {shape[1]}",
                "step_time_s": r["step_time_s"], "step_times_s": r["step_times_s"],
                "peak_allocated_bytes": r["peak_allocated_bytes"],
                "measured": "median of the timed steps after warm-up; torch.cuda.max_memory_allocated over them",
                "scenario": {"schema_version": 1, "name": f"{impl}-mb{shape[0]}-seq{shape[1]}",
                             "model": {"preset": os.path.splitext(doc["preset"])[0]}, "training": training,
                             "parallelism": {"framework": "pytorch", "data": 1},
                             "cluster": {"system": "hgx-h100", "nodes": 1, "gpus_per_node": 1,
                                         "placement": {"gpus_per_pod": 1, "cpus_per_pod": doc["host_cpu_count"]}},
                             "calibration": a.calibration}})
    out = {"schema_version": 1,
           "note": ("This project's own one-GPU steps of Llama-3.2-1B written as plain PyTorch modules, run eagerly "
                    "and under torch.compile, at the shapes the kernel lists of models/layer_ops.cpp were not read "
                    f"from (those came from {a.layer_shape}; {a.fit_shapes} are left out). Eager rows name no "
                    "implementation: the default under framework pytorch is judged. The measured parameters are "
                    "bf16 with bf16 AdamW states, which the model's memory does not describe: only step time is "
                    "checked."),
           "name": "impl_probes_1xh100",
           "description": f"plain PyTorch {doc['preset']} (eager and torch.compile, sdpa, bf16 parameters, fused "
                          f"AdamW) on one {doc['gpu_name']} of a {doc['host_cpu_count']}-vCPU guest",
           "provenance": (f"{os.path.relpath(src)}, measured {doc['measured_utc'][:10]} by "
                          f"calibrate/training_probe/run_impl_profile.sh (torch {doc['torch']}, triton "
                          f"{doc.get('triton')})"),
           "probes": probes}
    tmp = a.probes + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, a.probes)
    print(f"{len(probes)} validation rows")


if __name__ == "__main__":
    sys.exit(main())
