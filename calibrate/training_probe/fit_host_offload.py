"""Fits a host profile from the offload measurements of one machine and writes its validation set.

  python3 calibrate/training_probe/fit_host_offload.py RESULTS_DIR PROFILE.json PROBES.json [--dispatch DISPATCH.json]

as committed:

  python3 calibrate/training_probe/fit_host_offload.py calibrate/results/lent-1xh100-2026-12-07-offload \
      calibrate/profiles/lent-1xh100-2026-12-host.json \
      tests/validation/data/training_offload_probes_1xh100.json \
      --dispatch calibrate/results/lent-1xh100-2026-12-07-eager/host-dispatch.json

RESULTS_DIR holds cpu-optim.json and training-steps-offload.json (run_offload_probes.sh). The
profile (the calibration-profile format `clustersim` reads) takes only the host's parameters:

  host.cpu_adam.params_per_second_per_core  DeepSpeed CPU Adam on one thread (cpu_optim_bench.py)
  host.cpu_adam.node_params_per_second      DeepSpeed CPU Adam on every thread of the machine
  host.torch_adamw.params_per_second_per_core  torch.optim.AdamW's CPU default (the per-tensor
                                            loop) on one thread
  host.torch_adamw.node_fraction            that loop on every thread over CPU Adam on every thread
  host.h2d.pinned.bandwidth, host.d2h.pinned.bandwidth  256 MiB pinned copies, the GPU alone
  host.deepspeed.zero3_module_hook.forward, .backward  from one training step only: ZeRO-3 without
                                            offload at gradient accumulation 1, whose forward and
                                            backward wait for the modules' hooks (13 a decoder
                                            layer and 6 more, as models/step_plan.cpp counts them):
                                            pass time / modules. Every other step stays out of the
                                            fit. With --dispatch DISPATCH.json (fit_dispatch.py), the
                                            pass's own kernel issue (its Hugging Face kernels times
                                            the fitted cost per kernel) is taken out first, and the
                                            host.dispatch.* values join the profile.

PROBES.json is the validation set (training_fsdp2_probes.json's format): every measured step with
the scenario that describes it, naming the profile by its path relative to the repository.
Both files are written whole or not at all.
"""

import json
import os
import sys

HF_MODULES_PER_LAYER = 13  # decoder layer, self_attn, q/k/v/o_proj, 2 norms, mlp, gate/up/down_proj, act_fn
EDGE_MODULES = 6  # model root, embed_tokens, rotary; final norm, lm_head, causal-LM wrapper


