#!/usr/bin/env python3
"""NCCL's own choice per size, from the tuning runs' logs (rank 0's NCCL_DEBUG_SUBSYS=TUNING lines).

Usage: extract_choices.py TUNING_DIR > tuning-choices.json
TUNING_DIR holds logs.tgz's tuning/<transport>_<op>.txt. Each nccl-tests size (its size column,
8 x 4^k bytes) gets the first line NCCL logged for it: "<Op>: <bytes> Bytes -> Algo <A> proto <P>
channel{Lo..Hi}={lo..hi}", where <bytes> is count x element size (one rank's piece for all-gather
and reduce-scatter, so the size column is 4 x <bytes> on these 4 GPUs).
"""
import glob
import json
import os
import re
import sys

ENV = {
    "write": {},
    "read": {"NCCL_P2P_READ_ENABLE": "1"},
    "shm": {"NCCL_P2P_DISABLE": "1"},
    "net": {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1", "NCCL_SOCKET_IFNAME": "lo"},
}
LINE = re.compile(r"(\w+): *(\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}")
RANKS = 4


def main(directory):
    runs = []
    for path in sorted(glob.glob(os.path.join(directory, "*.txt"))):
        transport, op = os.path.basename(path)[:-4].split("_", 1)
        per_rank = op in ("all_gather", "reduce_scatter")
        first = {}
        with open(path) as f:
            for m in LINE.finditer(f.read()):
                size = int(m.group(2)) * (RANKS if per_rank else 1)
                first.setdefault(size, (m.group(3).lower(), m.group(4).lower(), int(m.group(6)) - int(m.group(5)) + 1))
        sizes = [8 * 4**k for k in range(13) if 8 * 4**k in first]
        runs.append({
            "op": op,
            "env": dict(ENV[transport], NCCL_NVLS_ENABLE="0"),
            "points": [{"size_bytes": s, "algo": first[s][0], "proto": first[s][1], "channels": first[s][2]} for s in sizes],
        })
    json.dump({
        "description": "NCCL 2.28.9's own algorithm, protocol and channels used per nccl-tests size on 4 x H200 "
                       "(NVSwitch, NVLS off), one thread per GPU, from rank 0's NCCL_DEBUG_SUBSYS=TUNING lines",
        "provenance": "calibrate/results/lent-4xh200-2026-11-27-tuning (tuning.sh, logs.tgz: tuning/)",
        "system": "hgx-h200", "gpus": RANKS, "nccl_version": "2.28.9",
        "runs": runs,
    }, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
