#!/usr/bin/env bash
# Per-communicator host cost of nccl-tests -g N (one thread drives N GPUs) against -t N
# (one thread per GPU), for NCCL 2.20.5 and 2.18.5 built here from their tags (strongstream.cc
# patched for CUDA 13's cudaStreamGetCaptureInfo / cudaStreamUpdateCaptureDependencies
# signatures, nothing else) and the machine's NCCL 2.28.9 wheel. NVLink multicast stays off.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
D=.device/ncclpub; NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; nvcc --version; lscpu; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/n2289/lib /tmp/n2289/include; ln -sf $P/include/* /tmp/n2289/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/n2289/lib/; done; ln -sf /tmp/n2289/lib/libnccl.so.2 /tmp/n2289/lib/libnccl.so
export D GEN
setsid bash -c 'taskset -c 16-63 make -C $D/nccl-2.18.5 -j48 src.build BUILDDIR=/tmp/n2185 NVCC_GENCODE="$GEN" > /tmp/b2185.log 2>&1; echo "rc $?" >> /tmp/b2185.log; touch /tmp/b2185.done' &
B218=$!
( taskset -c 0-15 make -C $D/nccl-2.20.5 -j16 src.build BUILDDIR=/tmp/n2205 NVCC_GENCODE="$GEN" ONLY_FUNCS="AllReduce Sum f32 * *" > /tmp/b2205.log 2>&1; echo "rc $? t $(el)" >> /tmp/b2205.log ) & B220=$!
ntb() { taskset -c 0-15 make -C $NT/src -j8 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=$1 BUILDDIR=/tmp/nt-$2 NVCC_GENCODE="$GEN" /tmp/nt-$2/all_reduce_perf > /tmp/nt-$2.log 2>&1; echo "rc $? t $(el)" >> /tmp/nt-$2.log; }
ntb /tmp/n2289 2289 & N289=$!
wait $B220; echo "2.20.5 build: $(tail -1 /tmp/b2205.log)"; ls /tmp/n2205/lib
ntb /tmp/n2205 2205; echo "nt 2205: $(tail -1 /tmp/nt-2205.log)"; wait $N289; echo "nt 2289: $(tail -1 /tmp/nt-2289.log)"
run() { # $1 phase, $2 version tag, $3 label, rest: args
  local ph=$1 v=$2 lab=$3; shift 3
  [ $(el) -gt 385 ] && { echo "skip $ph $v $lab"; return; }
  LD_LIBRARY_PATH=/tmp/n$v/lib NCCL_DEBUG=VERSION timeout 15 taskset -c 0-7 /tmp/nt-$v/all_reduce_perf -b 8 -e 1M -f 2 -c 0 -w 100 -n 1000 "$@" > $OUT/$ph/${v}_${lab}.txt 2>&1
  echo "$ph $v $lab rc $? t $(el) $(grep -o 'NCCL version [^ ]*' $OUT/$ph/${v}_${lab}.txt)"; grep -E "^ +(8|2048|65536|1048576) " $OUT/$ph/${v}_${lab}.txt | awk '{printf "  %s:%s/%s", $1, $6, $10} END {print ""}'
}
# phase A: while 2.18.5 builds on cores 16-63 (tests pinned to 0-7)
mkdir -p $OUT/A $OUT/B
for v in 2205 2289; do for c in "g4 -g 4 -t 1" "t4 -g 1 -t 4" "g2 -g 2 -t 1" "t2 -g 1 -t 2"; do set -- $c; l=$1; shift; run A $v $l "$@"; done; done
while [ ! -e /tmp/b2185.done ] && [ $(el) -lt 300 ]; do sleep 3; done
V218=0
if [ -e /tmp/b2185.done ] && grep -q "^rc 0" /tmp/b2185.log; then echo "2.18.5 built at $(el)"; ntb /tmp/n2185 2185; echo "nt 2185: $(tail -1 /tmp/nt-2185.log)"; V218=1
else kill -- -$B218 2>/dev/null; echo "2.18.5 build not finished/failed at $(el) s"; grep -m3 error /tmp/b2185.log; sleep 1; fi
cp /tmp/b2205.log /tmp/b2185.log $OUT/ 2>/dev/null
# phase B: quiet machine
VS="2205 2289"; [ $V218 = 1 ] && VS="2185 2205 2289"
for rep in 1 2; do for v in $VS; do for c in "g4 -g 4 -t 1" "t4 -g 1 -t 4" "g2 -g 2 -t 1" "t2 -g 1 -t 2"; do set -- $c; l=$1; shift; run B $v ${l}_r$rep "$@"; done; done; done
cd $OUT && tar czf logs.tgz A B && rm -rf A B
echo done at $(el)
