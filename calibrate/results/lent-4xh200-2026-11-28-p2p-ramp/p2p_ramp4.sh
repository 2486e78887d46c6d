#!/usr/bin/env bash
# The 4-GPU runs that lent-2xh200-2026-11-27-p2p-ramp could not make (no 4-GPU host was lent),
# and two repeats, on one HGX H200 host.
#   1. The 4-GPU alltoall over P2P (NVLink) reaches its plateau more slowly than the model: 126 GB/s
#      busbw at 4 MiB, 234 at 32 MiB, 290 at 128 MiB, 335 at 1 GiB (lent-4xh200-2026-11-21), where
#      the model gives 8-18% more. nccl-tests 2.19.6 against the machine's NCCL 2.28.9 wheel:
#      alltoall and sendrecv on 4 GPUs, 1 MiB to 2 GiB; the alltoall with the P2P chunk at 128 KiB
#      and 2 MiB (NCCL_P2P_NVL_CHUNKSIZE; 512 KiB by default), with the P2P channels bounded
#      (NCCL_MIN_P2P_NCHANNELS=32, NCCL_MAX_P2P_NCHANNELS=8), with half the threads
#      (NCCL_NTHREADS=256) and over P2P read (NCCL_P2P_READ_ENABLE=1).
#   2. The Tree/LL all-reduce over SHM (NCCL_P2P_DISABLE=1) measured 2-3x apart between two runs
#      of one session (lent-4xh200-2026-11-27-tuning): on 2, 3 and 4 GPUs, 1 and 4 channels,
#      64 KiB to 16 MiB, each twice.
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
for b in all_reduce alltoall sendrecv; do
  make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/${b}_perf > $OUT/build.log 2>&1
done
echo "build t $(el)"
ONLY="${*:-}"
wanted() { [ -z "$ONLY" ] && return 0; for w in $ONLY; do case $1 in *$w*) return 0;; esac; done; return 1; }
mkdir -p $OUT/logs
run() {  # log-name gpus binary env nccl-tests-args
  local name=$1 gpus=$2 bin=$3 envs=$4; shift 4
  wanted $name || return 0
  if [ $(el) -gt 480 ]; then echo "$name skipped (time)"; return; fi
  env CUDA_VISIBLE_DEVICES=$gpus LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT $envs \
    timeout 120 taskset -c 0-15 /tmp/nt/${bin}_perf "$@" -g 1 -t $(echo $gpus | tr , "\n" | wc -l) -c 0 > $OUT/logs/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
A="-b 1M -e 2G -f 2 -w 5 -n 20"
B="-b 1M -e 1G -f 2 -w 5 -n 20"
run p2p_alltoall_4gpu 0,1,2,3 alltoall "" $A
run p2p_sendrecv_4gpu 0,1,2,3 sendrecv "" $A
run p2p_alltoall_4gpu_chunk128k 0,1,2,3 alltoall "NCCL_P2P_NVL_CHUNKSIZE=131072" $B
run p2p_alltoall_4gpu_chunk2m 0,1,2,3 alltoall "NCCL_P2P_NVL_CHUNKSIZE=2097152" $B
run p2p_alltoall_4gpu_minp2p32 0,1,2,3 alltoall "NCCL_MIN_P2P_NCHANNELS=32" $B
run p2p_alltoall_4gpu_maxp2p8 0,1,2,3 alltoall "NCCL_MAX_P2P_NCHANNELS=8" $B
run p2p_alltoall_4gpu_256threads 0,1,2,3 alltoall "NCCL_NTHREADS=256" $B
run p2p_alltoall_4gpu_read 0,1,2,3 alltoall "NCCL_P2P_READ_ENABLE=1" $B
run p2p_alltoall_4gpu_run2 0,1,2,3 alltoall "" $B
TL="NCCL_P2P_DISABLE=1 NCCL_ALGO=Tree NCCL_PROTO=LL"
ch() { echo "NCCL_MIN_NCHANNELS=$1 NCCL_MAX_NCHANNELS=$1"; }
S="-b 64K -e 16M -f 4 -w 2 -n 5"
for rep in a b; do
  for c in 1 4; do
    run shm_treell_4gpu_${c}ch_$rep 0,1,2,3 all_reduce "$TL $(ch $c)" $S
    run shm_treell_3gpu_${c}ch_$rep 0,1,2 all_reduce "$TL $(ch $c)" $S
    run shm_treell_2gpu_${c}ch_$rep 0,1 all_reduce "$TL $(ch $c)" $S
  done
done
echo "== busbw (GB/s) out of place, from 64 KiB"
for f in $OUT/logs/*.txt; do printf "%-34s" $(basename $f .txt)
  awk '$1 ~ /^[0-9]+$/ && NF>8 && $1>=65536 {printf " %s", $8}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
