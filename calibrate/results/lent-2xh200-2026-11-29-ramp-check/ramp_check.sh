#!/usr/bin/env bash
# Out-of-sample check of the NVLink ramp within a launch (sim/nccl/step_program.hpp), fitted on
# lent-2xh200-2026-11-29-long-rings: ring collectives on 2 GPUs at channel counts and for ops that
# fit did not see, 16 MiB to 8 GiB by factors of 2. The predictions were made before these runs
# (README). One HGX H200 host, 2 GPUs, nccl-tests 2.19.6 against the machine's NCCL 2.28.9 wheel,
# one process, a thread per GPU (-g 1 -t 2), -c 0 -w 3 -n 20, NVLS off:
#   all-gather at 12 and 16 channels; reduce-scatter at 8 and 16; broadcast at 12 and 16;
#   reduce at 8 and 24; all-reduce at 20, with LL128 at 24 (to 4 GiB), and with 256 threads a
#   block at 24.
# Arguments (optional): words; only the runs whose log names hold one of them.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; nvcc --version; lscpu; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
B=(all_reduce all_gather reduce_scatter broadcast reduce)
for b in "${B[@]}"; do  # one binary at a time: they share common objects in BUILDDIR
  make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/${b}_perf >> $OUT/build.log 2>&1
done
echo "build t $(el)"; ls /tmp/nt/*_perf | wc -l
mkdir -p $OUT/logs
ONLY="${*:-}"
wanted() { [ -z "$ONLY" ] && return 0; for w in $ONLY; do case $1 in *$w*) return 0;; esac; done; return 1; }
run() {  # log-name binary env nccl-tests-args
  local name=$1 bin=$2 envs=$3; shift 3
  wanted $name || return 0
  if [ $(el) -gt ${LIMIT:-400} ]; then echo "$name skipped (time)"; return; fi
  env CUDA_VISIBLE_DEVICES=0,1 LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT $envs \
    timeout 90 taskset -c 0-15 /tmp/nt/${bin}_perf -g 1 -t 2 -c 0 "$@" > $OUT/logs/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
ch() { echo "NCCL_MIN_NCHANNELS=$1 NCCL_MAX_NCHANNELS=$1"; }
RS="NCCL_ALGO=Ring NCCL_PROTO=Simple"
S8="-b 16M -e 8G -f 2 -w 3 -n 20"
for c in 12 16; do run all_gather_${c}ch all_gather "$RS $(ch $c)" $S8; done
for c in 8 16; do run reduce_scatter_${c}ch reduce_scatter "$RS $(ch $c)" $S8; done
for c in 12 16; do run broadcast_${c}ch broadcast "$RS $(ch $c)" $S8; done
for c in 8 24; do run reduce_${c}ch reduce "$RS $(ch $c)" $S8; done
run ar_20ch all_reduce "$RS $(ch 20)" $S8
run ar_24ch_ll128 all_reduce "NCCL_ALGO=Ring NCCL_PROTO=LL128 $(ch 24)" -b 16M -e 4G -f 2 -w 3 -n 20
run ar_24ch_256thr all_reduce "$RS $(ch 24) NCCL_NTHREADS=256" $S8
echo "== busbw (GB/s) out of place, 16 MiB to 8 GiB"
for f in $OUT/logs/*.txt; do printf "%-20s" $(basename $f .txt)
  awk '$1 ~ /^[0-9]+$/ && NF>=12 && $1 >= 16777216 {printf " %s", $8}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
