"""The watch cache at scale: one ``kapi serve`` (sqlite) holding N realistic pods.

Run ``python bench/bench_cache.py`` from the repository root (100,000 pods;
``--quick`` for 5,000). The pods come from the realistic pod fixture, spread
over 4,000 nodes and 100 namespaces, each with its own name, labels and node;
every 20th carries ``tier=gold`` (a 5 % label selector). One run measures:
loading through the API; LIST of everything at resourceVersion=0 against a bare
hypercorn app sending a body of the same size; indexed against unindexed field
selectors; a 5 % label selector; consistent against rv=0 LIST; the server's RSS
per object; a watch fan-out; the CPU cost per update with 4,000 node-scoped
watchers against 100; and the restart to /readyz. Prints a Markdown table and
writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    BARE_LIST_PATH,
    RESULTS,
    Server,
    process_rss_bytes,
    start_bare,
    start_kapi,
    stop,
    write_json,
)
from _workload import (  # noqa: E402
    Fetched,
    Layout,
    Target,
    Watching,
    current_rv,
    load_pods,
    raw_get,
    timed_gets,
    watch_path,
    write_updates,
)

GOALS = {
    "list_ratio": 0.70,  # kapi ÷ bare bytes/s, LIST of everything at rv=0 (at least)
    "indexed_ms": 2.0,  # median response time, indexed field selector (at most)
    "unindexed_over_indexed": 100.0,  # (at least)
    "consistent_over_rv0": 1.2,  # (at most)
    "rss_over_json": 1.3,  # RSS per object ÷ JSON size (at most)
    "node_watchers_cpu_ratio": 1.5,  # CPU per update, many node watchers ÷ few (at most)
}


# ---------------------------------------------------------------- the measures


def list_count(server: Server, path: str) -> int:
    """How many items a LIST returns."""
    status, body = server.request("GET", path)
    if status != 200:
        raise RuntimeError(f"GET {path}: {status} {body[:300]!r}")
    return len(json.loads(body)["items"])


def cache_list_metrics(server: Server) -> dict[str, float]:
    """The apiserver_cache_list_* counters for pods, by their labels."""
    status, body = server.request("GET", "/metrics")
    if status != 200:
        return {}
    found: dict[str, float] = {}
    for line in body.decode().splitlines():
        if line.startswith("apiserver_cache_list_") and 'resource="pods"' in line:
            name, _, value = line.rpartition(" ")
            found[name] = float(value)
    return found


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def fan_out(server: Server, layout: Layout, args: argparse.Namespace) -> dict[str, Any]:
    """``args.watchers`` namespace watchers; the writer patches pods in every namespace at a steady rate."""
    target = Target.of(server)
    rv = current_rv(server)
    paths = [watch_path(f"/api/v1/namespaces/ns-{w % layout.namespaces}/pods", rv) for w in range(args.watchers)]
    t0 = time.perf_counter()
    watching = Watching.open(target, paths, args.watch_clients)
    open_s = time.perf_counter() - t0
    count = int(args.update_rate * args.watch_seconds)
    pods = [(layout.namespace(i), layout.name(i)) for i in range(min(layout.pods, count))]
    per_ns = [len(range(k, args.watchers, layout.namespaces)) for k in range(layout.namespaces)]
    expected = sum(per_ns[int(pods[k % len(pods)][0][3:])] for k in range(count))
    cpu0 = server.cpu_seconds()
    written = write_updates(target, pods, args.update_rate, count)
    time.sleep(1.0)  # let the last events arrive
    cpu = server.cpu_seconds() - cpu0
    parts = watching.close()
    delays = [d for p in parts for d in p.delays_ms]
    deliveries = sum(p.deliveries for p in parts)
    return {"watchers": watching.connected, "connect_s": round(open_s, 2), "updates": written.sent,
            "update_rate": args.update_rate, "late_writes": written.late, "expected_deliveries": expected,
            "deliveries": deliveries, "deliveries_per_s": round(deliveries / written.seconds, 1),
            "p50_delay_ms": round(pct(delays, 0.50), 2), "p99_delay_ms": round(pct(delays, 0.99), 2),
            "max_delay_ms": round(max(delays, default=0.0), 2),
            "server_cpu_pct": round(100 * cpu / (written.seconds + 1.0), 1),
            "client_cpu_pct": round(100 * sum(p.cpu_s for p in parts) / (written.seconds + 1.0 + open_s), 1)}


def node_watchers(server: Server, layout: Layout, watchers: int, args: argparse.Namespace) -> dict[str, Any]:
    """``watchers`` node-scoped watchers (node-0 ..); server CPU per update of pods on the first nodes."""
    target = Target.of(server)
    rv = current_rv(server)
    paths = [watch_path("/api/v1/pods", rv, fieldSelector=f"spec.nodeName=node-{j}") for j in range(watchers)]
    t0 = time.perf_counter()
    watching = Watching.open(target, paths, args.watch_clients)
    open_s = time.perf_counter() - t0
    # The same pods in both cases (those on the nodes the fewer watchers cover): each update has one
    # interested watcher either way, so any difference is the cost of the watchers that do not care.
    pods = [(layout.namespace(i), layout.name(i)) for i in layout.on_first_nodes(args.few_node_watchers)]
    time.sleep(1.0)  # let the server settle after the connection storm
    cpu0 = server.cpu_seconds()
    written = write_updates(target, pods, args.update_rate, args.node_updates)
    time.sleep(0.5)
    cpu = server.cpu_seconds() - cpu0
    parts = watching.close()
    delays = [d for p in parts for d in p.delays_ms]
    return {"watchers": watching.connected, "connect_s": round(open_s, 2), "updates": written.sent,
            "late_writes": written.late, "deliveries": sum(p.deliveries for p in parts),
            "server_cpu_s": round(cpu, 3), "cpu_ms_per_update": round(1000 * cpu / written.sent, 3),
            "p99_delay_ms": round(pct(delays, 0.99), 2)}


# ---------------------------------------------------------------- the run


def measure_lists(server: Server, root: Path, layout: Layout, args: argparse.Namespace) -> dict[str, Any]:
    """Everything about LIST: bandwidth against bare, selectors, consistent against rv=0."""
    target = Target.of(server)
    n = layout.pods
    everything = "/api/v1/pods?resourceVersion=0"
    first = raw_get(target, everything, keep=True)
    if first.status != 200:
        raise RuntimeError(f"LIST everything: {first.status} {first.body[:300]!r}")
    import orjson  # a tenth of the time of json for a body of hundreds of megabytes

    listed = len(orjson.loads(first.body)["items"])
    if listed != n:
        raise RuntimeError(f"LIST everything returned {listed} pods, not {n}")
    list_bytes = len(first.body)
    del first
    rss_after = process_rss_bytes(server.proc.pid)

    # Interleaved, so that drift on the machine touches both kinds alike.
    rv0: list[Fetched] = []
    consistent: list[Fetched] = []
    for _ in range(args.list_repeat):
        rv0.append(raw_get(target, everything))
        consistent.append(raw_get(target, "/api/v1/pods"))
    if any(f.status != 200 for f in rv0 + consistent):
        raise RuntimeError("a LIST of everything failed")
    pki = server.ca_file.parent
    bare = start_bare(pki / "apiserver.crt", pki / "apiserver.key", server.ca_file, root / "bare",
                      list_bytes=list_bytes)
    try:
        bare_fetches = [raw_get(Target.of(bare), BARE_LIST_PATH) for _ in range(args.list_repeat)]
    finally:
        stop(bare)
    kapi_bps = max(f.body_bytes / f.seconds for f in rv0)  # best of: other work only ever slows a run
    bare_bps = max(f.body_bytes / f.seconds for f in bare_fetches)

    indexed_paths = [f"/api/v1/pods?resourceVersion=0&fieldSelector=spec.nodeName%3Dnode-{k % layout.nodes}"
                     for k in range(args.selector_repeat)]
    indexed_items = list_count(server, indexed_paths[1])
    indexed = timed_gets(target, indexed_paths)
    unindexed_path = "/api/v1/pods?resourceVersion=0&fieldSelector=spec.restartPolicy%3DNever"
    unindexed_items = list_count(server, unindexed_path)
    unindexed = timed_gets(target, [unindexed_path] * max(3, args.selector_repeat // 20))
    label_path = "/api/v1/pods?resourceVersion=0&labelSelector=tier%3Dgold"
    label_items = list_count(server, label_path)
    label = [raw_get(target, label_path) for _ in range(args.list_repeat)]
    label_s = statistics.median(f.seconds for f in label)
    rv0_s = statistics.median(f.seconds for f in rv0)
    consistent_s = statistics.median(f.seconds for f in consistent)
    return {
        "list_bytes": list_bytes, "json_bytes_per_pod": round(list_bytes / n, 1), "rss_after_list": rss_after,
        "everything": {"items": listed, "bytes": list_bytes, "rv0_seconds": [round(f.seconds, 3) for f in rv0],
                       "kapi_mb_per_s": round(kapi_bps / 1e6, 1), "bare_mb_per_s": round(bare_bps / 1e6, 1),
                       "bare_seconds": [round(f.seconds, 3) for f in bare_fetches],
                       "ratio": round(kapi_bps / bare_bps, 3)},
        "indexed": {"selector": "spec.nodeName=node-K", "items": indexed_items, "requests": len(indexed),
                    "median_ms": round(statistics.median(indexed), 3), "p10_ms": round(pct(indexed, 0.1), 3),
                    "p90_ms": round(pct(indexed, 0.9), 3)},
        "unindexed": {"selector": "spec.restartPolicy=Never", "items": unindexed_items, "requests": len(unindexed),
                      "median_ms": round(statistics.median(unindexed), 3)},
        "unindexed_over_indexed": round(statistics.median(unindexed) / statistics.median(indexed), 1),
        "label": {"selector": "tier=gold", "items": label_items, "median_s": round(label_s, 4),
                  "s_per_100k_objects": round(label_s * 100_000 / n, 4)},
        "consistent": {"consistent_s": round(consistent_s, 3), "rv0_s": round(rv0_s, 3),
                       "ratio": round(consistent_s / rv0_s, 3)},
        "metrics": cache_list_metrics(server),
    }


def restart(data_dir: Path, *flags: str) -> tuple[float, int]:
    """Restart over the loaded data directory; (seconds to ready, RSS once ready)."""
    server = start_kapi(data_dir, "--storage-backend", "sqlite", *flags, timeout_s=1800)
    try:
        time.sleep(0.5)  # what the server does just after ready (bootstrap checks) settles
        return server.ready_s, process_rss_bytes(server.proc.pid)
    finally:
        stop(server)


def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    layout = Layout(args.pods, args.nodes, args.namespaces)
    data_dir = root / "kapi"
    result: dict[str, Any] = {}
    server = start_kapi(data_dir, "--storage-backend", "sqlite", timeout_s=600)
    try:
        for k in range(layout.namespaces):
            status, body = server.request("POST", "/api/v1/namespaces", json.dumps(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns-{k}"}}).encode())
            if status != 201:
                raise RuntimeError(f"creating ns-{k}: {status} {body[:300]!r}")
        rss_before = process_rss_bytes(server.proc.pid)
        print(f"loading {layout.pods} pods ...", flush=True)
        result["load"] = load_pods(server, layout, args.clients, args.concurrency)
        print(f"  {result['load']['creates_per_s']:.0f} creates/s in {result['load']['seconds']:.0f} s", flush=True)
        lists = measure_lists(server, root, layout, args)
        result["list"] = lists
        print(f"  LIST everything: kapi {lists['everything']['kapi_mb_per_s']} MB/s, bare "
              f"{lists['everything']['bare_mb_per_s']} MB/s; indexed {lists['indexed']['median_ms']} ms, "
              f"unindexed {lists['unindexed']['median_ms']} ms", flush=True)
        json_total = lists["list_bytes"]
        result["memory"] = {"rss_before": rss_before, "rss_after": lists.pop("rss_after_list"),
                            "json_bytes": json_total}
        result["memory"]["rss_per_object"] = round((result["memory"]["rss_after"] - rss_before) / layout.pods, 1)
        result["memory"]["ratio"] = round((result["memory"]["rss_after"] - rss_before) / json_total, 3)
        print(f"watch fan-out: {args.watchers} watchers ...", flush=True)
        result["fan_out"] = fan_out(server, layout, args)
        print(f"  {result['fan_out']['deliveries_per_s']} deliveries/s, p99 {result['fan_out']['p99_delay_ms']} ms",
              flush=True)
        nodes: dict[str, Any] = {}
        # No watchers at all: the cost of the update itself, which both cases share.
        for count in (0, args.few_node_watchers, args.node_watchers):
            print(f"node watchers: {count} ...", flush=True)
            nodes[str(count)] = node_watchers(server, layout, count, args)
            print(f"  {nodes[str(count)]['cpu_ms_per_update']} ms CPU per update", flush=True)
        base = nodes["0"]["cpu_ms_per_update"]
        few, many = nodes[str(args.few_node_watchers)], nodes[str(args.node_watchers)]
        nodes["ratio"] = round(many["cpu_ms_per_update"] / few["cpu_ms_per_update"], 3)
        # What the watchers add over the bare update, many against few.
        nodes["watch_ms_per_update"] = {"few": round(few["cpu_ms_per_update"] - base, 3),
                                        "many": round(many["cpu_ms_per_update"] - base, 3)}
        result["node_watchers"] = nodes
    finally:
        stop(server)
    print("restarting ...", flush=True)
    ready_s, rss_ready = restart(data_dir)
    _, rss_uncached = restart(data_dir, "--watch-cache-sizes", "pods#0")
    result["startup"] = {"pods": layout.pods, "ready_s": round(ready_s, 2), "rss_ready": rss_ready,
                         "rss_ready_without_pod_cache": rss_uncached}
    # The cache's share: a restart with the pod cache, against one without (nothing else differs).
    result["memory"]["cache_bytes"] = rss_ready - rss_uncached
    result["memory"]["cache_ratio"] = round((rss_ready - rss_uncached) / result["memory"]["json_bytes"], 3)
    result["db_bytes"] = sum(p.stat().st_size for p in data_dir.glob("kapi.db*"))
    return result


def table(r: dict[str, Any], n: int) -> list[str]:
    """The Markdown table of one run."""
    lst, mem, fo, nw = r["list"], r["memory"], r["fan_out"], r["node_watchers"]
    few, many = (nw[k] for k in nw if k not in ("0", "ratio", "watch_ms_per_update"))
    extra = nw["watch_ms_per_update"]
    mark = {True: "yes", False: "**no**"}
    ev = lst["everything"]
    rows = [
        "| measure | figure | goal | met |",
        "|---|---:|---:|---|",
        f"| load {n} pods through the API | {r['load']['creates_per_s']:.0f} creates/s "
        f"({r['load']['seconds']:.0f} s) | | |",
        f"| LIST all, rv=0: kapi {ev['kapi_mb_per_s']} MB/s ÷ bare {ev['bare_mb_per_s']} MB/s "
        f"({ev['bytes'] / 1e6:.0f} MB) | {ev['ratio']:.2f} | ≥ {GOALS['list_ratio']} | "
        f"{mark[ev['ratio'] >= GOALS['list_ratio']]} |",
        f"| LIST spec.nodeName=node-K (indexed, {lst['indexed']['items']} pods), median | "
        f"{lst['indexed']['median_ms']:.2f} ms | ≤ {GOALS['indexed_ms']} ms | "
        f"{mark[lst['indexed']['median_ms'] <= GOALS['indexed_ms']]} |",
        f"| LIST spec.restartPolicy=Never (unindexed, {lst['unindexed']['items']} pods) ÷ indexed | "
        f"{lst['unindexed_over_indexed']:.0f}× ({lst['unindexed']['median_ms']:.0f} ms) | "
        f"≥ {GOALS['unindexed_over_indexed']:.0f}× | "
        f"{mark[lst['unindexed_over_indexed'] >= GOALS['unindexed_over_indexed']]} |",
        f"| LIST tier=gold ({lst['label']['items']} pods), per 100k objects | "
        f"{lst['label']['s_per_100k_objects'] * 1000:.0f} ms | | |",
        f"| consistent LIST all ÷ rv=0 ({lst['consistent']['consistent_s']:.2f} s ÷ "
        f"{lst['consistent']['rv0_s']:.2f} s) | {lst['consistent']['ratio']:.2f} | ≤ {GOALS['consistent_over_rv0']} | "
        f"{mark[lst['consistent']['ratio'] <= GOALS['consistent_over_rv0']]} |",
        f"| RSS per object ÷ JSON size ({mem['rss_per_object'] / 1e3:.1f} kB ÷ "
        f"{lst['json_bytes_per_pod'] / 1e3:.1f} kB) | {mem['ratio']:.2f} | ≤ {GOALS['rss_over_json']} | "
        f"{mark[mem['ratio'] <= GOALS['rss_over_json']]} |",
        f"| of which the pod cache (restart with ÷ without it) | {mem['cache_ratio']:.2f} | | |",
        f"| watch fan-out: {fo['watchers']} watchers, {fo['update_rate']:.0f} updates/s | "
        f"{fo['deliveries_per_s']:.0f} deliveries/s, p99 {fo['p99_delay_ms']:.1f} ms "
        f"({fo['deliveries']}/{fo['expected_deliveries']} delivered) | | |",
        f"| CPU per update, {many['watchers']} ÷ {few['watchers']} node watchers "
        f"({many['cpu_ms_per_update']:.2f} ÷ {few['cpu_ms_per_update']:.2f} ms) | {nw['ratio']:.2f} | "
        f"≤ {GOALS['node_watchers_cpu_ratio']} | {mark[nw['ratio'] <= GOALS['node_watchers_cpu_ratio']]} |",
        f"| of which the watchers, over {nw['0']['cpu_ms_per_update']:.2f} ms with none: "
        f"{many['watchers']} ÷ {few['watchers']} | {extra['many']:.2f} ÷ {extra['few']:.2f} ms | | |",
        f"| restart with {n} pods to /readyz ok | {r['startup']['ready_s']:.2f} s | | |",
    ]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=None, help="pods to hold (default 100000, 5000 with --quick)")
    parser.add_argument("--nodes", type=int, default=4000)
    parser.add_argument("--namespaces", type=int, default=100)
    parser.add_argument("--clients", type=int, default=2, help="client processes while loading")
    parser.add_argument("--concurrency", type=int, default=32, help="concurrent creates while loading, in all")
    parser.add_argument("--list-repeat", type=int, default=3, help="LISTs of everything per kind")
    parser.add_argument("--selector-repeat", type=int, default=200, help="indexed LISTs timed")
    parser.add_argument("--watchers", type=int, default=1000, help="namespace watchers in the fan-out")
    parser.add_argument("--node-watchers", type=int, default=4000)
    parser.add_argument("--few-node-watchers", type=int, default=100)
    parser.add_argument("--watch-clients", type=int, default=4, help="client processes holding the watches")
    parser.add_argument("--update-rate", type=float, default=100.0, help="updates/s while watching")
    parser.add_argument("--watch-seconds", type=float, default=None, help="fan-out duration (default 10, 3 quick)")
    parser.add_argument("--node-updates", type=int, default=None, help="updates per node-watcher case "
                        "(default 1000, 300 quick)")
    parser.add_argument("--quick", action="store_true", help="5,000 pods and shorter watch phases")
    parser.add_argument("--dir", default=None, help="where the temporary data directory goes")
    parser.add_argument("--output", type=Path, default=RESULTS / "cache.json", help="JSON results file")
    args = parser.parse_args(argv)
    args.pods = args.pods if args.pods is not None else (5000 if args.quick else 100_000)
    args.watch_seconds = args.watch_seconds if args.watch_seconds is not None else (3.0 if args.quick else 10.0)
    args.node_updates = args.node_updates if args.node_updates is not None else (300 if args.quick else 1000)
    if args.pods < args.few_node_watchers or args.few_node_watchers > args.node_watchers:
        parser.error("need --pods ≥ --few-node-watchers ≤ --node-watchers")
    # Thousands of watch connections: the server inherits this process's descriptor limit.
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, args.node_watchers * 2 + 1024)), hard))

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kapi-bench-cache-", dir=args.dir) as tmp:
        result = run(args, Path(tmp))
    result = {"config": {"pods": args.pods, "nodes": args.nodes, "namespaces": args.namespaces,
                         "quick": args.quick, "cpus": os.cpu_count(), "python": platform.python_version(),
                         "watch_client": "HTTP/1.1, one TLS connection per watch"},
              **result, "goals": GOALS, "elapsed_s": round(time.monotonic() - started, 1)}
    write_json(args.output, result)
    print()
    print("\n".join(table(result, args.pods)))
    print(f"\nJSON: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