def write_atomically(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def best(runs, optimizer, threads):
    """The fastest params/s of `optimizer` at `threads` over every call that measured it."""
    rates = []
    for run in runs:
        for t in run.get("by_threads", []):
            o = t.get("optimizers", {}).get(optimizer)
            if t["threads"] == threads and o and "params_per_s" in o:
                rates.append(o["params_per_s"])
    if not rates:
        sys.exit(f"cpu-optim.json: no {optimizer} run at {threads} threads")
    return max(rates)


def copies_alone(runs):
    for run in reversed(runs):
        c = run.get("copies", {}).get("alone")
        if c:
            return c["h2d_GBps"], c["d2h_GBps"]
    sys.exit("cpu-optim.json: no copy measurement")


def main():
    if len(sys.argv) not in (4, 6) or (len(sys.argv) == 6 and sys.argv[4] != "--dispatch"):
        sys.exit(__doc__)
    results, profile_path, probes_path = sys.argv[1:4]
    dispatch = json.load(open(sys.argv[5])) if len(sys.argv) == 6 else None
    cpu = json.load(open(os.path.join(results, "cpu-optim.json")))
    steps = json.load(open(os.path.join(results, "training-steps-offload.json")))
    runs = cpu["runs"]
    threads = max(t["threads"] for run in runs for t in run.get("by_threads", []))
    ds1, dsn = best(runs, "ds-cpuadam", 1), best(runs, "ds-cpuadam", threads)
    tl1, tln = best(runs, "torch-forloop", 1), best(runs, "torch-forloop", threads)
    h2d, d2h = copies_alone(runs)

    zero3 = [p for p in steps["probes"] if p.get("framework") == "deepspeed" and p.get("zero_stage") == 3
             and p.get("offload_optimizer") == "none" and p.get("gradient_accumulation_steps") == 1]
    if len(zero3) != 1:
        sys.exit("training-steps-offload.json: expected one ZeRO-3 step without offload at accumulation 1")
    z = zero3[0]
    modules = HF_MODULES_PER_LAYER * z["num_hidden_layers"] + EDGE_MODULES
    fwd = z["split_median_s"]["forward"] / modules
    bwd = z["split_median_s"]["backward"] / modules
    extra = {}
    if dispatch is not None:
        # The phase's own kernel issue is modelled apart (host.dispatch.*): the hooks are what is left.
        k = dispatch["kernels_per_phase"]["hf_eager"]
        if k["preset"] != z["preset"] or k["num_hidden_layers"] != z["num_hidden_layers"]:
            sys.exit("--dispatch: its hf_eager kernel counts are for another model")
        cost = {n: v["value"] for n, v in dispatch["parameters"].items()}
        fwd = (z["split_median_s"]["forward"] - k["forward"] * cost["host.dispatch.forward_per_kernel"]) / modules
        bwd = (z["split_median_s"]["backward"] - k["backward"] * cost["host.dispatch.backward_per_kernel"]) / modules
        extra = {n: {"value": f"{v * 1e6:.1f} us", "samples": 1, "uncertainty": 0.4} for n, v in cost.items()}

    rel = os.path.relpath(results)
    prov = steps["provenance"]
    profile = {
        "schema_version": 1,
        "name": os.path.splitext(os.path.basename(profile_path))[0],
        "provenance": {
            "machine": prov["machine"],
            "gpu": prov["gpu"],
            "gpu_count": 1,
            "date": prov["date"],
            "driver": prov.get("driver", ""),
            "cuda": prov.get("cuda", ""),
            "nccl": prov.get("nccl", ""),
            "results": [os.path.join(rel, "cpu-optim.json"), os.path.join(rel, "training-steps-offload.json")],
            "notes": (f"host parameters only, by calibrate/training_probe/fit_host_offload.py: CPU optimizers at 1 and "
                      f"{threads} threads, pinned copies alone, and ZeRO-3's module hooks from its one step without "
                      f"offload at accumulation 1 ({modules} modules); the GPU's parameters keep the catalog's"),
        },
        "parameters": {
            "host.cpu_adam.params_per_second_per_core": {"value": ds1, "samples": 1, "uncertainty": 0.1},
            "host.cpu_adam.node_params_per_second": {"value": dsn, "samples": 1, "uncertainty": 0.1},
            "host.torch_adamw.params_per_second_per_core": {"value": tl1, "samples": 1, "uncertainty": 0.1},
            "host.torch_adamw.node_fraction": {"value": tln / dsn, "samples": 1, "uncertainty": 0.15},
            "host.h2d.pinned.bandwidth": {"value": f"{h2d:.2f} GB/s", "samples": 1, "uncertainty": 0.05},
            "host.d2h.pinned.bandwidth": {"value": f"{d2h:.2f} GB/s", "samples": 1, "uncertainty": 0.05},
            "host.deepspeed.zero3_module_hook.forward": {"value": f"{fwd * 1e6:.1f} us", "samples": 1,
                                                         "uncertainty": 0.2},
            "host.deepspeed.zero3_module_hook.backward": {"value": f"{bwd * 1e6:.1f} us", "samples": 1,
                                                          "uncertainty": 0.2},
            **extra,
        },
    }

    profile_rel = os.path.relpath(profile_path)
    probes = []
    for p in steps["probes"]:
        preset = os.path.splitext(p["preset"])[0]
        ga = p.get("gradient_accumulation_steps") or 1
        mb = p["micro_batch_size"]
        placement = {"gpus_per_pod": 1, "host_ipc": True, "cpus_per_pod": p["threads"]["cpu_count"]}
        omp = p["threads"].get("OMP_NUM_THREADS")
        if omp:
            placement["omp_num_threads"] = int(omp)
        if p["framework"] == "deepspeed":
            zc = p["ds_config"]["zero_optimization"]
            par = {"framework": "deepspeed", "data": 1, "zero_stage": p["zero_stage"],
                   "offload": {"optimizer": "cpu" if p["offload_optimizer"] == "cpu" else "none",
                               "params": "cpu" if p["offload_param"] == "cpu" else "none"},
                   "deepspeed": {k: zc[k] for k in ("reduce_bucket_size", "allgather_bucket_size",
                                                    "stage3_prefetch_bucket_size", "stage3_param_persistence_threshold",
                                                    "overlap_comm", "contiguous_gradients") if k in zc}}
            offloaded = [x for x, key in (("optimizer", "offload_optimizer"), ("params", "offload_param"))
                         if p[key] == "cpu"]
            label = f"DeepSpeed ZeRO-{p['zero_stage']} {preset} ga {ga}"
            if offloaded:
                label += " offload " + "+".join(offloaded)
            if omp:
                label += f" OMP_NUM_THREADS={omp}"
            run = p.get("run")
            if run:
                label += f" (run {run})"
        else:
            off = bool(p.get("cpu_offload"))
            par = {"framework": "pytorch", "data": 1, "zero_stage": 3,
                   "offload": {"optimizer": "cpu" if off else "none", "params": "cpu" if off else "none"}}
            label = f"FSDP2 {preset}{' CPUOffloadPolicy' if off else ''}"
        if any(q["label"] == label for q in probes):
            label += f" (repeat {sum(q['label'].startswith(label) for q in probes) + 1})"
        scenario = {
            "schema_version": 1,
            "name": label.lower().replace(" ", "-").replace("+", "-"),
            "model": {"preset": preset},
            "training": {"seq_len": p["seq_len"], "micro_batch_size": mb, "global_batch_size": mb * ga,
                         "precision": "bf16", "grad_reduce_dtype": "bf16" if p["framework"] == "deepspeed" else "fp32",
                         "optimizer": "adamw", "activation_checkpointing": "none", "implementation": "hf_eager"},
            "parallelism": par,
            "cluster": {"system": "hgx-h100", "nodes": 1, "gpus_per_node": 1, "placement": placement},
            "calibration": profile_rel,
        }
        probes.append({
            "label": label,
            "step_time_s": p["step_time_s"],
            "step_times_s": p.get("step_times_s", []),
            "peak_allocated_bytes": p["peak_allocated_bytes"],
            "measured": "median of the timed steps after warm-up; torch.cuda.max_memory_allocated over them",
            "scenario": scenario,
        })
    doc = {
        "schema_version": 1,
        "note": ("This project's own measured offload steps on one GPU, each with the scenario that describes it. "
                 "The host profile the scenarios name was fitted from the CPU-optimizer and copy benchmarks of the "
                 "same machine and from one of these steps (ZeRO-3 without offload, accumulation 1); the rest are "
                 "out of sample."),
        "name": "offload_probes_1xh100",
        "description": ("DeepSpeed ZeRO-2/3 with and without CPU offload, and FSDP2 with and without CPUOffloadPolicy, "
                        "Hugging Face Llama-3.2 (eager, sdpa) on one H100 80GB of a 16-vCPU guest"),
        "provenance": f"{os.path.join(rel, 'training-steps-offload.json')}, measured {prov['date']} by "
                      "calibrate/training_probe/run_offload_probes.sh (DeepSpeed " + prov.get("deepspeed", "") + ")",
        "probes": probes,
    }
    write_atomically(profile_path, profile)
    write_atomically(probes_path, doc)
    print(f"CPU Adam {ds1:.3g}/s at 1 thread, {dsn:.3g}/s at {threads}; torch loop {tl1:.3g} and {tln:.3g}; "
          f"copies {h2d:.1f}/{d2h:.1f} GB/s; hooks {fwd * 1e6:.0f}/{bwd * 1e6:.0f} us over {modules} modules; "
          f"{len(probes)} probes")


if __name__ == "__main__":
    main()
