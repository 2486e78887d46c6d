#!/usr/bin/env bash
# Does NCCL's SHM transport run faster when its connection buffers stay in the host's caches?
# The 4-GPU SHM all-reduce at 4 and 8 channels moved 28.8 and 32.2 GB/s busbw at 16 MiB, 23.1 and
# 21.4 at 64 MiB and above (lent-4xh200-2026-11-27-transport-sweeps). A ring step fills at most the
# chunk it carries of each FIFO slot, so the host memory the connections touch grows with the
# message until the whole 4 MiB buffer of every connection is in use.
#   1. clustersim-hostprobe (calibrate/harness) with every GPU at once loading, storing, or both,
#      from per-action buffers of 1 to 64 MiB: the host's rate against the bytes in use;
#   2. nccl-tests 2.19.6 against the machine's NCCL 2.28.9 wheel, SHM (NCCL_P2P_DISABLE=1), Ring,
#      Simple: all-reduce on 4 GPUs at 1, 2, 4 and 8 channels, all-gather and reduce-scatter at 4
#      and 8, 2 and 3 GPUs at 8; 1 MiB to 256 MiB by factors of 2;
#   3. the 2-GPU LL128 tree all-reduce at 1 and 8 channels with 640 (default) and 320 threads.
# NVLS off. Arguments (optional): words; only the runs whose log names hold one of them.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; nvcc --version; lscpu; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
{ cmake -S calibrate/harness -B /tmp/bh -DCLUSTERSIM_CUDA_ARCHS=90 -DCLUSTERSIM_NCCL_HOME=/tmp/nccl \
    -DCLUSTERSIM_HARNESS_MPI=OFF && cmake --build /tmp/bh --target clustersim-hostprobe -j16; } > $OUT/build.log 2>&1
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
for b in all_reduce all_gather reduce_scatter; do
  make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/${b}_perf >> $OUT/build.log 2>&1
done
echo "build t $(el)"
ONLY="${*:-}"
wanted() { [ -z "$ONLY" ] && return 0; for w in $ONLY; do case $1 in *$w*) return 0;; esac; done; return 1; }
mkdir -p $OUT/logs $OUT/probe
if wanted hostprobe; then
  for mb in 1 2 4 8 16 32 64; do
    S=(); for a in load store; do S+=(--scenario "0:$a:8,1:$a:8,2:$a:8,3:$a:8"); done
    S+=(--scenario "0:load:8,0:store:8,1:load:8,1:store:8,2:load:8,2:store:8,3:load:8,3:store:8")
    S+=(--scenario "0:relay:4,1:relay:4,2:relay:4,3:relay:4")
    L=$(( 6 * 64 / mb )); [ $L -gt 400 ] && L=400
    timeout 120 taskset -c 0-15 /tmp/bh/clustersim-hostprobe --bytes ${mb}M --launches $L --trials 5 "${S[@]}" \
      --out $OUT/probe/results-hostprobe-${mb}M.json 2> $OUT/probe/hostprobe-${mb}M.txt
    echo "hostprobe ${mb}M rc $? t $(el)"
  done
fi
run() {  # log-name gpus binary env nccl-tests-args
  local name=$1 gpus=$2 bin=$3 envs=$4; shift 4
  wanted $name || return 0
  if [ $(el) -gt 540 ]; then echo "$name skipped (time)"; return; fi
  env CUDA_VISIBLE_DEVICES=$gpus LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT $envs \
    timeout 90 taskset -c 0-15 /tmp/nt/${bin}_perf "$@" -g 1 -t $(echo $gpus | tr , "\n" | wc -l) -c 0 > $OUT/logs/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
SHM="NCCL_P2P_DISABLE=1 NCCL_ALGO=Ring NCCL_PROTO=Simple"
ch() { echo "NCCL_MIN_NCHANNELS=$1 NCCL_MAX_NCHANNELS=$1"; }
SZ="-b 1M -e 256M -f 2 -w 5 -n 20"
for c in 1 2 4 8; do run shm_all_reduce_4gpu_${c}ch 0,1,2,3 all_reduce "$SHM $(ch $c)" $SZ; done
for c in 4 8; do
  run shm_all_gather_4gpu_${c}ch 0,1,2,3 all_gather "$SHM $(ch $c)" $SZ
  run shm_reduce_scatter_4gpu_${c}ch 0,1,2,3 reduce_scatter "$SHM $(ch $c)" $SZ
done
run shm_all_reduce_2gpu_8ch 0,1 all_reduce "$SHM $(ch 8)" $SZ
run shm_all_reduce_3gpu_8ch 0,1,2 all_reduce "$SHM $(ch 8)" $SZ
for c in 1 8; do for t in 640 320; do
  run ll128_tree_2gpu_${c}ch_${t}threads 0,1 all_reduce "NCCL_ALGO=Tree NCCL_PROTO=LL128 NCCL_LL128_NTHREADS=$t $(ch $c)" \
    -b 16M -e 256M -f 4 -w 5 -n 20
done; done
echo "== hostprobe, 4 GPUs at once (GB/s total; per-action buffer)"
for f in $OUT/probe/hostprobe-*.txt; do echo "-- $(basename $f .txt)"; grep -E "^[0-3]:" $f | awk -F'|' '{print $2}' | tr '\n' ' '; echo; done
echo "== busbw (GB/s) out of place"
for f in $OUT/logs/*.txt; do printf "%-34s" $(basename $f .txt)
  awk '$1 ~ /^[0-9]+$/ && NF>8 && $1>=1048576 {printf " %s", $8}' $f; echo; done
cd $OUT && tar czf logs.tgz logs probe && rm -rf logs probe
echo done at $(el)
