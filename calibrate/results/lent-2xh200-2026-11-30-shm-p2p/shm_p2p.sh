#!/usr/bin/env bash
# Send/recv and alltoall over NCCL's SHM transport (NCCL_P2P_DISABLE=1: GPU -> host memory -> GPU)
# on 2 GPUs of one HGX H200 host, with NCCL's own P2P channels (2 per peer) and with one
# (NCCL_MAX_P2P_NCHANNELS=1), to tell a channel's rate from the host's: on 4 x H200 the model's
# send/recv over SHM is 10 to 15% slow where a peer's message rides one channel (below 8 MiB) and
# 4 to 6% fast where it rides two. The predictions (predictions.csv) were written before this run.
# nccl-tests 2.19.6 against the machine's NCCL 2.28.9 wheel, one process, a thread per GPU
# (-g 1 -t 2), -c 0 -w 5 -n 20, 64 KiB to 256 MiB by factors of 4, NVLS off; the default send/recv
# three times, spread over the call, for its run-to-run spread. Logs go to $OUT/logs.tgz.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; nvcc --version; lscpu; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
for b in sendrecv alltoall; do  # one binary at a time: they share common objects in BUILDDIR
  make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/${b}_perf >> $OUT/build.log 2>&1
done
echo "build t $(el)"; ls /tmp/nt/*_perf | wc -l
mkdir -p $OUT/logs
run() {  # log-name binary env
  local name=$1 bin=$2 envs=$3
  if [ $(el) -gt ${LIMIT:-300} ]; then echo "$name skipped (time)"; return; fi
  env CUDA_VISIBLE_DEVICES=0,1 LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT NCCL_P2P_DISABLE=1 $envs \
    timeout 90 taskset -c 0-15 /tmp/nt/${bin}_perf -g 1 -t 2 -c 0 -b 64K -e 256M -f 4 -w 5 -n 20 > $OUT/logs/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
ONE="NCCL_MAX_P2P_NCHANNELS=1"
run sendrecv_run1 sendrecv ""
run sendrecv_1ch sendrecv "$ONE"
run alltoall_run1 alltoall ""
run alltoall_1ch alltoall "$ONE"
run sendrecv_run2 sendrecv ""
run sendrecv_1ch_run2 sendrecv "$ONE"
run sendrecv_run3 sendrecv ""
echo "== shm-p2p: out-of-place busbw (GB/s), 64K 256K 1M 4M 16M 64M 256M"
for f in $OUT/logs/*.txt; do printf "%-20s" $(basename $f .txt)
  awk '$1 ~ /^[0-9]+$/ && NF>=12 && $1 >= 65536 {printf " %6s", $8}' $f; echo; done
grep -h -m3 -E 'NCCL version|Channel 0[0-9]/0 :|via SHM' $OUT/logs/sendrecv_run1.txt | head -5
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
