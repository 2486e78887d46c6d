#!/usr/bin/env bash
# Out-of-sample check of the stated uncertainty of collective predictions on 4 x H200: a fresh
# session of every op through each transport NCCL can take inside the host, with the predictions
# and their one-standard-deviation uncertainty written before the run (README). One HGX H200 host,
# nccl-tests 2.19.6 against the machine's NCCL 2.28.9 wheel, one process, a thread per GPU
# (-g 1 -t N), -c 0 -w 5 -n 20, CPUs 0-15 as the earlier sessions, NVLS off:
#   p2p_<op>:   4 GPUs, NCCL's own transport (P2P over NVLink), 64 KiB to 256 MiB by factors of 4;
#   shm_<op>:   4 GPUs, NCCL_P2P_DISABLE=1 (through host memory), the same sizes;
#   net_<op>:   4 GPUs, NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo (NCCL's socket
#               transport over the loopback interface), 64 KiB to 32 MiB by factors of 8;
#   local_<op>: 1 GPU (a copy out of place), 64 KiB to 256 MiB by factors of 4.
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
OPS=(all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv)
for b in "${OPS[@]}"; do  # one binary at a time: they share common objects in BUILDDIR
  make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/${b}_perf >> $OUT/build.log 2>&1
done
echo "build t $(el)"; ls /tmp/nt/*_perf | wc -l
mkdir -p $OUT/logs
ONLY="${*:-}"
wanted() { [ -z "$ONLY" ] && return 0; for w in $ONLY; do case $1 in *$w*) return 0;; esac; done; return 1; }
run() {  # log-name gpus binary env nccl-tests-args
  local name=$1 gpus=$2 bin=$3 envs=$4; shift 4
  wanted $name || return 0
  if [ $(el) -gt ${LIMIT:-480} ]; then echo "$name skipped (time)"; return; fi
  local n=$(echo $gpus | tr ',' '\n' | wc -l)
  env CUDA_VISIBLE_DEVICES=$gpus LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT $envs \
    timeout 90 taskset -c 0-15 /tmp/nt/${bin}_perf -g 1 -t $n -c 0 -w 5 -n 20 "$@" > $OUT/logs/$name.txt 2>&1
  echo "$name rc $? t $(el)"
}
WIDE="-b 64K -e 256M -f 4"; NET="-b 64K -e 32M -f 8"
NETENV="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo"
for op in "${OPS[@]}"; do run p2p_$op 0,1,2,3 $op "" $WIDE; done
for op in "${OPS[@]}"; do run shm_$op 0,1,2,3 $op "NCCL_P2P_DISABLE=1" $WIDE; done
for op in "${OPS[@]}"; do run net_$op 0,1,2,3 $op "$NETENV" $NET; done
for op in "${OPS[@]}"; do run local_$op 0 $op "" $WIDE; done
echo "== time (us) out of place"
for f in $OUT/logs/*.txt; do printf "%-22s" $(basename $f .txt)
  awk '$1 ~ /^[0-9]+$/ && NF>=12 && $1 >= 65536 {printf " %s", $6}' $f; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
