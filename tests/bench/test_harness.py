"""``python -m bench --quick`` runs end to end and writes its summary (figures are not judged)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.bench


def test_harness_quick(tmp_path: Path) -> None:
    out = tmp_path / "results"
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--output", str(out), "--dir", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr[-4000:]}"

    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) >= {"config", "machine", "ratios", "skipped", "macro", "elapsed_s"}
    assert summary["config"]["quick"] is True
    assert summary["machine"]["nproc"] >= 1
    ratios = summary["ratios"]
    expected = {f"macro.{k}" for k in ("list_all", "list_label", "list_indexed", "list_consistent",
                                       "watch_fan_out", "get", "create")}
    expected |= {f"limit.{k}.{mode}" for k in ("list_all", "get") for mode in ("compiled", "pure")}
    expected |= {"micro.bench_protobuf.encode_compiled_over_pure", "micro.bench_protobuf.decode_compiled_over_pure"}
    assert set(ratios) >= expected
    repeat = summary["config"]["repeat"]
    for key, ratio in ratios.items():
        assert ratio["group"] in ("micro", "macro", "limit"), key
        assert len(ratio["values"]) == repeat, key
        for field in ("min", "median", "max"):
            assert isinstance(ratio[field], (int, float)) and ratio[field] > 0, (key, field)
        assert ratio["min"] <= ratio["median"] <= ratio["max"], key

    table = (out / "summary.md").read_text()
    assert table.startswith("| group | figure |")
    for ratio in ratios.values():
        assert ratio["label"] in table
    if importlib.util.find_spec("matplotlib") is not None:
        assert (out / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
