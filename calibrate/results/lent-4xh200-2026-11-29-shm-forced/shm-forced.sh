#!/usr/bin/env bash
# Does forcing NCCL's choice change an SHM broadcast? On 4 x H200 with NCCL_P2P_DISABLE=1 NCCL
# picks Ring/Simple on 4 channels from 512 KiB (its TUNING lines, lent-4xh200-2026-11-27-tuning),
# yet the broadcast at NCCL's choice ran 37 GB/s in two sessions and with Ring, Simple and 4
# channels forced 32 GB/s in a third. This runs, twice and interleaved in one session, 4 GPUs,
# 16 MiB to 256 MiB: the broadcast at NCCL's choice, with NCCL_ALGO=Ring, with NCCL_PROTO=Simple,
# with NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=4, and with all three; the reduce at NCCL's choice and
# with all three. nccl-tests 2.19.6, NCCL 2.28.9 wheel, -g 1 -t 4 -c 0 -w 5 -n 20, CPUs 0-15, NVLS off.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; lscpu; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
for b in broadcast reduce; do
  make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/${b}_perf >> $OUT/build.log 2>&1
done
echo "build t $(el)"
mkdir -p $OUT/logs
run() {  # log-name binary env
  local name=$1 bin=$2 envs=$3
  env CUDA_VISIBLE_DEVICES=0,1,2,3 LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT,TUNING NCCL_P2P_DISABLE=1 $envs \
    timeout 90 taskset -c 0-15 /tmp/nt/${bin}_perf -b 16M -e 256M -f 4 -g 1 -t 4 -c 0 -w 5 -n 20 > $OUT/logs/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
ALL="NCCL_ALGO=Ring NCCL_PROTO=Simple NCCL_MIN_NCHANNELS=4 NCCL_MAX_NCHANNELS=4"
for rep in 1 2; do
  run bc_auto_$rep broadcast ""
  run bc_algo_$rep broadcast "NCCL_ALGO=Ring"
  run bc_proto_$rep broadcast "NCCL_PROTO=Simple"
  run bc_ch4_$rep broadcast "NCCL_MIN_NCHANNELS=4 NCCL_MAX_NCHANNELS=4"
  run bc_all_$rep broadcast "$ALL"
  run rd_auto_$rep reduce ""
  run rd_all_$rep reduce "$ALL"
done
echo "== time (us) out of place, 16 MiB 64 MiB 256 MiB"
for f in $OUT/logs/*.txt; do printf "%-12s" $(basename $f .txt)
  awk '$1 ~ /^[0-9]+$/ && NF>=12 {printf " %s", $6}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
