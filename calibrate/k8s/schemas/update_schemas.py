#!/usr/bin/env python3
"""Rebuilds the schemas in this directory from the upstream files named in README.md.

Usage: update_schemas.py JOBSET_CRD MPIJOB_CRD PYTORCHJOB_CRD K8S_CORE_V1_OPENAPI

  JOBSET_CRD            kubernetes-sigs/jobset config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml
  MPIJOB_CRD            kubeflow/mpi-operator manifests/base/kubeflow.org_mpijobs.yaml
  PYTORCHJOB_CRD        kubeflow/training-operator manifests/base/crds/kubeflow.org_pytorchjobs.yaml
  K8S_CORE_V1_OPENAPI   the API server's OpenAPI v3 document of core/v1 (/openapi/v3/api/v1), as
                        kubernetes-sigs/kubectl-validate keeps it per release in
                        pkg/openapiclient/builtins/<release>/api/v1.json

A CRD gives the openAPIV3Schema of the one version the manifests use; the core/v1 document gives
the definitions reachable from Pod, PodTemplateSpec and PersistentVolumeClaim, with references
rewritten from #/components/schemas/ to #/definitions/. Descriptions are dropped (they are most of
the bytes and validate nothing); nothing else is changed. Needs python3-yaml.
"""

import json
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CRDS = [  # (argument index, version, output)
    (1, "v1alpha2", "jobset.x-k8s.io_v1alpha2_jobset.json"),
    (2, "v2beta1", "kubeflow.org_v2beta1_mpijob.json"),
    (3, "v1", "kubeflow.org_v1_pytorchjob.json"),
]
CORE_ROOTS = ["io.k8s.api.core.v1.Pod", "io.k8s.api.core.v1.PodTemplateSpec", "io.k8s.api.core.v1.PersistentVolumeClaim"]
CORE_OUT = "k8s_core_v1.json"


def drop_descriptions(node):
    if isinstance(node, dict):
        return {k: drop_descriptions(v) for k, v in node.items() if k != "description" or not isinstance(v, str)}
    if isinstance(node, list):
        return [drop_descriptions(v) for v in node]
    return node


def rewrite_refs(node, found):
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str) and v.startswith("#/components/schemas/"):
                name = v[len("#/components/schemas/"):]
                found.add(name)
                out[k] = "#/definitions/" + name
            else:
                out[k] = rewrite_refs(v, found)
        return out
    if isinstance(node, list):
        return [rewrite_refs(v, found) for v in node]
    return node


def write(name, doc):
    path = os.path.join(HERE, name)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, sort_keys=True, separators=(",", ":"))
        f.write("\n")
    os.replace(tmp, path)
    print("wrote %s (%d bytes)" % (name, os.path.getsize(path)))


def main():
    if len(sys.argv) != 5:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    for index, version, out in CRDS:
        with open(sys.argv[index]) as f:
            crd = yaml.safe_load(f)
        versions = {v["name"]: v for v in crd["spec"]["versions"]}
        if version not in versions:
            print("%s: no version %s (has %s)" % (sys.argv[index], version, ", ".join(versions)), file=sys.stderr)
            return 2
        schema = drop_descriptions(versions[version]["schema"]["openAPIV3Schema"])
        schema["x-clustersim-source"] = {"group": crd["spec"]["group"], "kind": crd["spec"]["names"]["kind"],
                                         "version": version}
        write(out, schema)
    with open(sys.argv[4]) as f:
        schemas = json.load(f)["components"]["schemas"]
    definitions, todo = {}, list(CORE_ROOTS)
    while todo:
        name = todo.pop()
        if name in definitions:
            continue
        found = set()
        definitions[name] = rewrite_refs(drop_descriptions(schemas[name]), found)
        todo.extend(sorted(found - set(definitions)))
    write(CORE_OUT, {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": definitions})
    return 0


if __name__ == "__main__":
    sys.exit(main())
