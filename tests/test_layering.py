"""Imports point down only (STYLE.md §1), and every module imports on its own."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "kapi"

# Lower number = lower layer. A module may import from its own layer or a lower one.
LAYERS = {
    "errors": 0, "config": 0,
    "object": 1, "_fast": 1, "encoding": 2,
    "storage": 2, "client": 2,
    "cacher": 3, "metrics": 1,
    "registry": 4, "apis": 4, "admission": 4,
    "controllers": 5, "chain": 5, "api": 5,
    "server": 6, "__main__": 7, "__init__": 7,
}


def _layer_of(module: str) -> int:
    top = module.split(".")[1] if module.startswith("kapi.") else module
    assert top in LAYERS, f"module kapi.{top} has no layer in the layering test"
    return LAYERS[top]


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        out.append((".".join(rel.parts), path))
    return out


def _imports(module: str, path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("kapi")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("kapi"):
                if target == "kapi" and not node.level:
                    found += [f"kapi.{a.name}" for a in node.names]
                elif node.module is None:
                    found += [f"{target}.{a.name}" for a in node.names]
                else:
                    found.append(target)
    return found


@pytest.mark.parametrize("module,path", _modules(), ids=[m for m, _ in _modules()])
def test_imports_point_down(module: str, path: Path) -> None:
    if module == "kapi":
        return
    mine = _layer_of(module)
    for target in _imports(module, path):
        if target == "kapi" or target == "kapi.__version__":
            continue
        assert _layer_of(target) <= mine, f"{module} (layer {mine}) imports {target} (layer {_layer_of(target)})"


@pytest.mark.parametrize("module", [m for m, _ in _modules() if not m.endswith("__main__")])
def test_module_imports_alone(module: str) -> None:
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_modules_are_importable_in_process() -> None:
    for module, _ in _modules():
        importlib.import_module(module)
