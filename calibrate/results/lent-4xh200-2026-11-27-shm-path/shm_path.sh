#!/usr/bin/env bash
# What bounds NCCL's SHM transport on one HGX H200 host: a 2-GPU broadcast (one GPU stores into
# host memory, the other loads) reaches about 50 GB/s, a 2-GPU all-reduce (each GPU both stores
# and loads) holds at 27.7 GB/s each way (lent-4xh200-2026-11-27-transport-sweeps).
#   1. clustersim-hostprobe (calibrate/harness): kernels loading from and storing to pinned host
#      memory, one way and both at once, on one GPU at 1 to 32 blocks, on pairs of GPUs, on all
#      four; copy engines the same;
#   2. nccl-tests 2.19.6 against the machine's NCCL 2.28.9 wheel, SHM (NCCL_P2P_DISABLE=1), Ring,
#      Simple, 4 channels: all-reduce on every pair of GPUs, broadcast on three pairs (does the
#      pair matter?);
#   3. two broadcasts at once in two processes, 256 MiB, 1000 iterations: 0 -> 1 with 2 -> 0 (GPU 0
#      stores and loads through different peers), 0 -> 1 with 1 -> 0 (one pair both ways, as the
#      all-reduce), 0 -> 1 with 2 -> 3 (two pairs apart).
# NVLS off. Arguments (optional): words; only the runs whose log names hold one of them.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; nvcc --version; lscpu; lspci -tv 2>/dev/null | head -80; } \
  > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
# The probe: through the harness's CMake (only its target), else nvcc by hand.
if ! { cmake -S calibrate/harness -B /tmp/bh -DCLUSTERSIM_CUDA_ARCHS=90 -DCLUSTERSIM_NCCL_HOME=/tmp/nccl \
       -DCLUSTERSIM_HARNESS_MPI=OFF && cmake --build /tmp/bh --target clustersim-hostprobe -j16; } > $OUT/build.log 2>&1; then
  echo "cmake build failed; nvcc by hand" | tee -a $OUT/build.log
  nvcc -std=c++17 -O3 -arch=sm_90 -I. -DCLUSTERSIM_HARNESS_VERSION='"0.1.0"' calibrate/harness/host_probe_main.cpp \
    calibrate/harness/host_probe_kernels.cu calibrate/harness/probe_common.cpp calibrate/harness/harness_options.cpp \
    calibrate/harness/harness_json_writer.cpp \
    -o /tmp/bh/clustersim-hostprobe \
    >> $OUT/build.log 2>&1
fi
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
for b in all_reduce broadcast; do
  make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/${b}_perf >> $OUT/build.log 2>&1
done
echo "build t $(el)"
ONLY="${*:-}"
wanted() { [ -z "$ONLY" ] && return 0; for w in $ONLY; do case $1 in *$w*) return 0;; esac; done; return 1; }
if wanted hostprobe; then
  timeout 240 taskset -c 0-15 /tmp/bh/clustersim-hostprobe --out $OUT/results-hostprobe.json 2> $OUT/hostprobe.txt
  echo "hostprobe rc $? t $(el)"
fi
mkdir -p $OUT/logs
SHM="NCCL_P2P_DISABLE=1 NCCL_ALGO=Ring NCCL_PROTO=Simple NCCL_MIN_NCHANNELS=4 NCCL_MAX_NCHANNELS=4"
run() {  # log-name gpus binary nccl-tests-args
  local name=$1 gpus=$2 bin=$3; shift 3
  wanted $name || return 0
  if [ $(el) -gt 520 ]; then echo "$name skipped (time)"; return; fi
  env CUDA_VISIBLE_DEVICES=$gpus LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT $SHM \
    timeout 90 taskset -c 0-15 /tmp/nt/${bin}_perf "$@" -g 1 -t 2 -c 0 > $OUT/logs/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
for g in 0,1 0,2 0,3 1,2 1,3 2,3; do run shm_all_reduce_gpus${g/,/}_4ch $g all_reduce -b 64M -e 256M -f 4 -w 5 -n 20; done
for g in 0,1 0,2 2,3; do run shm_broadcast_gpus${g/,/}_4ch $g broadcast -b 64M -e 256M -f 4 -w 5 -n 20; done
pair() {  # log-name gpus-a gpus-b: two 256 MiB broadcasts (root: each list's first GPU) at once
  local name=$1; wanted $name || return 0
  if [ $(el) -gt 500 ]; then echo "$name skipped (time)"; return; fi
  for g in $2 $3; do
    env CUDA_VISIBLE_DEVICES=$g LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT $SHM \
      timeout 90 /tmp/nt/broadcast_perf -b 256M -e 256M -g 1 -t 2 -c 0 -w 20 -n 1000 > $OUT/logs/${name}_${g/,/}.txt 2>&1 &
  done
  wait; echo "$name t $(el)"
}
pair shm_two_broadcasts_01_20 0,1 2,0
pair shm_two_broadcasts_01_10 0,1 1,0
pair shm_two_broadcasts_01_23 0,1 2,3
echo "== hostprobe (GB/s per action, total)"; cat $OUT/hostprobe.txt 2>/dev/null | cut -c1-110
echo "== busbw (GB/s) out of place"
for f in $OUT/logs/*.txt; do printf "%-36s" $(basename $f .txt)
  awk '$1 ~ /^[0-9]+$/ && NF>8 && $1>=4194304 {printf " %s", $8}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
