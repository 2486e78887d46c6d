#!/usr/bin/env bash
# A ring all-reduce channel's rate against the channel count: all_reduce_perf on 2 GPUs,
# NCCL_ALGO=Ring, one protocol, NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS = 1, 2, 4, 8, 16, 24, 32,
# 64 MiB to 1 GiB; nccl-tests 2.19.6 against the machine's NCCL 2.28.9 wheel, a thread per GPU.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; nvcc --version; lscpu; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/all_reduce_perf > $OUT/build.log 2>&1
echo "build rc $? t $(el)"
mkdir -p $OUT/logs
for proto in LL LL128 Simple; do
  for ch in 1 2 4 8 16 24 32; do
    f=$OUT/logs/allreduce_ring_${proto}_${ch}ch.txt
    NCCL_ALGO=Ring NCCL_PROTO=$proto NCCL_MIN_NCHANNELS=$ch NCCL_MAX_NCHANNELS=$ch LD_LIBRARY_PATH=/tmp/nccl/lib \
      NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV timeout 60 taskset -c 0-7 /tmp/nt/all_reduce_perf -b 64M -e 1G -f 4 -g 1 -t 2 -c 0 -w 5 -n 20 > $f 2>&1
    echo "$proto ${ch}ch rc $? t $(el)"
  done
done
echo "== busbw (GB/s, out of place) at 64 MiB / 256 MiB / 1 GiB"
for f in $OUT/logs/*.txt; do printf "%-34s" $(basename $f); awk '$1==67108864||$1==268435456||$1==1073741824 {printf " %s", $8}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
