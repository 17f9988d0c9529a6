"""kapi's informers against ``kapi serve``: the initial sync of many pods, and many informers across a restart.

Run ``python bench/bench_informer.py`` from the repository root (100,000 pods,
200 informers; ``--quick`` for 1,000 pods and 20 informers). Two parts:

- **Sync**: one informer of every pod, in a fresh client process each time, three
  ways: a WatchList (``sendInitialEvents=true``), a consistent LIST in pages of
  ``--page-size`` (resourceVersion "", so the server really paginates), and a
  consistent LIST in one piece. The server is restarted over the same data
  directory before each sync, so every sync meets a server in the same state.
  Per sync: the seconds from the informer's start to ``wait_for_sync()``; the
  client's peak RSS (``ru_maxrss``) and its growth over the RSS just before the
  start; the server's RSS just before the sync and its peak during the sync
  (VmHWM, reset through ``/proc/PID/clear_refs`` just before, so the server's
  own start-up peak is left out). Modes take turns, ``--repeat`` times; medians.
  The pods (realistic ones from the pod fixture, spread as ``_workload.Layout``
  spreads them) are created once through the API; ``--data-dir`` keeps them
  for later runs (a directory that holds pods already is used as it is).
- **Restart**: ``--informers`` informers (WatchList, HTTP/1.1, one shared
  client with a connection for each watch: HTTP/2 would put every watch on one
  connection) of the ConfigMaps of one namespace, in this process. Once all
  have synced, the server is stopped (SIGTERM) and started again on the same
  port and data directory (a small one of its own, so that the figure is the
  informers' and not the loading of a large cache). Measured from the new
  server's readiness: when each informer has its store full again on a freshly
  opened watch or list (min, median, p90 and max over the informers: the
  spread of their jittered backoff), the new server's peak RSS meanwhile, and
  the 429s, 410s and errors the informers met; also the seconds the old server
  took to exit and the new one to start.

Prints a Markdown table per part and writes JSON (``bench/results/informer.json``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import trio

from kapi.client.api import CONFIGMAPS, PODS, Client, Resource
from kapi.client.config import load_kubeconfig
from kapi.client.informer import Informer

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _workload  # noqa: E402
from _common import REPO, RESULTS, Server, median, process_rss_bytes, start_kapi, stop, write_json  # noqa: E402

SERVER_FLAGS = ("--storage-backend", "sqlite")
HERD_NAMESPACE = "informers"
START_TIMEOUT_S = 1800.0  # a restart over 100,000 pods loads them all before it is ready


@dataclass(frozen=True, slots=True)
class Mode:
    """How one informer makes its initial sync."""

    name: str
    label: str
    watch_list: bool
    paginated: bool  # in pages of --page-size; else one LIST (page_size 0)
    initial_list_rv: str  # "0" answers from the watch cache whole, "" is a consistent LIST


MODES = (
    Mode("watch_list", "WatchList (sendInitialEvents)", watch_list=True, paginated=False, initial_list_rv="0"),
    Mode("paginated_list", "consistent LIST in pages", watch_list=False, paginated=True, initial_list_rv=""),
    Mode("one_list", "consistent LIST in one piece", watch_list=False, paginated=False, initial_list_rv=""),
)
MODE_BY_NAME = {m.name: m for m in MODES}


# ---------------------------------------------------------------- /proc


def _status_bytes(pid: int, field: str) -> int:
    """One ``kB`` field of ``/proc/PID/status`` (VmRSS, VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} for process {pid}")


def peak_rss_bytes(pid: int) -> int:
    """The process's peak RSS (VmHWM) since it started or since ``reset_peak_rss``."""
    return _status_bytes(pid, "VmHWM")


