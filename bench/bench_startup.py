"""Seconds from ``kapi serve`` process start to the first ``ok`` from /readyz.

Run ``python bench/bench_startup.py`` from the repository root. Two cases:
an empty data directory (first start: CA, certificate and database are made),
and a restart over a data directory holding N pods (default 10,000, created once
through the API from the realistic pod fixture, with concurrent clients). For
reference it also times a bare interpreter and ``import kapi.server.serve``, the floor
under any start, and, after one more restart, the first LIST of all the pods. A third case restarts over M ConfigMaps without
owners (default 100,000), written straight into the sqlite file for speed. Prints a Markdown
table and writes JSON.

The servers run with a bytecode cache of their own (``PYTHONPYCACHEPREFIX`` in the temporary
directory, filled by one untimed import), as an installed kapi has its ``.pyc`` files, even where
the environment sets ``PYTHONDONTWRITEBYTECODE``; ``--no-bytecode-cache`` measures the other way.
Beside the wall seconds it reports the server's CPU seconds up to ready, which other load on the
machine disturbs less. ``--direct`` creates only the first ``DIRECT_THROUGH_API`` pods through the API
and writes the others into the sqlite file as copies of them (another name and uid): a data
directory of 100,000 pods in seconds instead of minutes.
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
DIRECT_THROUGH_API = 100  # --direct: pods created through the API, the models of the copies


def pod_template() -> bytes:
    """The fixture pod as a create body: server-set fields dropped, the name a placeholder."""
    pod = json.loads(POD_FIXTURE.read_text())
    meta = pod["metadata"]
    for server_set in ("uid", "resourceVersion", "creationTimestamp", "generateName", "managedFields"):
        meta.pop(server_set, None)
    meta["namespace"] = NAMESPACE
    meta["name"] = NAME_PLACEHOLDER.decode()
    return json.dumps(pod, separators=(",", ":")).encode()


SERVER_ENV: dict[str, str] | None = None  # main() sets the servers' environment (the bytecode cache)
CPU_S: list[float] = []  # the CPU seconds of each timed start, up to ready, in order


def bytecode_cache_env(cache_dir: Path) -> dict[str, str]:
    """This environment with a bytecode cache in ``cache_dir`` (written even under PYTHONDONTWRITEBYTECODE)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache_dir)
    return env


