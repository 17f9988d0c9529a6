"""bench/bench_writes.py runs every write shape without errors and writes its JSON (figures are not judged; issue 33)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "bench_writes.py"

pytestmark = pytest.mark.bench


def test_bench_writes_quick(tmp_path: Path) -> None:
    output = tmp_path / "writes.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--seconds", "0.5", "--dir", str(tmp_path),
                           "--output", str(output)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert "|---" in proc.stdout
    result = json.loads(output.read_text())
    assert set(result["points"]) == {"pod create", "pod patch", "pod update", "configmap create", "configmap patch"}
    for shape, rows in result["points"].items():
        assert [r["connections"] for r in rows] == [8], shape
        row = rows[0]
        assert row["requests"] > 0 and row["errors"] == 0, (shape, row)
        assert row["server_cpu_ms_per_op"] > 0, (shape, row)
