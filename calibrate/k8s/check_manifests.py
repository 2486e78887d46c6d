#!/usr/bin/env python3
"""Checks the calibration manifests in this directory: they parse, and every pod that takes GPUs
carries what the calibration needs (the seed run's pod spec, and this project's rules).

Usage: check_manifests.py [DIR]   (exit 0 when all hold; else one line per problem, exit 1)

Per GPU pod: nvidia.com/gpu, vpc.amazonaws.com/efa and hugepages-2Mi in both limits and requests,
equal; no hostIPC: true (the Pod Security "baseline" policy forbids it, and the ranks of one pod
share its IPC namespace anyway); /dev/shm mounted from an emptyDir of medium Memory with a
sizeLimit; /results from the PersistentVolumeClaim clustersim-results, not an emptyDir; IPC_LOCK
added; tolerations for the GPU and EFA taints; an instance-type node selector; and in the
environment FI_PROVIDER=efa, FI_EFA_USE_DEVICE_RDMA=1, NCCL_DEBUG=INFO and NVLink multicast off
(NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1). An MPIJob's
launcher must run clustersim-calibrate with --launcher mpi, pass those variables to the ranks
(mpirun -x) and use the OpenMPI settings of AWS's EFA sample (--mca pml ^ucx, --mca btl tcp,self).
A PyTorchJob runs torchrun in containers named pytorch. Schema validation is validate_manifests.py;
that the manifests follow the catalog, generate_manifests.py --check. Needs python3-yaml.
"""

import glob
import os
import sys

try:
    import yaml
except ImportError:
    print("check_manifests.py needs PyYAML (Debian: python3-yaml)")
    sys.exit(1)

