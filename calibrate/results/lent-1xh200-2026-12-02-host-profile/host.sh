#!/usr/bin/env bash
# A host's own calibration, then nccl-tests on it: whether a profile fitted on the harness's
# one-GPU run of a host predicts that host's one-rank nccl-tests iterations (host-bound below a few
# MiB: NCCL 2.28 runs a one-rank collective as a cudaMemcpyAsync out of place and launches nothing
# in place), where the 4 x H200 host's profile predicts them 15 to 35% fast.
#   1. build clustersim-calibrate (sm_90) and nccl-tests 2.19.6 against the machine's NCCL wheel;
#   2. the harness on GPU 0: env, collectives (every op, 8 B to 256 MiB x4, -w 5 -n 20 as
#      nccl-tests), memory, host                                   -> results-1gpu.json
#   3. nccl-tests, the same sizes: every op -w 5 -n 20, then -w 20 -n 100, then -w 5 -n 20 again
#                                                                  -> logs/
#   4. the harness's collectives again                             -> results-1gpu-after.json
# Run from the repository root with nccl-tests under third_party_fetch/nccl-tests. NVLS off;
# nothing here changes GPU settings.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvcc --version; lscpu; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
( cmake -S calibrate/harness -B /tmp/bh -DCLUSTERSIM_CUDA_ARCHS=90 -DCLUSTERSIM_NCCL_HOME=/tmp/nccl \
    -DCLUSTERSIM_HARNESS_MPI=OFF -DCMAKE_BUILD_TYPE=Release > $OUT/build-harness.log 2>&1 &&
  cmake --build /tmp/bh -j10 --target clustersim-calibrate >> $OUT/build-harness.log 2>&1; echo "harness build rc $? t $(el)" ) &
( make -C $NT/src -j6 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" > $OUT/build-nccl-tests.log 2>&1
  echo "nccl-tests build rc $? t $(el)" ) &
wait
H=$(find /tmp/bh -name clustersim-calibrate -type f | head -1)
E="env CUDA_VISIBLE_DEVICES=0 LD_LIBRARY_PATH=/tmp/nccl/lib"
$E timeout 200 $H env collectives memory host -b 8 -e 256M -f 4 -w 5 -n 20 --deadline 170 \
  --label "lent 1 x H200, 2026-12-02, before nccl-tests" -o $OUT/results-1gpu.json > $OUT/harness.log 2>&1
echo "harness rc $? t $(el)"
mkdir -p $OUT/logs
OPS="all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv"
run() {  # log-name binary nccl-tests-arguments...
  local name=$1 bin=$2; shift 2
  if [ $(el) -gt 500 ]; then echo "$name skipped (time)"; return; fi
  $E NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT timeout 60 /tmp/nt/${bin}_perf -b 8 -e 256M -f 4 -c 0 -t 1 -g 1 "$@" \
    > $OUT/logs/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
for op in $OPS; do run ${op}_n20 $op -w 5 -n 20; done
for op in $OPS; do run ${op}_n100 $op -w 20 -n 100; done
for op in $OPS; do run ${op}_n20_run2 $op -w 5 -n 20; done
if [ $(el) -lt 520 ]; then
  $E timeout 60 $H collectives -b 8 -e 256M -f 4 -w 5 -n 20 --deadline 50 \
    --label "lent 1 x H200, 2026-12-02, after nccl-tests" -o $OUT/results-1gpu-after.json > $OUT/harness-after.log 2>&1
  echo "harness after rc $? t $(el)"
fi
echo "== time (us) per iteration, out of place | in place, 8 B .. 256 MiB (x4)"
for f in $OUT/logs/*.txt; do printf "%-22s" $(basename $f .txt)
  awk '$1 ~ /^[0-9]+$/ && NF>8 {printf " %s", $6}' $f; printf " |"
  awk '$1 ~ /^[0-9]+$/ && NF>8 {printf " %s", $(NF-3)}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
