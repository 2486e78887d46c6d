#!/usr/bin/env bash
# Calibrates the GPU machine this runs on, in about nine minutes, and leaves everything in OUTDIR.
#
#   calibrate/run_calibration.sh OUTDIR [NCCL_TESTS_SRC]
#
# Run from anywhere; needs CMake, nvcc, the CUDA libraries and NCCL (default /usr/local/cuda; set
# NCCL_HOME otherwise), and nothing else. Steps, each with a time limit:
#   1. build clustersim-calibrate for this machine's GPU architecture (and nccl-tests from
#      NCCL_TESTS_SRC, when given, at the same time);
#   2. harness on all GPUs: environment, collectives with NCCL's own choices (8 B to 8 GiB), GEMM,
#      HBM, host transfers                                            -> OUTDIR/results-<N>gpu.json
#   3. nccl-tests on the same GPUs and sizes (all_reduce, all_gather, reduce_scatter to 8 GiB; the
#      other four ops to 1 GiB)                                       -> logs
#   4. harness on all GPUs: forced algorithms, protocols and channel counts (to 1 GiB), point to
#      point for every GPU pair, attention, CPU Adam                  -> OUTDIR/results-<N>gpu-extra.json
#   5. the 2-GPU and 1-GPU subsets (CUDA_VISIBLE_DEVICES): collectives and host transfers
#                                                                     -> OUTDIR/results-2gpu.json, -1gpu.json
#   6. a summary table (OUTDIR/summary.txt, also printed last) and OUTDIR/logs.tar.gz (build logs,
#      harness and nccl-tests output, NCCL_DEBUG=INFO files).
# A step that fails is reported and the next one runs. Every results file is complete at all times
# (the harness rewrites it atomically after every sub-run). CALIBRATION_BUDGET_S (default 540)
# bounds the whole run; each step gets what is left, at most its share. Prebuilt binaries are used
# when CLUSTERSIM_CALIBRATE_BIN (the harness) or NCCL_TESTS_BUILD (a directory of *_perf) are set.
#
# NVLink multicast stays off in everything started here: NCCL_NVLS_ENABLE=0,
# TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1. Nothing here changes GPU settings.

set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 2
fi
OUTDIR=$1
NCCL_TESTS_SRC=${2:-}
REPO=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUTDIR" || { echo "cannot create $OUTDIR" >&2; exit 1; }
OUTDIR=$(cd "$OUTDIR" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/clustersim-calibration-XXXXXX")
LOGS=$WORK/logs
mkdir -p "$LOGS"
BUDGET=${CALIBRATION_BUDGET_S:-540}
T0=$(date +%s)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NCCL_HOME=${NCCL_HOME:-$CUDA_HOME}
JOBS=$(nproc 2>/dev/null || echo 8)

elapsed() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( BUDGET - $(elapsed) )); }
say() { echo "[run_calibration $(elapsed)s] $*" | tee -a "$LOGS/run_calibration.log" >&2; }
# Seconds for a step: its share, or what is left of the budget minus a reserve for the last steps.
share() {
  local want=$1 reserve=${2:-20} l
  l=$(( $(left) - reserve ))
  [ "$l" -lt "$want" ] && want=$l
  [ "$want" -lt 0 ] && want=0
  echo "$want"
}
pack_logs() {
  tar -C "$WORK" -czf "$OUTDIR/logs.tar.gz.tmp" logs 2>/dev/null && mv "$OUTDIR/logs.tar.gz.tmp" "$OUTDIR/logs.tar.gz"
}
trap 'say "interrupted"; pack_logs; exit 130' INT TERM

say "output $OUTDIR, work $WORK, budget ${BUDGET}s"
{
  echo "date: $(date -u +%FT%TZ)"; echo "host: $(hostname)"; uname -a
  nvidia-smi 2>&1 | head -40
  nvidia-smi topo -m 2>&1
  nvidia-smi -q 2>&1 | grep -i -A3 fabric
  env | grep -E '^(NCCL_|FI_|CUDA_|TORCH_SYMM|NVSHMEM_)' | sort
} > "$LOGS/machine.txt" 2>&1

# ---- 1. builds -----------------------------------------------------------------------------
ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
case "$ARCH" in ''|*[!0-9]*) ARCH=90; say "GPU architecture unknown; building for sm_90" ;; esac
NGPU=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
[ "$NGPU" -ge 1 ] 2>/dev/null || NGPU=0
say "$NGPU GPU(s), sm_$ARCH"

CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release -DCLUSTERSIM_CUDA_ARCHS="$ARCH" -DCLUSTERSIM_HARNESS_NATIVE=ON
            -DCLUSTERSIM_NCCL_HOME="$NCCL_HOME" -DCLUSTERSIM_HARNESS_MPI=OFF)
if ! command -v nvcc >/dev/null && [ -x "$CUDA_HOME/bin/nvcc" ]; then
  export PATH="$CUDA_HOME/bin:$PATH"
