#!/usr/bin/env bash
# Every op through each of NCCL's transports between the GPUs of one HGX H200 host, and two
# diagnostics of the 2-rank LL128 tree. nccl-tests 2.19.6 against the machine's NCCL 2.28.9
# wheel, one process, a thread per GPU (-g 1 -t N), -w 5 -n 20, NVLS off:
#   (NCCL_DEBUG_SUBSYS=ENV,INIT: the variables set, for the import, and each channel's transport)
#   - SHM (NCCL_P2P_DISABLE=1): the seven ops on 4 GPUs, 8 B to 128 MiB, NCCL's own choice; and
#     all_reduce with Ring and Tree forced, LL and Simple, 4 MiB to 128 MiB;
#   - P2P read (NCCL_P2P_READ_ENABLE=1): the seven ops, and all_reduce Ring/Simple and Tree/Simple;
#   - NET (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1; no InfiniBand on the host, so NCCL's socket
#     transport over the loopback interface): the seven ops, 8 B to 32 MiB;
#   - the 2-rank tree with LL128 at 1, 2, 4, 8, 12, 16 and 24 channels: one 8-byte call each with
#     NCCL_DEBUG_SUBSYS=INIT,GRAPH into its own file (which GPU holds each channel's root);
#   - ring broadcast and reduce with LL128 on 2 GPUs at 1, 4, 8 and 16 channels, 4 MiB to 256 MiB.
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
mkdir -p $OUT/logs $OUT/diag
ONLY="${*:-}"  # arguments: run only the logs whose names hold one of these words (all without)
wanted() { [ -z "$ONLY" ] && return 0; for w in $ONLY; do case $1 in *$w*) return 0;; esac; done; return 1; }
run() {  # log-name gpus binary sizes(-b -e -f) env...
  local name=$1 gpus=$2 bin=$3 sizes=$4; shift 4
  wanted $name || return 0
  if [ $(el) -gt 520 ]; then echo "$name skipped (time)"; return; fi
  local n=$(echo $gpus | tr ',' '\n' | wc -l)
  env CUDA_VISIBLE_DEVICES=$gpus LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT "$@" \
    timeout 90 taskset -c 0-15 /tmp/nt/${bin}_perf $sizes -g 1 -t $n -c 0 -w 5 -n 20 > $OUT/logs/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
ALL="-b 8 -e 128M -f 4"; BIG="-b 4M -e 128M -f 4"
for b in "${B[@]}"; do run shm_$b 0,1,2,3 $b "$ALL" NCCL_P2P_DISABLE=1; done
for a in Ring Tree; do for p in LL Simple; do
  run shm_all_reduce_${a}_${p} 0,1,2,3 all_reduce "$BIG" NCCL_P2P_DISABLE=1 NCCL_ALGO=$a NCCL_PROTO=$p; done; done
for b in "${B[@]}"; do run read_$b 0,1,2,3 $b "$ALL" NCCL_P2P_READ_ENABLE=1; done
for a in Ring Tree; do run read_all_reduce_${a}_Simple 0,1,2,3 all_reduce "$BIG" NCCL_P2P_READ_ENABLE=1 NCCL_ALGO=$a NCCL_PROTO=Simple; done
for b in "${B[@]}"; do run net_$b 0,1,2,3 $b "-b 8 -e 32M -f 4" NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo; done
for ch in 1 2 4 8 12 16 24; do
  wanted diag || break
  env CUDA_VISIBLE_DEVICES=0,1 LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH \
    NCCL_DEBUG_FILE=$OUT/diag/tree_ll128_${ch}ch.%p.nccl NCCL_ALGO=Tree NCCL_PROTO=LL128 NCCL_MIN_NCHANNELS=$ch NCCL_MAX_NCHANNELS=$ch \
    timeout 60 /tmp/nt/all_reduce_perf -b 8 -e 8 -g 1 -t 2 -c 0 -w 1 -n 1 > $OUT/diag/tree_ll128_${ch}ch.txt 2>&1
  echo "diag ${ch}ch rc $? t $(el)"
done
for b in broadcast reduce; do for ch in 1 4 8 16; do
  run ring2_${b}_LL128_${ch}ch 0,1 $b "-b 4M -e 256M -f 4" NCCL_ALGO=Ring NCCL_PROTO=LL128 NCCL_MIN_NCHANNELS=$ch NCCL_MAX_NCHANNELS=$ch
done; done
echo "== busbw (GB/s) out of place at 2 MiB / 32 MiB / 128 MiB (net: 2 / 8 / 32 MiB)"
for f in $OUT/logs/*.txt; do printf "%-30s" $(basename $f .txt)
  awk '($1==2097152||$1==33554432||$1==134217728||($1==8388608 && FILENAME ~ /net_/)) && NF>8 {printf " %s", $8}' $f
  grep -m1 -o "via [A-Za-z/0-9]*" $f | head -1 | tr '\n' ' '; echo; done
echo "== tree roots (Trees lines) per channel count"
for f in $OUT/diag/*.nccl; do echo "$(basename $f): $(grep -h 'Trees \[' $f | head -24 | sed 's/.*Trees/Trees/' | tr '\n' ' ' | cut -c1-300)"; done
cd $OUT && tar czf logs.tgz logs diag && rm -rf logs diag
echo done at $(el)
