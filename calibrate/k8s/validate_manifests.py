#!/usr/bin/env python3
"""Validates Kubernetes manifests offline against the published schemas in schemas/ (README.md
there names their sources): JobSet v1alpha2, MPIJob v2beta1 and PyTorchJob v1 against their CRDs'
openAPIV3Schema, every pod template in them against the core/v1 PodTemplateSpec of the Kubernetes
API, and a PersistentVolumeClaim against core/v1. Validation is strict, as `kubectl apply
--validate=strict` (server-side field validation Strict) is: an object schema with properties that
does not preserve unknown fields rejects fields it does not name, so a misspelt key fails.

Usage: validate_manifests.py [--expect-invalid] PATH...   (files or directories of *.yaml)
  exit 0 when every document is valid (with --expect-invalid: when every file has a problem,
  the negative test); 1 otherwise, one line per problem; 77 when python3-jsonschema or
  python3-yaml is missing (CTest reports the test as skipped).
"""

import copy
import glob
import json
import os
import sys

try:
    import jsonschema
    import yaml
except ImportError as e:
    print("skipped: validate_manifests.py needs python3-jsonschema and python3-yaml (%s)" % e)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = os.path.join(HERE, "schemas")
CRD_SCHEMAS = {
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): "jobset.x-k8s.io_v1alpha2_jobset.json",
    ("kubeflow.org/v2beta1", "MPIJob"): "kubeflow.org_v2beta1_mpijob.json",
    ("kubeflow.org/v1", "PyTorchJob"): "kubeflow.org_v1_pytorchjob.json",
}
CORE = {("v1", "PersistentVolumeClaim"): "io.k8s.api.core.v1.PersistentVolumeClaim",
        ("v1", "Pod"): "io.k8s.api.core.v1.Pod"}


def strict(node):
    """additionalProperties: false on every object schema that lists properties and neither sets
    additionalProperties nor preserves unknown fields."""
    if isinstance(node, dict):
        out = {k: strict(v) for k, v in node.items()}
        if ("properties" in out and "additionalProperties" not in out
                and not out.get("x-kubernetes-preserve-unknown-fields")):
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [strict(v) for v in node]
    return node


def load(name):
    with open(os.path.join(SCHEMAS, name)) as f:
        return json.load(f)


CORE_DOC = strict(load("k8s_core_v1.json"))


def core_validator(definition):
    schema = copy.copy(CORE_DOC)
    schema["$ref"] = "#/definitions/" + definition
    return jsonschema.Draft7Validator(schema)


VALIDATORS = {key: jsonschema.Draft7Validator(strict(load(name))) for key, name in CRD_SCHEMAS.items()}
VALIDATORS.update({key: core_validator(d) for key, d in CORE.items()})
POD_TEMPLATE = core_validator("io.k8s.api.core.v1.PodTemplateSpec")


def pod_templates(doc):
    """(path, template) of every pod template of a JobSet, MPIJob or PyTorchJob."""
    spec = doc.get("spec") or {}
    kind = doc.get("kind")
    if kind == "JobSet":
        for i, rj in enumerate(spec.get("replicatedJobs") or []):
            t = (((rj.get("template") or {}).get("spec") or {}).get("template"))
            if isinstance(t, dict):
                yield "spec/replicatedJobs/%d/template/spec/template" % i, t
    for field in ("mpiReplicaSpecs", "pytorchReplicaSpecs"):
        for role, rs in (spec.get(field) or {}).items():
            t = (rs or {}).get("template")
            if isinstance(t, dict):
                yield "spec/%s/%s/template" % (field, role), t


def where(error):
    return "/".join(str(p) for p in error.absolute_path) or "(top)"


def check(path, doc, index):
    problems = []
    name = "%s[%d]" % (os.path.basename(path), index)
    if not isinstance(doc, dict):
        return ["%s: not a mapping" % name]
    key = (doc.get("apiVersion"), doc.get("kind"))
    validator = VALIDATORS.get(key)
    if validator is None:
        known = ", ".join("%s %s" % k for k in sorted(VALIDATORS))
        return ["%s: no schema for apiVersion %s kind %s (known: %s)" % (name, key[0], key[1], known)]
    for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
        problems.append("%s: %s %s: %s" % (name, key[1], where(e), e.message))
    for at, template in pod_templates(doc):
        for e in sorted(POD_TEMPLATE.iter_errors(template), key=lambda e: list(e.absolute_path)):
            problems.append("%s: %s/%s: PodTemplateSpec: %s" % (name, at, where(e), e.message))
    return problems


def files_of(paths):
    out = []
    for p in paths:
        out.extend(sorted(glob.glob(os.path.join(p, "*.yaml"))) if os.path.isdir(p) else [p])
    return out


def main(argv):
    expect_invalid = "--expect-invalid" in argv
    paths = [a for a in argv if a != "--expect-invalid"]
    files = files_of(paths or [HERE])
    if not files:
        print("no manifests in %s" % " ".join(paths))
        return 1
    failed = False
    for path in files:
        try:
            with open(path) as f:
                docs = [d for d in yaml.safe_load_all(f) if d is not None]
            problems = [p for i, d in enumerate(docs) for p in check(path, d, i)]
        except (OSError, yaml.YAMLError) as e:
            problems = ["%s: %s" % (path, e)]
        if expect_invalid:
            if problems:
                print("%s: rejected as expected: %s" % (os.path.basename(path), problems[0]))
            else:
                print("%s: expected a schema violation, found none" % path)
                failed = True
        else:
            for p in problems:
                print(p)
            failed = failed or bool(problems)
            if not problems:
                print("%s: %d document(s) valid" % (os.path.basename(path), len(docs)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
