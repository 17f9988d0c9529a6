"""bench/bench_apply.py runs, applies for real and writes its JSON (figures are not judged; issue 16)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "bench_apply.py"

pytestmark = pytest.mark.bench


def test_bench_apply_quick(tmp_path: Path) -> None:
    output = tmp_path / "apply.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--seconds", "0.3", "--dir", str(tmp_path),
                           "--output", str(output)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert "|---" in proc.stdout
    result = json.loads(output.read_text())
    assert result["apply_served"] is True
    assert result["config"]["modes"] == ["compiled", "pure"]
    shapes = {"apply", "smp", "create", "change", "noop"}
    for mode in ("compiled", "pure"):
        turns = result["turns"][mode]
        assert set(turns) == shapes
        for shape, points in turns.items():
            assert len(points) == 1 and points[0]["requests"] > 0 and points[0]["server_us"] >= 0, (mode, shape)
        assert set(result["pod_apply_us"][mode]) == {"create", "change", "noop"}
        checks = result["checks"][mode]
        # every apply and patch landed: the objects hold the last values sent
        assert checks["apply_image_is_last_sent"] and checks["smp_image_is_last_sent"], checks
        assert checks["pod_label_is_last_sent"] and checks["last_created_pod_exists"], checks
        # the re-applies (which leave replicas out) kept the controller's fields, and both managers stayed
        assert checks["controller_replicas_kept"] and checks["controller_annotation_kept"], checks
        assert checks["controller_status_kept"], checks
        assert checks["apply_generation"] > 1, checks
        assert ["bench-applier", "Apply", ""] in checks["apply_managers"], checks
        assert ["bench-controller", "Update", ""] in checks["apply_managers"], checks
        assert ["bench-controller", "Update", "status"] in checks["apply_managers"], checks
        assert ["bench-patcher", "Update", ""] in checks["smp_managers"], checks
        assert ["bench-applier", "Apply", ""] in checks["pod_managers"], checks
    assert set(result["ratios"]) == {"apply_over_smp", "apply_over_smp_compiled", "apply_over_smp_pure",
                                     "pod_create_pure_over_compiled_us", "pod_change_pure_over_compiled_us",
                                     "pod_noop_pure_over_compiled_us"}
    assert all(v > 0 for v in result["ratios"].values()), result["ratios"]
