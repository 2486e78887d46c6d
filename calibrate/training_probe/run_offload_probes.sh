#!/usr/bin/env bash
# Real training steps with optimizer/parameter offload to host memory on one GPU (DeepSpeed ZeRO-2/3,
# PyTorch FSDP2 with CPUOffloadPolicy), and the CPU optimizer and host-copy rates behind them, for
# validating `clustersim simulate`:
#   calibrate/training_probe/run_offload_probes.sh OUTDIR PHASE...
# Phases, run in the order given:
#   env    machine.txt: python, torch, CUDA, transformers, DeepSpeed, compilers, lscpu, free, nvidia-smi
#   build  JIT-builds DeepSpeed's cpu_adam and fused_adam ops (into TORCH_EXTENSIONS_DIR), timed
#   smoke  one short DeepSpeed and one FSDP2-offload run on a 2-layer model
#   cpu    cpu_optim_bench.py -> OUTDIR/cpu-optim$CPU_TAG.json (CPU_OPTIMIZERS,
#          CPU_LOAD: which ones; CPU_LOAD_THREADS: the load's thread counts)
#   ds1    DeepSpeed ZeRO-2/3 with and without offload, gradient accumulation 1, and one offload
#          config with OMP_NUM_THREADS=1 against it unset
#   ds4    DeepSpeed with gradient accumulation 4 (a subset)
#   fsdp   FSDP2 without and with CPUOffloadPolicy
#   big    DeepSpeed ZeRO-2 with optimizer offload on the larger model (BIG_PRESET)
# Every training run goes through torchrun --nproc_per_node 1 within a time limit; each writes
# OUTDIR/probe-<name>.json and .log, and every phase after the first rewrites
# OUTDIR/training-steps-offload.json (all probe-*.json gathered) and prints a summary table.
# Model and batch: PRESET (default llama3.2-1b), BIG_PRESET (llama3.2-3b), SEQ (2048), MB (2).
# Needs python3 with torch and transformers; DeepSpeed (and its Python needs) importable through
# PYTHONPATH for the DeepSpeed phases. NVLink multicast stays off.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
OUTDIR=$1
shift
mkdir -p "$OUTDIR"
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PROBE=$REPO/calibrate/training_probe
PRESET=${PRESET:-llama3.2-1b}
BIG_PRESET=${BIG_PRESET:-llama3.2-3b}
SEQ=${SEQ:-2048}
MB=${MB:-2}

ds() {  # ds NAME LIMIT_S PRESET GA STAGE OFFLOAD(none|opt|opt+param) [extra args...]
  local name=$1 limit=$2 preset=$3 ga=$4 stage=$5 off=$6
  shift 6
  local flags=()
  case $off in
    opt) flags+=(--offload-optimizer) ;;
    opt+param) flags+=(--offload-optimizer --offload-param) ;;
  esac
  echo "== ds $name: $preset seq $SEQ mb $MB ga $ga zero $stage offload $off ${OMP_NUM_THREADS:+OMP_NUM_THREADS=$OMP_NUM_THREADS} $*" >&2
  local t0=$SECONDS
  timeout -k 10 "$limit" torchrun --standalone --nproc_per_node 1 "$PROBE/ds_step.py" \
    --preset "$REPO/models/presets/$preset.json" --seq-len "$SEQ" --micro-batch "$MB" --grad-accum "$ga" \
    --zero-stage "$stage" "${flags[@]}" "$@" --out "$OUTDIR/probe-$name.json" > "$OUTDIR/probe-$name.log" 2>&1
  echo "   exit $? after $((SECONDS - t0)) s: $(tail -1 "$OUTDIR/probe-$name.log")" >&2
}

