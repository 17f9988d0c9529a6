"""bench/bench_admission.py runs and writes its JSON (figures are not judged; issue 15)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "bench_admission.py"

pytestmark = pytest.mark.bench


def test_bench_admission_quick(tmp_path: Path) -> None:
    output = tmp_path / "admission.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--seconds", "0.3", "--concurrency", "2",
                           "--dir", str(tmp_path), "--output", str(output)],
                          cwd=REPO, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, f"exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert "|---" in proc.stdout
    result = json.loads(output.read_text())
    assert "NamespaceLifecycle" in result["config"]["disabled"]
    for part, sides in (("plugins", ("on", "off")), ("policy", ("with", "without")), ("webhook", ("with", "without"))):
        for side in sides:
            point = result[part][side]
            assert point["requests"] > 0 and point["errors"] == 0, (part, side, point)
        assert result[part]["ratio"] > 0
    # the policy and the webhook were seen in effect before their points were measured
    assert len(result["policy"]["policy_in_effect_s"]) == 1
    assert result["policy"]["validations"] == 5
    assert set(result["ratios"]) == {"pods_on_over_off", "pods_on_over_off_per_cpu", "pods_on_over_off_median_per_cpu",
                                     "vap_with_over_without", "vap_with_over_without_per_cpu",
                                     "vap_with_over_without_median_per_cpu"}
    for part in ("plugins", "policy", "webhook"):
        assert all(len(t) == 1 for t in result[part]["turns"].values()), result[part]["turns"]
    assert result["webhook"]["webhook_reviews"] > 0
    assert set(result["webhook_added_ms"]) == {"p50", "p99"}
