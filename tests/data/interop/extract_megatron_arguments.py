#!/usr/bin/env python3
"""Lists the command-line arguments of Megatron-LM's training parser, from its source, as data.

Usage: extract_megatron_arguments.py MEGATRON_GIT_DIR TAG > megatron_arguments.json

Megatron-LM builds its parser in megatron/training/arguments.py from two kinds of statements:
explicit `group.add_argument('--name', type=..., action=...)` calls, and
`ArgumentGroupFactory(ConfigDataclass, exclude=[...]).build_group(...)`, which turns every field
of a dataclass into an argument (megatron/training/argument_utils.py: the field name with '_'
turned into '-'; a bool field is a store_true flag, or `--no-NAME`/`--disable-NAME` when its
default is True; Optional[X] is X; Literal[...] is a choice; list[X] takes nargs '+'; a field's
metadata "argparse_meta" may rename it). This script reads both from the source with Python's
ast module (no torch needed) and prints each argument's name with its kind:
  "int" | "float" | "str" | "flag" (takes no value) | "list" (one or more values)
and its choices where the source names them. Nothing is run from Megatron-LM.
"""

import ast
import json
import subprocess
import sys


def git(repo, *args):
    return subprocess.run(["git", "--git-dir", repo, *args], check=True, capture_output=True, text=True).stdout


def literal(node):
    try:
        return ast.literal_eval(node)
    except Exception:
        return None


class ClassIndex:
    """Every class definition under megatron/, by name (the first path in sorted order wins,
    with megatron/core and megatron/training preferred)."""

    def __init__(self, repo, tag):
        files = [f for f in git(repo, "ls-tree", "-r", "--name-only", tag, "megatron").split() if f.endswith(".py")]
        files.sort(key=lambda f: (0 if f.startswith(("megatron/core/", "megatron/training/")) else 1, f))
        self.classes = {}
        for f in files:
            try:
                tree = ast.parse(git(repo, "show", f"{tag}:{f}"))
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name not in self.classes:
                    self.classes[node.name] = (f, node)

    def fields(self, name, seen=None):
        """(field name, annotation node, default node, argparse_meta dict, init) in order, bases first."""
        seen = seen or set()
        if name not in self.classes or name in seen:
            return []
        seen.add(name)
        _, node = self.classes[name]
        out = []
        for base in node.bases:
            base_name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
            if base_name:
                out.extend(self.fields(base_name, seen))
        for stmt in node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            ann = ast.unparse(stmt.annotation)
            if ann.startswith(("ClassVar", "typing.ClassVar", "InitVar")):
                continue
            default, meta, init = stmt.value, None, True
            if isinstance(stmt.value, ast.Call) and ast.unparse(stmt.value.func) in ("field", "dataclasses.field"):
                default = None
                for kw in stmt.value.keywords:
                    if kw.arg == "default":
                        default = kw.value
                    elif kw.arg == "init":
                        init = literal(kw.value) is not False
                    elif kw.arg == "metadata" and isinstance(kw.value, ast.Dict):
                        for k, v in zip(kw.value.keys, kw.value.values):
                            if literal(k) == "argparse_meta" and isinstance(v, ast.Dict):
                                meta = {literal(a): b for a, b in zip(v.keys, v.values)}
            out = [f for f in out if f[0] != stmt.target.id]
            out.append((stmt.target.id, stmt.annotation, default, meta, init))
        return out

    def is_enum(self, name):
        if name not in self.classes:
            return False
        return any(ast.unparse(b).split(".")[-1] in ("Enum", "IntEnum", "StrEnum") for b in self.classes[name][1].bases)


def kind_of_annotation(ann, index):
    """(kind, choices) of a dataclass field's annotation, as ArgumentGroupFactory infers them."""
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        ann = ast.parse(ann.value, mode="eval").body
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):  # X | None
        parts = [p for p in (ann.left, ann.right) if not (isinstance(p, ast.Constant) and p.value is None)]
        return kind_of_annotation(parts[0], index) if len(parts) == 1 else ("str", None)
    if isinstance(ann, ast.Subscript):
        head = ast.unparse(ann.value).split(".")[-1]
        inner = ann.slice
        if head == "Optional":
            return kind_of_annotation(inner, index)
        if head == "Union":
            elts = [e for e in inner.elts if not (isinstance(e, ast.Constant) and e.value is None)]
            return kind_of_annotation(elts[0], index) if len(elts) == 1 else ("str", None)
        if head == "Literal":
            values = [literal(e) for e in (inner.elts if isinstance(inner, ast.Tuple) else [inner])]
            first = values[0]
            kind = "int" if isinstance(first, int) and not isinstance(first, bool) else "float" if isinstance(first, float) else "str"
            return kind, values
        if head in ("list", "List", "tuple", "Tuple"):
            return "list", None
        return "str", None
    name = ast.unparse(ann).split(".")[-1]
    if name in ("int", "float", "str"):
        return name, None
    if name == "bool":
        return "bool", None
    return "str", None


