"""Seconds from ``kapi serve`` process start to the first ``ok`` from /readyz.

Run ``python bench/bench_startup.py`` from the repository root. Two cases:
an empty data directory (first start: CA, certificate and database are made),
and a restart over a data directory holding N pods (default 10,000, created once
through the API from the realistic pod fixture, with concurrent clients). For
reference it also times a bare interpreter and ``import kapi.server``, the floor
under any start, and, after one more restart, the first LIST of all the pods. A third case restarts over M ConfigMaps without
owners (default 100,000), written straight into the sqlite file for speed. Prints a Markdown
table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import uuid
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, RESULTS, NAME_PLACEHOLDER, Load, median, run_load, start_kapi, stop, write_json  # noqa: E402

POD_FIXTURE = REPO / "tests" / "fixtures" / "pod.json"
NAMESPACE = "default"


def pod_template() -> bytes:
    """The fixture pod as a create body: server-set fields dropped, the name a placeholder."""
    pod = json.loads(POD_FIXTURE.read_text())
    meta = pod["metadata"]
    for server_set in ("uid", "resourceVersion", "creationTimestamp", "generateName", "managedFields"):
        meta.pop(server_set, None)
    meta["namespace"] = NAMESPACE
    meta["name"] = NAME_PLACEHOLDER.decode()
    return json.dumps(pod, separators=(",", ":")).encode()


def time_command(code: str) -> float:
    """Wall seconds of ``python -c code`` in this interpreter, run from the repository root."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)
    return time.monotonic() - started


def timed_start(data_dir: Path) -> float:
    """Start kapi over ``data_dir``, stop it once ready; the seconds to ready."""
    server = start_kapi(data_dir, "--storage-backend", "sqlite")
    stop(server)
    return server.ready_s


def timed_first_list(data_dir: Path) -> tuple[float, float, int]:
    """Restart, then LIST every pod at once: (seconds to ready, seconds for the list, items listed)."""
    server = start_kapi(data_dir, "--storage-backend", "sqlite")
    try:
        started = time.monotonic()
        status, body = server.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")
        list_s = time.monotonic() - started
        if status != 200:
            raise RuntimeError(f"listing pods failed: {status} {body[:300]!r}")
        return server.ready_s, list_s, len(json.loads(body)["items"])
    finally:
        stop(server)


def populate(data_dir: Path, objects: int, concurrency: int, clients: int) -> dict[str, Any]:
    """Create ``objects`` pods through the API on a fresh server; returns how that went."""
    server = start_kapi(data_dir, "--storage-backend", "sqlite")
    try:
        load = Load(url=server.url, path=f"/api/v1/namespaces/{NAMESPACE}/pods", ca_file=str(server.ca_file),
                    token=server.token, method="POST", body=pod_template(), expect=201, concurrency=concurrency,
                    processes=clients, total=objects, name_prefix="pod", warmup_requests=0)
        result = run_load(load, server.proc.pid)
        if result.errors:
            raise RuntimeError(f"{result.errors} creates failed; first: {result.first_error}")
        status, body = server.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?limit=1")
        if status != 200:
            raise RuntimeError(f"listing pods failed: {status} {body[:300]!r}")
    finally:
        stop(server)
    db = data_dir / "kapi.db"
    return {"objects": result.requests, "creates_per_s": round(result.rate, 1), "seconds": round(result.seconds, 2),
            "db_bytes": sum(p.stat().st_size for p in data_dir.glob("kapi.db*")) if db.exists() else 0}


