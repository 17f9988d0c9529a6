"""The HTTP and startup benchmarks run end to end and write their JSON (figures are not judged)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"

pytestmark = pytest.mark.bench


def run_bench(script: str, output: Path, *args: str) -> dict[str, Any]:
    """Run one benchmark script with --quick; fail with its output unless it exits 0."""
    proc = subprocess.run([sys.executable, str(BENCH / script), "--quick", "--output", str(output), *args],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{script} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert "|---" in proc.stdout  # the Markdown table was printed
    return json.loads(output.read_text())


def assert_point(point: dict[str, Any]) -> None:
    """One load point answered every request it sent."""
    assert point["requests"] > 0
    assert point["errors"] == 0, point["first_error"]
    assert point["rate"] > 0


def test_bench_http_quick(tmp_path: Path) -> None:
    result = run_bench("bench_http.py", tmp_path / "http.json", "--duration", "0.3", "--dir", str(tmp_path))
    assert [p["concurrency"] for p in result["points"]] == [1, 16, 64]
    for point in result["points"]:
        for side in ("kapi_get", "bare_get", "kapi_create", "bare_create"):
            assert_point(point[side])
        assert point["get_ratio"] > 0 and point["create_ratio"] > 0
    gc = result["group_commit"]
    assert gc["concurrency"] == 64
    assert_point(gc["true"])
    assert_point(gc["false"])
    assert set(result["goals"]) >= {"get_ratio", "create_ratio", "get_met", "create_met"}


def test_bench_startup_quick(tmp_path: Path) -> None:
    result = run_bench("bench_startup.py", tmp_path / "startup.json", "--objects", "300", "--dir", str(tmp_path))
    assert result["config"]["objects"] == 300
    assert result["populated"]["populate"]["objects"] == 300
    for case in ("empty", "populated"):
        assert len(result[case]["seconds"]) == 1
        assert result[case]["median_s"] > 0
    assert result["import_s"] > 0
    assert result["first_list"]["items"] == 300


def test_bench_cache_quick(tmp_path: Path) -> None:
    result = run_bench("bench_cache.py", tmp_path / "cache.json", "--pods", "200", "--watchers", "20",
                       "--node-watchers", "40", "--few-node-watchers", "10", "--node-updates", "20",
                       "--watch-seconds", "0.5", "--list-repeat", "1", "--selector-repeat", "20",
                       "--dir", str(tmp_path))
    assert result["load"]["pods"] == 200
    lists = result["list"]
    assert lists["everything"]["items"] == 200 and lists["everything"]["ratio"] > 0
    assert lists["indexed"]["items"] >= 1 and lists["unindexed"]["items"] == 0
    assert lists["label"]["items"] == 10  # tier=gold on every 20th pod
    fan_out = result["fan_out"]
    assert fan_out["watchers"] == 20 and fan_out["deliveries"] == fan_out["expected_deliveries"] > 0
    nodes = result["node_watchers"]
    assert [nodes[k]["watchers"] for k in ("0", "10", "40")] == [0, 10, 40]
    assert nodes["10"]["deliveries"] == nodes["40"]["deliveries"] == 20
    assert result["startup"]["ready_s"] > 0 and result["memory"]["json_bytes"] > 0


def test_bench_protobuf_list_quick(tmp_path: Path) -> None:
    result = run_bench("bench_protobuf_list.py", tmp_path / "protobuf_list.json", "--pods", "200",
                       "--repeat", "2", "--dir", str(tmp_path))
    assert result["load"]["pods"] == 200
    lists = result["list"]
    assert lists["items"] == 200
    assert lists["check"] == {"items_counted": 200, "items": 200, "decode_s": lists["check"]["decode_s"]}
    assert lists["protobuf_first"]["bytes"] == lists["protobuf_cached"]["bytes"] < lists["json"]["bytes"]
    assert len(lists["json"]["seconds"]) == len(lists["protobuf_cached"]["seconds"]) == 2
    assert set(lists["ratios"]) == {"protobuf_over_json_bytes", "cached_protobuf_over_json_s",
                                    "first_over_cached_protobuf_s"}


def test_bench_etcd_quick(tmp_path: Path) -> None:
    result = run_bench("bench_etcd.py", tmp_path / "etcd.json", "--duration", "0.3", "--objects", "50",
                       "--watch-writes", "10", "--kill-seconds", "7", "--dir", str(tmp_path))
    backends = result["backends"]
    for name in ("memory", "sqlite", "etcd3-1", "etcd3-3"):
        assert_point(backends[name]["create"])
        assert backends[name]["create_over_sqlite"] > 0
    for kind in ("list_rv0", "list_consistent"):
        for name in ("sqlite", "etcd3-1"):
            assert_point(backends[name][kind])
    assert result["replicas"]["delivered"] == result["replicas"]["writes"] == 10
    kill = result["leader_kill"]
    assert kill["created"] > 0 and set(kill["requests_by_code"]) <= {"201", "503", "504"}
