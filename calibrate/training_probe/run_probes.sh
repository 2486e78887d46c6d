#!/usr/bin/env bash
# Real training steps on this machine's GPUs (PyTorch FSDP2), for validating `clustersim simulate`:
#   calibrate/training_probe/run_probes.sh OUT.json [GPUS]
# Runs each configuration below with torchrun (one process per GPU), each within a time limit, and
# gathers their results into OUT.json (written atomically). Needs python3 with torch and
# transformers. NVLink multicast stays off.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=$1
NGPU=${2:-$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
i=0
run() {  # run LIMIT_S PRESET SEQ MB CKPT [LAYERS]
  local limit=$1 preset=$2 seq=$3 mb=$4 ckpt=$5 layers=${6:-0}
  i=$((i + 1))
  echo "== probe $i: $preset seq $seq mb $mb ckpt $ckpt layers $layers on $NGPU GPUs" >&2
  timeout -k 10 "$limit" torchrun --standalone --nproc_per_node "$NGPU" \
    "$REPO/calibrate/training_probe/fsdp_step.py" --preset "$REPO/models/presets/$preset.json" \
    --seq-len "$seq" --micro-batch "$mb" --checkpointing "$ckpt" --layers "$layers" \
    --steps 8 --warmup 3 --out "$WORK/probe-$i.json" > "$WORK/probe-$i.log" 2>&1
  echo "   exit $?: $(tail -1 "$WORK/probe-$i.log")" >&2
}
run 150 llama3-8b 4096 1 none
run 150 llama3-8b 4096 2 full
run 120 llama3.2-1b 4096 4 none
python3 - "$WORK" "$OUT" <<'PY'
import glob, json, os, sys
work, out = sys.argv[1], sys.argv[2]
probes, logs = [], {}
for p in sorted(glob.glob(os.path.join(work, "probe-*.json"))):
    probes.append(json.load(open(p)))
for p in sorted(glob.glob(os.path.join(work, "probe-*.log"))):
    logs[os.path.basename(p)] = open(p, errors="replace").read()[-4000:]
doc = {"schema_version": 1, "kind": "clustersim-training-steps", "probes": probes, "log_tails": logs}
with open(out + ".tmp", "w") as f:
    json.dump(doc, f, indent=1)
os.replace(out + ".tmp", out)
print(f"{len(probes)} probe(s) -> {out}")
PY