def write_configmaps(data_dir: Path, count: int) -> float:
    """``count`` owner-less ConfigMaps of about 300 bytes, put into a new kapi.db in one transaction; seconds."""
    import msgpack

    from kapi.storage.sqlite import _SCHEMA

    started = time.monotonic()
    data_dir.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(data_dir / "kapi.db", isolation_level=None)
    try:
        conn.executescript(_SCHEMA)
        conn.execute("BEGIN IMMEDIATE")
        for rev in range(1, count + 1):
            name = f"cm-{rev:06d}"
            key = f"/registry/configmaps/{NAMESPACE}/{name}"
            value = msgpack.packb({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {
                "name": name, "namespace": NAMESPACE, "uid": str(uuid.uuid4()),
                "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"app": f"app-{rev % 100}"}},
                "data": {"config.yaml": f"key: value-{rev}\nother: {'x' * 64}\n"}}, use_bin_type=True)
            conn.execute("INSERT INTO log (rev, key, create_rev, prev_rev, deleted, value) VALUES (?, ?, ?, 0, 0, ?)",
                         (rev, key, rev, value))
            conn.execute("INSERT INTO current (key, rev, create_rev, value) VALUES (?, ?, ?, ?)",
                         (key, rev, rev, value))
        conn.execute("UPDATE meta SET value = ? WHERE name = 'revision'", (count,))
        conn.execute("COMMIT")
    finally:
        conn.close()
    return time.monotonic() - started


def timed_configmap_restarts(data_dir: Path, count: int, repeat: int) -> dict[str, Any]:
    """Restarts over ``count`` ConfigMaps without owners; the seconds to ready, and a LIST's item count."""
    write_s = write_configmaps(data_dir, count)
    print(f"wrote {count} ConfigMaps into the sqlite file in {write_s:.1f} s", flush=True)
    seconds = [timed_start(data_dir) for _ in range(repeat)]
    server = start_kapi(data_dir, "--storage-backend", "sqlite")
    try:
        status, body = server.request("GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps")
        if status != 200:
            raise RuntimeError(f"listing ConfigMaps failed: {status} {body[:300]!r}")
        listed = sum(1 for item in json.loads(body)["items"] if item["metadata"]["name"].startswith("cm-"))
    finally:
        stop(server)
    if listed != count:
        raise RuntimeError(f"the LIST after the restart holds {listed} of the {count} ConfigMaps")
    return {"objects": count, "seconds": [round(x, 3) for x in seconds], "median_s": round(median(seconds), 3),
            "min_s": round(min(seconds), 3), "write_s": round(write_s, 2), "listed": listed,
            "db_bytes": sum(p.stat().st_size for p in data_dir.glob("kapi.db*"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=None, help="pods in the data directory (default 10000, "
                        "or 1000 with --quick)")
    parser.add_argument("--configmaps", type=int, default=None, help="owner-less ConfigMaps of the third case "
                        "(default 100000, or 2000 with --quick; 0 skips it)")
    parser.add_argument("--repeat", type=int, default=None, help="starts timed per case (default 3, 1 with --quick)")
    parser.add_argument("--concurrency", type=int, default=32, help="concurrent creates while populating")
    parser.add_argument("--clients", type=int, default=1, help="client processes while populating")
    parser.add_argument("--quick", action="store_true", help="fewer objects and one start per case")
    parser.add_argument("--dir", default=None, help="where the temporary data directories go")
    parser.add_argument("--output", type=Path, default=RESULTS / "startup.json", help="JSON results file")
    args = parser.parse_args(argv)
    objects = args.objects if args.objects is not None else (1000 if args.quick else 10_000)
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 3)
    configmaps = args.configmaps if args.configmaps is not None else (2000 if args.quick else 100_000)

    started = time.monotonic()
    python_s = time_command("pass")
    import_s = time_command("import kapi.server")
    with tempfile.TemporaryDirectory(prefix="kapi-bench-", dir=args.dir) as tmp:
        root = Path(tmp)
        empty = [timed_start(root / f"empty-{i}") for i in range(repeat)]
        print(f"empty data dir: {', '.join(f'{s:.2f}' for s in empty)} s", flush=True)
        full = root / "full"
        filled = populate(full, objects, args.concurrency, args.clients)
        print(f"created {filled['objects']} pods at {filled['creates_per_s']:.0f}/s "
              f"({filled['db_bytes'] / 1e6:.1f} MB on disk)", flush=True)
        restarts = [timed_start(full) for _ in range(repeat)]
        print(f"restart over {objects} pods: {', '.join(f'{s:.2f}' for s in restarts)} s", flush=True)
        list_ready_s, list_s, listed = timed_first_list(full)
        print(f"restart then LIST all: ready in {list_ready_s:.2f} s, list of {listed} took {list_s:.2f} s", flush=True)
        cms = timed_configmap_restarts(root / "configmaps", configmaps, repeat) if configmaps else None
        if cms is not None:
            print(f"restart over {configmaps} ConfigMaps without owners: "
                  f"{', '.join(f'{x:.2f}' for x in cms['seconds'])} s", flush=True)

    result = {
        "config": {"objects": objects, "repeat": repeat, "quick": args.quick, "cpus": os.cpu_count(),
                   "python": platform.python_version()},
        "python_s": round(python_s, 3),
        "import_s": round(import_s, 3),
        "empty": {"seconds": [round(s, 3) for s in empty], "median_s": round(median(empty), 3),
                  "min_s": round(min(empty), 3)},
        "populated": {"objects": objects, "seconds": [round(s, 3) for s in restarts],
                      "median_s": round(median(restarts), 3), "min_s": round(min(restarts), 3),
                      "populate": filled},
        "first_list": {"ready_s": round(list_ready_s, 3), "list_s": round(list_s, 3), "items": listed},
        "configmaps": cms,
        "elapsed_s": round(time.monotonic() - started, 1),
    }
    write_json(args.output, result)
    print()
    print("| start | seconds to /readyz ok, median | min |")
    print("|---|---:|---:|")
    print(f"| `python -c pass` (floor) | {python_s:.2f} | |")
    print(f"| `python -c 'import kapi.server'` | {import_s:.2f} | |")
    print(f"| empty data dir | {result['empty']['median_s']:.2f} | {result['empty']['min_s']:.2f} |")
    print(f"| restart, {objects} pods | {result['populated']['median_s']:.2f} | {result['populated']['min_s']:.2f} |")
    print(f"| restart, then the first LIST of all {listed} pods returns | {list_ready_s + list_s:.2f} | |")
    if cms is not None:
        print(f"| restart, {configmaps} ConfigMaps without owners | {cms['median_s']:.2f} | {cms['min_s']:.2f} |")
    print(f"\nJSON: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
