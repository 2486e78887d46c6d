#!/usr/bin/env bash
# What a one-rank NCCL collective costs per nccl-tests iteration on one H200, and how that cost
# depends on the iteration count: NCCL 2.28 runs a one-rank collective as a device-to-device
# cudaMemcpyAsync out of place and launches nothing in place (onerank.cu ncclLaunchOneRank), so
# an iteration is the host's call plus, out of place, the copy; nccl-tests adds one stream
# synchronisation per timed loop of -n iterations.
# nccl-tests 2.19.6 against the machine's NCCL 2.28.9 wheel, -g 1, 8 B to 256 MiB (x4), NVLS off:
#   every op with -w 5 -n 20 (the harness's structure of 2026-11-21), first and last;
#   every op with -w 20 -n 100 and -w 50 -n 500;
#   all-reduce and all-gather with -G 100 (the loop captured in a CUDA graph: the GPU's time alone,
#   kept as logs, not imported).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvcc --version; lscpu; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
OPS="all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv"
make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" > $OUT/build.log 2>&1
echo "build rc $? t $(el)"
mkdir -p $OUT/logs $OUT/graph
run() {  # dir log-name binary nccl-tests-arguments...
  local dir=$1 name=$2 bin=$3; shift 3
  if [ $(el) -gt 480 ]; then echo "$name skipped (time)"; return; fi
  env CUDA_VISIBLE_DEVICES=0 LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT \
    timeout 120 /tmp/nt/${bin}_perf -b 8 -e 256M -f 4 -c 0 -t 1 -g 1 "$@" > $OUT/$dir/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
for op in $OPS; do run logs ${op}_n20 $op -w 5 -n 20; done
for op in $OPS; do run logs ${op}_n100 $op -w 20 -n 100; done
for op in $OPS; do run logs ${op}_n500 $op -w 50 -n 500; done
for op in all_reduce all_gather; do run graph ${op}_G100 $op -w 20 -n 100 -G 100; done
for op in $OPS; do run logs ${op}_n20_run2 $op -w 5 -n 20; done
echo "== time (us) per iteration, out of place | in place, 8 B .. 256 MiB (x4)"
for f in $OUT/logs/*.txt $OUT/graph/*.txt; do printf "%-22s" $(basename $f .txt)
  awk '$1 ~ /^[0-9]+$/ && NF>8 {printf " %s", $6}' $f; printf " |"
  awk '$1 ~ /^[0-9]+$/ && NF>8 {printf " %s", $(NF-3)}' $f; echo; done
cd $OUT && tar czf logs.tgz logs graph && rm -rf logs graph
echo done at $(el)
