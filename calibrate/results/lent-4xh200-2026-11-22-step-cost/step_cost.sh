#!/usr/bin/env bash
# What one Simple step costs beyond its copy, in the tree and the ring all-reduce: all_reduce_perf
# with one channel and NCCL_PROTO=Simple, NCCL_ALGO=Tree on 2 and 4 GPUs and NCCL_ALGO=Ring on 2,
# each with NCCL's 4 MiB buffer (512 KiB steps) and with NCCL_BUFFSIZE=1048576 (128 KiB steps).
# nccl-tests 2.19.6 against the machine's NCCL 2.28.9 wheel, a thread per GPU, 1 MiB to 64 MiB.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; nvcc --version; lscpu; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" \
  /tmp/nt/all_reduce_perf > $OUT/build.log 2>&1
echo "build rc $? t $(el)"
mkdir -p $OUT/logs
run() {  # name gpus algo extra-env
  local f=$OUT/logs/$1.txt vis=0,1,2,3; [ $2 = 2 ] && vis=0,1
  env CUDA_VISIBLE_DEVICES=$vis NCCL_ALGO=$3 NCCL_PROTO=Simple NCCL_MIN_NCHANNELS=1 NCCL_MAX_NCHANNELS=1 $4 \
    LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV timeout 60 taskset -c 0-15 \
    /tmp/nt/all_reduce_perf -b 1M -e 64M -f 4 -g 1 -t $2 -c 0 -w 5 -n 20 > $f 2>&1
  echo "$1 rc $? t $(el)"
}
for g in 2 4; do
  run tree_${g}gpu_simple_1ch $g Tree ""
  run tree_${g}gpu_simple_1ch_buff1m $g Tree "NCCL_BUFFSIZE=1048576"
done
run ring_2gpu_simple_1ch 2 Ring ""
run ring_2gpu_simple_1ch_buff1m 2 Ring "NCCL_BUFFSIZE=1048576"
echo "== time (us, out of place) at 1 MiB / 4 MiB / 16 MiB / 64 MiB"
for f in $OUT/logs/*.txt; do printf "%-32s" $(basename $f .txt); awk '$1==1048576||$1==4194304||$1==16777216||$1==67108864 {printf " %8s", $6}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
