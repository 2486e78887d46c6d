#!/usr/bin/env bash
# The 2-GPU tree all-reduce with LL128 moves 12.7 GB/s busbw on one channel, 25.3 on two, then less
# per channel the more there are (45.6 at 4, 83 at 8, 157 at 16, 213 at 24), and at 4 channels
# and more less at 256 MiB than at 64 MiB (lent-4xh200-2026-11-22-tree-2rank); the ring with LL128
# keeps 16.1 per channel up to 8. On one HGX H200 host, 2 GPUs, nccl-tests 2.19.6 against the
# machine's NCCL 2.28.9 wheel, 16 MiB to 1 GiB by factors of 4, 50 iterations:
#   tree and ring all-reduce with LL128 at 1, 2, 4, 8 and 16 channels;
#   the tree at 8 channels with the LL128 buffer halved and doubled (NCCL_LL128_BUFFSIZE);
#   broadcast and reduce (ring, LL128) at 1 and 8 channels: a receive alone, a reduce alone.
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
for b in all_reduce broadcast reduce; do
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
ch() { echo "NCCL_MIN_NCHANNELS=$1 NCCL_MAX_NCHANNELS=$1"; }
S="-b 16M -e 1G -f 4 -w 5 -n 50"
for c in 1 2 4 8 16; do
  run tree_ll128_${c}ch 0,1 all_reduce "NCCL_ALGO=Tree NCCL_PROTO=LL128 $(ch $c)" $S
  run ring_ll128_${c}ch 0,1 all_reduce "NCCL_ALGO=Ring NCCL_PROTO=LL128 $(ch $c)" $S
done
# NCCL's default LL128 buffer: 120 elements x 640 threads x 8 steps x 8 bytes = 4915200 bytes.
run tree_ll128_8ch_buf2458k 0,1 all_reduce "NCCL_ALGO=Tree NCCL_PROTO=LL128 $(ch 8) NCCL_LL128_BUFFSIZE=2457600" $S
run tree_ll128_8ch_buf9830k 0,1 all_reduce "NCCL_ALGO=Tree NCCL_PROTO=LL128 $(ch 8) NCCL_LL128_BUFFSIZE=9830400" $S
for c in 1 8; do
  run bcast_ll128_${c}ch 0,1 broadcast "NCCL_ALGO=Ring NCCL_PROTO=LL128 $(ch $c)" $S
  run reduce_ll128_${c}ch 0,1 reduce "NCCL_ALGO=Ring NCCL_PROTO=LL128 $(ch $c)" $S
done
echo "== busbw (GB/s) out of place, 16M 64M 256M 1G"
for f in $OUT/logs/*.txt; do printf "%-26s" $(basename $f .txt)
  awk '$1 ~ /^[0-9]+$/ && NF>=12 {printf " %s", $8}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
