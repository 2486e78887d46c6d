#!/usr/bin/env bash
# What NCCL's tuner picks for each transport, and two repeat runs of series that measured
# erratically. nccl-tests 2.19.6 against the machine's NCCL 2.28.9 wheel, one process, a thread
# per GPU (-g 1 -t N), NVLS off:
#   - choice: the five collectives at NCCL's own choice, 8 B to 128 MiB (NET to 32 MiB), one timed
#     call a size (-w 1 -n 1), NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING into one file per run: rank 0's
#     "<Op>: <bytes> Bytes -> Algo <a> proto <p> channel{Lo..Hi}" line for every call, and the
#     tuner's latency/bandwidth table; over P2P write (the default), SHM (NCCL_P2P_DISABLE=1), P2P
#     read (NCCL_P2P_READ_ENABLE=1) and NET (P2P and SHM disabled: the socket transport over lo);
#   - repeat: all_reduce over SHM with Tree/LL forced, twice, -w 10 -n 20, 64 KiB to 64 MiB (it
#     measured 0.5 to 2.2 GB/s, not monotonic in size); over NET at NCCL's choice, with Ring and
#     with Tree forced (Simple), -w 5 -n 20, 64 KiB to 32 MiB, twice at NCCL's choice.
# Arguments (optional): words; only the runs whose log names hold one of them.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; nvcc --version; lscpu; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
B=(all_reduce all_gather reduce_scatter broadcast reduce)
for b in "${B[@]}"; do  # one binary at a time: they share common objects in BUILDDIR
  make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/${b}_perf >> $OUT/build.log 2>&1
done
echo "build t $(el)"; ls /tmp/nt/*_perf | wc -l
mkdir -p $OUT/logs $OUT/tuning
ONLY="${*:-}"
wanted() { [ -z "$ONLY" ] && return 0; for w in $ONLY; do case $1 in *$w*) return 0;; esac; done; return 1; }
run() {  # log-name gpus binary "sizes and iterations" env...
  local name=$1 gpus=$2 bin=$3 args=$4; shift 4
  wanted $name || return 0
  if [ $(el) -gt 500 ]; then echo "$name skipped (time)"; return; fi
  local n=$(echo $gpus | tr ',' '\n' | wc -l)
  env CUDA_VISIBLE_DEVICES=$gpus LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO "$@" \
    timeout 120 taskset -c 0-15 /tmp/nt/${bin}_perf $args -g 1 -t $n -c 0 > $OUT/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
declare -A CFG=( [write]="" [shm]="NCCL_P2P_DISABLE=1" [read]="NCCL_P2P_READ_ENABLE=1"
                 [net]="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo" )
for c in write shm read net; do
  E=${CFG[$c]}; S="-b 8 -e 128M -f 4"; [ $c = net ] && S="-b 8 -e 32M -f 4"
  for b in "${B[@]}"; do
    run tuning/${c}_$b 0,1,2,3 $b "$S -w 1 -n 1" $E NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING
  done
done
for r in 1 2; do
  run logs/shm_all_reduce_Tree_LL_r$r 0,1,2,3 all_reduce "-b 64K -e 64M -f 4 -w 10 -n 20" ${CFG[shm]} NCCL_ALGO=Tree NCCL_PROTO=LL NCCL_DEBUG_SUBSYS=ENV,INIT
  run logs/net_all_reduce_r$r 0,1,2,3 all_reduce "-b 64K -e 32M -f 4 -w 5 -n 20" ${CFG[net]} NCCL_DEBUG_SUBSYS=ENV,INIT
done
for a in Ring Tree; do
  run logs/net_all_reduce_${a}_Simple 0,1,2,3 all_reduce "-b 64K -e 32M -f 4 -w 5 -n 20" ${CFG[net]} NCCL_ALGO=$a NCCL_PROTO=Simple NCCL_DEBUG_SUBSYS=ENV,INIT
done
echo "== NCCL's choice (rank 0's tuning lines, first call of each size): op size algo proto channels"
for f in $OUT/tuning/*.txt; do c=$(basename $f .txt)
  printf "%s: " $c; grep -o "[A-Za-z]*: *[0-9]* Bytes -> Algo.*" $f | awk '{print $2, $6, $8, $9}' | sort -u -k1,1n | tr '\n' ';' | cut -c1-600; echo; done
echo "== repeats: busbw GB/s out of place at 256K / 1M / 4M / 16M / 64M"
for f in $OUT/logs/*.txt; do printf "%-32s" $(basename $f .txt)
  awk '($1==262144||$1==1048576||$1==4194304||$1==16777216||$1==67108864) && NF>8 {printf " %s", $8}' $f; echo; done
cd $OUT && tar czf logs.tgz logs tuning && rm -rf logs tuning
echo done at $(el)