def time_command(code: str) -> float:
    """Wall seconds of ``python -c code`` in this interpreter, run from the repository root."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, env=SERVER_ENV)
    return time.monotonic() - started


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds process ``pid`` has used so far (Linux's /proc; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_start(data_dir: Path) -> float:
    """Start kapi over ``data_dir``, stop it once ready; the seconds to ready (its CPU seconds to CPU_S)."""
    server = start_kapi(data_dir, "--storage-backend", "sqlite", env=SERVER_ENV)
    CPU_S.append(cpu_seconds(server.proc.pid))
    stop(server)
    return server.ready_s


def timed_first_list(data_dir: Path) -> tuple[float, float, int]:
    """Restart, then LIST every pod at once: (seconds to ready, seconds for the list, items listed)."""
    server = start_kapi(data_dir, "--storage-backend", "sqlite", env=SERVER_ENV)
    try:
        started = time.monotonic()
        status, body = server.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")
        list_s = time.monotonic() - started
        if status != 200:
            raise RuntimeError(f"listing pods failed: {status} {body[:300]!r}")
        return server.ready_s, list_s, len(json.loads(body)["items"])
    finally:
        stop(server)


def populate(data_dir: Path, objects: int, concurrency: int, clients: int, direct: bool = False) -> dict[str, Any]:
    """Create ``objects`` pods through the API on a fresh server (``direct``: the first ``DIRECT_THROUGH_API``,
    the others copied into the sqlite file); returns how that went."""
    through_api = min(objects, DIRECT_THROUGH_API) if direct else objects
    server = start_kapi(data_dir, "--storage-backend", "sqlite", env=SERVER_ENV)
    try:
        load = Load(url=server.url, path=f"/api/v1/namespaces/{NAMESPACE}/pods", ca_file=str(server.ca_file),
                    token=server.token, method="POST", body=pod_template(), expect=201, concurrency=concurrency,
                    processes=clients, total=through_api, name_prefix="pod", warmup_requests=0)
        result = run_load(load, server.proc.pid)
        if result.errors:
            raise RuntimeError(f"{result.errors} creates failed; first: {result.first_error}")
        status, body = server.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?limit=1")
        if status != 200:
            raise RuntimeError(f"listing pods failed: {status} {body[:300]!r}")
    finally:
        stop(server)
    copied_s = copy_pods(data_dir, objects - through_api) if objects > through_api else 0.0
    db = data_dir / "kapi.db"
    return {"objects": result.requests + max(0, objects - through_api), "through_api": result.requests,
            "creates_per_s": round(result.rate, 1), "seconds": round(result.seconds, 2),
            "copied_s": round(copied_s, 2),
            "db_bytes": sum(p.stat().st_size for p in data_dir.glob("kapi.db*")) if db.exists() else 0}


def copy_pods(data_dir: Path, count: int) -> float:
    """``count`` more pods in the stopped server's sqlite file, each a copy of one created through the API
    with its own name (``pod-copy-N``) and uid, written in one transaction; seconds."""
    import msgpack

    started = time.monotonic()
    conn = sqlite3.connect(data_dir / "kapi.db", isolation_level=None)
    try:
        prefix = f"/registry/pods/{NAMESPACE}/"
        models = [msgpack.unpackb(value, raw=False) for (value,) in conn.execute(
            "SELECT value FROM current WHERE key >= ? AND key < ? ORDER BY key", (prefix, prefix + "\xff"))]
        if not models:
            raise RuntimeError("no pod to copy in the data directory")
        conn.execute("BEGIN IMMEDIATE")
        (rev,) = conn.execute("SELECT value FROM meta WHERE name = 'revision'").fetchone()
        for i in range(count):
            pod = models[i % len(models)]
            name = f"pod-copy-{i:06d}"
            pod["metadata"]["name"] = name
            pod["metadata"]["uid"] = str(uuid.uuid4())
            rev += 1
            key = prefix + name
            value = msgpack.packb(pod, use_bin_type=True)
            conn.execute("INSERT INTO log (rev, key, create_rev, prev_rev, deleted, value) VALUES (?, ?, ?, 0, 0, ?)",
                         (rev, key, rev, value))
            conn.execute("INSERT INTO current (key, rev, create_rev, value) VALUES (?, ?, ?, ?)",
                         (key, rev, rev, value))
        conn.execute("UPDATE meta SET value = ? WHERE name = 'revision'", (rev,))
        conn.execute("COMMIT")
    finally:
        conn.close()
    return time.monotonic() - started


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
    cpu = CPU_S[-repeat:]
    server = start_kapi(data_dir, "--storage-backend", "sqlite", env=SERVER_ENV)
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
            "min_s": round(min(seconds), 3), "cpu_s": [round(x, 2) for x in cpu], "write_s": round(write_s, 2),
            "listed": listed,
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
    parser.add_argument("--direct", action="store_true", help=f"create only {DIRECT_THROUGH_API} pods through the API "
                        "and copy them into the sqlite file for the rest")
    parser.add_argument("--no-bytecode-cache", action="store_true", help="run the servers as the environment says "
                        "(under PYTHONDONTWRITEBYTECODE, every start compiles kapi's sources again)")
    parser.add_argument("--dir", default=None, help="where the temporary data directories go")
    parser.add_argument("--output", type=Path, default=RESULTS / "startup.json", help="JSON results file")
    args = parser.parse_args(argv)
    objects = args.objects if args.objects is not None else (1000 if args.quick else 10_000)
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 3)
    configmaps = args.configmaps if args.configmaps is not None else (2000 if args.quick else 100_000)

    global SERVER_ENV
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kapi-bench-", dir=args.dir) as tmp:
        root = Path(tmp)
        if not args.no_bytecode_cache:
            SERVER_ENV = bytecode_cache_env(root / "pycache")
            time_command("import kapi.__main__, kapi.server.serve")  # fills the cache, untimed
        python_s = time_command("pass")
        import_s = time_command("import kapi.server.serve")
        empty = [timed_start(root / f"empty-{i}") for i in range(repeat)]
        empty_cpu = CPU_S[-repeat:]
        print(f"empty data dir: {', '.join(f'{s:.2f}' for s in empty)} s "
              f"(CPU {', '.join(f'{s:.2f}' for s in empty_cpu)} s)", flush=True)
        full = root / "full"
        filled = populate(full, objects, args.concurrency, args.clients, direct=args.direct)
        print(f"created {filled['objects']} pods ({filled['through_api']} through the API at "
              f"{filled['creates_per_s']:.0f}/s) ({filled['db_bytes'] / 1e6:.1f} MB on disk)", flush=True)
        restarts = [timed_start(full) for _ in range(repeat)]
        restarts_cpu = CPU_S[-repeat:]
        print(f"restart over {objects} pods: {', '.join(f'{s:.2f}' for s in restarts)} s "
              f"(CPU {', '.join(f'{s:.2f}' for s in restarts_cpu)} s)", flush=True)
        list_ready_s, list_s, listed = timed_first_list(full)
        print(f"restart then LIST all: ready in {list_ready_s:.2f} s, list of {listed} took {list_s:.2f} s", flush=True)
        cms = timed_configmap_restarts(root / "configmaps", configmaps, repeat) if configmaps else None
        if cms is not None:
            print(f"restart over {configmaps} ConfigMaps without owners: "
                  f"{', '.join(f'{x:.2f}' for x in cms['seconds'])} s", flush=True)

    result = {
        "config": {"objects": objects, "repeat": repeat, "quick": args.quick, "direct": args.direct,
                   "bytecode_cache": not args.no_bytecode_cache, "cpus": os.cpu_count(),
                   "python": platform.python_version()},
        "python_s": round(python_s, 3),
        "import_s": round(import_s, 3),
        "empty": {"seconds": [round(s, 3) for s in empty], "median_s": round(median(empty), 3),
                  "min_s": round(min(empty), 3), "cpu_s": [round(s, 2) for s in empty_cpu]},
        "populated": {"objects": objects, "seconds": [round(s, 3) for s in restarts],
                      "median_s": round(median(restarts), 3), "min_s": round(min(restarts), 3),
                      "cpu_s": [round(s, 2) for s in restarts_cpu], "populate": filled},
        "first_list": {"ready_s": round(list_ready_s, 3), "list_s": round(list_s, 3), "items": listed},
        "configmaps": cms,
        "elapsed_s": round(time.monotonic() - started, 1),
    }
    write_json(args.output, result)
    print()
    print("| start | seconds to /readyz ok, median | min | server CPU s, median |")
    print("|---|---:|---:|---:|")
    print(f"| `python -c pass` (floor) | {python_s:.2f} | | |")
    print(f"| `python -c 'import kapi.server.serve'` | {import_s:.2f} | | |")
    print(f"| empty data dir | {result['empty']['median_s']:.2f} | {result['empty']['min_s']:.2f} "
          f"| {median(empty_cpu):.2f} |")
    print(f"| restart, {objects} pods | {result['populated']['median_s']:.2f} | {result['populated']['min_s']:.2f} "
          f"| {median(restarts_cpu):.2f} |")
    print(f"| restart, then the first LIST of all {listed} pods returns | {list_ready_s + list_s:.2f} | | |")
    if cms is not None:
        print(f"| restart, {configmaps} ConfigMaps without owners | {cms['median_s']:.2f} | {cms['min_s']:.2f} "
              f"| {median(cms['cpu_s']):.2f} |")
    print(f"\nbytecode cache: {'no (as the environment says)' if args.no_bytecode_cache else 'yes, its own'}")
    print(f"\nJSON: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