def reset_peak_rss(pid: int) -> bool:
    """Reset the process's VmHWM to its current RSS (Linux 4.0+); False when the kernel refuses."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


# ---------------------------------------------------------------- servers and data


def start_server(data_dir: Path, *flags: str) -> Server:
    return start_kapi(data_dir, *SERVER_FLAGS, *flags, timeout_s=START_TIMEOUT_S)


def port_of(server: Server) -> int:
    port = urllib.parse.urlsplit(server.url).port
    if port is None:
        raise RuntimeError(f"no port in {server.url}")
    return port


def wait_port_free(port: int, timeout_s: float = 30.0) -> None:
    """Until ``port`` can be bound as the server binds it (SO_REUSEADDR), after its last owner exited."""
    deadline = time.monotonic() + timeout_s
    while True:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
                return
            except OSError as err:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"port {port} is still taken: {err}") from err
        time.sleep(0.05)


def restart_on_port(data_dir: Path, port: int) -> Server:
    """Start the server again on ``port``, so that clients find it where it was."""
    wait_port_free(port)
    return start_server(data_dir, "--secure-port", str(port))


def check(answer: tuple[int, bytes], *expected: int) -> bytes:
    status, body = answer
    if status not in expected:
        raise RuntimeError(f"expected {expected}, got {status}: {body[:300]!r}")
    return body


def create_namespace(server: Server, name: str) -> None:
    """Create a namespace (one that exists already is fine)."""
    check(server.request("POST", "/api/v1/namespaces", json.dumps(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}).encode()), 201, 409)


def count(server: Server, path: str) -> int:
    """How many objects a collection holds, from a one-item page."""
    page = json.loads(check(server.request("GET", f"{path}?limit=1"), 200))
    meta = page.get("metadata") or {}
    if meta.get("continue") and "remainingItemCount" not in meta:
        raise RuntimeError(f"GET {path}?limit=1 gave a continue token but no remainingItemCount")
    return len(page["items"]) + int(meta.get("remainingItemCount") or 0)


def ensure_pods(data_dir: Path, args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    """The pods in ``data_dir``, created through the API unless it holds some already; (count, load figures)."""
    server = start_server(data_dir)
    try:
        found = count(server, "/api/v1/pods")
        if found:
            print(f"using the {found} pods already in {data_dir}", flush=True)
            return found, {"pods": found, "reused": True}
        layout = _workload.Layout(args.pods, args.nodes, args.namespaces)
        for k in range(layout.namespaces):
            create_namespace(server, f"ns-{k}")
        print(f"loading {layout.pods} pods ...", flush=True)
        load = _workload.load_pods(server, layout, args.clients, args.concurrency)
        print(f"  {load['creates_per_s']:.0f} creates/s in {load['seconds']:.0f} s", flush=True)
        return count(server, "/api/v1/pods"), {**load, "reused": False}
    finally:
        stop(server)


# ---------------------------------------------------------------- part 1: one sync, in a child process


def make_informer(client: Client, res: Resource, mode: Mode, page_size: int) -> Informer:
    """An informer syncing as ``mode`` says."""
    size = page_size if mode.paginated else 0
    return Informer(client, res, watch_list=mode.watch_list, page_size=size, initial_list_rv=mode.initial_list_rv)


async def sync_once(mode: Mode, kubeconfig: Path, server_pid: int, page_size: int) -> dict[str, Any]:
    """Sync one informer of every pod; the seconds, both sides' memory and the reflector's counters."""
    async with Client(load_kubeconfig(kubeconfig)) as client:
        informer = make_informer(client, PODS, mode, page_size)
        rss_before = process_rss_bytes(os.getpid())
        server_rss_before = process_rss_bytes(server_pid)
        server_startup_peak = peak_rss_bytes(server_pid)
        hwm_reset = reset_peak_rss(server_pid)
        started = time.perf_counter()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(informer.run)
            await informer.wait_for_sync()
            seconds = time.perf_counter() - started
            nursery.cancel_scope.cancel()
        server_peak = peak_rss_bytes(server_pid)
        client_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux
        return {"mode": mode.name, "items": len(informer.store), "seconds": seconds,
                "client_rss_before_bytes": rss_before, "client_peak_rss_bytes": client_peak,
                "client_peak_growth_bytes": client_peak - rss_before,
                "server_rss_before_bytes": server_rss_before, "server_peak_rss_bytes": server_peak,
                "server_peak_growth_bytes": server_peak - server_rss_before,
                "server_startup_peak_rss_bytes": server_startup_peak, "server_peak_reset": hwm_reset,
                "stats": asdict(informer.reflector.stats)}


def child_main(args: argparse.Namespace) -> int:
    """``--child MODE``: one sync in this fresh process; its figures as one JSON line on stdout."""
    result = trio.run(sync_once, MODE_BY_NAME[args.child], Path(args.kubeconfig), args.server_pid, args.page_size)
    print(json.dumps(result), flush=True)
    return 0


def run_child(mode: Mode, server: Server, data_dir: Path, page_size: int) -> dict[str, Any]:
    """One sync in a fresh client process against ``server``."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", mode.name,
           "--kubeconfig", str(data_dir / "admin.kubeconfig"), "--server-pid", str(server.proc.pid),
           "--page-size", str(page_size)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=START_TIMEOUT_S)
    if proc.returncode != 0:
        raise RuntimeError(f"the {mode.name} client exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the numeric figures of repeated syncs (the counters of the last one)."""
    numeric = [k for k, v in runs[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    out: dict[str, Any] = {k: median([float(r[k]) for r in runs]) for k in numeric}
    out.update({k: int(v) for k, v in out.items() if k.endswith("_bytes") or k == "items"})
    out["seconds"] = round(out["seconds"], 3)
    out["server_peak_reset"] = all(r["server_peak_reset"] for r in runs)
    out["stats"] = runs[-1]["stats"]
    out["seconds_values"] = [round(r["seconds"], 3) for r in runs]
    return out


def wait_idle(server: Server, timeout_s: float = 600.0) -> float:
    """Seconds until the server's own work after /readyz (its controllers' first pass over
    every object) is done: under 5 % of a core over a second. A sync measured earlier would
    share the server with that work."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        cpu0 = server.cpu_seconds()
        time.sleep(1.0)
        if server.cpu_seconds() - cpu0 < 0.05:
            break
    return round(time.monotonic() - started - 1.0, 1)


def measure_syncs(data_dir: Path, pods: int, args: argparse.Namespace) -> dict[str, Any]:
    """Every mode ``--repeat`` times, taking turns, each against a freshly started server once it is idle."""
    runs: dict[str, list[dict[str, Any]]] = {m.name: [] for m in MODES}
    for rep in range(args.repeat):
        for mode in MODES:
            server = start_server(data_dir)
            try:
                busy_s = wait_idle(server)
                run = run_child(mode, server, data_dir, args.page_size)
                run["server_busy_after_ready_s"] = busy_s
            finally:
                stop(server)
            if run["items"] != pods:
                raise RuntimeError(f"{mode.name}: the informer synced {run['items']} pods of {pods}")
            runs[mode.name].append(run)
            print(f"  {mode.name} #{rep + 1}: {run['seconds']:.2f} s", flush=True)
    return {name: summarize(r) for name, r in runs.items()}


def sync_ratios(sync: dict[str, Any]) -> dict[str, float]:
    """The WatchList and the paginated LIST against one LIST: seconds and peak memory growth."""
    base = sync["one_list"]
    out: dict[str, float] = {}
    for name in ("watch_list", "paginated_list"):
        for figure, key in (("seconds", "seconds"), ("client_peak_growth", "client_peak_growth_bytes"),
                            ("server_peak_growth", "server_peak_growth_bytes")):
            if base[key] > 0:
                out[f"{name}_over_one_list_{figure}"] = round(sync[name][key] / base[key], 3)
    return out


# ---------------------------------------------------------------- part 2: many informers, one restart


@dataclass(slots=True)
class Tracked:
    """One informer of the herd, and what it had done before the restart."""

    informer: Informer
    opened_before: int = 0  # syncs and watches opened before the restart
    back_at: float | None = None  # time.monotonic() of its first full store on a new stream


@dataclass(frozen=True, slots=True)
class Ready:
    """The restarted server, as it was the moment it became ready."""

    server: Server
    at: float  # time.monotonic()
    rss_bytes: int
    startup_peak_rss_bytes: int
    peak_reset: bool  # its peak RSS was reset then: a later peak is the informers' doing


# What the informers did from the restart on: 429s, 410s, other failures, and how they came back
# (a watch resumed from the resourceVersion they held, or a new sync).
COUNTED = ("throttled", "gone", "errors", "watches", "watch_lists", "lists")


def _opened(informer: Informer) -> int:
    s = informer.reflector.stats
    return int(s.lists + s.watch_lists + s.watches)


def _back(t: Tracked, expected: int) -> bool:
    """Synced again after the restart: a new list or watch opened, a resourceVersion held, the store full."""
    inf = t.informer
    return _opened(inf) > t.opened_before and inf.resource_version is not None and len(inf.store) == expected


async def track(herd: list[Tracked], expected: int, poll_s: float = 0.002) -> None:
    """Stamp each informer's return; return once all are back."""
    while any(t.back_at is None for t in herd):
        now = time.monotonic()
        for t in herd:
            if t.back_at is None and _back(t, expected):
                t.back_at = now
        await trio.sleep(poll_s)


def _stat_sums(herd: list[Tracked]) -> dict[str, int]:
    return {name: sum(int(getattr(t.informer.reflector.stats, name)) for t in herd) for name in COUNTED}


def stop_if_running(server: Server) -> None:
    if server.proc.poll() is None:
        stop(server)


def seed_herd(server: Server, configmaps: int) -> int:
    """The herd's namespace and its ConfigMaps; how many ConfigMaps it holds (with the root CA one)."""
    create_namespace(server, HERD_NAMESPACE)
    for i in range(configmaps):
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i:04d}"},
                           "data": {"key": f"value-{i}"}}).encode()
        check(server.request("POST", f"/api/v1/namespaces/{HERD_NAMESPACE}/configmaps", body), 201, 409)
    return count(server, f"/api/v1/namespaces/{HERD_NAMESPACE}/configmaps")


