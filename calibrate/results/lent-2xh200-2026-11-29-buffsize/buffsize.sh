#!/usr/bin/env bash
# Out-of-sample check of NCCL's buffer size over NVLink P2P (NCCL_BUFFSIZE sets the Simple
# protocol's buffer per connection; a step is an eighth of it, and with it the ring's slices and
# chunks and the tree's chunk), 2 GPUs at NCCL's own channel count, on ops and algorithms the
# built-in profile's fit never saw with a buffer other than 4 MiB: ring all-reduce, all-gather,
# reduce-scatter and broadcast, tree all-reduce, with 1 MiB and 16 MiB buffers. The predictions
# were made before these runs (README). One HGX H200 host, 2 GPUs, nccl-tests 2.19.6 against the
# machine's NCCL 2.28.9 wheel, one process, a thread per GPU (-g 1 -t 2), -c 0 -w 3 -n 20,
# 1 MiB to 1 GiB by factors of 4, NVLS off.
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
B=(all_reduce all_gather reduce_scatter broadcast)
for b in "${B[@]}"; do  # one binary at a time: they share common objects in BUILDDIR
  make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/${b}_perf >> $OUT/build.log 2>&1
done
echo "build t $(el)"; ls /tmp/nt/*_perf | wc -l
mkdir -p $OUT/logs
ONLY="${*:-}"
wanted() { [ -z "$ONLY" ] && return 0; for w in $ONLY; do case $1 in *$w*) return 0;; esac; done; return 1; }
run() {  # log-name binary env nccl-tests-args
  local name=$1 bin=$2 envs=$3; shift 3
  wanted $name || return 0
  if [ $(el) -gt ${LIMIT:-400} ]; then echo "$name skipped (time)"; return; fi
  env CUDA_VISIBLE_DEVICES=0,1 LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT,TUNING $envs \
    timeout 90 taskset -c 0-15 /tmp/nt/${bin}_perf -g 1 -t 2 -c 0 "$@" > $OUT/logs/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
S="-b 1M -e 1G -f 4 -w 3 -n 20"
for buf in 1M:1048576 16M:16777216; do
  tag=${buf%%:*}; bytes=${buf#*:}
  run ar_ring_buf$tag all_reduce "NCCL_ALGO=Ring NCCL_PROTO=Simple NCCL_BUFFSIZE=$bytes" $S
  run ar_tree_buf$tag all_reduce "NCCL_ALGO=Tree NCCL_PROTO=Simple NCCL_BUFFSIZE=$bytes" $S
  run ag_ring_buf$tag all_gather "NCCL_ALGO=Ring NCCL_PROTO=Simple NCCL_BUFFSIZE=$bytes" $S
  run rs_ring_buf$tag reduce_scatter "NCCL_ALGO=Ring NCCL_PROTO=Simple NCCL_BUFFSIZE=$bytes" $S
  run bc_ring_buf$tag broadcast "NCCL_ALGO=Ring NCCL_PROTO=Simple NCCL_BUFFSIZE=$bytes" $S
done
echo "== busbw (GB/s) out of place, 1 MiB to 1 GiB"
for f in $OUT/logs/*.txt; do printf "%-16s" $(basename $f .txt)
  awk '$1 ~ /^[0-9]+$/ && NF>=12 && $1 >= 1048576 {printf " %s", $8}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
