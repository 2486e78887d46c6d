#!/usr/bin/env bash
# Every op over P2P read (NCCL_P2P_READ_ENABLE=1) on 4 GPUs again, with 100 timed iterations (-w 20
# -n 100) where the first measurement (lent-4xh200-2026-11-27-transports) timed 20: its small sizes
# took 2 to 9 us longer than the same ops over P2P write in an earlier session, more than the
# protocols explain (LL and LL128 keep their buffers at the receiver whatever the setting; NCCL
# reads only Simple's). nccl-tests 2.19.6 against the machine's NCCL 2.28.9 wheel, one process, a
# thread per GPU (-g 1 -t 4), NVLS off, 8 B to 128 MiB; then the same over P2P write, for a
# baseline from the same session.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; nvcc --version; lscpu; } > $OUT/machine.txt 2>&1
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
run() {  # log-name binary env...
  local name=$1 bin=$2; shift 2
  if [ $(el) -gt 520 ]; then echo "$name skipped (time)"; return; fi
  env CUDA_VISIBLE_DEVICES=0,1,2,3 LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT "$@" \
    timeout 90 taskset -c 0-15 /tmp/nt/${bin}_perf -b 8 -e 128M -f 4 -g 1 -t 4 -c 0 -w 20 -n 100 > $OUT/logs/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
for b in "${B[@]}"; do run read_$b $b NCCL_P2P_READ_ENABLE=1; done
for b in "${B[@]}"; do run write_$b $b; done
echo "== time us out of place at 8 B / 32 KiB / 512 KiB / 8 MiB / 128 MiB"
for f in $OUT/logs/*.txt; do printf "%-22s" $(basename $f .txt)
  awk '($1==8||$1==32||$1==32768||$1==524288||$1==8388608||$1==134217728) && NF>8 {printf " %s", $6}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
