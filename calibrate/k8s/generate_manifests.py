#!/usr/bin/env python3
"""Writes the calibration manifests of this directory from the hardware catalog, one set per EFA
instance type, so that the EFA device count, hugepages, /dev/shm and memory follow the catalog.

Usage: generate_manifests.py [--check] [--catalog DIR] [--out DIR]
  --check   write nothing; exit 1 naming each manifest that differs from what would be written
            (a CTest keeps the committed manifests in step with the catalog)

Per instance type (hardware/catalog/instances.json, its system's GPU count, its GPU's compute
capability):
  vpc.amazonaws.com/efa   network.nics: the EFA devices of the instance (p4d 4, p5 32). The pod of
                          one GPU takes nics / gpus of them (written only where that is whole).
  /dev/shm                a memory-backed emptyDir (medium Memory) sized to half the instance's
                          memory: the size the kernel gives a tmpfs by default (Linux
                          Documentation/filesystems/tmpfs.rst), so the pod's /dev/shm is what the
                          node's own is; it counts against the container's memory limit.
  memory                  request = limit = three quarters of the instance's memory (the rest is
                          left to the kubelet, the system and the EFA driver's hugepages).
  hugepages-2Mi           5120Mi per node, as AWS's EKS nccl-tests MPIJob asks (cited below); the
                          pod of one GPU asks 1/gpus of it. libfabric's EFA provider backs its
                          bounce buffers with 2 MiB huge pages when it can have them.
No pod sets hostIPC: the ranks of one node run in one pod, which shares its IPC namespace
already, and the Pod Security "baseline" policy forbids host namespaces.
Results go to the PersistentVolumeClaim clustersim-results (calibration-results-pvc.yaml,
ReadWriteMany: FSx for Lustre or EFS), and, when RESULTS_S3_URI is set in the pod, are also copied
there with `aws s3 cp --recursive` (the node's or the service account's IAM role).
OpenMPI settings of the MPIJobs follow AWS's EKS nccl-tests sample (aws-samples/
awsome-distributed-training, micro-benchmarks/nccl-tests/kubernetes/nccl-tests.yaml at commit
7217859f67bc693c52ff175ccc6082c41dbd7a1b): --bind-to none, --tag-output, -x FI_PROVIDER=efa,
-x FI_EFA_FORK_SAFE=1, -x NCCL_BUFFSIZE=8388608, -x NCCL_P2P_NET_CHUNKSIZE=524288, --mca pml ^ucx,
--mca btl tcp,self, --mca btl_tcp_if_exclude lo,docker0,veth_def_agent. Its NCCL_TUNER_PLUGIN is
left out: the path is its image's, and the calibration measures NCCL's own tuner.
Standard library only.
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
INSTANCES = ["p4d.24xlarge", "p5.48xlarge"]
IMAGE = "REPLACE-WITH-YOUR-REGISTRY/clustersim-calibrate:latest"
HUGEPAGES_MI_PER_NODE = 5120
PVC = "clustersim-results"
SAMPLE = ("aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/kubernetes/nccl-tests.yaml "
          "(commit 7217859f)")


class CatalogError(Exception):
    pass


def gib_of(text, where):
    m = re.fullmatch(r"\s*([0-9.]+)\s*(GiB|TiB)\s*", text or "")
    if not m:
        raise CatalogError("%s: expected a size in GiB or TiB, got %r" % (where, text))
    return float(m.group(1)) * (1024 if m.group(2) == "TiB" else 1)


def load_instance(catalog, name):
    def read(f):
        path = os.path.join(catalog, f)
        with open(path) as fh:
            return path, json.load(fh)
    ipath, instances = read("instances.json")
    spath, systems = read("systems.json")
    gpath, gpus = read("gpus.json")
    inst = next((i for i in instances["instances"] if i.get("name") == name), None)
    if inst is None:
        raise CatalogError("%s: /instances: no instance %s" % (ipath, name))
    system = next((s for s in systems["systems"] if s.get("name") == inst.get("system")), None)
    if system is None:
        raise CatalogError("%s: /systems: no system %s (instance %s)" % (spath, inst.get("system"), name))
    gpu_name = inst.get("gpu") or system.get("gpu")
    gpu = next((g for g in gpus["gpus"] if g.get("name") == gpu_name), None)
    if gpu is None:
        raise CatalogError("%s: /gpus: no GPU %s (instance %s)" % (gpath, gpu_name, name))
    net = inst.get("network") or {}
    if not str(net.get("fabric", "")).startswith("efa"):
        raise CatalogError("%s: instance %s: /network/fabric is %r, expected an EFA fabric" % (ipath, name, net.get("fabric")))
    memory = gib_of((inst.get("memory") or {}).get("value"), "%s: instance %s: /memory/value" % (ipath, name))
    return {
        "name": name,
        "description": inst.get("description", ""),
        "gpus": int(system["gpu_count"]),
        "gpu": gpu_name,
        "cuda_arch": str(gpu["compute_capability"]).replace(".", ""),
        "efa": int(net["nics"]),
        "memory_gib": memory,
        "shm_gib": int(memory // 2),
        "pod_memory_gib": int(memory * 3 // 4),
    }


def short(inst):
    return inst["name"].split(".")[0]


# ---- YAML pieces (written as text, so that the comments stay) ----

COMMON_ENV = [
    ("NCCL_DEBUG", "INFO"),
    ("FI_PROVIDER", "efa"),
    ("FI_EFA_USE_DEVICE_RDMA", "1"),
    ("FI_EFA_FORK_SAFE", "1"),
    ("NCCL_SOCKET_IFNAME", "^lo,docker,veth"),
    # NVLink SHARP (multicast) stays off; drop these three to let NCCL use it on p5.
    ("NCCL_NVLS_ENABLE", "0"),
    ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
    ("NVSHMEM_DISABLE_NVLS", "1"),
]
S3_ENV = [("RESULTS_S3_URI", "")]


def q(v):
    return json.dumps(v) if (v == "" or re.search(r"[:#^,*&!|>'\"%@`{}\[\]]", v) or v.isdigit()) else v


def env_block(pad, pairs):
    out = [pad + "env:"]
    for k, v in pairs:
        out.append("%s  - name: %s" % (pad, k))
        out.append("%s    value: %s" % (pad, q(v)))
    return out


def resources_block(pad, gpus, efa, hugepages_mi, memory_gib):
    out = [pad + "resources:"]
    for part in ("limits", "requests"):
        out += ["%s  %s:" % (pad, part),
                '%s    nvidia.com/gpu: "%d"' % (pad, gpus),
                '%s    vpc.amazonaws.com/efa: "%d"' % (pad, efa),
                "%s    hugepages-2Mi: %dMi" % (pad, hugepages_mi),
                "%s    memory: %dGi" % (pad, memory_gib)]
    return out


def gpu_pod_spec(pad, inst, gpus, efa, hugepages_mi, memory_gib, shm_gib, container, command=None, args=None,
                 extra_env=(), labels=None, affinity=None, restart="Never", working_dir=None):
    p = pad
    out = []
    if restart:
        out.append(p + "restartPolicy: " + restart)
    out += [p + "nodeSelector:", p + "  node.kubernetes.io/instance-type: " + inst["name"],
            p + "tolerations:"]
    for key in ("nvidia.com/gpu", "vpc.amazonaws.com/efa"):
        out += [p + "  - key: " + key, p + "    operator: Exists", p + "    effect: NoSchedule"]
    if affinity:
        out += affinity
    out += [p + "containers:", p + "  - name: " + container, p + "    image: " + IMAGE,
            p + "    imagePullPolicy: Always"]
    c = p + "    "
    if command:
        out.append(c + "command: " + json.dumps(command))
    if args:
        out.append(c + "args:")
        out.append(c + "  - |")
        out += [c + "    " + line if line else "" for line in args]
    if working_dir:
        out.append(c + "workingDir: " + working_dir)
    out += env_block(c, list(extra_env) + COMMON_ENV + S3_ENV)
    out += resources_block(c, gpus, efa, hugepages_mi, memory_gib)
    out += [c + "securityContext:", c + "  capabilities:", c + '    add: ["IPC_LOCK"]',
            c + "volumeMounts:", c + "  - name: dshm", c + "    mountPath: /dev/shm",
            c + "  - name: results", c + "    mountPath: /results"]
    out += volumes_block(p, shm_gib)
    return out


def volumes_block(p, shm_gib):
    out = [p + "volumes:"]
    if shm_gib:
        out += [p + "  - name: dshm", p + "    emptyDir:", p + "      medium: Memory",
                p + "      sizeLimit: %dGi" % shm_gib]
    out += [p + "  - name: results", p + "    persistentVolumeClaim:", p + "      claimName: " + PVC]
    return out


UPLOAD = ['if [ -n "${RESULTS_S3_URI}" ]; then aws s3 cp --recursive /results "${RESULTS_S3_URI}"; fi']


def header(lines, inst):
    out = ["# GENERATED by calibrate/k8s/generate_manifests.py from hardware/catalog (instances.json:",
           "# %s, %s); edit the generator, not this file." % (inst["name"], inst["description"])]
    return out + ["#" + (" " + l if l else "") for l in lines]


def jobset(inst):
    h = header([
        "Node calibration, one pod per node (JobSet): the pod takes every GPU and EFA device of its node",
        "and runs calibrate/run_calibration.sh (collectives over NVLink, point to point, GEMM, attention,",
        "HBM, host transfers, CPU Adam) with one process per GPU, next to nccl-tests. Raise `replicas` to",
        "calibrate several nodes at once, each on its own. Results: the PersistentVolumeClaim %s" % PVC,
        "(calibration-results-pvc.yaml), under /results/<pod name>; also to RESULTS_S3_URI when set.",
    ], inst)
    body = [
        "apiVersion: jobset.x-k8s.io/v1alpha2",
        "kind: JobSet",
        "metadata:",
        "  name: clustersim-calibration-%s" % short(inst),
        "  labels:",
        "    app.kubernetes.io/name: clustersim-calibration",
        "spec:",
        "  failurePolicy:",
        "    maxRestarts: 0",
        "  replicatedJobs:",
        "    - name: node",
        "      replicas: 1",
        "      template:",
        "        spec:",
        "          parallelism: 1",
        "          completions: 1",
        "          backoffLimit: 0",
        "          template:",
        "            metadata:",
        "              labels:",
        "                app.kubernetes.io/name: clustersim-calibration",
        "            spec:",
    ]
    args = ['out="/results/$(hostname)"',
            'calibrate/run_calibration.sh "${out}" /opt/nccl-tests'] + UPLOAD
    body += gpu_pod_spec("              ", inst, inst["gpus"], inst["efa"], HUGEPAGES_MI_PER_NODE,
                         inst["pod_memory_gib"], inst["shm_gib"], "calibrate", ["/bin/bash", "-c"], args,
                         extra_env=[("CLUSTERSIM_CALIBRATE_BIN", "/opt/clustersim/build-harness/clustersim-calibrate"),
                                    ("NCCL_TESTS_BUILD", "/opt/nccl-tests/build"),
                                    ("CALIBRATION_BUDGET_S", "900")],
                         working_dir="/opt/clustersim")
    return "\n".join(h + body) + "\n"


def mpirun(ranks, per_node, passed):
    xs = " ".join("-x " + v for v in passed)
    return ['MPI="mpirun --allow-run-as-root --tag-output -np %d -N %d --bind-to none --map-by slot \\' % (ranks, per_node),
            "  --mca pml ^ucx --mca btl tcp,self --mca btl_tcp_if_exclude lo,docker0,veth_def_agent \\",
            "  -x PATH -x LD_LIBRARY_PATH -x NCCL_BUFFSIZE=8388608 -x NCCL_P2P_NET_CHUNKSIZE=524288 \\",
            '  %s"' % xs]


PASSED = ["NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "FI_EFA_FORK_SAFE",
          "NCCL_SOCKET_IFNAME", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"]


def mpijob(inst, pod_per_gpu=False):
    gpus = inst["gpus"]
    if pod_per_gpu:
        workers, slots = 4, 1
        efa = inst["efa"] // gpus
        hp = HUGEPAGES_MI_PER_NODE // gpus
        mem = inst["pod_memory_gib"] // gpus
        shm = inst["shm_gib"] // gpus
        tag = "4pods-1gpu"
        name = "clustersim-calibration-pod-per-gpu-%s" % short(inst)
        h = header([
            "The placement question: four pods of one GPU and %d EFA device(s) each, packed on one node" % efa,
            "(the pod affinity). Separate pods have separate IPC namespaces: NCCL cannot use P2P or SHM",
            "between them and goes out through the NIC (NET/libfabric, GPUDirect RDMA). This measures that,",
            "for clustersim's placement model. Results: PersistentVolumeClaim %s (ReadWriteMany)." % PVC,
        ], inst)
        run = ["$MPI /opt/clustersim/build-harness/clustersim-calibrate env collectives p2p --launcher mpi \\",
               "  -b 8 -e 1G -f 2 -n 20 -w 5 --p2p-modes write --test-timeout 120 --deadline 900 \\",
               "  -o /results/results-%s-%s.json" % (tag, short(inst)),
               "$MPI /opt/nccl-tests/build-mpi/all_reduce_perf -b 8 -e 1G -f 2 -g 1 -w 5 -n 20 -c 1 \\",
               "  | tee /results/nccl-tests-%s-%s-all_reduce.log" % (tag, short(inst))]
    else:
        workers, slots = 2, gpus
        efa, hp, mem, shm = inst["efa"], HUGEPAGES_MI_PER_NODE, inst["pod_memory_gib"], inst["shm_gib"]
        tag = "2x%dgpu" % gpus
        name = "clustersim-calibration-mpi-%s" % short(inst)
        h = header([
            "Collectives across nodes (Kubeflow MPI Operator, MPIJob v2beta1) over EFA (NCCL -> aws-ofi-nccl",
            "-> libfabric), one MPI rank per GPU, measured by clustersim-calibrate --launcher mpi next to",
            "nccl-tests. One process lives through every sub-run, so variables NCCL reads once per process",
            "(NCCL_MIN/MAX_NCHANNELS, NCCL_P2P_*) cannot change between sub-runs: run one MPIJob per setting",
            "(add -x VAR=value to mpirun). Rank 0 writes the results to the PersistentVolumeClaim %s" % PVC,
            "(ReadWriteMany, mounted by the launcher and the workers); also to RESULTS_S3_URI when set.",
            "mpirun's OpenMPI and NCCL settings are those of AWS's EKS sample, %s." % SAMPLE,
        ], inst)
        run = ["$MPI /opt/clustersim/build-harness/clustersim-calibrate env collectives --launcher mpi \\",
               "  -b 8 -e 8G -f 2 -n 20 -w 5 --algos ring,tree --protos ll,ll128,simple --forced-maxbytes 1G \\",
               "  --test-timeout 120 --deadline 1500 -o /results/results-%s-%s-mpi.json" % (tag, short(inst)),
               "for op in all_reduce all_gather reduce_scatter alltoall; do",
               "  $MPI /opt/nccl-tests/build-mpi/${op}_perf -b 8 -e 8G -f 2 -g 1 -w 5 -n 20 -c 1 \\",
               "    | tee /results/nccl-tests-%s-%s-${op}.log" % (tag, short(inst)),
               "done"]
    ranks = workers * slots
    launcher_args = ["set -x"] + mpirun(ranks, slots, PASSED) + run + UPLOAD
    body = [
        "apiVersion: kubeflow.org/v2beta1",
        "kind: MPIJob",
        "metadata:",
        "  name: " + name,
        "  labels:",
        "    app.kubernetes.io/name: clustersim-calibration",
        "spec:",
        "  slotsPerWorker: %d" % slots,
        "  runPolicy:",
        "    cleanPodPolicy: Running",
        "    backoffLimit: 0",
        "  mpiImplementation: OpenMPI",
        "  mpiReplicaSpecs:",
        "    Launcher:",
        "      replicas: 1",
        "      template:",
        "        spec:",
        "          restartPolicy: Never",
        "          containers:",
        "            - name: launcher",
        "              image: " + IMAGE,
        "              imagePullPolicy: Always",
        '              command: ["/bin/bash", "-c"]',
        "              args:",
        "                - |",
    ] + ["                  " + l for l in launcher_args]
    body += env_block("              ", [("NCCL_DEBUG_SUBSYS", "INIT,ENV,NET,TUNING")] + COMMON_ENV + S3_ENV)
    body += ["              resources:", "                requests:", '                  cpu: "2"',
             "                  memory: 4Gi",
             "              volumeMounts:", "                - name: results", "                  mountPath: /results"]
    body += volumes_block("          ", 0)
    body += ["    Worker:", "      replicas: %d" % workers, "      template:"]
    affinity = None
    if pod_per_gpu:
        body += ["        metadata:", "          labels:", "            clustersim-calibration/placement: pod-per-gpu"]
        affinity = ["          affinity:", "            podAffinity:",
                    "              requiredDuringSchedulingIgnoredDuringExecution:",
                    "                - labelSelector:", "                    matchLabels:",
                    "                      clustersim-calibration/placement: pod-per-gpu",
                    "                  topologyKey: kubernetes.io/hostname"]
    body += ["        spec:"]
    body += gpu_pod_spec("          ", inst, 1 if pod_per_gpu else gpus, efa, hp, mem, shm, "worker",
                         restart=None, affinity=affinity)
    return "\n".join(h + body) + "\n"


def pytorchjob(inst):
    gpus = inst["gpus"]
    h = header([
        "Real training steps across two nodes (Kubeflow training-operator PyTorchJob v1): the FSDP2 probe",
        "calibrate/training_probe/fsdp_step.py under torchrun, one process per GPU, to set beside",
        "`clustersim simulate` of the same layout. nprocPerNode makes the operator hand torchrun its",
        "rendezvous (PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT).",
        "Needs torch and transformers in the image (the AWS Deep Learning Container base has them).",
        "Rank 0 writes to the PersistentVolumeClaim %s; also to RESULTS_S3_URI when set." % PVC,
    ], inst)
    args = ["torchrun calibrate/training_probe/fsdp_step.py --preset models/presets/llama3-8b.json \\",
            "  --seq-len 4096 --micro-batch 1 --steps 8 --warmup 3 \\",
            "  --out /results/fsdp-step-2x%dgpu-%s.json" % (gpus, short(inst)),
            'if [ "${PET_NODE_RANK:-0}" = "0" ]; then'] + ["  " + u for u in UPLOAD] + ["fi"]
    body = [
        "apiVersion: kubeflow.org/v1",
        "kind: PyTorchJob",
        "metadata:",
        "  name: clustersim-training-probe-%s" % short(inst),
        "  labels:",
        "    app.kubernetes.io/name: clustersim-calibration",
        "spec:",
        '  nprocPerNode: "%d"' % gpus,
        "  runPolicy:",
        "    cleanPodPolicy: Running",
        "    backoffLimit: 0",
        "  pytorchReplicaSpecs:",
    ]
    for role, replicas in (("Master", 1), ("Worker", 1)):
        body += ["    %s:" % role, "      replicas: %d" % replicas, "      restartPolicy: Never",
                 "      template:", "        spec:"]
        # The training-operator requires the container to be named "pytorch".
        body += gpu_pod_spec("          ", inst, gpus, inst["efa"], HUGEPAGES_MI_PER_NODE, inst["pod_memory_gib"],
                             inst["shm_gib"], "pytorch", ["/bin/bash", "-c"], args, restart=None,
                             working_dir="/opt/clustersim")
    return "\n".join(h + body) + "\n"


def pvc():
    return "\n".join([
        "# GENERATED by calibrate/k8s/generate_manifests.py; edit the generator, not this file.",
        "# Where every calibration manifest writes its results: a ReadWriteMany claim (the MPIJob's",
        "# launcher and workers and the PyTorchJob's pods mount it at once), e.g. FSx for Lustre or EFS",
        "# through its CSI driver: set storageClassName to the cluster's class. Apply it before the jobs;",
        "# copy results out from any pod that mounts it.",
        "apiVersion: v1",
        "kind: PersistentVolumeClaim",
        "metadata:",
        "  name: " + PVC,
        "  labels:",
        "    app.kubernetes.io/name: clustersim-calibration",
        "spec:",
        "  accessModes:",
        "    - ReadWriteMany",
        "  storageClassName: REPLACE-WITH-A-READWRITEMANY-CLASS",
        "  resources:",
        "    requests:",
        "      storage: 100Gi",
    ]) + "\n"


def manifests(catalog):
    out = {"calibration-results-pvc.yaml": pvc()}
    for name in INSTANCES:
        inst = load_instance(catalog, name)
        out["calibration-jobset-%s.yaml" % name] = jobset(inst)
        out["calibration-mpijob-%s.yaml" % name] = mpijob(inst)
        out["calibration-pytorchjob-%s.yaml" % name] = pytorchjob(inst)
        if inst["efa"] % inst["gpus"] == 0:
            out["calibration-mpijob-pod-per-gpu-%s.yaml" % name] = mpijob(inst, pod_per_gpu=True)
    return out


def main(argv):
    check = "--check" in argv
    catalog = os.path.join(REPO, "hardware", "catalog")
    out_dir = HERE
    i = 0
    while i < len(argv):
        if argv[i] == "--catalog" and i + 1 < len(argv):
            catalog = argv[i + 1]
            i += 1
        elif argv[i] == "--out" and i + 1 < len(argv):
            out_dir = argv[i + 1]
            i += 1
        elif argv[i] != "--check":
            print("usage: generate_manifests.py [--check] [--catalog DIR] [--out DIR]", file=sys.stderr)
            return 2
        i += 1
    try:
        files = manifests(catalog)
    except (OSError, ValueError, KeyError, CatalogError) as e:
        print("generate_manifests.py: %s" % e, file=sys.stderr)
        return 2
    stale = []
    for name, text in sorted(files.items()):
        path = os.path.join(out_dir, name)
        old = open(path).read() if os.path.exists(path) else None
        if check:
            if old != text:
                stale.append(name)
            continue
        if old != text:
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, path)
            print("wrote " + name)
    if check:
        for name in stale:
            print("%s differs from what generate_manifests.py writes from the catalog: run it" % name)
        if not stale:
            print("%d manifests match the catalog" % len(files))
        return 1 if stale else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
