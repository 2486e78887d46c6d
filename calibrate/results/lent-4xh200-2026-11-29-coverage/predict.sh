#!/usr/bin/env bash
# The predictions of coverage.sh's runs with the built-in profile, written before the run:
# predictions.csv (run, size_bytes, time_us, uncertainty: relative, one standard deviation).
# Run from the repository root after the build: bash calibrate/results/lent-4xh200-2026-11-29-coverage/predict.sh
set -eu
D=calibrate/results/lent-4xh200-2026-11-29-coverage
CS=${CLUSTERSIM:-build/clustersim}
OPS="all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv"
NETENV="--env NCCL_P2P_DISABLE=1 --env NCCL_SHM_DISABLE=1 --env NCCL_SOCKET_IFNAME=lo"
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
pred() {  # run-name gpus threads sizes env...
  local name=$1 gpus=$2 t=$3 b=$4 e=$5 f=$6; shift 6
  $CS collective --op ${name#*_} --system hgx-h200 --gpus $gpus -t $t -b $b -e $e -f $f \
    --env NCCL_NVLS_ENABLE=0 "$@" --calibration hgx-h200-4gpu-2026-11 --format json -o "$TMP/$name.json"
}
for op in $OPS; do
  pred p2p_$op 4 4 64K 256M 4
  pred shm_$op 4 4 64K 256M 4 --env NCCL_P2P_DISABLE=1
  pred net_$op 4 4 64K 32M 8 $NETENV
  pred local_$op 1 1 64K 256M 4
done
python3 - "$TMP" > $D/predictions.csv <<'PY'
import json, os, sys
print("run,size_bytes,time_us,uncertainty")
for f in sorted(os.listdir(sys.argv[1])):
    for p in json.load(open(os.path.join(sys.argv[1], f)))["points"]:
        print("%s,%d,%.6f,%.6f" % (f[:-5], p["size_bytes"], p["time_us"], p["uncertainty"]))
PY