REQUIRED_ENV = {
    "FI_PROVIDER": "efa",
    "FI_EFA_USE_DEVICE_RDMA": "1",
    "NCCL_DEBUG": "INFO",
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
PASSED_TO_RANKS = ["FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "NCCL_DEBUG", "NCCL_NVLS_ENABLE",
                   "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"]


def env_of(container):
    return {e["name"]: str(e.get("value")) for e in container.get("env", []) if "name" in e}


def check_gpu_pod(where, spec, problems):
    containers = spec.get("containers", [])
    gpu = [c for c in containers if "nvidia.com/gpu" in (c.get("resources", {}).get("limits") or {})]
    if not gpu:
        problems.append("%s: no container asks for nvidia.com/gpu" % where)
        return
    if spec.get("hostIPC") is True:
        problems.append("%s: hostIPC: true is refused by the Pod Security baseline policy and not needed" % where)
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    if "node.kubernetes.io/instance-type" not in (spec.get("nodeSelector") or {}):
        problems.append("%s: no node.kubernetes.io/instance-type node selector" % where)
    keys = {t.get("key") for t in spec.get("tolerations", [])}
    for k in ("nvidia.com/gpu", "vpc.amazonaws.com/efa"):
        if k not in keys:
            problems.append("%s: no toleration for %s" % (where, k))
    for c in gpu:
        w = "%s/containers/%s" % (where, c.get("name"))
        res = c.get("resources", {})
        limits, requests = res.get("limits") or {}, res.get("requests") or {}
        for r in ("nvidia.com/gpu", "vpc.amazonaws.com/efa", "hugepages-2Mi"):
            if r not in limits or r not in requests:
                problems.append("%s: %s missing from limits or requests" % (w, r))
            elif str(limits[r]) != str(requests[r]):
                problems.append("%s: %s limits %s != requests %s" % (w, r, limits[r], requests[r]))
            elif r != "hugepages-2Mi" and int(str(limits[r])) < 1:
                problems.append("%s: %s must be at least 1" % (w, r))
        caps = ((c.get("securityContext") or {}).get("capabilities") or {}).get("add") or []
        if "IPC_LOCK" not in caps:
            problems.append("%s: IPC_LOCK not added" % w)
        shm = [m for m in c.get("volumeMounts", []) if m.get("mountPath") == "/dev/shm"]
        if not shm:
            problems.append("%s: /dev/shm not mounted" % w)
        else:
            vol = volumes.get(shm[0].get("name"), {})
            if (vol.get("emptyDir") or {}).get("medium") != "Memory":
                problems.append("%s: /dev/shm is not an emptyDir of medium Memory" % w)
            elif not (vol.get("emptyDir") or {}).get("sizeLimit"):
                problems.append("%s: the /dev/shm emptyDir has no sizeLimit" % w)
        check_results(w, c, volumes, problems)
        env = env_of(c)
        for k, v in REQUIRED_ENV.items():
            if env.get(k) != v:
                problems.append("%s: env %s=%s expected, got %s" % (w, k, v, env.get(k)))


def check_results(where, container, volumes, problems):
    res = [m for m in container.get("volumeMounts", []) if m.get("mountPath") == "/results"]
    if not res:
        problems.append("%s: /results not mounted" % where)
        return
    claim = (volumes.get(res[0].get("name"), {}).get("persistentVolumeClaim") or {}).get("claimName")
    if claim != "clustersim-results":
        problems.append("%s: /results is not the PersistentVolumeClaim clustersim-results" % where)


def pod_spec(template, where, problems):
    spec = (template or {}).get("spec")
    if not isinstance(spec, dict):
        problems.append("%s: no pod spec" % where)
        return {}
    return spec


def check_jobset(path, doc, problems):
    if doc.get("apiVersion") != "jobset.x-k8s.io/v1alpha2":
        problems.append("%s: JobSet apiVersion %s, expected jobset.x-k8s.io/v1alpha2" % (path, doc.get("apiVersion")))
    jobs = (doc.get("spec") or {}).get("replicatedJobs") or []
    if not jobs:
        problems.append("%s: no replicatedJobs" % path)
    for j in jobs:
        where = "%s: replicatedJobs/%s" % (path, j.get("name"))
        job = (j.get("template") or {}).get("spec") or {}
        spec = pod_spec(job.get("template"), where, problems)
        if spec:
            check_gpu_pod(where, spec, problems)
            for c in spec.get("containers", []):
                text = " ".join(str(x) for x in (c.get("command") or []) + (c.get("args") or []))
                if "run_calibration.sh" not in text and "clustersim-calibrate" not in text:
                    problems.append("%s: container %s runs neither run_calibration.sh nor clustersim-calibrate" % (
                        where, c.get("name")))


def check_mpijob(path, doc, problems):
    if doc.get("apiVersion") != "kubeflow.org/v2beta1":
        problems.append("%s: MPIJob apiVersion %s, expected kubeflow.org/v2beta1" % (path, doc.get("apiVersion")))
    specs = (doc.get("spec") or {}).get("mpiReplicaSpecs") or {}
    if "Launcher" not in specs or "Worker" not in specs:
        problems.append("%s: mpiReplicaSpecs needs Launcher and Worker" % path)
        return
    worker = pod_spec(specs["Worker"].get("template"), path + ": Worker", problems)
    if worker:
        check_gpu_pod(path + ": Worker", worker, problems)
    launcher = pod_spec(specs["Launcher"].get("template"), path + ": Launcher", problems)
    for c in launcher.get("containers", []):
        text = " ".join(str(x) for x in (c.get("command") or []) + (c.get("args") or []))
        if "clustersim-calibrate" not in text or "--launcher mpi" not in text:
            problems.append("%s: the launcher must run clustersim-calibrate --launcher mpi" % path)
        if "mpirun" not in text:
            problems.append("%s: the launcher has no mpirun" % path)
        for mca in ("--mca pml ^ucx", "--mca btl tcp,self", "--bind-to none"):
            if mca not in text:
                problems.append("%s: mpirun lacks %s (AWS's EFA sample)" % (path, mca))
        volumes = {v["name"]: v for v in launcher.get("volumes", [])}
        check_results(path + ": Launcher", c, volumes, problems)
        for k in PASSED_TO_RANKS:
            if "-x " + k not in text:
                problems.append("%s: mpirun does not pass %s to the ranks (-x %s)" % (path, k, k))
        env = env_of(c)
        for k, v in REQUIRED_ENV.items():
            if env.get(k) != v:
                problems.append("%s: launcher env %s=%s expected, got %s" % (path, k, v, env.get(k)))


def check_pytorchjob(path, doc, problems):
    if doc.get("apiVersion") != "kubeflow.org/v1":
        problems.append("%s: PyTorchJob apiVersion %s, expected kubeflow.org/v1" % (path, doc.get("apiVersion")))
    specs = (doc.get("spec") or {}).get("pytorchReplicaSpecs") or {}
    if "Master" not in specs:
        problems.append("%s: pytorchReplicaSpecs needs a Master" % path)
    for role, rs in specs.items():
        where = "%s: %s" % (path, role)
        spec = pod_spec((rs or {}).get("template"), where, problems)
        if not spec:
            continue
        check_gpu_pod(where, spec, problems)
        for c in spec.get("containers", []):
            if c.get("name") != "pytorch":
                problems.append("%s: container %s must be named pytorch (the operator's default container)" % (
                    where, c.get("name")))
            text = " ".join(str(x) for x in (c.get("command") or []) + (c.get("args") or []))
            if "torchrun" not in text:
                problems.append("%s: container %s does not run torchrun" % (where, c.get("name")))


def check_pvc(path, doc, problems):
    if (doc.get("metadata") or {}).get("name") != "clustersim-results":
        problems.append("%s: the results claim must be named clustersim-results" % path)
    if "ReadWriteMany" not in ((doc.get("spec") or {}).get("accessModes") or []):
        problems.append("%s: the results claim must be ReadWriteMany (launcher and workers mount it)" % path)


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    files = sorted(glob.glob(os.path.join(directory, "*.yaml")))
    problems = []
    kinds = set()
    if not files:
        problems.append("%s: no manifests" % directory)
    for path in files:
        try:
            docs = [d for d in yaml.safe_load_all(open(path)) if d is not None]
        except yaml.YAMLError as e:
            problems.append("%s: does not parse: %s" % (path, e))
            continue
        for doc in docs:
            kind = doc.get("kind")
            kinds.add(kind)
            if kind == "JobSet":
                check_jobset(os.path.basename(path), doc, problems)
            elif kind == "MPIJob":
                check_mpijob(os.path.basename(path), doc, problems)
            elif kind == "PyTorchJob":
                check_pytorchjob(os.path.basename(path), doc, problems)
            elif kind == "PersistentVolumeClaim":
                check_pvc(os.path.basename(path), doc, problems)
            else:
                problems.append("%s: unexpected kind %s" % (path, kind))
    for k in ("JobSet", "MPIJob", "PyTorchJob", "PersistentVolumeClaim"):
        if k not in kinds:
            problems.append("no %s manifest" % k)
    for p in problems:
        print(p)
    if not problems:
        print("%d manifest file(s) OK: %s" % (len(files), ", ".join(os.path.basename(f) for f in files)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
