#!/usr/bin/env bash
# Per-channel rate against the channel count on 4 x H200: all_reduce_perf with NCCL_ALGO=Tree and
# NCCL_ALGO=Ring, LL, LL128 and Simple, 4, 8, 12, 16 and 24 channels forced, 4 GPUs; 4 MiB to
# 256 MiB; nccl-tests 2.19.6 against the machine's NCCL 2.28.9 wheel, a thread per GPU.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; nvcc --version; lscpu; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
for b in all_reduce; do
  make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/${b}_perf >> $OUT/build.log 2>&1
done
echo "build rc $? t $(el)"
mkdir -p $OUT/logs
run() {  # name gpus algo proto channels(0: NCCL's) binary
  local f=$OUT/logs/$1.txt vis=0,1,2,3; [ $2 = 2 ] && vis=0,1
  local chenv=""; [ $5 != 0 ] && chenv="NCCL_MIN_NCHANNELS=$5 NCCL_MAX_NCHANNELS=$5"
  env CUDA_VISIBLE_DEVICES=$vis NCCL_ALGO=$3 NCCL_PROTO=$4 $chenv LD_LIBRARY_PATH=/tmp/nccl/lib \
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV timeout 60 taskset -c 0-15 /tmp/nt/$6_perf -b 4M -e 256M -f 4 -g 1 -t $2 -c 0 -w 3 -n 10 > $f 2>&1
  echo "$1 rc $? t $(el)"
}
for algo in Tree Ring; do for proto in LL LL128 Simple; do for ch in 4 8 12 16 24; do
  run ${algo,,}_4gpu_${proto}_${ch}ch 4 $algo $proto $ch all_reduce
done; done; done
echo "== busbw (GB/s, out of place) at 16 MiB / 64 MiB / 256 MiB"
for f in $OUT/logs/*.txt; do printf "%-34s" $(basename $f .txt); awk '$1==16777216||$1==67108864||$1==268435456 {printf " %s", $8}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
