"""bench/bench_crd.py runs and writes its JSON (figures are not judged; issue 14)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "bench_crd.py"

pytestmark = pytest.mark.bench


def test_bench_crd_quick(tmp_path: Path) -> None:
    output = tmp_path / "crd.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--seconds", "0.3", "--concurrency", "2",
                           "--dir", str(tmp_path), "--output", str(output)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert "|---" in proc.stdout
    result = json.loads(output.read_text())
    assert [(p["verb"], p["concurrency"]) for p in result["points"]] == [("create", 2), ("get", 2)]
    for p in result["points"]:
        for kind in ("configmap", "custom"):
            assert p[kind]["requests"] > 0 and p[kind]["errors"] == 0, (kind, p)
        assert p["ratio"] > 0
    assert set(result["ratios"]) == {"create_c2", "get_c2", "create_c2_per_cpu", "get_c2_per_cpu"}