fi
command -v nvcc >/dev/null && CMAKE_ARGS+=(-DCMAKE_CUDA_COMPILER="$(command -v nvcc)")
# cuDNN attention needs the header-only cuDNN frontend; it is used when one of these holds it.
for fe in "${CUDNN_FRONTEND_INCLUDE:-}" "$REPO/third_party_fetch/cudnn-frontend/include"; do
  if [ -n "$fe" ] && [ -f "$fe/cudnn_frontend.h" ]; then
    CMAKE_ARGS+=(-DCLUSTERSIM_CUDNN_FRONTEND_INCLUDE_DIR="$fe")
    if [ ! -f "$CUDA_HOME/include/cudnn.h" ] && [ -z "${CUDNN_PATH:-}" ]; then
      # cuDNN from the Python wheel (nvidia-cudnn-cu*), when the system has none.
      CUDNN_PATH=$(python3 -c 'import nvidia.cudnn as c; print(list(c.__path__)[0])' 2>/dev/null)
      [ -n "$CUDNN_PATH" ] && export CUDNN_PATH && export LD_LIBRARY_PATH="$CUDNN_PATH/lib:${LD_LIBRARY_PATH:-}"
    fi
    say "cuDNN frontend: $fe"
    break
  fi
done

BUILD=$WORK/build-harness
NT_BUILD=$WORK/nccl-tests-build
CUDA_LIB=$CUDA_HOME/lib64
[ -e "$CUDA_LIB/libcudart.so" ] || CUDA_LIB=$CUDA_HOME/lib
NT_PID=
if [ -n "${NCCL_TESTS_BUILD:-}" ] && [ -x "$NCCL_TESTS_BUILD/all_reduce_perf" ]; then
  NT_BUILD=$NCCL_TESTS_BUILD  # prebuilt (the Kubernetes image)
  NCCL_TESTS_SRC=
  say "nccl-tests from $NT_BUILD"
fi
if [ -n "$NCCL_TESTS_SRC" ]; then
  if [ -f "$NCCL_TESTS_SRC/src/common.cu" ]; then
    # Built out of its tree, for this GPU only (nccl-tests' default builds six architectures).
    ( timeout -k 10 "$(share 240 240)" make -C "$NCCL_TESTS_SRC" -j "$JOBS" MPI=0 CUDA_HOME="$CUDA_HOME" \
        CUDA_LIB="$CUDA_LIB" NCCL_HOME="$NCCL_HOME" BUILDDIR="$NT_BUILD" \
        NVCC_GENCODE="-gencode=arch=compute_${ARCH},code=sm_${ARCH}" src.build ) > "$LOGS/build-nccl-tests.log" 2>&1 &
    NT_PID=$!
  else
    say "NCCL_TESTS_SRC=$NCCL_TESTS_SRC holds no nccl-tests sources (src/common.cu); nccl-tests skipped"
  fi
fi
if [ -n "${CLUSTERSIM_CALIBRATE_BIN:-}" ] && [ -x "$CLUSTERSIM_CALIBRATE_BIN" ]; then
  HARNESS=$CLUSTERSIM_CALIBRATE_BIN  # prebuilt (the Kubernetes image)
  echo "prebuilt $HARNESS" > "$LOGS/build-harness.log"
else
  ( timeout -k 10 "$(share 240 240)" cmake -S "$REPO/calibrate/harness" -B "$BUILD" "${CMAKE_ARGS[@]}" &&
    timeout -k 10 "$(share 240 240)" cmake --build "$BUILD" -j "$JOBS" ) > "$LOGS/build-harness.log" 2>&1
  HARNESS=$BUILD/clustersim-calibrate
fi
if [ -x "$HARNESS" ]; then
  say "harness built"
else
  say "harness build FAILED (logs/build-harness.log):"; tail -20 "$LOGS/build-harness.log" >&2
fi
if [ -n "$NT_PID" ]; then
  wait "$NT_PID" && say "nccl-tests built" || { say "nccl-tests build FAILED (logs/build-nccl-tests.log)"; tail -5 "$LOGS/build-nccl-tests.log" >&2; }
fi
pack_logs

# ---- harness runs ----------------------------------------------------------------------------
# run_harness NAME SECONDS [CUDA_VISIBLE_DEVICES or ""] ARGS...
run_harness() {
  local name=$1 secs=$2 visible=$3; shift 3
  if [ ! -x "$HARNESS" ]; then say "$name: no harness binary, skipped"; return; fi
  if [ "$secs" -lt 15 ]; then say "$name: skipped, ${secs}s left of the budget"; return; fi
  say "$name: up to ${secs}s"
  local t=$(date +%s)
  (
    [ -n "$visible" ] && export CUDA_VISIBLE_DEVICES=$visible
    timeout -k 15 "$((secs + 20))" "$HARNESS" "$@" --deadline "$secs" --nccl-debug-dir "$LOGS/nccl-$name" \
      -o "$OUTDIR/results-$name.json"
  ) > "$LOGS/harness-$name.log" 2>&1
  local rc=$? ok
  ok=$(grep -c '"status": "ok"' "$OUTDIR/results-$name.json" 2>/dev/null)
  say "$name: exit $rc after $(( $(date +%s) - t ))s (${ok:-0} sub-runs ok)"
  tail -12 "$LOGS/harness-$name.log" | sed 's/^/    /' >&2
  pack_logs
}

