"""bench/bench_auth.py runs end to end and writes its JSON (figures are not judged; issue 12)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "bench_auth.py"

pytestmark = pytest.mark.bench


def test_bench_auth_quick(tmp_path: Path) -> None:
    output = tmp_path / "auth.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--roles", "30", "--duration", "0.3",
                           "--concurrency", "4", "--output", str(output), "--dir", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert "|---" in proc.stdout
    result = json.loads(output.read_text())
    assert result["config"]["roles"] == 30
    # Each server that started holds the same objects: namespaces, 101 ConfigMaps, the Roles and
    # bindings, the user's own pair.
    assert {v["objects"] for v in result["loading"].values()} == {10 + 101 + 60 + 2}
    for fig in ("get", "list"):
        base = result["points"][fig]["always_allow"]
        assert len(base) == 1 and base[0]["requests"] > 0 and base[0]["errors"] == 0
        for name in ("rbac", "audit"):
            ratio = result["ratios"][f"{fig}_{name}_over_always_allow"]
            assert ratio["median"] > 0 and len(ratio["values"]) == 1
            assert len(result["points"][fig][name]) == 1
    assert result["skipped"] == {}
    # The audit server wrote an event per stage of every request, at Metadata: no bodies.
    audit = result["audit_log"]
    assert audit["levels"] == ["Metadata"] and audit["events_with_bodies"] == 0
    assert audit["stages"] == ["RequestReceived", "ResponseComplete"]
    measured = sum(p["requests"] for fig in ("get", "list") for p in result["points"][fig]["audit"])
    assert audit["lines"] >= 2 * measured
    assert not any(k.endswith("_over_pure") for k in result["ratios"])  # not taken for a twin benchmark
