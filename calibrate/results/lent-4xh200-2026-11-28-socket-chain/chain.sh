#!/usr/bin/env bash
# NCCL's socket transport between the GPUs of one HGX H200 host (NCCL_P2P_DISABLE=1
# NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo): how a broadcast or reduce chain pipelines its
# messages, against the step size. nccl-tests 2.19.6 against the machine's NCCL 2.28.9 wheel, one
# process, a thread per GPU (-g 1 -t N), -c 0 -w 5 -n 20, NVLS off, NCCL_DEBUG_SUBSYS=ENV,INIT,
# sizes 64 KiB to 32 MiB by factors of 2:
#   - NCCL_BUFFSIZE 1, 4 (NCCL's default) and 16 MiB: Simple's step (a broadcast's message, one
#     step a slice) of 128 KiB, 512 KiB and 2 MiB;
#   - broadcast on 2 GPUs (one hop, each proxy one way) and 4 GPUs (a chain of 3 hops), with NCCL's
#     own channels (2) and with 1 channel; reduce on 4 GPUs; all_gather on 2 GPUs (each proxy
#     both ways, the same bytes per proxy as the 2-GPU broadcast).
# Arguments (optional): words; only the runs whose log names hold one of them.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; nvcc --version; lscpu; ip -brief addr; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
B=(broadcast reduce all_gather)
for b in "${B[@]}"; do  # one binary at a time: they share common objects in BUILDDIR
  make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/${b}_perf >> $OUT/build.log 2>&1
done
echo "build t $(el)"; ls /tmp/nt/*_perf | wc -l
mkdir -p $OUT/logs
ONLY="${*:-}"
wanted() { [ -z "$ONLY" ] && return 0; for w in $ONLY; do case $1 in *$w*) return 0;; esac; done; return 1; }
NET="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo"
run() {  # log-name gpus binary env...
  local name=$1 gpus=$2 bin=$3; shift 3
  wanted $name || return 0
  if [ $(el) -gt 480 ]; then echo "$name skipped (time)"; return; fi
  local n=$(echo $gpus | tr ',' '\n' | wc -l)
  env CUDA_VISIBLE_DEVICES=$gpus LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT $NET "$@" \
    timeout 60 taskset -c 0-15 /tmp/nt/${bin}_perf -g 1 -t $n -c 0 -w 5 -n 20 -b 64K -e 32M -f 2 > $OUT/logs/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
for bs in 4 1 16; do
  BS="NCCL_BUFFSIZE=$((bs * 1048576))"
  run chain_bs${bs}m_broadcast_2gpu 0,1 broadcast $BS
  run chain_bs${bs}m_all_gather_2gpu 0,1 all_gather $BS
  run chain_bs${bs}m_broadcast_4gpu 0,1,2,3 broadcast $BS
  run chain_bs${bs}m_broadcast_4gpu_1ch 0,1,2,3 broadcast $BS NCCL_MIN_NCHANNELS=1 NCCL_MAX_NCHANNELS=1
  run chain_bs${bs}m_reduce_4gpu 0,1,2,3 reduce $BS
done
echo "== time (us) out of place at 64 KiB / 256 KiB / 1 MiB / 4 MiB / 16 MiB / 32 MiB"
for f in $OUT/logs/chain*.txt; do printf "%-34s" $(basename $f .txt)
  awk '($1==65536||$1==262144||$1==1048576||$1==4194304||$1==16777216||$1==33554432) && NF>8 && $1 ~ /^[0-9]+$/ {printf " %8s", $6}' $f
  echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
