#!/usr/bin/env bash
# How a ring broadcast and reduce (a chain root -> ... -> last rank) move a launch's data with the
# Simple protocol at middle sizes, where each channel holds less than one 512 KiB step: one channel
# forced on 2, 3 and 4 GPUs (1, 2 and 3 hops), back to back (-n 20) and one launch at a time
# (-n 1), with NCCL's 4 MiB buffer and with a 1 MiB one (128 KiB steps), and NCCL's own channel
# count on 4 GPUs. broadcast_perf and reduce_perf from nccl-tests 2.19.6 against the machine's
# NCCL 2.28.9 wheel, a thread per GPU, 8 KiB to 16 MiB.
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
  /tmp/nt/broadcast_perf /tmp/nt/reduce_perf > $OUT/build.log 2>&1
echo "build rc $? t $(el)"
mkdir -p $OUT/logs
run() {  # name gpus channels(0: NCCL's) iters extra-env binary
  local f=$OUT/logs/$1.txt vis=0,1,2,3; [ $2 = 2 ] && vis=0,1; [ $2 = 3 ] && vis=0,1,2
  local chenv=""; [ $3 != 0 ] && chenv="NCCL_MIN_NCHANNELS=$3 NCCL_MAX_NCHANNELS=$3"
  env CUDA_VISIBLE_DEVICES=$vis NCCL_ALGO=Ring NCCL_PROTO=Simple $chenv $5 LD_LIBRARY_PATH=/tmp/nccl/lib \
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV timeout 60 taskset -c 0-15 /tmp/nt/$6_perf -b 8K -e 16M -f 2 -g 1 -t $2 -c 0 -w 5 -n $4 > $f 2>&1
  echo "$1 rc $? t $(el)"
}
for op in broadcast reduce; do
  for g in 2 3 4; do run ${op}_${g}gpu_1ch_n20 $g 1 20 "" $op; done
  run ${op}_4gpu_1ch_n1 4 1 1 "" $op
  run ${op}_4gpu_1ch_n20_buff1m 4 1 20 "NCCL_BUFFSIZE=1048576" $op
  run ${op}_4gpu_autoch_n20 4 0 20 "" $op
  run ${op}_2gpu_autoch_n20 2 0 20 "" $op
done
echo "== time (us, out of place) at 32 KiB / 256 KiB / 1 MiB / 4 MiB / 16 MiB"
for f in $OUT/logs/*.txt; do printf "%-34s" $(basename $f .txt); awk '$1==32768||$1==262144||$1==1048576||$1==4194304||$1==16777216 {printf " %7s", $6}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
