"""kapi on etcd3 against sqlite and memory, replicas, and an etcd leader kill.

Run ``python bench/bench_etcd.py`` from the repository root (``--quick`` for a check that everything
runs). etcd members come from ``kapi.testing.EtcdCluster`` (``--unsafe-no-fsync``: the figures
compare kapi's paths, not disks). One run measures:

- **creates/s and p99 at 64 clients** on ``kapi serve`` over memory, sqlite, etcd3 with 1 member and
  etcd3 with 3 members, and the ratios to sqlite;
- **LIST throughput** of N ConfigMaps at ``resourceVersion=0`` (from the watch cache) on an
  etcd-fed server ÷ a sqlite-fed one (expected ≈ 1), and the consistent LIST (no resourceVersion),
  which etcd before 3.5.13 serves from etcd rather than the cache;
- **watch delay across replicas**: creates through replica A, a watch on replica B, each event's
  delay from the moment its create was sent (its own latency included) to its delivery: p50, p99;
- **an etcd leader kill** during a stream of creates through kapi on 3 members (8 writers): the
  longest time without a successful create from the kill on, how long after the kill the first
  create sent after it succeeded, and the requests by status code. A create in flight when the
  leader dies waits for its deadline (5 s): etcd never answers a proposal its dead leader took.

Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import ssl
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    RESULTS,
    Load,
    LoadResult,
    Server,
    configmap_body,
    run_load,
    start_kapi,
    stop,
    write_json,
)

from kapi.testing import EtcdCluster  # noqa: E402

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
LISTED = "/api/v1/namespaces/bench-list/configmaps"  # exactly --objects ConfigMaps, whatever the creates left


def creates(server: Server, args: argparse.Namespace, tag: str) -> LoadResult:
    load = Load(url=server.url, path=CONFIGMAPS, ca_file=str(server.ca_file), token=server.token, method="POST",
                body=configmap_body(), expect=201, concurrency=args.concurrency, processes=args.clients,
                duration_s=args.duration, name_prefix=tag)
    result = run_load(load, server.proc.pid)
    print(f"  {tag:>8} creates c={args.concurrency}: {result.rate:7.0f}/s  p50 {result.p50_ms:6.1f} ms  "
          f"p99 {result.p99_ms:6.1f} ms  server cpu {result.server_cpu_pct:4.0f}%"
          + (f"  ERRORS {result.errors}: {result.first_error[:200]}" if result.errors else ""), flush=True)
    return result


def lists(server: Server, args: argparse.Namespace, query: str) -> LoadResult:
    load = Load(url=server.url, path=f"{LISTED}?{query}" if query else LISTED, ca_file=str(server.ca_file),
                token=server.token, concurrency=8, processes=1, duration_s=args.duration)
    return run_load(load, server.proc.pid)


def fill(server: Server, count: int) -> None:
    """``count`` ConfigMaps in their own namespace, created with 32 concurrent requests."""
    status, text = server.request("POST", "/api/v1/namespaces", json.dumps(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": LISTED.split("/")[4]}}).encode())
    if status != 201:
        raise RuntimeError(f"could not create the namespace to list: {status} {text[:200]!r}")
    load = Load(url=server.url, path=LISTED, ca_file=str(server.ca_file), token=server.token, method="POST",
                body=configmap_body(), expect=201, concurrency=32, processes=1, total=count, name_prefix="fill",
                warmup_requests=0)
    result = run_load(load)
    if result.errors:
        raise RuntimeError(f"filling failed: {result.first_error}")


def backends(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Creates/s per backend, then LIST throughput from an etcd-fed and a sqlite-fed cache."""
    out: dict[str, Any] = {}
    for name, flags, members in (("memory", ("--storage-backend", "memory"), 0),
                                 ("sqlite", ("--storage-backend", "sqlite"), 0),
                                 ("etcd3-1", ("--storage-backend", "etcd3"), 1),
                                 ("etcd3-3", ("--storage-backend", "etcd3"), 3)):
        etcd = EtcdCluster(members=members, directory=root / f"etcd-{name}").start() if members else None
        server = start_kapi(root / name, *flags, *(("--etcd-servers", etcd.servers) if etcd else ()))
        try:
            out[name] = {"create": creates(server, args, name).to_json()}
            if name in ("sqlite", "etcd3-1"):
                fill(server, args.objects)
                out[name]["list_rv0"] = lists(server, args, "resourceVersion=0").to_json()
                out[name]["list_consistent"] = lists(server, args, "").to_json()
        finally:
            stop(server)
            if etcd is not None:
                etcd.stop()
    sqlite = out["sqlite"]["create"]["rate"]
    for name in out:
        out[name]["create_over_sqlite"] = round(out[name]["create"]["rate"] / sqlite, 3) if sqlite else 0.0
    for kind in ("list_rv0", "list_consistent"):
        base = out["sqlite"][kind]["rate"]
        out[f"{kind}_etcd_over_sqlite"] = round(out["etcd3-1"][kind]["rate"] / base, 3) if base else 0.0
    return out


