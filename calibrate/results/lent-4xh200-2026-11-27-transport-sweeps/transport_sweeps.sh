#!/usr/bin/env bash
# What bounds each transport, by channel count and GPU count, on one HGX H200 host: nccl-tests
# 2.19.6 against the machine's NCCL 2.28.9 wheel, one process, a thread per GPU, -w 5 -n 20,
# NVLS off, NCCL_DEBUG_SUBSYS=ENV,INIT.
#   - SHM (NCCL_P2P_DISABLE=1): ring all-reduce with Simple on 2 GPUs at 1, 2 and 4 channels, on 3
#     GPUs at 4, on 4 GPUs at 1, 2, 4 and 8; ring broadcast with Simple on 2 and 4 GPUs at 1, 2, 4
#     and 8 channels (is it each GPU's reads of host memory, or the host memory all GPUs share?);
#   - NET (P2P and SHM disabled: sockets over loopback): ring all-reduce with Simple on 2 and 4
#     GPUs at 1, 2 and 4 channels, and on 4 GPUs at 2 channels with NCCL_SOCKET_NTHREADS=4
#     NCCL_NSOCKS_PERTHREAD=4 (is it a connection, or a rank's proxy thread?);
#   - P2P read against write: ring all-reduce and broadcast with Simple on 2 GPUs and on 4 at 24
#     channels (read data in one direction per link, or both).
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
for b in all_reduce broadcast; do  # one binary at a time: they share common objects in BUILDDIR
  make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/${b}_perf >> $OUT/build.log 2>&1
done
echo "build t $(el)"
mkdir -p $OUT/logs
ONLY="${*:-}"
wanted() { [ -z "$ONLY" ] && return 0; for w in $ONLY; do case $1 in *$w*) return 0;; esac; done; return 1; }
run() {  # log-name gpus binary sizes channels env...
  local name=$1 gpus=$2 bin=$3 sizes=$4 ch=$5; shift 5
  wanted $name || return 0
  if [ $(el) -gt 520 ]; then echo "$name skipped (time)"; return; fi
  local n=$(echo $gpus | tr ',' '\n' | wc -l)
  env CUDA_VISIBLE_DEVICES=$gpus LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT \
    NCCL_ALGO=Ring NCCL_PROTO=Simple NCCL_MIN_NCHANNELS=$ch NCCL_MAX_NCHANNELS=$ch "$@" \
    timeout 90 taskset -c 0-15 /tmp/nt/${bin}_perf $sizes -g 1 -t $n -c 0 -w 5 -n 20 > $OUT/logs/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
SHM="-b 16M -e 256M -f 4"; NET="-b 4M -e 64M -f 4"; FAST="-b 16M -e 1G -f 4"
for ch in 1 2 4; do run shm_all_reduce_2gpu_${ch}ch 0,1 all_reduce "$SHM" $ch NCCL_P2P_DISABLE=1; done
run shm_all_reduce_3gpu_4ch 0,1,2 all_reduce "$SHM" 4 NCCL_P2P_DISABLE=1
for ch in 1 2 4 8; do run shm_all_reduce_4gpu_${ch}ch 0,1,2,3 all_reduce "$SHM" $ch NCCL_P2P_DISABLE=1; done
for g in 0,1 0,1,2,3; do for ch in 1 2 4 8; do
  run shm_broadcast_$(echo $g | tr -cd ',' | wc -c | awk '{print $1+1}')gpu_${ch}ch $g broadcast "$SHM" $ch NCCL_P2P_DISABLE=1
done; done
for g in 0,1 0,1,2,3; do for ch in 1 2 4; do
  run net_all_reduce_$(echo $g | tr -cd ',' | wc -c | awk '{print $1+1}')gpu_${ch}ch $g all_reduce "$NET" $ch \
    NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo
done; done
run net_all_reduce_4gpu_2ch_4x4socks 0,1,2,3 all_reduce "$NET" 2 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 \
  NCCL_SOCKET_IFNAME=lo NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4
for mode in 0 1; do m=$([ $mode = 1 ] && echo read || echo write)
  for g in 0,1 0,1,2,3; do n=$(echo $g | tr -cd ',' | wc -c | awk '{print $1+1}')
    for b in all_reduce broadcast; do run p2p_${m}_${b}_${n}gpu_24ch $g $b "$FAST" 24 NCCL_P2P_READ_ENABLE=$mode; done
  done
done
echo "== busbw (GB/s) out of place at the sizes run"
for f in $OUT/logs/*.txt; do printf "%-36s" $(basename $f .txt)
  awk '$1 ~ /^[0-9]+$/ && NF>8 && $1>=4194304 {printf " %s", $8}' $f
  echo " | $(grep -h 'coll channels' $f | head -1 | sed 's/.*INFO //' | cut -d, -f1)"; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
