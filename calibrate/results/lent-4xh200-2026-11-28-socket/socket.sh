#!/usr/bin/env bash
# NCCL's socket transport between the GPUs of one HGX H200 host (NCCL_P2P_DISABLE=1
# NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo): what a step costs as more connections are busy at
# once, and how much one run differs from the next. nccl-tests 2.19.6 against the machine's
# NCCL 2.28.9 wheel, one process, a thread per GPU (-g 1 -t N), -c 0 -w 5 -n 20, NVLS off,
# NCCL_DEBUG_SUBSYS=ENV,INIT:
#   - concurrency: sendrecv, all_gather and broadcast on 2, 3 and 4 GPUs, 8 B to 8 MiB (a
#     sendrecv ring and an all_gather step keep one connection per rank busy at once, a broadcast
#     chain one in all at small sizes);
#   - CPUs: the 4-GPU sendrecv and all_gather with the process on all 64 CPUs instead of 16, and
#     with NCCL_SOCKET_NTHREADS=1 (a helper thread per connection instead of the proxy thread);
#     the CPU each of the process's threads last ran on, sampled each second during a long 8 KiB
#     sendrecv (threads_*.txt);
#   - repeats: the seven ops on 4 GPUs, 8 B to 32 MiB (as lent-4xh200-2026-11-27-transports ran
#     them), twice, interleaved.
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
B=(all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv)
for b in "${B[@]}"; do  # one binary at a time: they share common objects in BUILDDIR
  make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/${b}_perf >> $OUT/build.log 2>&1
done
echo "build t $(el)"; ls /tmp/nt/*_perf | wc -l
mkdir -p $OUT/logs
ONLY="${*:-}"
wanted() { [ -z "$ONLY" ] && return 0; for w in $ONLY; do case $1 in *$w*) return 0;; esac; done; return 1; }
NET="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo"
run() {  # log-name gpus cpus binary sizes env...
  local name=$1 gpus=$2 cpus=$3 bin=$4 sizes=$5; shift 5
  wanted $name || return 0
  if [ $(el) -gt 540 ]; then echo "$name skipped (time)"; return; fi
  local n=$(echo $gpus | tr ',' '\n' | wc -l)
  env CUDA_VISIBLE_DEVICES=$gpus LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT $NET "$@" \
    timeout 60 taskset -c $cpus /tmp/nt/${bin}_perf -g 1 -t $n -c 0 -w 5 -n 20 $sizes > $OUT/logs/$name.txt 2>&1 &
  local pid=$!
  if [ "${SAMPLE:-0}" = 1 ]; then  # each second: the CPU each thread last ran on, and its use
    while kill -0 $pid 2>/dev/null; do sleep 1; p=$(pgrep -x ${bin}_perf | head -1)
      [ -n "$p" ] && { echo "# t $(el)"; ps -L -o tid,psr,pcpu,stat,comm -p $p; } >> $OUT/logs/threads_$name.txt 2>&1; done
  fi
  wait $pid; echo "$name rc $? t $(el)"
}
SMALL="-b 8 -e 8M -f 4"; ALL="-b 8 -e 32M -f 4"
for b in sendrecv all_gather broadcast; do
  run net2_$b 0,1 0-15 $b "$SMALL"
  run net3_$b 0,1,2 0-15 $b "$SMALL"
done
run net4_sendrecv_cpu16 0,1,2,3 0-15 sendrecv "$SMALL"
run net4_sendrecv_cpu64 0,1,2,3 0-63 sendrecv "$SMALL"
SAMPLE=1 run net4_sendrecv_8k_long 0,1,2,3 0-15 sendrecv "-b 8K -e 8K -n 100000"
run net4_all_gather_cpu64 0,1,2,3 0-63 all_gather "$SMALL"
run net4_sendrecv_1thread 0,1,2,3 0-15 sendrecv "$SMALL" NCCL_SOCKET_NTHREADS=1 NCCL_NSOCKS_PERTHREAD=1
for r in a b; do for b in "${B[@]}"; do run net4_${b}_rep$r 0,1,2,3 0-15 $b "$ALL"; done; done
echo "== time (us) out of place at 128 B / 8 KiB / 512 KiB / 8 MiB / 32 MiB"
for f in $OUT/logs/net*.txt; do printf "%-28s" $(basename $f .txt)
  awk '($1==128||$1==8192||$1==524288||$1==8388608||$1==33554432) && NF>8 && $1 ~ /^[0-9]+$/ {printf " %9s", $6}' $f
  echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
