#!/usr/bin/env bash
# Send/recv and alltoall on 2 GPUs with NCCL's P2P LL threshold at its default (16 KiB per
# channel), off (0) and at 4 KiB: nccl-tests 2.19.6 against the machine's NCCL 2.28.9 wheel.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
{ date -u; uname -r; nvidia-smi; nvidia-smi topo -m; nvcc --version; lscpu; } > $OUT/machine.txt 2>&1
P=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
mkdir -p /tmp/nccl/lib /tmp/nccl/include; ln -sf $P/include/* /tmp/nccl/include/
for f in $P/lib/libnccl*; do ln -sf $f /tmp/nccl/lib/; done; ln -sf /tmp/nccl/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
NT=third_party_fetch/nccl-tests; GEN="-gencode=arch=compute_90,code=sm_90"
make -C $NT/src -j16 MPI=0 CUDA_HOME=$CUDA_HOME NCCL_HOME=/tmp/nccl BUILDDIR=/tmp/nt NVCC_GENCODE="$GEN" /tmp/nt/sendrecv_perf /tmp/nt/alltoall_perf > $OUT/build.log 2>&1
echo "build rc $? t $(el)"; ls /tmp/nt
mkdir -p $OUT/logs
for rep in 1 2 3; do
  for th in default 0 4096; do
    for op in sendrecv alltoall; do
      f=$OUT/logs/${op}_ll${th}_r$rep.txt
      if [ $th = default ]; then E=""; else E="NCCL_P2P_LL_THRESHOLD=$th"; fi
      env $E LD_LIBRARY_PATH=/tmp/nccl/lib NCCL_DEBUG=VERSION timeout 60 taskset -c 0-7 /tmp/nt/${op}_perf -b 8 -e 8M -f 2 -g 1 -t 2 -c 0 -w 20 -n 200 > $f 2>&1
      echo "$op ll=$th r$rep rc $? t $(el)"
    done
  done
done
echo "== medians (us, out-of-place time) by size"
python3 - "$OUT/logs" <<'PY'
import sys, os, re, statistics, collections
d = sys.argv[1]; t = collections.defaultdict(list)
for f in sorted(os.listdir(d)):
    m = re.match(r'(\w+)_ll(\w+)_r\d+\.txt', f)
    for line in open(os.path.join(d, f)):
        p = line.split()
        if len(p) > 8 and p[0].isdigit():
            t[(m.group(1), m.group(2), int(p[0]))].append(float(p[5]))
sizes = sorted({k[2] for k in t})
for op in ('sendrecv', 'alltoall'):
    print(op, 'size default ll0 ll4096')
    for s in sizes:
        if s < 4096: continue
        print(op, s, *[f"{statistics.median(t[(op, th, s)]):.1f}" if t[(op, th, s)] else '-' for th in ('default', '0', '4096')])
PY
cd $OUT && tar czf logs.tgz logs && rm -rf logs
echo done at $(el)
