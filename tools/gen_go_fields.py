"""Generate ``kapi/object/schema/go_fields.json.gz``: the Go facts of the built-in types that the schema lacks.

Development-time tool. kube-apiserver decodes every body into Go structs and stores what
Go's ``encoding/json`` writes back, so the stored shape depends on facts the OpenAPI schema
does not carry: which fields are value (non-pointer) structs, always encoded (``omitempty``
does not apply to structs), which fields have no ``omitempty`` and so are always written
with their zero value, and which ``omitempty`` scalars, slices and maps vanish when zero.
This tool reads the Go type declarations of k8s.io/api, k8s.io/apimachinery and
k8s.io/apiextensions-apiserver (git repositories, bare or not, read at ``--ref``; they are
not part of kapi) and writes those facts in kapi's own format, for the types and fields
``kapi/object/schema/builtin.json.gz`` knows::

    {"format": 1, "source": "...",
     "opaque": {TYPE NAME: ZERO JSON},     # types with their own MarshalJSON: what zero encodes to
     "types": {TYPE NAME: {JSON NAME: [KIND, OMITEMPTY, ELEM]}}}

``KIND`` is the Go kind of the field: ``struct`` (a value struct, ``ELEM`` its type), ``ptr``
(``ELEM`` the pointed-to struct type or ""), ``slice`` and ``map`` (``ELEM`` the element's
struct type or ""), ``bytes`` (``[]byte``, a base64 string in JSON), ``opaque`` (``ELEM`` a
type of the ``opaque`` table), ``string``, ``int``, ``float``, ``bool`` or ``any``
(``interface{}``). ``OMITEMPTY`` is 1 when the json tag has ``omitempty``. Fields of
``json:",inline"`` structs appear in their parent type, as in JSON.

Usage: ``python tools/gen_go_fields.py API_REPO APIMACHINERY_REPO APIEXTENSIONS_REPO
[--ref v0.33.13] [--out PATH] [--report]``
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SCHEMA_FILE = REPO / "kapi" / "schema" / "builtin.json.gz"
OUT_FILE = REPO / "kapi" / "schema" / "go_fields.json.gz"

# What the zero value of a type with its own MarshalJSON encodes to (read from each method).
OPAQUE_ZERO: dict[str, Any] = {
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": None,  # IsZero -> null
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": None,  # IsZero -> null
    "io.k8s.apimachinery.pkg.apis.meta.v1.Duration": "0s",  # Duration.String()
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": None,  # Raw == nil -> null
    "io.k8s.apimachinery.pkg.apis.meta.v1.GroupVersion": "",  # gv.String()
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": 0,  # Type Int, IntVal 0
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "0",  # the zero Quantity's String()
    "io.k8s.apimachinery.pkg.runtime.RawExtension": None,  # Raw == nil -> null
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON": None,  # no Raw -> null
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray": None,
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool": False,
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray": None,
}

# (repository index, package directory, import path); the schema name is derived from the import path.
_FIXED_PACKAGES = [
    (1, "pkg/apis/meta/v1", "k8s.io/apimachinery/pkg/apis/meta/v1"),
    (1, "pkg/util/intstr", "k8s.io/apimachinery/pkg/util/intstr"),
    (1, "pkg/api/resource", "k8s.io/apimachinery/pkg/api/resource"),
    (1, "pkg/runtime", "k8s.io/apimachinery/pkg/runtime"),
    (1, "pkg/types", "k8s.io/apimachinery/pkg/types"),
    (1, "pkg/version", "k8s.io/apimachinery/pkg/version"),
    (2, "pkg/apis/apiextensions/v1", "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"),
]

_BASIC = {
    "string": "string", "bool": "bool", "byte": "int", "rune": "int",
    "int": "int", "int8": "int", "int16": "int", "int32": "int", "int64": "int",
    "uint": "int", "uint8": "int", "uint16": "int", "uint32": "int", "uint64": "int",
    "float32": "float", "float64": "float", "interface{}": "any", "any": "any",
}

_SKIP_FILE = re.compile(r"(_test|_fuzz|_proto|generated\.pb|_swagger_doc_generated)\.go$|/zz_generated")
_TYPE_LINE = re.compile(r"^type\s+(\w+)\s+(=\s*)?(.+?)\s*(//.*)?$")
_MARSHAL = re.compile(r"^func\s+\(\s*\w*\s*\*?(\w+)\s*\)\s+MarshalJSON\(")
_IMPORT = re.compile(r'^\s*(?:(\w+)\s+)?"([^"]+)"')


def schema_name(import_path: str, name: str) -> str:
    """``k8s.io/api/apps/v1`` + ``Deployment`` -> ``io.k8s.api.apps.v1.Deployment``."""
    host, _, rest = import_path.partition("/")
    return ".".join([*reversed(host.split(".")), *rest.split("/"), name])


@dataclass
class Package:
    path: str  # import path
    structs: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)  # name -> (field, type, tag)
    defs: dict[str, str] = field(default_factory=dict)  # name -> underlying type expression
    marshals: set[str] = field(default_factory=set)
    imports: dict[str, dict[str, str]] = field(default_factory=dict)  # type name -> alias -> import path


class Git:
    def __init__(self, repo: str, ref: str) -> None:
        self.repo, self.ref = repo, ref

    def files(self, directory: str) -> list[str]:
        out = subprocess.run(["git", "-C", self.repo, "ls-tree", "--name-only", f"{self.ref}:{directory}"],
                             check=True, capture_output=True, text=True).stdout.split()
        return [f"{directory}/{f}" for f in out if f.endswith(".go") and not _SKIP_FILE.search(f"{directory}/{f}")]

    def dirs(self) -> list[str]:
        out = subprocess.run(["git", "-C", self.repo, "ls-tree", "-r", "--name-only", self.ref],
                             check=True, capture_output=True, text=True).stdout.split()
        return sorted({f.rsplit("/", 1)[0] for f in out if re.fullmatch(r"[a-z0-9]+/v[0-9a-z]+/types\.go", f)})

    def read(self, path: str) -> str:
        return subprocess.run(["git", "-C", self.repo, "show", f"{self.ref}:{path}"],
                              check=True, capture_output=True, text=True).stdout


def _parse_imports(lines: list[str]) -> dict[str, str]:
    imports: dict[str, str] = {}
    inside = False
    for line in lines:
        s = line.strip()
        if s.startswith("import ("):
            inside = True
            continue
        if inside and s == ")":
            break
        if inside or s.startswith("import "):
            m = _IMPORT.match(s.removeprefix("import "))
            if m:
                alias = m.group(1) or m.group(2).rsplit("/", 1)[-1]
                imports[alias] = m.group(2)
            if not inside:
                continue
    return imports


def parse_package(git: Git, directory: str, import_path: str) -> Package:
    pkg = Package(import_path)
    for path in git.files(directory):
        lines = git.read(path).splitlines()
        imports = _parse_imports(lines)
        i = 0
        while i < len(lines):
            line = lines[i]
            m = _MARSHAL.match(line)
            if m:
                pkg.marshals.add(m.group(1))
            m = _TYPE_LINE.match(line)
            if m and m.group(3) == "struct{}":
                pkg.structs[m.group(1)] = []
                pkg.imports[m.group(1)] = imports
            elif m and m.group(3) == "struct {":
                name = m.group(1)
                body: list[tuple[str, str, str]] = []
                i += 1
                depth = 0
                comment = False
                while i < len(lines) and not (lines[i].startswith("}") and depth == 0):
                    s = lines[i].split("//", 1)[0].strip() if "`" not in lines[i] else lines[i].strip()
                    if comment or s.startswith("/*"):
                        comment = "*/" not in s
                    elif s.endswith("struct {"):
                        depth += 1  # an anonymous struct: not in the API types kapi reads
                    elif s.startswith("}") and depth:
                        depth -= 1
                    elif s and not s.startswith("//") and depth == 0:
                        tag = ""
                        if "`" in s:
                            s, tag = s.split("`", 1)[0].strip(), s.split("`")[1]
                        parts = s.split(None, 1)
                        if len(parts) == 1:
                            body.append(("", parts[0], tag))
                        else:
                            body.append((parts[0], parts[1].strip(), tag))
                    i += 1
                pkg.structs[name] = body
                pkg.imports[name] = imports
            elif m and not m.group(3).startswith(("struct", "interface", "func")):
                pkg.defs[m.group(1)] = m.group(3)
                pkg.imports[m.group(1)] = imports
            i += 1
    return pkg


def _json_tag(tag: str) -> tuple[str, bool, bool] | None:
    """(name, omitempty, inline) of a struct tag; None for ``json:"-"``."""
    m = re.search(r'json:"([^"]*)"', tag)
    if not m:
        return "", False, False
    name, *opts = m.group(1).split(",")
    if name == "-" and not opts:
        return None
    return name, "omitempty" in opts, "inline" in opts


class Resolver:
    def __init__(self, packages: dict[str, Package]) -> None:
        self.packages = packages
        self.unknown: set[str] = set()

    def kind(self, pkg: Package, owner: str, expr: str) -> tuple[str, str]:
        """(KIND, ELEM) of a Go type expression used in ``owner`` of ``pkg``."""
        expr = expr.strip()
        if expr.startswith("*"):
            inner, elem = self.kind(pkg, owner, expr[1:])
            return "ptr", elem if inner == "struct" else ""
        if expr == "[]byte":
            return "bytes", ""
        if expr.startswith("[]"):
            inner, elem = self.kind(pkg, owner, expr[2:])
            return "slice", elem if inner == "struct" else ""
        if expr.startswith("map["):
            depth, j = 0, 3
            for j in range(3, len(expr)):
                depth += expr[j] == "["
                depth -= expr[j] == "]"
                if depth == 0:
                    break
            inner, elem = self.kind(pkg, owner, expr[j + 1 :])
            return "map", elem if inner == "struct" else ""
        if expr in _BASIC:
            return _BASIC[expr], ""
        if "." in expr:
            alias, name = expr.split(".", 1)
            target = pkg.imports.get(owner, {}).get(alias, "")
            other = self.packages.get(target)
            if other is None:
                self.unknown.add(f"{target}.{name}")
                return "opaque", schema_name(target, name) if target else expr
            return self.named(other, name)
        return self.named(pkg, expr)

    def named(self, pkg: Package, name: str) -> tuple[str, str]:
        full = schema_name(pkg.path, name)
        if name in pkg.marshals or full in OPAQUE_ZERO:
            return "opaque", full
        if name in pkg.structs:
            return "struct", full
        if name in pkg.defs:
            under = pkg.defs[name]
            return self.kind(pkg, name, under)
        self.unknown.add(full)
        return "opaque", full

    def fields(self, pkg: Package, name: str) -> dict[str, list[Any]]:
        """The JSON fields of struct ``name``, inline structs flattened."""
        out: dict[str, list[Any]] = {}
        for fname, expr, tag in pkg.structs[name]:
            parsed = _json_tag(tag)
            if parsed is None:
                continue
            json_name, omitempty, inline = parsed
            embedded = not fname
            if embedded and (inline or not json_name):
                base = expr.lstrip("*")
                if "." in base:
                    alias, tname = base.split(".", 1)
                    other = self.packages.get(pkg.imports.get(name, {}).get(alias, ""))
                else:
                    other, tname = pkg, base
                if other is not None and tname in other.structs:
                    out.update(self.fields(other, tname))
                continue
            if not embedded and not fname[0].isupper():
                continue  # unexported: never encoded
            if not json_name:
                json_name = fname or expr.rsplit(".", 1)[-1]
            kind, elem = self.kind(pkg, name, expr)
            out[json_name] = [kind, int(omitempty), elem]
        return out


def generate(repos: list[str], ref: str) -> tuple[dict[str, Any], set[str]]:
    schema = json.loads(gzip.decompress(SCHEMA_FILE.read_bytes()))["types"]
    gits = [Git(r, ref) for r in repos]
    packages: dict[str, Package] = {}
    for directory in gits[0].dirs():
        path = f"k8s.io/api/{directory}"
        if any(t.startswith(schema_name(path, "")) for t in schema):
            packages[path] = parse_package(gits[0], directory, path)
    for index, directory, path in _FIXED_PACKAGES:
        packages[path] = parse_package(gits[index], directory, path)
    resolver = Resolver(packages)
    types: dict[str, Any] = {}
    for pkg in packages.values():
        for name in pkg.structs:
            full = schema_name(pkg.path, name)
            raw = schema.get(full)
            if raw is None or name in pkg.marshals or full in OPAQUE_ZERO:
                continue
            known = raw.get("fields", {})
            fields = {k: v for k, v in resolver.fields(pkg, name).items() if k in known}
            if fields:
                types[full] = dict(sorted(fields.items()))
    data = {
        "format": 1,
        "source": f"Go types of k8s.io/api, k8s.io/apimachinery, k8s.io/apiextensions-apiserver at {ref}",
        "opaque": OPAQUE_ZERO,
        "types": dict(sorted(types.items())),
    }
    return data, resolver.unknown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("api", help="k8s.io/api git repository")
    parser.add_argument("apimachinery", help="k8s.io/apimachinery git repository")
    parser.add_argument("apiextensions", help="k8s.io/apiextensions-apiserver git repository")
    parser.add_argument("--ref", default="v0.33.13", help="the tag or commit to read (v0.33.x is kube v1.33)")
    parser.add_argument("--out", type=Path, default=OUT_FILE)
    parser.add_argument("--report", action="store_true", help="print counts and unresolved types")
    args = parser.parse_args(argv)
    data, unknown = generate([args.api, args.apimachinery, args.apiextensions], args.ref)
    blob = json.dumps(data, sort_keys=False, separators=(",", ":")).encode()
    args.out.write_bytes(gzip.compress(blob, mtime=0))
    if args.report:
        n = sum(len(f) for f in data["types"].values())
        print(f"{len(data['types'])} types, {n} fields, {len(blob)} bytes; unresolved: {sorted(unknown)}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
