"""bench/bench_authz.py runs and writes its JSON (figures are not judged; issue 12)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "bench_authz.py"

pytestmark = pytest.mark.bench


def test_bench_authz_quick(tmp_path: Path) -> None:
    output = tmp_path / "authz.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--roles", "60", "--seconds", "0.01",
                           "--output", str(output)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert "|---" in proc.stdout
    result = json.loads(output.read_text())
    assert result["config"]["roles"] == result["config"]["role_bindings"] == 60
    assert set(result["figures"]) >= {"allowed_warm_us", "allowed_cold_us", "denied_warm_us", "denied_cold_us",
                                      "union_allowed_warm_us", "scan_allowed_us"}
    assert all(v > 0 for v in result["figures"].values())
    assert not any(k.endswith("_over_pure") for k in result["ratios"])  # no twin: not a micro of the harness
