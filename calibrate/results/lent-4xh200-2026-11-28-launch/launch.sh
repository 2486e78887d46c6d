#!/usr/bin/env bash
# What one nccl-tests iteration costs the host at sizes where the GPUs wait for it, by launch
# structure, on one HGX H200 host: T threads of one process each driving G GPUs (-t T -g G), and,
# where the machine has MPI, one process per GPU. nccl-tests 2.19.6 against the machine's NCCL
# 2.28.9 wheel, 8 B to 32 KiB (x4), -w 50 -n 500, NVLS off, NCCL's own algorithm and protocol:
#   every op with -t 4 -g 1 on 4 GPUs (the structure of this project's nccl-tests runs), twice;
#   all-reduce, broadcast and send/recv with -t 2 -g 2 and -t 1 -g 4 on 4 GPUs;
#   all-reduce and broadcast with -t 3 on 3 GPUs, -t 2 and -t 1 -g 2 on 2 GPUs, -t 1 on 1 GPU;
#   every op with one process per GPU (mpirun -np 4, -t 1 -g 1) when mpirun and mpicc are found.
# Arguments (optional): words; only the runs whose log names hold one of them.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; nvcc --version; lscpu; which mpirun mpicc; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
OPS="all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv"
make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" > $OUT/build.log 2>&1
MPI=""
if command -v mpirun > /dev/null && command -v mpicc > /dev/null; then
  MH=$(dirname $(dirname $(command -v mpicc)))
  make -C $NT/src -j16 MPI=1 MPI_HOME=$MH CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/ntm NVCC_GENCODE="$GEN" > $OUT/build-mpi.log 2>&1 && MPI=1
fi
echo "build t $(el) mpi=${MPI:-no}"
ONLY="${*:-}"
wanted() { [ -z "$ONLY" ] && return 0; for w in $ONLY; do case $1 in *$w*) return 0;; esac; done; return 1; }
mkdir -p $OUT/logs
S="-b 8 -e 32K -f 4 -w 50 -n 500 -c 0"
run() {  # log-name gpus binary threads gpus-per-thread
  local name=$1 gpus=$2 bin=$3 t=$4 g=$5
  wanted $name || return 0
  if [ $(el) -gt 500 ]; then echo "$name skipped (time)"; return; fi
  env CUDA_VISIBLE_DEVICES=$gpus LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT \
    timeout 120 taskset -c 0-15 /tmp/nt/${bin}_perf $S -t $t -g $g > $OUT/logs/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
for op in $OPS; do run ${op}_4gpu_t4g1 0,1,2,3 $op 4 1; done
for op in all_reduce broadcast sendrecv; do
  run ${op}_4gpu_t2g2 0,1,2,3 $op 2 2
  run ${op}_4gpu_t1g4 0,1,2,3 $op 1 4
done
for op in all_reduce broadcast; do
  run ${op}_3gpu_t3g1 0,1,2 $op 3 1
  run ${op}_2gpu_t2g1 0,1 $op 2 1
  run ${op}_2gpu_t1g2 0,1 $op 1 2
  run ${op}_1gpu_t1g1 0 $op 1 1
done
for op in $OPS; do run ${op}_4gpu_t4g1_run2 0,1,2,3 $op 4 1; done
if [ -n "$MPI" ]; then
  for op in $OPS; do
    wanted ${op}_4gpu_mpi || continue
    env LD_LIBRARY_PATH=/tmp/nccl/lib:${LD_LIBRARY_PATH:-} timeout 120 mpirun --allow-run-as-root --oversubscribe -np 4 \
      -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=ENV,INIT \
      /tmp/ntm/${op}_perf $S -t 1 -g 1 \
      > $OUT/logs/${op}_4gpu_mpi.txt 2>&1
    echo "${op}_4gpu_mpi rc $? t $(el)"
  done
fi
echo "== time (us) out of place, 8 B .. 32 KiB (x4)"
for f in $OUT/logs/*.txt; do printf "%-26s" $(basename $f .txt)
  awk '$1 ~ /^[0-9]+$/ && NF>8 {printf " %s", $6}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
