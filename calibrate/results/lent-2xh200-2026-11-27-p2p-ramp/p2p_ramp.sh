#!/usr/bin/env bash
# Two open questions of the NCCL model on one HGX H200 host.
#   1. The 4-GPU alltoall over P2P write (NVLink) reaches its plateau slowly: 126 GB/s busbw at
#      4 MiB, 234 at 32 MiB, 290 at 128 MiB, 335 at 1 GiB, 353 at 8 GiB (lent-4xh200-2026-11-21),
#      where the model gives 151, 271, 317, 348, 350. nccl-tests 2.19.6 against the machine's NCCL
#      2.28.9 wheel: alltoall and sendrecv on 4 GPUs and alltoall on 2, 1 MiB to 2 GiB; the alltoall
#      with the P2P chunk at 128 KiB and 2 MiB (NCCL_P2P_NVL_CHUNKSIZE; 512 KiB by default) and
#      with the P2P channels bounded (NCCL_MIN_P2P_NCHANNELS=32, NCCL_MAX_P2P_NCHANNELS=8).
#   2. Over SHM (NCCL_P2P_DISABLE=1) a 2-GPU ring all-reduce moves 13.8 GB/s busbw on one channel
#      and 21.7 on two (10.9 each): all-reduce, Ring, Simple at 1, 2, 3 and 4 channels, and at 1
#      and 2 with NCCL_NTHREADS=256 (512 by default); the broadcast at 1 and 2 channels.
# NVLS off. Arguments (optional): words; only the runs whose log names hold one of them.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; nvcc --version; lscpu; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
for b in all_reduce alltoall sendrecv broadcast; do
  make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/${b}_perf > $OUT/build.log 2>&1
done
echo "build t $(el)"
ONLY="${*:-}"
wanted() { [ -z "$ONLY" ] && return 0; for w in $ONLY; do case $1 in *$w*) return 0;; esac; done; return 1; }
mkdir -p $OUT/logs
run() {  # log-name gpus binary env nccl-tests-args
  local name=$1 gpus=$2 bin=$3 envs=$4; shift 4
  wanted $name || return 0
  if [ $(el) -gt 540 ]; then echo "$name skipped (time)"; return; fi
  env CUDA_VISIBLE_DEVICES=$gpus LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT $envs \
    timeout 120 taskset -c 0-15 /tmp/nt/${bin}_perf "$@" -g 1 -t $(echo $gpus | tr , "\n" | wc -l) -c 0 > $OUT/logs/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
A="-b 1M -e 2G -f 2 -w 5 -n 20"
run p2p_alltoall_4gpu 0,1,2,3 alltoall "" $A
run p2p_sendrecv_4gpu 0,1,2,3 sendrecv "" $A
run p2p_alltoall_2gpu 0,1 alltoall "" $A
run p2p_alltoall_4gpu_chunk128k 0,1,2,3 alltoall "NCCL_P2P_NVL_CHUNKSIZE=131072" -b 1M -e 1G -f 2 -w 5 -n 20
run p2p_alltoall_4gpu_chunk2m 0,1,2,3 alltoall "NCCL_P2P_NVL_CHUNKSIZE=2097152" -b 1M -e 1G -f 2 -w 5 -n 20
run p2p_alltoall_4gpu_minp2p32 0,1,2,3 alltoall "NCCL_MIN_P2P_NCHANNELS=32" -b 1M -e 1G -f 2 -w 5 -n 20
run p2p_alltoall_4gpu_maxp2p8 0,1,2,3 alltoall "NCCL_MAX_P2P_NCHANNELS=8" -b 1M -e 1G -f 2 -w 5 -n 20
SHM="NCCL_P2P_DISABLE=1 NCCL_ALGO=Ring NCCL_PROTO=Simple"
ch() { echo "NCCL_MIN_NCHANNELS=$1 NCCL_MAX_NCHANNELS=$1"; }
S="-b 16M -e 256M -f 4 -w 5 -n 20"
for c in 1 2 3 4; do run shm_all_reduce_2gpu_${c}ch 0,1 all_reduce "$SHM $(ch $c)" $S; done
for c in 1 2; do
  run shm_all_reduce_2gpu_${c}ch_256threads 0,1 all_reduce "$SHM $(ch $c) NCCL_NTHREADS=256" $S
  run shm_broadcast_2gpu_${c}ch 0,1 broadcast "$SHM $(ch $c)" $S
done
echo "== busbw (GB/s) out of place, from 1 MiB (SHM from 16 MiB)"
for f in $OUT/logs/*.txt; do printf "%-34s" $(basename $f .txt)
  awk '$1 ~ /^[0-9]+$/ && NF>8 && $1>=1048576 {printf " %s", $8}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