def _watch_events(server: Server, path: str, seen: dict[str, float], stop_flag: threading.Event,
                  ready: threading.Event) -> None:
    """Read a watch on ``server``: record each ADDED ConfigMap's name with the time it arrived."""
    import httpx

    ctx = ssl.create_default_context(cafile=str(server.ca_file))
    with httpx.Client(verify=ctx, timeout=None, headers={"Authorization": f"Bearer {server.token}"}) as client:
        with client.stream("GET", server.url + path) as resp:
            ready.set()
            buffer = b""
            for chunk in resp.iter_raw():
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    event = json.loads(line)
                    if event["type"] == "ADDED":
                        seen[event["object"]["metadata"]["name"]] = time.perf_counter()
                if stop_flag.is_set():
                    return


def replicas(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Watch delay from a write through replica A to its delivery on replica B (one etcd member)."""
    token = secrets.token_hex(16)
    with EtcdCluster(members=1, directory=root / "etcd-replicas") as etcd:
        flags = ("--storage-backend", "etcd3", "--etcd-servers", etcd.servers, "--token", token)
        a = start_kapi(root / "replica-a", *flags)
        b = start_kapi(root / "replica-b", *flags)
        try:
            status, body = b.request("GET", CONFIGMAPS + "?limit=1")
            rv = json.loads(body)["metadata"]["resourceVersion"]
            seen: dict[str, float] = {}
            stop_flag, ready = threading.Event(), threading.Event()
            reader = threading.Thread(target=_watch_events, daemon=True, args=(
                b, f"{CONFIGMAPS}?watch=1&resourceVersion={rv}", seen, stop_flag, ready))
            reader.start()
            ready.wait(30)
            sent: dict[str, float] = {}
            for i in range(args.watch_writes):
                name = f"delay-{i}"
                sent[name] = time.perf_counter()
                status, text = a.request("POST", CONFIGMAPS, configmap_body(name))
                if status != 201:
                    raise RuntimeError(f"create through A: {status} {text[:200]!r}")
                time.sleep(1 / args.watch_rate)
            deadline = time.monotonic() + 30
            while len(seen) < len(sent) and time.monotonic() < deadline:
                time.sleep(0.05)
            stop_flag.set()
            # From the moment the create was sent through A (its own latency included) to the event on B.
            delays = sorted((seen[n] - t) * 1000 for n, t in sent.items() if n in seen)
        finally:
            stop(a)
            stop(b)
    pick = lambda q: round(delays[min(len(delays) - 1, int(q * len(delays)))], 2) if delays else 0.0  # noqa: E731
    return {"writes": len(sent), "delivered": len(delays), "p50_ms": pick(0.5), "p99_ms": pick(0.99)}


def leader_kill(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Creates through kapi on 3 etcd members; the etcd leader is killed after a second of it."""
    import httpx

    with EtcdCluster(members=3, directory=root / "etcd-kill") as etcd:
        server = start_kapi(root / "kill", "--storage-backend", "etcd3", "--etcd-servers", etcd.servers)
        try:
            ctx = ssl.create_default_context(cafile=str(server.ca_file))
            codes: Counter[str] = Counter()
            successes: list[tuple[float, float]] = []  # (sent, answered) of each create answered 201
            lock = threading.Lock()
            end = time.perf_counter() + args.kill_seconds

            def writer(w: int) -> None:
                with httpx.Client(verify=ctx, timeout=30, headers={"Authorization": f"Bearer {server.token}",
                                                                   "Content-Type": "application/json"}) as client:
                    i = 0
                    while time.perf_counter() < end:
                        i += 1
                        sent = time.perf_counter()
                        try:
                            resp = client.post(server.url + CONFIGMAPS, content=configmap_body(f"kill-{w}-{i}"))
                            code = str(resp.status_code)
                        except httpx.HTTPError as exc:
                            code = type(exc).__name__
                        with lock:
                            codes[code] += 1
                            if code == "201":
                                successes.append((sent, time.perf_counter()))

            threads = [threading.Thread(target=writer, args=(w,), daemon=True) for w in range(8)]
            for t in threads:
                t.start()
            time.sleep(1.0)
            killed_at = time.perf_counter()
            etcd.leader().stop(kill=True)
            for t in threads:
                t.join(args.kill_seconds + 60)
        finally:
            stop(server)
    # The longest time without a create answered 201 from the kill on (the window's end counts), and
    # how long after the kill the first create sent after it succeeded.
    answered = sorted(done for _, done in successes)
    marks = [killed_at] + [t for t in answered if t > killed_at] + [end]
    first = min((done for sent, done in successes if sent >= killed_at), default=end)
    return {"seconds_without_a_write": round(max(b - a for a, b in zip(marks, marks[1:])), 3),
            "first_write_sent_after_kill_s": round(first - killed_at, 3),
            "requests_by_code": dict(codes), "created": codes.get("201", 0)}


def table(result: dict[str, Any]) -> str:
    b = result["backends"]
    lines = ["| backend | creates/s at c=64 | p99 ms | ÷ sqlite |", "|---|---:|---:|---:|"]
    for name in ("memory", "sqlite", "etcd3-1", "etcd3-3"):
        c = b[name]["create"]
        lines.append(f"| {name} | {c['rate']:.0f} | {c['p99_ms']:.1f} | {b[name]['create_over_sqlite']:.2f} |")
    lines += ["", f"| LIST of {result['config']['objects']} ConfigMaps, 8 clients | sqlite/s | etcd3/s | etcd3 ÷ sqlite |",
              "|---|---:|---:|---:|"]
    for kind, label in (("list_rv0", "resourceVersion=0 (cache)"), ("list_consistent", "consistent")):
        lines.append(f"| {label} | {b['sqlite'][kind]['rate']:.1f} | {b['etcd3-1'][kind]['rate']:.1f} | "
                     f"{b[f'{kind}_etcd_over_sqlite']:.2f} |")
    r, k = result["replicas"], result["leader_kill"]
    lines += ["", "| watch delay, write through A → event on B | p50 ms | p99 ms | delivered |", "|---|---:|---:|---:|",
              f"| {r['writes']} writes | {r['p50_ms']} | {r['p99_ms']} | {r['delivered']}/{r['writes']} |",
              "", "| etcd leader killed during creates | longest time without a write, s | first write sent "
              "after the kill succeeded after, s | requests by code |",
              "|---|---:|---:|---|",
              f"| 3 members, 8 writers | {k['seconds_without_a_write']} | {k['first_write_sent_after_kill_s']} | "
              + ", ".join(f"{c}: {n}" for c, n in sorted(k["requests_by_code"].items())) + " |"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short points: a check that everything runs")
    parser.add_argument("--duration", type=float, default=None, help="seconds per load point (5, quick 1)")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--clients", type=int, default=1, help="client processes for the create load")
    parser.add_argument("--objects", type=int, default=None, help="ConfigMaps for the LIST (2,000, quick 200)")
    parser.add_argument("--watch-writes", type=int, default=None, help="writes for the watch delay (500, quick 50)")
    parser.add_argument("--watch-rate", type=float, default=100.0, help="writes/s for the watch delay")
    parser.add_argument("--kill-seconds", type=float, default=None,
                        help="the leader-kill write stream, the kill after 1 s of it (15, quick 10)")
    parser.add_argument("--dir", default=None, help="where the temporary data directories go")
    parser.add_argument("--output", type=Path, default=RESULTS / "etcd.json", help="JSON results file")
    args = parser.parse_args(argv)
    args.duration = args.duration or (1.0 if args.quick else 5.0)
    args.objects = args.objects or (200 if args.quick else 2000)
    args.watch_writes = args.watch_writes or (50 if args.quick else 500)
    args.kill_seconds = args.kill_seconds or (10.0 if args.quick else 15.0)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kapi-bench-etcd-", dir=args.dir) as tmp:
        root = Path(tmp)
        print(f"kapi on etcd3, sqlite and memory; {args.duration:g} s per point; {os.cpu_count()} CPUs", flush=True)
        result: dict[str, Any] = {
            "config": {"duration_s": args.duration, "concurrency": args.concurrency, "objects": args.objects,
                       "watch_writes": args.watch_writes, "watch_rate": args.watch_rate,
                       "kill_seconds": args.kill_seconds, "quick": args.quick, "cpus": os.cpu_count(),
                       "python": platform.python_version(), "etcd": "--unsafe-no-fsync"},
            "backends": backends(args, root),
            "replicas": replicas(args, root),
            "leader_kill": leader_kill(args, root),
        }
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    write_json(args.output, result)
    print()
    print(table(result))
    print(f"\nJSON: {args.output}")
    errors = sum(result["backends"][n]["create"]["errors"] for n in ("memory", "sqlite", "etcd3-1", "etcd3-3"))
    if errors:
        print(f"{errors} creates failed; the rates above count only successes", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
