#!/usr/bin/env bash
# Repeatability of the harness against nccl-tests on this machine: both tools, interleaved, several
# times, on the same ops and sizes, with the same launch structure (one thread per GPU: nccl-tests
# -t N -g 1, clustersim-calibrate --launcher threads) and the harness's default (one process per GPU).
#   calibrate/compare_nccl_tests.sh OUTDIR NCCL_TESTS_SRC [REPEATS] [MAXBYTES] [ITERS]
# ITERS (default 20) is nccl-tests' -n for both tools; at 1 MiB (~20 us a call) more iterations
# average over more of the launch jitter that dominates the spread there.
# Writes OUTDIR/compare.json (every run's out-of-place and in-place times per size) and prints, per
# op and size, the spread of each tool over the repeats and the difference of their medians.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=$1; SRC=$2; REPEATS=${3:-3}; MAXB=${4:-64M}; ITERS=${5:-20}
REPO=$(cd "$(dirname "$0")/.." && pwd)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}; NCCL_HOME=${NCCL_HOME:-$CUDA_HOME}
W=$(mktemp -d); mkdir -p "$OUT"
ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
NGPU=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
CUDA_LIB=$CUDA_HOME/lib64
( make -C "$SRC" -j 16 MPI=0 CUDA_HOME="$CUDA_HOME" CUDA_LIB="$CUDA_LIB" NCCL_HOME="$NCCL_HOME" BUILDDIR="$W/nt" \
    NVCC_GENCODE="-gencode=arch=compute_${ARCH},code=sm_${ARCH}" src.build > "$W/nt-build.log" 2>&1 ) &
cmake -S "$REPO/calibrate/harness" -B "$W/h" -DCLUSTERSIM_CUDA_ARCHS="$ARCH" -DCLUSTERSIM_NCCL_HOME="$NCCL_HOME" \
  -DCLUSTERSIM_HARNESS_MPI=OFF > "$W/h-build.log" 2>&1 && cmake --build "$W/h" -j 16 >> "$W/h-build.log" 2>&1
wait
export LD_LIBRARY_PATH="$NCCL_HOME/lib:$CUDA_LIB:${LD_LIBRARY_PATH:-}"
OPS="all_reduce all_gather reduce_scatter"
for r in $(seq 1 "$REPEATS"); do
  for op in $OPS; do
    "$W/nt/${op}_perf" -b 1M -e "$MAXB" -f 2 -t "$NGPU" -g 1 -w 5 -n "$ITERS" -c 1 > "$W/nt-$op-$r.log" 2>&1
  done
  "$W/h/clustersim-calibrate" collectives --launcher threads --ops "${OPS// /,}" -b 1M -e "$MAXB" -f 2 -n "$ITERS" -w 5 \
    -c 1 -o "$W/h-threads-$r.json" > "$W/h-threads-$r.log" 2>&1
  "$W/h/clustersim-calibrate" collectives --ops "${OPS// /,}" -b 1M -e "$MAXB" -f 2 -n "$ITERS" -w 5 \
    -c 1 -o "$W/h-process-$r.json" > "$W/h-process-$r.log" 2>&1
  echo "repeat $r done" >&2
done
python3 - "$W" "$OUT" "$REPEATS" "$OPS" "$ITERS" <<'PY'
import json, os, statistics, sys
w, out, reps, ops = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split()
data = {}
for r in range(1, reps + 1):
    for op in ops:
        for line in open(f"{w}/nt-{op}-{r}.log"):
            p = line.split()
            if len(p) >= 13 and p[0].isdigit():
                for ip, col in (("oop", 5), ("ip", 9)):
                    data.setdefault(("nccl-tests", op, ip, int(p[0])), []).append(float(p[col]))
    for mode in ("threads", "process"):
        try:
            d = json.load(open(f"{w}/h-{mode}-{r}.json"))
        except Exception:
            continue
        for c in d.get("collectives", []):
            for pt in c["points"]:
                data.setdefault((f"harness-{mode}", c["op"], "ip" if c["in_place"] else "oop", pt["size_bytes"]),
                                []).append(pt["time_us"])
rows = []
print(f"{'op':15s}{'':4s}{'size':>6s}  nccl-tests med (spread)   harness-threads med (spread) diff   harness-process diff")
for op in ops:
    for ip in ("oop", "ip"):
        sizes = sorted({k[3] for k in data if k[1] == op and k[2] == ip and k[0] == "nccl-tests"})
        for s in sizes:
            def st(tool):
                v = data.get((tool, op, ip, s), [])
                if not v: return None, None
                m = statistics.median(v); return m, (max(v) - min(v)) / m * 100
            nm, ns = st("nccl-tests"); tm, ts = st("harness-threads"); pm, ps = st("harness-process")
            rows.append({"op": op, "in_place": ip == "ip", "size_bytes": s, "nccl_tests_us": data.get(("nccl-tests", op, ip, s)),
                         "harness_threads_us": data.get(("harness-threads", op, ip, s)),
                         "harness_process_us": data.get(("harness-process", op, ip, s))})
            f = lambda m: f"{(m - nm) / nm * 100:+6.1f}%" if m else "   n/a"
            print(f"{op:15s}{ip:4s}{s >> 20:5d}M  {nm:8.2f} ({ns:4.1f}%)           "
                  f"{tm or 0:8.2f} ({ts or 0:4.1f}%)    {f(tm)}   {f(pm)}")
tmp = os.path.join(out, "compare.json.tmp")
json.dump({"schema_version": 1, "kind": "clustersim-harness-vs-nccl-tests", "repeats": reps, "iters": int(sys.argv[5]), "rows": rows}, open(tmp, "w"), indent=1)
os.replace(tmp, os.path.join(out, "compare.json"))
PY