def restart_ready(data_dir: Path, port: int, running: contextlib.ExitStack) -> Ready:
    """Restart on ``port`` (stopped when ``running`` closes); read its memory at once and reset its peak."""
    server = restart_on_port(data_dir, port)
    running.callback(stop_if_running, server)
    at = time.monotonic()
    pid = server.proc.pid
    rss, startup_peak = process_rss_bytes(pid), peak_rss_bytes(pid)
    return Ready(server, at, rss, startup_peak, reset_peak_rss(pid))


async def restart_under(herd: list[Tracked], expected: int, server: Server, data_dir: Path,
                        running: contextlib.ExitStack, timeout_s: float) -> dict[str, Any]:
    """Stop the server under the synced herd, start it again on its port; time each informer's return."""
    port = port_of(server)
    before = _stat_sums(herd)
    stopping = time.monotonic()
    await trio.to_thread.run_sync(stop, server)  # in a thread: the informers live through the shutdown
    stopped = time.monotonic()
    # Counted once the old process is gone: nothing it did can pass for a return.
    for t in herd:
        t.opened_before = _opened(t.informer)
    restarted: list[Ready] = []

    async def restart() -> None:
        restarted.append(await trio.to_thread.run_sync(restart_ready, data_dir, port, running))

    with trio.move_on_after(timeout_s) as waiting:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(restart)
            await track(herd, expected)
    if waiting.cancelled_caught or not restarted:
        missing = sum(t.back_at is None for t in herd)
        raise RuntimeError(f"{missing} of {len(herd)} informers had not synced again {timeout_s:.0f} s "
                           "after the restart")
    ready = restarted[0]
    offsets = sorted(t.back_at - ready.at for t in herd if t.back_at is not None)
    after = _stat_sums(herd)
    return {
        "down_s": round(ready.at - stopping, 3), "stop_s": round(stopped - stopping, 3),
        "start_s": round(ready.server.ready_s, 3), "resynced": len(offsets), "resync_s": round(offsets[-1], 3),
        "reconnect_s": {"min": round(offsets[0], 3), "median": round(statistics.median(offsets), 3),
                        "p90": round(_pct(offsets, 0.9), 3), "max": round(offsets[-1], 3)},
        "server_rss_ready_bytes": ready.rss_bytes, "server_startup_peak_rss_bytes": ready.startup_peak_rss_bytes,
        "server_peak_rss_bytes": peak_rss_bytes(ready.server.proc.pid), "server_peak_reset": ready.peak_reset,
        **{name: after[name] - before[name] for name in COUNTED},
    }