NAME=${NGPU}gpu
[ "$NGPU" -ge 1 ] || NAME=nogpu
COMMON=(--test-timeout 30 --subrun-timeout 240)

# ---- 2. all GPUs: NCCL's own choices, compute, memory, host ---------------------------------------
run_harness "$NAME" "$(share 170 200)" "" env collectives gemm memory host "${COMMON[@]}" \
  -b 8 -e 8G -f 2 -n 20 -w 5 -c 1 \
  --gemm-tokens 1024,4096,16384 --gemm-tp 1,2,4,8 \
  --budget collectives=80 --budget gemm=45 --budget memory=15 --budget host=25

# ---- 3. nccl-tests beside it ---------------------------------------------------------------------
# One thread per GPU (-t N -g 1): every GPU's launches are issued concurrently, as with the
# harness's one process per GPU. With -g N one thread launches all GPUs in turn, which adds about
# N x the launch cost to small sizes (measured on 4 x H200: +20% to +90% time at 1 MiB).
if [ -x "$NT_BUILD/all_reduce_perf" ] && [ "$NGPU" -ge 1 ]; then
  say "nccl-tests: up to $(share 75 150)s"
  export LD_LIBRARY_PATH="$NCCL_HOME/lib:$CUDA_LIB:${LD_LIBRARY_PATH:-}"
  for spec in all_reduce:8G all_gather:8G reduce_scatter:8G alltoall:1G sendrecv:1G broadcast:1G reduce:1G; do
    op=${spec%%:*}; maxb=${spec##*:}
    s=$(share 40 150)
    if [ "$s" -lt 10 ]; then say "nccl-tests $op: skipped (budget)"; continue; fi
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING NCCL_DEBUG_FILE="$LOGS/nccl-tests-$op.%h.%p.nccl.log" \
      timeout -k 5 "$s" "$NT_BUILD/${op}_perf" -b 1M -e "$maxb" -f 2 -t "$NGPU" -g 1 -w 5 -n 20 -c 1 \
      > "$LOGS/nccl-tests-$op.log" 2>&1
    say "nccl-tests $op: exit $? ($(grep 'Avg bus bandwidth' "$LOGS/nccl-tests-$op.log" | tr -s ' '))"
  done
  pack_logs
fi

# The harness with nccl-tests' own launch structure (one process, one thread per GPU), for the
# comparison at small sizes.
run_harness "$NAME-threads" "$(share 40 150)" "" collectives "${COMMON[@]}" --launcher threads \
  --ops all_reduce,all_gather,reduce_scatter -b 1M -e 8G -f 2 -n 20 -w 5 -c 1 --budget collectives=35

# ---- 4. all GPUs: forced choices, point to point, attention, CPU Adam -------------------------------
run_harness "$NAME-extra" "$(share 190 60)" "" collectives p2p attention cpu-adam "${COMMON[@]}" \
  --no-auto --algos ring,tree --protos ll,ll128,simple --channels 2,8,32 \
  --forced-ops all_reduce,all_gather,reduce_scatter,broadcast,reduce -b 8 -e 1G -f 2 --forced-iters 10 \
  --forced-warmup-iters 2 --p2p-maxbytes 1G --shm-maxbytes 256M --attn-tp 1,8 --attn-seqlens 1024,4096,8192 \
  --budget collectives=110 --budget p2p=45 --budget attention=25 --budget cpu-adam=15

# ---- 5. subsets ------------------------------------------------------------------------------------
if [ "$NGPU" -gt 2 ]; then
  run_harness 2gpu "$(share 45 25)" "0,1" env collectives host "${COMMON[@]}" -b 8 -e 1G -f 2 -n 20 -w 5 \
    --host-sizes 256M,1G --budget collectives=30
fi
if [ "$NGPU" -gt 1 ]; then
  run_harness 1gpu "$(share 25 5)" "0" env collectives "${COMMON[@]}" -b 8 -e 256M -f 2 -n 20 -w 5
fi

# ---- 6. summary --------------------------------------------------------------------------------------
pack_logs
say "done in $(elapsed)s; files in $OUTDIR:"
ls -l "$OUTDIR" >&2
if command -v python3 >/dev/null; then
  python3 "$REPO/calibrate/harness/summarize_calibration.py" "$OUTDIR" "$LOGS" > "$OUTDIR/summary.txt" 2>&1
  cp "$OUTDIR/summary.txt" "$LOGS/" 2>/dev/null
  pack_logs
  cat "$OUTDIR/summary.txt"
else
  echo "no python3: summary skipped; read the results with 'clustersim calibrate summary $OUTDIR/results-$NAME.json'"
fi
rm -rf "$WORK/build-harness" "$WORK/nccl-tests-build"
exit 0
