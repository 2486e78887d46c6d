"""Fits the CPU cost of issuing a step's kernels (host.dispatch.*) from eager_step.py results:

  python3 calibrate/training_probe/fit_dispatch.py RESULTS_DIR --out host-dispatch.json \
      [--probes VALIDATION.json --profile PROFILE.json]

as committed:

  python3 calibrate/training_probe/fit_dispatch.py calibrate/results/lent-1xh100-2026-12-07-eager \
      --out calibrate/results/lent-1xh100-2026-12-07-eager/host-dispatch.json \
      --probes tests/validation/data/training_eager_probes_1xh100.json \
      --profile calibrate/profiles/lent-1xh100-2026-12-host.json

Where the CPU sets the pace (a phase whose GPU busy time is under --cpu-bound of its wall time), a
phase's time is its kernels times the CPU's cost per kernel: forward phases from Python
(host.dispatch.forward_per_kernel), backward phases from autograd's engine
(host.dispatch.backward_per_kernel). Each is the median of time / kernels over the eager and
hf_eager rows (every run under RESULTS_DIR). DTensor's extra cost per tensor-parallel linear
(host.dispatch.dtensor.forward_per_linear, .backward_per_linear) is the median, over shapes and runs,
of (dtensor phase - eager phase of the same run and shape) / linears, where both are CPU-bound.
Cross-validation: the costs fitted on one implementation predict the other's CPU-bound phases;
the errors are reported. The output holds the fitted values with provenance, and the kernels each
implementation launches per phase (for fit_host_offload.py --dispatch).
"""

import argparse
import glob
import json
import os
import statistics


def rows(results_dir):
    for path in sorted(glob.glob(os.path.join(results_dir, "**", "eager-*.json"), recursive=True)):
        doc = json.load(open(path))
        run = os.path.relpath(os.path.dirname(path), results_dir)
        for r in doc["shapes"]:
            if "error" not in r:
                yield doc, run, r


def cpu_bound(r, phase, limit):
    return r["phases"][phase]["gpu_busy_s"] < limit * r["split_median_s"][phase]


def per_kernel(samples, phase):
    return [r["split_median_s"][phase] / r["phases"][phase]["kernels"] for r in samples]


