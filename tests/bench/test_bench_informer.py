"""bench/bench_informer.py runs end to end and writes its JSON (figures are not judged)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "bench_informer.py"

pytestmark = pytest.mark.bench


def test_bench_informer_quick(tmp_path: Path) -> None:
    output = tmp_path / "informer.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--pods", "600", "--page-size", "250",
                           "--informers", "12", "--configmaps", "20", "--output", str(output),
                           "--dir", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert "|---" in proc.stdout  # the Markdown tables were printed
    result = json.loads(output.read_text())

    assert result["pods"] == result["load"]["pods"] == 600
    sync = result["sync"]
    assert set(sync) == {"watch_list", "paginated_list", "one_list"}
    for mode in sync.values():
        assert mode["items"] == 600
        assert mode["seconds"] > 0
        assert mode["client_peak_rss_bytes"] >= mode["client_rss_before_bytes"] > 0
        assert mode["server_peak_rss_bytes"] > 0 and mode["server_rss_before_bytes"] > 0
    # Each mode synced the way it says: one WatchList, three pages, one page.
    assert sync["watch_list"]["stats"]["watch_lists"] == 1 and not sync["watch_list"]["stats"]["fell_back"]
    assert sync["paginated_list"]["stats"]["pages"] == 3
    assert sync["one_list"]["stats"]["pages"] == 1
    assert result["ratios"] and all(v > 0 for v in result["ratios"].values())
    assert not any(k.endswith("_over_pure") for k in result["ratios"])  # not taken for a twin benchmark

    restart = result["restart"]
    assert restart["informers"] == restart["resynced"] == 12
    assert restart["objects_each"] == 21  # the ConfigMaps, and the namespace's root CA one
    assert restart["watches"] + restart["watch_lists"] + restart["lists"] >= 12
    spread = restart["reconnect_s"]
    assert spread["min"] <= spread["median"] <= spread["p90"] <= spread["max"] == restart["resync_s"]
    assert restart["resync_s"] > 0 and restart["down_s"] > 0
    assert restart["server_peak_rss_bytes"] > 0 and restart["server_rss_ready_bytes"] > 0