async def herd_restart(data_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Sync ``--informers`` informers sharing one client, then restart the server under them."""
    with contextlib.ExitStack() as running:  # every server started here is stopped on the way out
        server = await trio.to_thread.run_sync(start_server, data_dir)
        running.callback(stop_if_running, server)
        expected = await trio.to_thread.run_sync(seed_herd, server, args.configmaps)
        config = load_kubeconfig(data_dir / "admin.kubeconfig")
        async with Client(config, http2=False, max_connections=args.informers + 10) as client, \
                trio.open_nursery() as nursery:
            herd = [Tracked(Informer(client, CONFIGMAPS, namespace=HERD_NAMESPACE)) for _ in range(args.informers)]
            started = time.monotonic()
            for t in herd:
                nursery.start_soon(t.informer.run)
            for t in herd:
                await t.informer.wait_for_sync()
            sync_s = time.monotonic() - started
            figures = await restart_under(herd, expected, server, data_dir, running, args.resync_timeout)
            nursery.cancel_scope.cancel()
    return {"informers": args.informers, "objects_each": expected, "sync_s": round(sync_s, 3), **figures}


def _pct(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


# ---------------------------------------------------------------- report


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def sync_table(sync: dict[str, Any], pods: int) -> list[str]:
    rows = [f"| sync of {pods} pods (median) | seconds | client peak RSS (growth) | "
            "server RSS before | server peak during sync (growth) | pages |",
            "|---|---:|---:|---:|---:|---:|"]
    for mode in MODES:
        r = sync[mode.name]
        rows.append(f"| {mode.label} | {r['seconds']:.2f} | {_mb(r['client_peak_rss_bytes'])} "
                    f"({_mb(r['client_peak_growth_bytes'])}) | {_mb(r['server_rss_before_bytes'])} | "
                    f"{_mb(r['server_peak_rss_bytes'])} ({_mb(r['server_peak_growth_bytes'])}) | "
                    f"{r['stats']['pages'] or '-'} |")
    return rows


def herd_table(h: dict[str, Any]) -> list[str]:
    rc = h["reconnect_s"]
    return [
        "| restart under informers | figure |",
        "|---|---:|",
        f"| informers (ConfigMaps of one namespace, {h['objects_each']} each) | {h['informers']} |",
        f"| initial sync of all | {h['sync_s']:.2f} s |",
        f"| SIGTERM to the new server ready (old one exited; new one started) | {h['down_s']:.2f} s "
        f"({h['stop_s']:.2f}; {h['start_s']:.2f}) |",
        f"| ready to every informer synced again | {h['resync_s']:.2f} s ({h['resynced']}/{h['informers']}) |",
        f"| each informer back, after ready: min / median / p90 / max | {rc['min']:.2f} / {rc['median']:.2f} / "
        f"{rc['p90']:.2f} / {rc['max']:.2f} s |",
        f"| server RSS at ready; peak while they returned | {_mb(h['server_rss_ready_bytes'])}; "
        f"{_mb(h['server_peak_rss_bytes'])} |",
        f"| 429s / 410s / other errors met | {h['throttled']} / {h['gone']} / {h['errors']} |",
        f"| watches resumed / new WatchLists / new LISTs | {h['watches']} / {h['watch_lists']} / {h['lists']} |",
    ]


# ---------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=None, help="pods to sync (default 100000, 1000 with --quick)")
    parser.add_argument("--nodes", type=int, default=4000)
    parser.add_argument("--namespaces", type=int, default=None, help="namespaces of the pods (default 100, 10 quick)")
    parser.add_argument("--clients", type=int, default=2, help="client processes while loading")
    parser.add_argument("--concurrency", type=int, default=32, help="concurrent creates while loading, in all")
    parser.add_argument("--page-size", type=int, default=500, help="pods per page of the paginated LIST")
    parser.add_argument("--repeat", type=int, default=None, help="syncs per mode (default 3, 1 with --quick)")
    parser.add_argument("--informers", type=int, default=None, help="informers across the restart (default 200, "
                        "20 with --quick)")
    parser.add_argument("--configmaps", type=int, default=50, help="ConfigMaps each of those informers holds")
    parser.add_argument("--resync-timeout", type=float, default=600.0,
                        help="seconds the informers get to return after the restart")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="keep the pods here, for later runs (used as it is if it holds pods already)")
    parser.add_argument("--quick", action="store_true", help="1,000 pods, 20 informers, one sync per mode")
    parser.add_argument("--dir", default=None, help="where the temporary data directories go")
    parser.add_argument("--output", type=Path, default=RESULTS / "informer.json", help="JSON results file")
    # A sync in a fresh client process: this script runs itself with these.
    parser.add_argument("--child", choices=list(MODE_BY_NAME), help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    parser.add_argument("--server-pid", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.pods = args.pods if args.pods is not None else (1000 if args.quick else 100_000)
    args.namespaces = args.namespaces if args.namespaces is not None else (10 if args.quick else 100)
    args.repeat = args.repeat if args.repeat is not None else (1 if args.quick else 3)
    args.informers = args.informers if args.informers is not None else (20 if args.quick else 200)
    if min(args.pods, args.repeat, args.informers, args.page_size) < 1:
        parser.error("--pods, --repeat, --informers and --page-size must be at least 1")
    return args


def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    pods_dir = args.data_dir or root / "pods"
    pods, load = ensure_pods(pods_dir, args)
    print(f"syncing {pods} pods, {args.repeat}× each way ...", flush=True)
    sync = measure_syncs(pods_dir, pods, args)
    print(f"{args.informers} informers across a restart ...", flush=True)
    herd = trio.run(herd_restart, root / "informers", args)
    return {"pods": pods, "load": load, "sync": sync, "ratios": sync_ratios(sync), "restart": herd}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return child_main(args)
    # Every informer's watch holds a connection; the server inherits this process's descriptor limit.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, args.informers * 4 + 1024)), hard))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kapi-bench-informer-", dir=args.dir) as tmp:
        result = run(args, Path(tmp))
    result = {"config": {"pods": result["pods"], "page_size": args.page_size, "repeat": args.repeat,
                         "informers": args.informers, "configmaps": args.configmaps, "quick": args.quick,
                         "cpus": os.cpu_count(), "python": platform.python_version(),
                         "sync_client": "one informer per fresh process, HTTP/2, JSON",
                         "restart_client": "one process, one client, HTTP/1.1, a connection per watch"},
              **result, "elapsed_s": round(time.monotonic() - started, 1)}
    write_json(args.output, result)
    print()
    print("\n".join(sync_table(result["sync"], result["pods"])))
    print()
    print("\n".join(herd_table(result["restart"])))
    print(f"\nJSON: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