def write_probes(a, hf_rows, doc):
    """The Hugging Face steps (the implementation the model has) with the scenarios that describe them:
    one GPU of an HGX H100, bf16, the model's own host profile."""
    probes = []
    for run, r in hf_rows:
        mb, seq = r["micro_batch_size"], r["seq_len"]
        probes.append({
            "label": f"hf_eager {os.path.splitext(doc['preset'])[0]} mb {mb} seq {seq} ({run})",
            "step_time_s": r["step_time_s"], "step_times_s": r["step_times_s"],
            "peak_allocated_bytes": r["peak_allocated_bytes"],
            "measured": "median of the timed steps after warm-up; torch.cuda.max_memory_allocated over them",
            "scenario": {
                "schema_version": 1, "name": f"hf-eager-mb{mb}-seq{seq}",
                "model": {"preset": os.path.splitext(doc["preset"])[0]},
                "training": {"seq_len": seq, "micro_batch_size": mb, "global_batch_size": mb, "precision": "bf16",
                             "optimizer": "adamw", "activation_checkpointing": "none", "implementation": "hf_eager"},
                "parallelism": {"framework": "pytorch", "data": 1},
                "cluster": {"system": "hgx-h100", "nodes": 1, "gpus_per_node": 1,
                            "placement": {"gpus_per_pod": 1, "cpus_per_pod": doc["threads"]["cpu_count"]}},
                "calibration": a.profile,
            },
        })
    out = {
        "schema_version": 1,
        "note": ("This project's own one-GPU steps of Hugging Face Llama-3.2-1B run eagerly, at shapes from "
                 "launch-bound (32 tokens) to GPU-bound (4 x 2048), each with the scenario that describes it. The "
                 "profile's host.dispatch.* costs were fitted from the CPU-bound phases of these and the plain "
                 "eager model's steps (fit_dispatch.py); the GPU-bound shapes are out of sample. The measured "
                 "parameters are bf16 with bf16 AdamW states, which the model's memory does not describe: only "
                 "step time is checked."),
        "name": "eager_probes_1xh100",
        "description": f"Hugging Face {doc['preset']} (eager, sdpa, bf16 parameters, fused AdamW) on one {doc['gpu_name']} of a {doc['threads']['cpu_count']}-vCPU guest",
        "provenance": (f"calibrate/results/{os.path.basename(os.path.normpath(a.results_dir))}/run*/eager-hf_eager.json, "
                       f"measured 2026-12-07 by calibrate/training_probe/run_eager_probes.sh (torch {doc['torch']}, "
                       f"transformers {doc.get('transformers')})"),
        "probes": probes,
    }
    tmp = a.probes + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, a.probes)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results_dir")
    p.add_argument("--cpu-bound", type=float, default=0.4, help="GPU busy / phase wall time below which the CPU sets the pace")
    p.add_argument("--out", required=True)
    p.add_argument("--probes", help="also write the hf_eager steps as a validation set (the offload set's format)")
    p.add_argument("--profile", help="the calibration profile the validation scenarios name (relative to the repository)")
    a = p.parse_args()
    by_impl = {}
    docs = {}
    for doc, run, r in rows(a.results_dir):
        tag = doc["implementation"] + ("-autocast" if doc.get("autocast") else "")
        by_impl.setdefault(tag, []).append((run, r))
        docs[tag] = doc
    fit, cv = {}, {}
    for phase, key in (("forward", "forward_per_kernel"), ("backward", "backward_per_kernel")):
        pools = {impl: [r for _, r in by_impl.get(impl, []) if cpu_bound(r, phase, a.cpu_bound)]
                 for impl in ("eager", "hf_eager")}
        fit[key] = statistics.median(per_kernel(pools["eager"] + pools["hf_eager"], phase))
        for train, test in (("eager", "hf_eager"), ("hf_eager", "eager")):
            c = statistics.median(per_kernel(pools[train], phase))
            errs = [c * r["phases"][phase]["kernels"] / r["split_median_s"][phase] - 1 for r in pools[test]]
            cv[f"{phase}: fit on {train}, predict {test}"] = {
                "cost_per_kernel_s": c, "rows": len(errs),
                "median_abs_error": statistics.median(abs(e) for e in errs) if errs else None,
                "worst_abs_error": max(abs(e) for e in errs) if errs else None}
    # DTensor: the eager model with its 7 linears a layer under ColwiseParallel/RowwiseParallel.
    extra = {"forward": [], "backward": []}
    eager = {(run, r["micro_batch_size"], r["seq_len"]): r for run, r in by_impl.get("eager", [])}
    if "dtensor" in docs:
        linears = 7 * docs["dtensor"]["num_hidden_layers"]
        for run, r in by_impl["dtensor"]:
            e = eager.get((run, r["micro_batch_size"], r["seq_len"]))
            if e is None:
                continue
            for phase in extra:
                if cpu_bound(r, phase, a.cpu_bound) and cpu_bound(e, phase, a.cpu_bound):
                    extra[phase].append((r["split_median_s"][phase] - e["split_median_s"][phase]) / linears)
    for phase in extra:
        if extra[phase]:
            fit[f"dtensor.{phase}_per_linear"] = statistics.median(extra[phase])
    # Kernels a step launches per phase, by implementation (the median over shapes and runs), for
    # fits that take the dispatch out of a measured phase (fit_host_offload.py).
    kernels = {impl: {"preset": docs[impl]["preset"], "num_hidden_layers": docs[impl]["num_hidden_layers"],
                      **{ph: statistics.median(r["phases"][ph]["kernels"] for _, r in by_impl[impl])
                         for ph in ("forward", "backward")}}
               for impl in by_impl}
    any_doc = next(iter(docs.values()))
    out = {
        "schema_version": 1,
        "source": "calibrate/training_probe/fit_dispatch.py over eager_step.py results",
        "results_dir": os.path.basename(os.path.normpath(a.results_dir)),
        "gpu": any_doc["gpu_name"], "torch": any_doc["torch"], "transformers": any_doc.get("transformers"),
        "cpu_bound_below": a.cpu_bound,
        "parameters": {f"host.dispatch.{k}": {"value": v, "unit": "s"} for k, v in fit.items()},
        "samples": {"forward_per_kernel": sum(1 for i in ("eager", "hf_eager") for _, r in by_impl.get(i, [])
                                              if cpu_bound(r, "forward", a.cpu_bound)),
                    "dtensor": {k: len(v) for k, v in extra.items()}},
        "cross_validation": cv,
        "kernels_per_phase": kernels,
    }
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, a.out)
    if a.probes:
        write_probes(a, by_impl.get("hf_eager", []), docs.get("hf_eager"))
    for k, v in out["parameters"].items():
        print(f"{k:45s} {v['value'] * 1e6:8.1f} us")
    for k, v in cv.items():
        print(f"{k:45s} rows {v['rows']:2d} median {100 * (v['median_abs_error'] or 0):5.1f}% worst {100 * (v['worst_abs_error'] or 0):5.1f}%")


if __name__ == "__main__":
    main()
