#!/usr/bin/env bash
# Long rings at many channels, and NCCL's socket transport on 2 GPUs. On the 4 x H200 host the
# measured ring keeps speeding up with size from 12 channels on, well past where the model levels
# off (the 2-GPU all-reduce at 24 channels: 271 GB/s busbw at 64 MiB, 332 at 1 GiB; the model
# 285 to 297), while 1 to 8 channels do not. A line T = a + S / B through each series separates
# a fixed cost per call (a: the pipeline's fill and drain) from the rate (B). On one HGX H200
# host, 2 GPUs, nccl-tests 2.19.6 against the machine's NCCL 2.28.9 wheel, one process, a thread
# per GPU (-g 1 -t 2), -c 0 -w 3 -n 20, NVLS off:
#   P2P write, Ring/Simple all-reduce at 1, 2, 4 channels (16 MiB to 1 GiB) and 8, 12, 16, 24,
#   32 channels and NCCL's own count (16 MiB to 8 GiB, by factors of 2);
#   all-gather, broadcast at 8, 24 channels and NCCL's count; reduce-scatter, reduce, send/recv
#   at NCCL's count; the all-reduce at 24 channels with NCCL_BUFFSIZE 1, 2, 8, 16 MiB (the step,
#   hence the chunk and the fill, scales with it); the all-reduce at 256 MiB with 200 timed
#   iterations after 100 warm-up ones (does a long run get faster with time?); P2P read;
#   NET/Socket over the loopback interface (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1), 8 B to
#   128 MiB: every op at NCCL's choice, the all-reduce as Ring/Simple and Tree/Simple, and the
#   ring with NCCL_BUFFSIZE 1 and 16 MiB (the socket's message size).
# Arguments (optional): words; only the runs whose log names hold one of them.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; nvcc --version; lscpu; ip -brief addr; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
B=(all_reduce all_gather reduce_scatter broadcast reduce sendrecv)
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
  if [ $(el) -gt 560 ]; then echo "$name skipped (time)"; return; fi
  env CUDA_VISIBLE_DEVICES=0,1 LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT $envs \
    timeout 90 taskset -c 0-15 /tmp/nt/${bin}_perf -g 1 -t 2 -c 0 "$@" > $OUT/logs/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
ch() { echo "NCCL_MIN_NCHANNELS=$1 NCCL_MAX_NCHANNELS=$1"; }
RS="NCCL_ALGO=Ring NCCL_PROTO=Simple"
S1="-b 16M -e 1G -f 2 -w 3 -n 20"; S8="-b 16M -e 8G -f 2 -w 3 -n 20"
for c in 1 2 4; do run ar_${c}ch all_reduce "$RS $(ch $c)" $S1; done
for c in 8 12 16 24 32; do run ar_${c}ch all_reduce "$RS $(ch $c)" $S8; done
run ar_auto all_reduce "" $S8
for b in all_gather broadcast; do
  for c in 8 24; do run ${b}_${c}ch $b "$RS $(ch $c)" $S8; done
  run ${b}_auto $b "" $S8
done
for b in reduce_scatter reduce sendrecv; do run ${b}_auto $b "" $S8; done
for m in 1 2 8 16; do run ar_24ch_buf${m}m all_reduce "$RS $(ch 24) NCCL_BUFFSIZE=$((m * 1048576))" $S1; done
run ar_24ch_long all_reduce "$RS $(ch 24)" -b 256M -e 256M -w 100 -n 200
run ar_auto_again all_reduce "" $S8
run ar_read_auto all_reduce "NCCL_P2P_READ_ENABLE=1" $S8
NET="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo"
SN="-b 8 -e 128M -f 4 -w 3 -n 20"
for b in "${B[@]}"; do run net_${b}_auto $b "$NET" $SN; done
run net_ar_ring all_reduce "$NET NCCL_ALGO=Ring NCCL_PROTO=Simple" $SN
run net_ar_tree all_reduce "$NET NCCL_ALGO=Tree NCCL_PROTO=Simple" $SN
for m in 1 16; do run net_ar_ring_buf${m}m all_reduce "$NET NCCL_ALGO=Ring NCCL_PROTO=Simple NCCL_BUFFSIZE=$((m * 1048576))" $SN; done
run net_all_reduce_again all_reduce "$NET" $SN
echo "== busbw (GB/s) out of place, every size"
for f in $OUT/logs/*.txt; do printf "%-20s" $(basename $f .txt)
  awk '$1 ~ /^[0-9]+$/ && NF>=12 && $1 >= 16777216 {printf " %s", $8}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
