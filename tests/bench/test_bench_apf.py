"""bench/bench_apf.py runs end to end and writes its JSON (figures are not judged; issue 13)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "bench_apf.py"

pytestmark = pytest.mark.bench


def test_bench_apf_quick(tmp_path: Path) -> None:
    output = tmp_path / "apf.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--objects", "50", "--flood", "8", "--nodes", "3",
                           "--flows", "4", "--seconds", "1", "--get-duration", "0.2", "--compare-off", "1", "--output", str(output),
                           "--dir", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert "|---" in proc.stdout
    result = json.loads(output.read_text())
    assert result["config"]["objects"] == 50 and result["config"]["quick"] is True

    flood = result["flood"]
    for phase in ("unloaded", "flooded"):
        beats = flood[phase]["heartbeats"]
        assert beats["ok"] > 0 and beats["other"] == 0, beats
        watch = flood[phase]["watch"]
        assert watch["events"] == watch["sent"] > 0  # the kubelet saw every update of its pod
    assert flood["unloaded"]["flood"] is None
    answered = flood["flooded"]["flood"]
    assert answered["ok"] + answered["rejected"] > 0 and answered["other"] == 0, answered
    assert answered["with_retry_after"] == answered["rejected"]  # every 429 says when to come back
    assert all(v is not None and v > 0 for v in flood["ratios"].values()), flood["ratios"]
    # The bootstrap configuration sorts the traffic: the flood and the flows to global-default, the nodes to system
    assert flood["levels"] == {"bench-flood": "global-default", "system:node:node-0": "system",
                               "bench-flow-0": "global-default", "bench-reader": "global-default"}
    off = result["flood_apf_off"]
    assert off["flooded"]["flood"]["ok"] > 0 and off["flooded"]["watch"]["events"] == off["flooded"]["watch"]["sent"]

    fairness = result["fairness"]
    assert sorted(fairness["share_over_mean"]) == [f"bench-flow-{k}" for k in range(4)]
    assert all(f["ok"] > 0 and f["other"] == 0 for f in fairness["flows"].values()), fairness["flows"]
    assert fairness["max_deviation"] is not None

    overhead = result["overhead"]
    assert len(overhead["rates"]["on"]) == len(overhead["rates"]["off"]) == 1
    assert overhead["on_over_off"]["median"] > 0
    # The two servers are what they say: only the first classifies (kube's PF headers)
    assert overhead["classified"] == {"on": True, "off": False}
    assert set(result["goals"]) == {"flood_p99_ratio", "fairness_spread", "overhead_ratio"}