def kind_of_call(call):
    """(names, kind, choices) of an explicit add_argument call."""
    names = [literal(a) for a in call.args if isinstance(literal(a), str) and literal(a).startswith("-")]
    kw = {k.arg: k.value for k in call.keywords}
    action = literal(kw["action"]) if "action" in kw else None
    choices = literal(kw["choices"]) if "choices" in kw else None
    if action in ("store_true", "store_false", "store_const", "count"):
        return names, "flag", None
    if "nargs" in kw and literal(kw["nargs"]) in ("+", "*") or (isinstance(literal(kw.get("nargs")), int) and literal(kw["nargs"]) > 1):
        return names, "list", None
    t = ast.unparse(kw["type"]) if "type" in kw else "str"
    kind = t if t in ("int", "float", "str") else "str"
    return names, kind, list(choices) if isinstance(choices, (list, tuple)) else None


def main():
    repo, tag = sys.argv[1], sys.argv[2]
    path = "megatron/training/arguments.py"
    source = git(repo, "show", f"{tag}:{path}")
    tree = ast.parse(source)
    index = ClassIndex(repo, tag)
    args = {}

    def put(name, kind, choices=None):
        entry = {"kind": kind}
        if choices:
            entry["choices"] = [c for c in choices if isinstance(c, (str, int, float))]
        args[name] = entry

    for func in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        assigned = {}
        for node in ast.walk(func):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                assigned[node.targets[0].id] = node.value
        for node in ast.walk(func):
            if not isinstance(node, ast.Call):
                continue
            fname = ast.unparse(node.func)
            if fname.endswith(".add_argument"):
                names, kind, choices = kind_of_call(node)
                for n in names:
                    if n.startswith("--"):
                        put(n, kind, choices)
            elif fname == "ArgumentGroupFactory" and node.args:
                cls = ast.unparse(node.args[0])
                exclude = set()
                for kw in node.keywords:
                    if kw.arg == "exclude":
                        value = assigned.get(kw.value.id, kw.value) if isinstance(kw.value, ast.Name) else kw.value
                        exclude = set(literal(value) or [])
                fields = index.fields(cls)
                if not fields:
                    sys.exit(f"no dataclass {cls} found under megatron/ at {tag}")
                for fname_, ann, default, meta, init in fields:
                    if fname_ in exclude or not init:
                        continue
                    kind, choices = kind_of_annotation(ann, index)
                    names = ["--" + fname_.replace("_", "-")]
                    if kind == "bool":
                        kind = "flag"
                        if default is not None and literal(default) is True:
                            names = ["--no-" + fname_.replace("_", "-"), "--disable-" + fname_.replace("_", "-")]
                    if meta:
                        if "arg_names" in meta and literal(meta["arg_names"]):
                            names = literal(meta["arg_names"])
                        if "action" in meta and literal(meta["action"]) in ("store_true", "store_false", "store_const"):
                            kind = "flag"
                        if "nargs" in meta and literal(meta["nargs"]) in ("+", "*"):
                            kind = "list"
                        if "type" in meta and ast.unparse(meta["type"]) in ("int", "float", "str"):
                            kind = ast.unparse(meta["type"])
                        if "choices" in meta and isinstance(literal(meta["choices"]), (list, tuple)):
                            choices = list(literal(meta["choices"]))
                    for n in names:
                        if n.startswith("--"):
                            put(n, kind, choices)

    commit = git(repo, "rev-parse", f"{tag}^{{commit}}").strip()
    out = {
        "source": {
            "repository": "https://github.com/NVIDIA/Megatron-LM",
            "tag": tag,
            "commit": commit,
            "file": path,
            "also_read": "the dataclasses its ArgumentGroupFactory calls name (TransformerConfig and "
                         "ModelParallelConfig in megatron/core, the configs in megatron/training/config)",
            "generated_by": "tests/data/interop/extract_megatron_arguments.py",
        },
        "arguments": dict(sorted(args.items())),
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
