"""The write path's cost: server CPU per create, merge patch and update of realistic pods and ConfigMaps; one run.

Run ``python bench/bench_writes.py`` from the repository root (``--quick`` for short points).
One ``kapi serve`` (sqlite, a fresh data directory, the default twins). In namespace ``bench-writes``
it creates ``--pods`` pods from ``tests/fixtures/pod.json`` (as a client writes them: no server-set
metadata) and as many ConfigMaps, then, at each of ``--connections`` (8 and 32 kept-alive HTTP/1.1
TLS connections, spread over client processes), runs for ``--seconds``:

- ``pod create``: POST of a new pod (a new name per request);
- ``pod patch``: a JSON merge patch of one annotation, each connection on its own pod;
- ``pod update``: PUT of the whole pod with one annotation changed, each connection on its own pod,
  sending the resourceVersion of the object its previous request returned (GET, change, PUT: what
  controllers do);
- ``configmap create`` and ``configmap patch``: the same for a small ConfigMap.

The server's CPU per operation is the process's CPU delta from ``/proc`` over the window divided by
the operations done (``_common.process_cpu_seconds``): it includes the HTTP, TLS, authentication,
APF, admission and storage work every write has. ``idle_cpu_pct`` is the server's own CPU when
nothing is asked of it (its controllers): read it before small differences. Prints a Markdown table
and writes JSON (``bench/results/writes.json``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import platform
import queue
import secrets
import ssl
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (NAME_PLACEHOLDER, RESULTS, Load, Server, configmap_body, process_cpu_seconds,  # noqa: E402
                     run_load, start_kapi, stop, write_json)
from _workload import pod_template  # noqa: E402

NS = "bench-writes"
PODS = f"/api/v1/namespaces/{NS}/pods"
CONFIGMAPS = f"/api/v1/namespaces/{NS}/configmaps"
MERGE = "application/merge-patch+json"
SHAPES = ("pod create", "pod patch", "pod update", "configmap create", "configmap patch")
KEY = "bench/written"


def pod_create_body(name: str | bytes = NAME_PLACEHOLDER) -> bytes:
    """The fixture pod as a client creates it, in ``NS``, named ``name``."""
    text = name.decode() if isinstance(name, bytes) else name
    return (pod_template().replace("@NAME@", text).replace("@NS@", NS).replace("@TIER@", "a")
            .replace("@NODE@", "node-0").encode())


# ---------------------------------------------------------------- patches and updates


@dataclass(frozen=True, slots=True)
class Writes:
    """Patches or updates of existing objects, each connection on its own object."""

    url: str
    ca_file: str
    token: str
    base: str  # the collection's path
    names: tuple[str, ...]  # connection k (over all processes) writes names[k % len(names)]
    verb: str  # "patch" or "update"
    concurrency: int
    processes: int
    duration_s: float


@dataclass(slots=True)
class _Part:
    requests: int = 0
    errors: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    first_error: str = ""


async def _writes_part(w: Writes, first: int, connections: int, out: Any, go: Any) -> _Part:
    import httpx
    import trio

    part = _Part()
    ctx = ssl.create_default_context(cafile=w.ca_file)
    headers = {"Authorization": f"Bearer {w.token}", "Accept": "application/json"}
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    counter = [0]

    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(httpx.AsyncClient(
            base_url=w.url, verify=ctx, http2=False, limits=limits, headers=headers, timeout=120))
            for _ in range(connections)]
        objects: list[dict[str, Any]] = [{} for _ in clients]

        async def one(k: int, record: bool) -> None:
            client, path = clients[k], f"{w.base}/{w.names[(first + k) % len(w.names)]}"
            counter[0] += 1
            value = f"{secrets.token_hex(2)}-{counter[0]}"
            started = time.perf_counter()
            try:
                if w.verb == "patch":
                    body = json.dumps({"metadata": {"annotations": {KEY: value}}}).encode()
                    resp = await client.patch(path, content=body, headers={"Content-Type": MERGE})
                else:
                    obj = objects[k]
                    if not obj:
                        got = await client.get(path)
                        obj = objects[k] = got.json()
                    obj["metadata"].setdefault("annotations", {})[KEY] = value
                    resp = await client.put(path, content=json.dumps(obj).encode(),
                                            headers={"Content-Type": "application/json"})
                    if resp.status_code == 200:
                        objects[k] = resp.json()
                    else:
                        objects[k] = {}
                ok, detail = resp.status_code == 200, f"{resp.status_code} {resp.text[:300]}"
            except httpx.HTTPError as err:
                ok, detail = False, repr(err)
            if not record:
                return
            if ok:
                part.requests += 1
                part.latencies.append(time.perf_counter() - started)
            else:
                part.errors += 1
                part.first_error = part.first_error or detail

        async def warm(k: int) -> None:
            for _ in range(3):
                await one(k, False)

        async with trio.open_nursery() as nursery:
            for k in range(len(clients)):
                nursery.start_soon(warm, k)
        out.put("ready")
        await trio.to_thread.run_sync(go.wait)
        t0 = time.perf_counter()
        deadline = t0 + w.duration_s

        async def loop(k: int) -> None:
            while time.perf_counter() < deadline:
                await one(k, True)

        async with trio.open_nursery() as nursery:
            for k in range(len(clients)):
                nursery.start_soon(loop, k)
        part.seconds = time.perf_counter() - t0
    return part


def _writes_main(w: Writes, first: int, connections: int, out: Any, go: Any) -> None:
    import trio

    try:
        out.put(trio.run(_writes_part, w, first, connections, out, go))
    except BaseException as err:  # the parent must hear of it instead of waiting forever
        out.put(RuntimeError(f"client: {err!r}"))
        raise


def _get(out: Any, procs: list[Any], timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            got = out.get(timeout=0.5)
        except queue.Empty:
            if any(p.exitcode not in (None, 0) for p in procs):
                raise RuntimeError("a client process died") from None
            if time.monotonic() > deadline:
                raise RuntimeError("the client processes did not answer in time") from None
            continue
        if isinstance(got, BaseException):
            raise RuntimeError(f"a client process failed: {got!r}")
        return got


def run_writes(w: Writes, server_pid: int) -> dict[str, Any]:
    """Run the patches or updates; rate, latency and the server's CPU per operation."""
    processes = max(1, min(w.processes, w.concurrency))
    split = [w.concurrency // processes + (1 if i < w.concurrency % processes else 0) for i in range(processes)]
    ctx = multiprocessing.get_context("spawn")
    out, go = ctx.Queue(), ctx.Event()
    firsts = [sum(split[:i]) for i in range(processes)]
    procs = [ctx.Process(target=_writes_main, args=(w, firsts[i], split[i], out, go), daemon=True)
             for i in range(processes)]
    for p in procs:
        p.start()
    try:
        for _ in procs:
            assert _get(out, procs, 300) == "ready"
        cpu0, t0 = process_cpu_seconds(server_pid), time.perf_counter()
        go.set()
        parts: list[_Part] = [_get(out, procs, w.duration_s + 600) for _ in procs]
        wall, cpu = time.perf_counter() - t0, process_cpu_seconds(server_pid) - cpu0
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    requests = sum(p.requests for p in parts)
    lat = sorted(x for p in parts for x in p.latencies)
    return {"requests": requests, "errors": sum(p.errors for p in parts),
            "rate": sum(p.requests / p.seconds for p in parts if p.seconds),
            "p50_ms": 1000 * lat[len(lat) // 2] if lat else 0.0,
            "p99_ms": 1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else 0.0,
            "server_cpu_ms_per_op": 1000 * cpu / requests if requests else 0.0,
            "server_cpu_pct": 100 * cpu / wall if wall else 0.0,
            "first_error": next((p.first_error for p in parts if p.first_error), "")}


# ---------------------------------------------------------------- the run


def create(server: Server, path: str, body: bytes) -> None:
    status, text = server.request("POST", path, body)
    if status not in (201, 409):
        raise RuntimeError(f"POST {path}: {status} {text[:300]!r}")


def idle_cpu_pct(server: Server, seconds: float) -> float:
    pid = server.proc.pid
    cpu0 = process_cpu_seconds(pid)
    time.sleep(seconds)
    return 100 * (process_cpu_seconds(pid) - cpu0) / seconds


def run(args: argparse.Namespace) -> dict[str, Any]:
    data = Path(args.dir) / f"writes-{time.time_ns()}"
    server = start_kapi(data)
    try:
        create(server, "/api/v1/namespaces", json.dumps({"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": NS}}).encode())
        pods = tuple(f"bench-pod-{i}" for i in range(args.pods))
        cms = tuple(f"bench-cm-{i}" for i in range(args.pods))
        for name in pods:
            create(server, PODS, pod_create_body(name))
        for name in cms:
            create(server, CONFIGMAPS, configmap_body(name))
        idle = idle_cpu_pct(server, 1.0 if args.quick else 3.0)
        points: dict[str, list[dict[str, Any]]] = {shape: [] for shape in SHAPES}
        pid = server.proc.pid
        for conns in args.connections:
            processes = max(1, min(args.processes, conns))
            creates = Load(url=server.url, path=PODS, ca_file=str(server.ca_file), token=server.token,
                           method="POST", body=pod_create_body(), expect=201, concurrency=conns,
                           processes=processes, duration_s=args.seconds, name_prefix="bench-new")
            for shape, load in (("pod create", creates),
                                ("configmap create", replace(creates, path=CONFIGMAPS, body=configmap_body()))):
                r = run_load(load, pid)
                cpu_ms = r.server_cpu_pct / 100 * r.seconds * 1000 / r.requests if r.requests else 0.0
                points[shape].append({"connections": conns, "requests": r.requests, "errors": r.errors,
                                      "rate": r.rate, "p50_ms": r.p50_ms, "p99_ms": r.p99_ms,
                                      "server_cpu_ms_per_op": cpu_ms, "server_cpu_pct": r.server_cpu_pct,
                                      "first_error": r.first_error})
            for shape, base, names, verb in (("pod patch", PODS, pods, "patch"), ("pod update", PODS, pods, "update"),
                                             ("configmap patch", CONFIGMAPS, cms, "patch")):
                w = Writes(server.url, str(server.ca_file), server.token, base, names, verb, conns, processes,
                           args.seconds)
                points[shape].append({"connections": conns, **run_writes(w, pid)})
    finally:
        stop(server)
    for shape, rows in points.items():
        for row in rows:
            for k, v in row.items():
                if isinstance(v, float):
                    row[k] = round(v, 3)
    return {"config": {"pods": args.pods, "seconds": args.seconds, "connections": args.connections,
                       "processes": args.processes, "quick": args.quick, "python": platform.python_version(),
                       "machine": platform.machine()},
            "idle_cpu_pct": round(idle, 2), "points": points}


def table(result: dict[str, Any]) -> str:
    lines = ["| operation | connections | ops/s | server CPU ms/op | server CPU % | p50 ms | p99 ms | errors |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for shape, rows in result["points"].items():
        for r in rows:
            lines.append(f"| {shape} | {r['connections']} | {r['rate']:.0f} | {r['server_cpu_ms_per_op']:.2f} | "
                         f"{r['server_cpu_pct']:.0f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['errors']} |")
    lines.append(f"\nserver idle CPU: {result['idle_cpu_pct']:.1f} %")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short points at 8 connections (for a test)")
    parser.add_argument("--pods", type=int, default=64, help="pods (and ConfigMaps) created first")
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per point")
    parser.add_argument("--connections", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--processes", type=int, default=2, help="client processes per point")
    parser.add_argument("--dir", default=None, help="data directories go here (default: a temporary one)")
    parser.add_argument("--output", default=str(RESULTS / "writes.json"))
    args = parser.parse_args(argv)
    if args.quick:
        args.pods, args.seconds, args.connections, args.processes = 8, min(args.seconds, 1.0), [8], 1
    with tempfile.TemporaryDirectory(prefix="kapi-bench-writes-") as tmp:
        args.dir = args.dir or tmp
        result = run(args)
    print(table(result))
    write_json(Path(args.output), result)
    errors = sum(r["errors"] for rows in result["points"].values() for r in rows)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
