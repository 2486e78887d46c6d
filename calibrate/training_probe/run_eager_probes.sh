#!/usr/bin/env bash
# One-GPU steps of a Llama decoder under each implementation (eager_step.py), for the compute
# model's implementations and the CPU side of a step:
#   calibrate/training_probe/run_eager_probes.sh OUTDIR
# Writes OUTDIR/machine.txt, OUTDIR/eager-<impl>.json (+ .log) for eager, hf_eager, dtensor,
# compiled and eager with autocast (fp32 parameters), then prints a table. PRESET (llama3.2-1b),
# SHAPES (1x32,1x512,1x2048,4x2048), LIMIT_S per implementation (300), IMPLS (which of the five
# tags to run; default all). NVLink multicast stays off.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
OUTDIR=$1
mkdir -p "$OUTDIR"
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PRESET=${PRESET:-llama3.2-1b}
SHAPES=${SHAPES:-1x32,1x512,1x2048,4x2048}
LIMIT_S=${LIMIT_S:-300}
{
  python3 -c 'import sys, torch; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
  python3 -c 'import transformers; print("transformers", transformers.__version__)' 2>&1 | tail -1
  lscpu | grep -E "Model name|^CPU\(s\)|Thread|Socket|NUMA node\(s\)"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
} > "$OUTDIR/machine.txt" 2>&1
IMPLS=${IMPLS:-eager hf_eager dtensor eager-autocast compiled}
run() {  # run TAG IMPL [extra...]
  local tag=$1 impl=$2
  shift 2
  case " $IMPLS " in *" $tag "*) ;; *) return ;; esac
  local t0=$SECONDS
  timeout -k 10 "$LIMIT_S" python3 "$REPO/calibrate/training_probe/eager_step.py" --preset "$REPO/models/presets/$PRESET.json" \
    --impl "$impl" --shapes "$SHAPES" "$@" --out "$OUTDIR/eager-$tag.json" > "$OUTDIR/eager-$tag.log" 2>&1
  echo "== $tag: exit $? after $((SECONDS - t0)) s" >&2
}
run eager eager
run hf_eager hf_eager
run dtensor dtensor
run eager-autocast eager --autocast
run compiled compiled
python3 - "$OUTDIR" <<'PY'
import glob, json, os, sys
print(f"{'impl':16s} {'shape':8s} {'step ms':>9s} {'issue ms':>9s} {'gpu ms':>8s} {'kernels':>8s} {'ops':>6s} {'peak GiB':>8s}")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "eager-*.json"))):
    d = json.load(open(f))
    tag = os.path.basename(f)[6:-5]
    for r in d["shapes"]:
        shape = f"{r['micro_batch_size']}x{r['seq_len']}"
        if "error" in r:
            print(f"{tag:16s} {shape:8s} {r['error'][:60]}")
            continue
        print(f"{tag:16s} {shape:8s} {r['step_time_s']*1e3:9.2f} {r['issue_time_s']*1e3:9.2f} {r['gpu_busy_s']*1e3:8.2f} "
              f"{r['kernels']:8d} {r['top_level_aten_ops']:6d} {r['peak_allocated_bytes']/2**30:8.2f}")
PY
