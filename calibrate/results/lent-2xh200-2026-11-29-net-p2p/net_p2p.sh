#!/usr/bin/env bash
# NCCL's socket transport over the loopback interface on 2 GPUs of one HGX H200 host: send/recv
# against the P2P chunk (NCCL_P2P_NET_CHUNKSIZE), the channels per network peer and the shared
# proxy buffers, next to the ring all-gather and the broadcast chain with the same message sizes
# (NCCL_BUFFSIZE / 8 a step) and one or two channels. Each default run is made three times,
# spread over the call, to show its run-to-run spread. nccl-tests 2.19.6 against the machine's
# NCCL 2.28.9 wheel, one process, a thread per GPU (-g 1 -t 2), -c 0 -w 5 -n 20, 128 KiB to 32 MiB
# by factors of 4, NVLS off. Reuses the binaries a previous script of the call built in /tmp/nt
# and builds what is missing. Logs go to $OUT/net-p2p/.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
for b in sendrecv all_gather broadcast; do
  [ -x /tmp/nt/${b}_perf ] || make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt \
    NVCC_GENCODE="$GEN" /tmp/nt/${b}_perf >> $OUT/net-p2p-build.log 2>&1
done
D=$OUT/net-p2p; mkdir -p $D
NET="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo"
run() {  # log-name binary env
  local name=$1 bin=$2 envs=$3
  if [ $(el) -gt ${LIMIT:-170} ]; then echo "$name skipped (time)"; return; fi
  env CUDA_VISIBLE_DEVICES=0,1 LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT $NET $envs \
    timeout 60 taskset -c 0-15 /tmp/nt/${bin}_perf -g 1 -t 2 -c 0 -b 128K -e 32M -f 4 -w 5 -n 20 > $D/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
ch() { echo "NCCL_MIN_NCHANNELS=$1 NCCL_MAX_NCHANNELS=$1"; }
run sendrecv_run1 sendrecv ""
run all_gather_run1 all_gather ""
run sendrecv_chunk512k sendrecv "NCCL_P2P_NET_CHUNKSIZE=524288"
run sendrecv_chunk2m sendrecv "NCCL_P2P_NET_CHUNKSIZE=2097152"
run sendrecv_peer1 sendrecv "NCCL_NCHANNELS_PER_NET_PEER=1"
run sendrecv_peer4 sendrecv "NCCL_NCHANNELS_PER_NET_PEER=4"
run sendrecv_noshared sendrecv "NCCL_NET_SHARED_BUFFERS=0"
run sendrecv_run2 sendrecv ""
run all_gather_buf1m all_gather "NCCL_BUFFSIZE=1048576"
run all_gather_1ch all_gather "$(ch 1)"
run all_gather_1ch_buf1m all_gather "$(ch 1) NCCL_BUFFSIZE=1048576"
run broadcast_run1 broadcast ""
run broadcast_buf1m broadcast "NCCL_BUFFSIZE=1048576"
run all_gather_run2 all_gather ""
run sendrecv_run3 sendrecv ""
run broadcast_run2 broadcast ""
echo "== net-p2p: time (us) out of place, 128K 512K 2M 8M 32M"
for f in $D/*.txt; do printf "%-22s" $(basename $f .txt)
  awk '$1 ~ /^[0-9]+$/ && NF>=12 && $1 >= 131072 {printf " %8s", $6}' $f; echo; done
cd $OUT && tar czf net-p2p-logs.tgz net-p2p && rm -rf net-p2p
echo done at $(el)
