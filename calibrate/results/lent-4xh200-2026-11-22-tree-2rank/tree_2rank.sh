#!/usr/bin/env bash
# A 2-rank tree's per-channel rate against the channel count, and one rank's in-place cost, on
# H200s of one HGX host: all_reduce_perf with NCCL_ALGO=Tree on GPUs 0-1, LL, LL128 and Simple,
# 1, 4, 8, 12, 16 and 24 channels forced, 4 MiB to 256 MiB; then one GPU (-g 1 -t 1), 8 B to
# 1 MiB, 2,000 iterations, for every op, all-reduce three times. nccl-tests 2.19.6 against the
# machine's NCCL 2.28.9 wheel, a thread per GPU.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; nvcc --version; lscpu; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
for b in all_reduce all_gather reduce_scatter broadcast reduce; do
  make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/${b}_perf >> $OUT/build.log 2>&1
done
echo "build rc $? t $(el)"
mkdir -p $OUT/logs
run() {  # name algo proto channels(0: NCCL's)
  local f=$OUT/logs/$1.txt
  local chenv=""; [ $4 != 0 ] && chenv="NCCL_MIN_NCHANNELS=$4 NCCL_MAX_NCHANNELS=$4"
  env CUDA_VISIBLE_DEVICES=0,1 NCCL_ALGO=$2 NCCL_PROTO=$3 $chenv LD_LIBRARY_PATH=/tmp/nccl/lib \
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV timeout 60 taskset -c 0-15 /tmp/nt/all_reduce_perf -b 4M -e 256M -f 4 -g 1 -t 2 -c 0 -w 3 -n 10 > $f 2>&1
  echo "$1 rc $? t $(el)"
}
for proto in LL128 LL Simple; do for ch in 1 4 8 12 16 24; do
  run tree_2gpu_${proto}_${ch}ch Tree $proto $ch
done; done
one() {  # name binary
  env CUDA_VISIBLE_DEVICES=0 LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV \
    timeout 120 taskset -c 0-15 /tmp/nt/$2_perf -b 8 -e 1M -f 4 -g 1 -t 1 -c 0 -w 200 -n 2000 > $OUT/logs/$1.txt 2>&1
  echo "$1 rc $? t $(el)"
}
for r in 1 2 3; do one one_rank_all_reduce_run$r all_reduce; done
for b in all_gather reduce_scatter broadcast reduce; do one one_rank_$b $b; done
echo "== 2-rank tree busbw (GB/s, out of place) at 16 MiB / 64 MiB / 256 MiB"
for f in $OUT/logs/tree_*.txt; do printf "%-26s" $(basename $f .txt); awk '$1==16777216||$1==67108864||$1==268435456 {printf " %s", $8}' $f; echo; done
echo "== one rank: time (us) out of place / in place at 8 B, 32 KiB, 512 KiB"
for f in $OUT/logs/one_*.txt; do printf "%-28s" $(basename $f .txt); awk '$1==8||$1==32768||$1==524288 {printf " %s/%s", $6, $10}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