fsdp() {  # fsdp NAME LIMIT_S PRESET [extra args...]
  local name=$1 limit=$2 preset=$3
  shift 3
  echo "== fsdp $name: $preset seq $SEQ mb $MB $*" >&2
  local t0=$SECONDS
  timeout -k 10 "$limit" torchrun --standalone --nproc_per_node 1 "$PROBE/fsdp_step.py" \
    --preset "$REPO/models/presets/$preset.json" --seq-len "$SEQ" --micro-batch "$MB" --steps 4 --warmup 2 \
    "$@" --out "$OUTDIR/probe-$name.json" > "$OUTDIR/probe-$name.log" 2>&1
  echo "   exit $? after $((SECONDS - t0)) s: $(tail -1 "$OUTDIR/probe-$name.log")" >&2
}

collect() {
  python3 - "$OUTDIR" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
probes, logs = [], {}
for p in sorted(glob.glob(os.path.join(out, "probe-*.json"))):
    d = json.load(open(p))
    d["probe"] = os.path.basename(p)[6:-5]
    probes.append(d)
for p in sorted(glob.glob(os.path.join(out, "probe-*.log"))):
    logs[os.path.basename(p)] = open(p, errors="replace").read()[-3000:]
doc = {"schema_version": 1, "kind": "clustersim-training-steps", "probes": probes, "log_tails": logs}
with open(os.path.join(out, "training-steps-offload.json.tmp"), "w") as f:
    json.dump(doc, f, indent=1)
os.replace(os.path.join(out, "training-steps-offload.json.tmp"), os.path.join(out, "training-steps-offload.json"))
print(f"\n{len(probes)} probe(s); step and phase medians in s, peak GPU memory allocated in GiB")
print(f"{'probe':24s} {'fw':5s} {'zero':4s} {'offload':9s} {'ga':>2s} {'step':>7s} {'fwd':>7s} {'bwd':>7s} "
      f"{'optstep':>7s} {'peak':>6s} {'OMP':>4s} {'torch':>5s} {'gomp':>4s}")
for d in probes:
    sm = d.get("split_median_s", {})
    th = d.get("threads", {})
    off = d.get("offload_optimizer", "cpu" if d.get("cpu_offload") else "none")
    if d.get("offload_param", "none") != "none":
        off += "+par"
    print(f"{d['probe']:24s} {'ds' if d['framework'] == 'deepspeed' else 'fsdp':5s} "
          f"{str(d.get('zero_stage', 3)):4s} {off:9s} {d.get('gradient_accumulation_steps', 1):2d} "
          f"{d['step_time_s']:7.3f} {sm.get('forward', 0):7.3f} {sm.get('backward', 0):7.3f} {sm.get('step', 0):7.3f} "
          f"{d['peak_allocated_bytes'] / 2**30:6.1f} {str(th.get('OMP_NUM_THREADS')):>4s} "
          f"{str(th.get('torch_num_threads')):>5s} {str(th.get('libgomp_max_threads', '-')):>4s}")
PY
}

for phase in "$@"; do
  echo "#### phase $phase ($(date -u +%H:%M:%S))" >&2
  case $phase in
    env)
      {
        echo "## date"; date -u
        echo "## uname"; uname -a
        echo "## python"; command -v python3; python3 --version
        python3 - <<'PY'
import importlib, subprocess
for m in ["torch", "transformers", "deepspeed", "pydantic", "psutil", "ninja", "packaging", "tqdm", "hjson",
          "cpuinfo", "msgpack", "einops", "numpy", "accelerate"]:
    try:
        mod = importlib.import_module(m)
        print(f"{m} {getattr(mod, '__version__', '?')} {getattr(mod, '__file__', '')}")
    except Exception as e:
        print(f"{m} MISSING ({type(e).__name__}: {e})")
import torch
print("torch.version.cuda", torch.version.cuda, "cuda available", torch.cuda.is_available(),
      "device", torch.cuda.get_device_name(0), "nccl", torch.cuda.nccl.version())
print("torch threads", torch.get_num_threads(), "interop", torch.get_num_interop_threads())
print(torch.__config__.parallel_info())
try:
    import deepspeed
    print("deepspeed git hash", deepspeed.__git_hash__)
except Exception as e:
    print("deepspeed import failed", e)
PY
        echo "## ninja"; command -v ninja && ninja --version
        echo "## compilers"; g++ --version | head -1; command -v nvcc && nvcc --version | tail -2
        echo "## libgomp"; ldconfig -p | grep -i gomp
        echo "## nproc"; nproc
        echo "## lscpu"; lscpu
        echo "## numa"; cat /sys/devices/system/node/node*/cpulist 2>/dev/null
        echo "## free -g"; free -g
        echo "## ulimit -l"; ulimit -l
        echo "## nvidia-smi"; nvidia-smi
        nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current,clocks.max.sm --format=csv
        nvidia-smi topo -m
      } > "$OUTDIR/machine.txt" 2>&1
      grep -E "^(torch|transformers|deepspeed|pydantic|ninja|Model name|Socket|Core|Thread|CPU\(s\)|NUMA)" \
        "$OUTDIR/machine.txt" >&2
      ;;
    build)
      python3 - <<'PY' 2>&1 | tee "$OUTDIR/build.log" | grep -E "^(built|FAILED)" >&2
