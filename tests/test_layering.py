"""The tree's layers (docs/architecture.md): imports point down, each module imports alone,
and the rules the layering alone does not say (issue 11).

A module may import from its own layer or a lower one. On top of that, a few packages must not
reach some lower ones: handlers never touch a backend, the cacher neither encodes wire formats nor
sees HTTP, storage never sees a request, the object layer does no I/O, and the client reaches the
server only over HTTP. Imports are read from the source (``if TYPE_CHECKING`` ones included: a
type is a dependency too), so a rule fails on the line that breaks it.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "kapi"

# Lower number = lower layer, in the order requests flow down (docs/architecture.md).
LAYERS = {
    "errors": 0, "config": 0, "metrics": 0,  # the exception tree, the settings, the counters
    "_fast": 1,  # Cython twins and their pure twins
    "object": 2,  # object semantics, no I/O
    "encoding": 3,  # wire formats: msgpack/orjson values, protobuf, watch lines, Table rows
    "storage": 4,  # backends behind one protocol
    "cacher": 5,  # per-resource watch cache over storage
    "registry": 6,  # the resource table, the generic store, the informer
    "apis": 7,  # one strategy per built-in kind
    "admission": 8,  # mutating then validating plugins, policies (CEL), webhooks
    "chain": 9,  # the filter chain: context, filters, authn, authz
    "api": 10,  # ASGI app, router, handlers, responses, discovery, OpenAPI
    "controllers": 11,  # in-process controllers over the informer
    "server": 12,  # serve(): everything started in one nursery
    "client": 13,  # the trio client (HTTP only, see RULES)
    "testing": 13,  # kapi.testing and the pytest plugin (the CLI contract and HTTP only, see RULES)
    "__main__": 14,  # the CLI
}


def _top(module: str) -> str:
    return module.split(".")[1] if module.startswith("kapi.") else module


def _layer_of(module: str) -> int:
    top = _top(module)
    assert top in LAYERS, f"module kapi.{top} has no layer in the layering test"
    return LAYERS[top]


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out.append((".".join(parts), path))
    return out


MODULES = _modules()
KNOWN = {m for m, _ in MODULES}


def _imports(module: str, source: str, is_package: bool = False) -> list[str]:
    """Every module ``source`` imports, absolute, third-party ones included.

    ``from kapi.object import schema`` counts as importing ``kapi.object.schema`` (and
    ``kapi.object``), so a rule about a subpackage sees it however it is spelled.
    """
    package = module if is_package else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append(target)
            found += [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in KNOWN]
    return found


def _imports_of(module: str, path: Path) -> list[str]:
    return _imports(module, path.read_text(), path.name == "__init__.py")


def _is_under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


@pytest.mark.parametrize("module,path", MODULES, ids=[m for m, _ in MODULES])
def test_imports_point_down(module: str, path: Path) -> None:
    if module == "kapi":  # the package root holds public names only
        return
    mine = _layer_of(module)
    for target in _imports_of(module, path):
        if not _is_under(target, "kapi") or target in ("kapi", "kapi.__version__"):
            continue
        assert _layer_of(target) <= mine, f"{module} (layer {mine}) imports {target} (layer {_layer_of(target)})"


def test_every_top_level_module_has_a_layer() -> None:
    tops = {_top(m) for m in KNOWN if m != "kapi"}
    assert tops <= LAYERS.keys(), f"add {sorted(tops - LAYERS.keys())} to LAYERS"


# ------------------------------------------------------------ the explicit rules


@dataclass(frozen=True, slots=True)
class Rule:
    """Modules under ``package`` import nothing under any of ``forbidden``."""

    name: str
    package: str
    forbidden: tuple[str, ...]
    why: str
    allowed: tuple[str, ...] = ()  # under a forbidden package, but allowed all the same

    def violations(self, module: str, imports: list[str]) -> list[str]:
        if not _is_under(module, self.package):
            return []
        return [t for t in imports if any(_is_under(t, f) for f in self.forbidden)
                and not any(_is_under(t, a) for a in self.allowed)]


HTTP = ("hypercorn", "h11", "h2", "httpx", "wsproto")
SERVER_SIDE = ("kapi.storage", "kapi.cacher", "kapi.registry", "kapi.apis", "kapi.chain", "kapi.api",
               "kapi.controllers", "kapi.server")
IO = ("trio", "sqlite3", "socket", "ssl", "asyncio", "subprocess", *HTTP)
# What importing kapi.object must not load at all; socket and ssl are left out, as the standard
# library itself imports them in places.
LOADED_IO = ("trio", "sqlite3", "asyncio", *HTTP)

RULES = [
    Rule("handlers-never-touch-storage", "kapi.api", ("kapi.storage",),
         "handlers reach objects through the registry's facade, never a backend"),
    Rule("cacher-no-encoding-no-http", "kapi.cacher",
         ("kapi.encoding", "kapi.object.schema", "kapi.api", "kapi.chain", "kapi.server", *HTTP),
         "the cacher hands out entries; JSON lines, protobuf and Table rows are made in kapi.encoding"),
    Rule("storage-never-sees-a-request", "kapi.storage",
         ("kapi.registry", "kapi.cacher", "kapi.apis", "kapi.chain", "kapi.api"),
         "storage knows keys, values and revisions; the registry maps its errors to API errors"),
    Rule("object-does-no-io", "kapi.object", IO,
         "object semantics are pure functions over decoded objects"),
    Rule("client-http-only", "kapi.client", SERVER_SIDE,
         "kapi.client talks to any apiserver over HTTP; it shares only object and encoding code"),
    Rule("testing-cli-and-http-only", "kapi.testing", SERVER_SIDE,
         "kapi.testing runs `kapi serve` and `kapi kubeconfig` as processes and talks to them over HTTP "
         "(and to etcd over etcd's own API: its generated stubs are protocol, not server code)",
         allowed=("kapi.storage.etcd3._pb",)),
]


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_rule(rule: Rule) -> None:
    checked = [(m, p) for m, p in MODULES if _is_under(m, rule.package)]
    assert checked, f"no module under {rule.package}: the rule checks nothing"
    broken = {m: bad for m, p in checked if (bad := rule.violations(m, _imports_of(m, p)))}
    assert not broken, f"{rule.why}; but: {broken}"


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_rule_catches_a_violation(rule: Rule) -> None:
    """Each rule fails on every import it forbids, however it is spelled: the checker itself can fail."""
    probe = f"{rule.package}.probe"
    assert not rule.violations(probe, _imports(probe, "import json\nfrom kapi import errors"))
    for forbidden in rule.forbidden:
        parent, _, leaf = forbidden.rpartition(".")
        spellings = [f"import {forbidden}", f"from {forbidden} import x", f"import {forbidden}.x as y",
                     "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import " + forbidden]
        if parent and forbidden in KNOWN:
            spellings.append(f"from {parent} import {leaf}")
        for source in spellings:
            assert rule.violations(probe, _imports(probe, source)), f"{rule.name} misses {source!r}"


def test_object_layer_loads_no_io() -> None:
    """Importing every kapi.object module loads no I/O library, not even through a lower layer."""
    names = [m for m in KNOWN if _is_under(m, "kapi.object")]
    code = ("import importlib, json, sys\n"
            f"for m in {names!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted(sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout)
    io = sorted({m.split(".")[0] for m in loaded if any(_is_under(m, f) for f in LOADED_IO)})
    assert not io, f"kapi.object loads {io}"


# ------------------------------------------------------------ importable


@pytest.mark.parametrize("module", [m for m, _ in MODULES if not m.endswith("__main__")])
def test_module_imports_alone(module: str) -> None:
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_modules_are_importable_in_process() -> None:
    for module, _ in MODULES:
        importlib.import_module(module)
