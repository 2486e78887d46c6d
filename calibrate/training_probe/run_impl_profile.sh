#!/usr/bin/env bash
# Kernel-by-kernel profiles of the eager and compiled implementations (impl_profile.py) on one GPU:
#   calibrate/training_probe/run_impl_profile.sh OUTDIR
# A one-layer smoke run first (stops here if it fails), then the full run under LIMIT_S (480 s);
# writes OUTDIR/machine.txt, OUTDIR/impl-profile.json (+ .gz, .log) and prints a table last.
# PRESET (llama3.2-1b), SHAPES, IMPLS (eager,compiled). NVLink multicast stays off.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
OUTDIR=$1
mkdir -p "$OUTDIR"
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PRESET=${PRESET:-llama3.2-1b}
SHAPES=${SHAPES:-1x2048,4x2048,1x1024,2x2048,1x4096,2x4096,4x4096}
IMPLS=${IMPLS:-eager,compiled}
LIMIT_S=${LIMIT_S:-480}
PROBE="$REPO/calibrate/training_probe/impl_profile.py"
{
  python3 -c 'import sys, torch, triton; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__, torch.cuda.get_device_name(0))'
  lscpu | grep -E "Model name|^CPU\(s\)|Thread|Socket|NUMA node\(s\)"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
} > "$OUTDIR/machine.txt" 2>&1
cat "$OUTDIR/machine.txt"
t0=$SECONDS
if ! timeout -k 5 120 python3 "$PROBE" --preset "$REPO/models/presets/$PRESET.json" --impls eager --shapes 1x64 \
    --layer-layers 0 --steps 2 --warmup 1 --out "$OUTDIR/smoke.json" > "$OUTDIR/smoke.log" 2>&1; then
  echo "smoke run failed:"; tail -30 "$OUTDIR/smoke.log"; exit 1
fi
echo "smoke ok after $((SECONDS - t0)) s"
timeout -k 10 "$LIMIT_S" python3 "$PROBE" --preset "$REPO/models/presets/$PRESET.json" --impls "$IMPLS" \
  --shapes "$SHAPES" --out "$OUTDIR/impl-profile.json" > "$OUTDIR/impl-profile.log" 2>&1
echo "== exit $? after $((SECONDS - t0)) s"
grep -v Warning "$OUTDIR/impl-profile.log" | tail -5
python3 - "$OUTDIR/impl-profile.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{'impl':9s} {'L':>3s} {'shape':7s} {'step ms':>8s} {'issue ms':>8s} {'gpu ms':>7s} {'kernels f/b/s':>15s} {'peak GiB':>8s}")
for run in d["runs"]:
    for r in run["shapes"]:
        s = f"{r['micro_batch_size']}x{r['seq_len']}"
        if "error" in r:
            print(f"{run['implementation']:9s} {run['num_hidden_layers']:3d} {s:7s} {r['error'][:70]}")
            continue
        ph = r["phases"]
        gpu = sum(ph[k]["gpu_busy_us"] for k in ph) / 1e3
        ks = "/".join(str(ph[k]["kernels"]) for k in ("forward", "backward", "step"))
        print(f"{run['implementation']:9s} {run['num_hidden_layers']:3d} {s:7s} {r['step_time_s']*1e3:8.2f} "
              f"{r['issue_time_s']*1e3:8.2f} {gpu:7.2f} {ks:>15s} {r['peak_allocated_bytes']/2**30:8.2f}")
PY
