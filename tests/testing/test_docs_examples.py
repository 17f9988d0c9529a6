"""The testing guide's examples (docs/examples/testing/) run as written, and the guide shows them all.

Each test file is copied with its neighbours into a folder of its own, as in a project that uses
kapi, and run there by ``python -m pytest``: the plugin comes from kapi's entry point, no conftest
or pytest configuration of kapi's applies.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples" / "testing"
GUIDE = ROOT / "docs" / "guide" / "testing.md"
TESTS = sorted(p.name for p in EXAMPLES.glob("test_*.py"))
NEEDS = {"test_kopf_operator.py": ["kopf", "kubernetes"], "test_kubernetes_controller.py": ["kubernetes"],
         "test_lightkube_controller.py": ["lightkube"]}


def test_there_are_examples() -> None:
    assert {"test_kopf_operator.py", "test_kubernetes_controller.py", "test_lightkube_controller.py"} <= set(TESTS)


def test_the_guide_includes_every_example() -> None:
    included = set(re.findall(r'^--8<-- "docs/examples/testing/([^"]+)"$', GUIDE.read_text(), re.MULTILINE))
    assert included == {p.name for p in EXAMPLES.glob("*.py")}


@pytest.mark.e2e
@pytest.mark.parametrize("example", TESTS)
def test_example_passes(example: str, tmp_path: Path) -> None:
    for module in NEEDS.get(example, []):
        pytest.importorskip(module)
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project, ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items()
           if k != "KUBECONFIG" and not k.startswith("PYTEST_")}  # PYTEST_ADDOPTS, ..._DISABLE_PLUGIN_AUTOLOAD
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", example],
                          cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{example} failed:\n{proc.stdout[-8000:]}\n{proc.stderr[-4000:]}"
    assert re.search(r"\d+ passed", proc.stdout) and " skipped" not in proc.stdout, proc.stdout
