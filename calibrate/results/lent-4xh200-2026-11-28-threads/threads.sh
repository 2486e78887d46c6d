#!/usr/bin/env bash
# How a channel's rate follows its block's threads (NCCL_NTHREADS, NCCL_LL128_NTHREADS) on one HGX
# H200 host, 4 GPUs. NCCL 2.28 (tuning.cc ncclTopoTuneModel) takes NCCL_NTHREADS for Ring and
# Tree with Simple (64 to 512; 512 by default on NVLink) and with LL (64 to 512), and
# NCCL_LL128_NTHREADS for LL128 (160 to 640); enqueue.cc then launches Tree with 640 whatever they
# say, and a Ring/Simple block with one warp more. nccl-tests 2.19.6 against the machine's NCCL
# 2.28.9 wheel, all-reduce from 4 MiB to 256 MiB:
#   Ring/Simple over NVLink at 1, 4 and 16 channels with 128, 256 and 512 threads;
#   Ring/LL at 1 and 4 channels with 128, 256, 512; Ring/LL128 at 1 and 4 with 160, 320, 480, 640;
#   Ring/Simple over SHM (NCCL_P2P_DISABLE=1) at 1 and 4 channels with 128, 256, 512;
#   broadcast Ring/Simple at 1 channel with 256 and 512; Tree/Simple at 1 channel with 256 (NCCL
#   should run it as with 512: Tree always gets 640 threads).
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
for b in all_reduce broadcast; do
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
  env CUDA_VISIBLE_DEVICES=$gpus LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT,TUNING $envs \
    timeout 120 taskset -c 0-15 /tmp/nt/${bin}_perf "$@" -g 1 -t $(echo $gpus | tr , "\n" | wc -l) -c 0 > $OUT/logs/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
ch() { echo "NCCL_MIN_NCHANNELS=$1 NCCL_MAX_NCHANNELS=$1"; }
S="-b 4M -e 256M -f 4 -w 5 -n 20"
G=0,1,2,3
RS="NCCL_ALGO=Ring NCCL_PROTO=Simple"
for c in 1 4 16; do for t in 128 256 512; do
  run simple_${c}ch_${t}t $G all_reduce "$RS $(ch $c) NCCL_NTHREADS=$t" $S
done; done
for c in 1 4; do for t in 128 256 512; do
  run ll_${c}ch_${t}t $G all_reduce "NCCL_ALGO=Ring NCCL_PROTO=LL $(ch $c) NCCL_NTHREADS=$t" $S
done; done
for c in 1 4; do for t in 160 320 480 640; do
  run ll128_${c}ch_${t}t $G all_reduce "NCCL_ALGO=Ring NCCL_PROTO=LL128 $(ch $c) NCCL_LL128_NTHREADS=$t" $S
done; done
for c in 1 4; do for t in 128 256 512; do
  run shm_${c}ch_${t}t $G all_reduce "$RS NCCL_P2P_DISABLE=1 $(ch $c) NCCL_NTHREADS=$t" $S
done; done
for t in 256 512; do run bcast_1ch_${t}t $G broadcast "$RS $(ch 1) NCCL_NTHREADS=$t" $S; done
run tree_simple_1ch_256t $G all_reduce "NCCL_ALGO=Tree NCCL_PROTO=Simple $(ch 1) NCCL_NTHREADS=256" $S
run tree_simple_1ch_512t $G all_reduce "NCCL_ALGO=Tree NCCL_PROTO=Simple $(ch 1) NCCL_NTHREADS=512" $S
echo "== busbw (GB/s) out of place, 4M 16M 64M 256M"
for f in $OUT/logs/*.txt; do printf "%-24s" $(basename $f .txt)
  awk '$1 ~ /^[0-9]+$/ && NF>8 {printf " %s", $8}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
