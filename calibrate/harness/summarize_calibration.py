#!/usr/bin/env python3
"""Short summary of a calibration run (calibrate/run_calibration.sh prints it last).

Usage: summarize_calibration.py OUTDIR [NCCL_TESTS_LOG_DIR]

Reads OUTDIR/results-*.json (clustersim-calibrate output) and, when given, the nccl-tests logs
(NCCL_TESTS_LOG_DIR/nccl-tests-<op>.log), and prints: busbw of the harness next to nccl-tests at a
few sizes (the two must agree within 3% from 1 MiB up), GEMM TFLOP/s, HBM GB/s, host transfer GB/s,
point-to-point bandwidth, attention, CPU Adam, and what failed. Standard library only; every missing
piece prints as n/a. This is a quick look; `clustersim calibrate summary` reads the results strictly.
"""

import glob
import json
import os
import re
import statistics
import sys

SIZES = [1 << 20, 16 << 20, 256 << 20, 1 << 30, 8 << 30]
OPS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv"]


def human(n):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d%s" % (n // div, unit)
    return str(n)


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print("  (cannot read %s: %s)" % (path, e))
        return None


def nccl_tests_table(path):
    """{size: busbw out-of-place} from an nccl-tests log (current or old column layout)."""
    out = {}
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return out
    for line in text.splitlines():
        line = re.sub(r"[A-Za-z][\w.-]*:\d+:\d+ \[\d+\] NCCL (INFO|WARN).*$", "", line)
        t = line.split()
        if len(t) not in (12, 13) or not t[0].isdigit():
            continue
        try:
            busbw = float(t[7] if len(t) == 13 else t[6])
        except ValueError:
            continue
        out[int(t[0])] = busbw
    return out


def harness_busbw(results, op, nranks):
    """{size: busbw} of the auto, out-of-place series of `op`."""
    for c in results.get("collectives", []):
        if c["op"] == op and c["algo"] == "auto" and c["proto"] == "auto" and c["channels"] is None \
                and not c["in_place"] and c["nranks"] == nranks:
            return {p["size_bytes"]: p["busbw_GBps"] for p in c["points"]}
    return {}


