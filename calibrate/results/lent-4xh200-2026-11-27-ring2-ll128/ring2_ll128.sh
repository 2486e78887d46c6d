#!/usr/bin/env bash
# The 2-rank all-reduce with LL128 as a ring against the tree, at 1, 4, 8 and 24 channels: the
# 2-rank Tree/LL128 all-reduce's rate per channel falls from 12.7 to 8.9 GB/s between 1 and 24
# channels (lent-4xh200-2026-11-22-tree-2rank), where the 2-rank LL128 chains (broadcast, reduce)
# keep theirs. A ring on 2 GPUs moves data both ways over the pair as the tree does. nccl-tests
# 2.19.6 against the machine's NCCL 2.28.9 wheel, one process, a thread per GPU (-g 1 -t 2), NVLS
# off, -w 10 -n 50, 4 MiB to 256 MiB.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; nvcc --version; lscpu; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/all_reduce_perf >> $OUT/build.log 2>&1
echo "build t $(el)"
mkdir -p $OUT/logs
for a in Ring Tree; do for ch in 1 4 8 24; do
  env CUDA_VISIBLE_DEVICES=0,1 LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT \
    NCCL_ALGO=$a NCCL_PROTO=LL128 NCCL_MIN_NCHANNELS=$ch NCCL_MAX_NCHANNELS=$ch \
    timeout 90 taskset -c 0-15 /tmp/nt/all_reduce_perf -b 4M -e 256M -f 4 -g 1 -t 2 -c 0 -w 10 -n 50 > $OUT/logs/all_reduce_${a}_LL128_${ch}ch.txt 2>&1
  echo "$a ${ch}ch rc $? t $(el)"
done; done
echo "== busbw GB/s out of place at 4 / 16 / 64 / 256 MiB, and per channel at 256 MiB"
for f in $OUT/logs/*.txt; do printf "%-30s" $(basename $f .txt)
  ch=$(basename $f .txt | sed 's/.*_\([0-9]*\)ch/\1/')
  awk -v ch=$ch '($1==4194304||$1==16777216||$1==67108864||$1==268435456) && NF>8 {printf " %s", $8; last=$8} END {printf "  per channel %.2f", last/ch}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
