"""bench/bench_cel.py runs and writes its JSON (figures are not judged; issue 14)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "bench_cel.py"

pytestmark = pytest.mark.bench


def test_bench_cel_quick(tmp_path: Path) -> None:
    output = tmp_path / "cel.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--seconds", "0.002", "--output", str(output)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert "|---" in proc.stdout
    result = json.loads(output.read_text())
    chosen = result["engines"]["cel-expr-python"]
    # the engine kapi depends on passes the whole conformance table and times every rule
    assert chosen["conformance"]["failed"] == []
    assert all(r["eval_us"] and r["eval_us"] > 0 for r in chosen["rules"].values())
    assert 0 < result["ratios"]["chosen_eval_over_slowest"] <= 1
    assert result["kapi"]["one_rule_validate_us"] > 0 and result["kapi"]["five_rules_validate_us_per_rule"] > 0