def fmt(v, digits=1):
    return "n/a" if v is None else ("%.*f" % (digits, v))


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    outdir = sys.argv[1]
    logdir = sys.argv[2] if len(sys.argv) > 2 else None
    files = sorted(glob.glob(os.path.join(outdir, "results-*.json")))
    docs = {os.path.basename(f): load(f) for f in files}
    docs = {k: v for k, v in docs.items() if v}
    if not docs:
        print("no results-*.json in %s" % outdir)
        return 1

    main_doc = None
    for name in sorted(docs, key=lambda n: -(docs[n].get("environment") or {}).get("gpu_count", 0)):
        if docs[name].get("collectives"):
            main_doc = docs[name]
            break
    env = next((d.get("environment") for d in docs.values() if d.get("environment")), {}) or {}
    print("== machine: %s, %s x %s, driver %s, CUDA %s, NCCL %s, fabric manager %s (%s)" % (
        env.get("hostname"), env.get("gpu_count"), env.get("gpu_name"), env.get("driver"), env.get("cuda_runtime"),
        env.get("nccl_version"), env.get("fabric_manager"), env.get("fabric_manager_evidence")))
    for w in env.get("warnings", []):
        print("   warning: " + w)

    # Collectives: harness vs nccl-tests.
    if main_doc:
        n = max([c["nranks"] for c in main_doc.get("collectives", [])] or [0])
        print("\n== busbw GB/s, %d ranks, out-of-place: harness | nccl-tests | difference" % n)
        header = "%-15s" % "op" + "".join("%24s" % human(s) for s in SIZES)
        print(header)
        worst = 0.0
        for op in OPS:
            h = harness_busbw(main_doc, op, n)
            t = nccl_tests_table(os.path.join(logdir, "nccl-tests-%s.log" % op)) if logdir else {}
            if not h and not t:
                continue
            cells = []
            for s in SIZES:
                hv, tv = h.get(s), t.get(s)
                if hv is not None and tv:
                    d = 100.0 * (hv - tv) / tv
                    worst = max(worst, abs(d))
                    cells.append("%7.1f %7.1f %+6.1f%%" % (hv, tv, d))
                else:
                    cells.append("%7s %7s %7s" % (fmt(hv), fmt(tv), ""))
            print("%-15s" % op + "".join("%24s" % c for c in cells))
        if logdir:
            verdict = "OK" if worst <= 3.0 else "ABOVE 3%"
            print("largest |harness - nccl-tests| at the sizes above: %.1f%% (%s)" % (worst, verdict))
        forced = [c for c in main_doc.get("collectives", []) if c["algo"] != "auto" or c["proto"] != "auto"
                  or c["channels"] is not None]
        for d in docs.values():
            forced += [c for c in d.get("collectives", []) if (c["algo"] != "auto" or c["proto"] != "auto"
                       or c["channels"] is not None) and d is not main_doc]
        if forced:
            print("\n== forced algorithm/protocol/channels, all_reduce out-of-place, busbw at the largest size")
            for c in forced:
                if c["op"] == "all_reduce" and not c["in_place"] and c["points"]:
                    p = c["points"][-1]
                    print("  algo=%-5s proto=%-6s channels=%-4s %8s %8.1f GB/s" % (
                        c["algo"], c["proto"], c["channels"], human(p["size_bytes"]), p["busbw_GBps"]))
    for name, d in sorted(docs.items()):
        if d is main_doc:
            continue
        for op in ("all_reduce", "all_gather"):
            for c in d.get("collectives", []):
                if c["op"] == op and c["algo"] == "auto" and c["channels"] is None and not c["in_place"] and c["points"]:
                    p = c["points"][-1]
                    print("  %s: %s on %d rank(s), %s: busbw %.1f GB/s, time %.1f us" % (
                        name, op, c["nranks"], human(p["size_bytes"]), p["busbw_GBps"], p["time_us"]))

    def every(section):
        out = []
        for d in docs.values():
            out += d.get(section, [])
        return out

    gemm = every("gemm")
    print("\n== GEMM (cuBLASLt), TFLOP/s")
    for dtype in ("bf16", "fp8"):
        g = [x for x in gemm if x["dtype"] == dtype]
        if not g:
            print("  %s: n/a" % dtype)
            continue
        sq = [x["tflops"] for x in g if x["name"] == "square"]
        big = sorted(g, key=lambda x: -x["m"] * x["n"] * x["k"])[:10]
        print("  %s: square %s, median of the 10 largest %.0f, max %.0f, %d shapes" % (
            dtype, fmt(sq[0], 0) if sq else "n/a", statistics.median([x["tflops"] for x in big]),
            max(x["tflops"] for x in g), len(g)))

    att = every("attention")
    print("\n== attention (cuDNN SDPA), TFLOP/s")
    if att:
        for direction in ("fwd", "bwd"):
            a = [x for x in att if x["direction"] == direction]
            if a:
                best = max(a, key=lambda x: x["tflops"])
                print("  %s: max %.0f (seq %d, heads %d), %d configs" % (
                    direction, best["tflops"], best["seq_len"], best["heads"], len(a)))
    else:
        print("  n/a" + "".join("  (%s)" % f["message"][:100] for d in docs.values() for f in d.get("failures", [])
                                if f["section"] == "attention")[:300])

    mem = every("memory")
    print("\n== HBM, GB/s at the largest buffer (mean over GPUs)")
    for kernel in ("copy", "read", "write", "elementwise", "cuda_memcpy"):
        m = [x for x in mem if x["kernel"] == kernel]
        if m:
            top = max(x.get("buffer_bytes", 0) for x in m)
            vals = [x["bandwidth_GBps"] for x in m if x.get("buffer_bytes", 0) == top]
            print("  %-12s %8.0f  (%s buffers, %d GPUs)" % (kernel, statistics.mean(vals), human(top), len(vals)))

    host = every("host")
    print("\n== host transfers, GB/s per GPU at the largest size")
    for pinned in (True, False):
        for direction in ("h2d", "d2h"):
            h = [x for x in host if x["pinned"] == pinned and x["direction"] == direction]
            if not h:
                continue
            top = max(x["size_bytes"] for x in h)
            alone = [x["bandwidth_GBps"] for x in h if not x.get("concurrent") and x["size_bytes"] == top]
            together = [x for x in h if x.get("concurrent") and x["size_bytes"] == top]
            line = "  %-8s %s: alone %s" % ("pinned" if pinned else "pageable", direction,
                                            fmt(statistics.mean(alone)) if alone else "n/a")
            for t in together:
                line += ", %d GPUs at once %.1f each (%.1f total)" % (len(t["gpus"]), t["bandwidth_GBps"],
                                                                     t.get("aggregate_GBps", 0))
            print(line)

    p2p = every("p2p")
    print("\n== point to point: mean over pairs, bandwidth at the largest size, latency at the smallest")
    for mode in ("nccl_p2p_write", "nccl_p2p_read", "nccl_shm", "cuda_memcpy_peer"):
        s = [x for x in p2p if x["mode"] == mode and x["points"]]
        if s:
            bw = statistics.mean(x["points"][-1]["bandwidth_GBps"] for x in s)
            lat = statistics.mean(x["points"][0]["time_us"] for x in s)
            print("  %-17s %7.1f GB/s  %7.1f us  (%d pairs)" % (mode, bw, lat, len(s)))

    adam = every("cpu_adam")
    if adam:
        one = [x for x in adam if x["threads"] == 1]
        most = max(adam, key=lambda x: x["threads"])
        print("\n== CPU AdamW: %s params/s on 1 thread, %.3g on %d threads (%s)" % (
            "%.3g" % one[0]["params_per_second"] if one else "n/a", most["params_per_second"], most["threads"],
            most.get("vector_isa")))

    print("\n== sub-runs and failures")
    for name, d in sorted(docs.items()):
        runs = d.get("runs", [])
        counts = {}
        for r in runs:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        print("  %s: %s; %d failure notes" % (name, ", ".join("%s %d" % kv for kv in sorted(counts.items())),
                                             len(d.get("failures", []))))
        for r in runs:
            if r["status"] != "ok":
                print("    %s %s: %s (%s)" % (r["section"], r["subrun"], r["status"], r["message"][:120]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