import time, traceback
from deepspeed.ops.op_builder import CPUAdamBuilder, FusedAdamBuilder
for b in (CPUAdamBuilder(), FusedAdamBuilder()):
    t0 = time.time()
    try:
        b.load(verbose=True)
        print(f"built {b.name} in {time.time() - t0:.1f} s", flush=True)
    except Exception:
        traceback.print_exc()
        print(f"FAILED {b.name} after {time.time() - t0:.1f} s", flush=True)
PY
      ;;
    smoke)
      ds smoke-z2-opt 150 "$PRESET" 1 2 opt --layers 2 --steps 2 --split-steps 1 --warmup 1
      fsdp smoke-fsdp-off 150 "$PRESET" --layers 2 --cpu-offload --steps 2 --split-steps 1
      ;;
    cpu)
      timeout -k 10 420 python3 "$PROBE/cpu_optim_bench.py" --out "$OUTDIR/cpu-optim${CPU_TAG:-}.json" \
        --optimizers "${CPU_OPTIMIZERS:-torch-forloop,torch-foreach,torch-fused,ds-cpuadam}" \
        --load-optimizers "${CPU_LOAD:-ds-cpuadam,torch-fused}" --load-threads "${CPU_LOAD_THREADS:-}" \
        > "$OUTDIR/cpu-optim${CPU_TAG:-}.log" 2>&1
      echo "   exit $?" >&2
      grep -v Warning "$OUTDIR/cpu-optim${CPU_TAG:-}.log" >&2
      ;;
    ds1)
      ds z2-none-ga1 150 "$PRESET" 1 2 none
      ds z2-opt-ga1 200 "$PRESET" 1 2 opt
      OMP_NUM_THREADS=1 ds z2-opt-ga1-omp1 240 "$PRESET" 1 2 opt
      ds z3-none-ga1 150 "$PRESET" 1 3 none
      ds z3-opt-ga1 200 "$PRESET" 1 3 opt
      ds z3-optparam-ga1 240 "$PRESET" 1 3 opt+param
      ;;
    ds4)
      ds z2-none-ga4 150 "$PRESET" 4 2 none
      ds z2-opt-ga4 200 "$PRESET" 4 2 opt
      ds z3-opt-ga4 200 "$PRESET" 4 3 opt
      ds z3-optparam-ga4 240 "$PRESET" 4 3 opt+param
      ;;
    fsdp)
      fsdp fsdp-none 150 "$PRESET"
      fsdp fsdp-off 240 "$PRESET" --cpu-offload
      ;;
    big)
      ds big-z2-opt-ga1 300 "$BIG_PRESET" 1 2 opt --steps 3 --split-steps 2
      ;;
    *) echo "unknown phase $phase" >&2 ;;
  esac
  [ "$phase" != env ] && [ "$phase" != build ] && [ "$phase" != cpu ] && collect >&2
done
exit 0
