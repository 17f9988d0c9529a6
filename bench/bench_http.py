"""Requests per second of ``kapi serve`` against a bare hypercorn server, over HTTPS/1.1.

Run ``python bench/bench_http.py`` from the repository root. One run starts
``kapi serve`` (sqlite, fresh data directory) and, as a separate process, a bare
hypercorn app (trio worker, the same certificate and key, a fixed JSON for GET
and 201 for POST), and drives both with the same httpx load generator at each
concurrency: GETs of one ConfigMap, and creates of ConfigMaps with unique
names. kapi ÷ bare is the figure that matters; absolute rates depend on the
machine, and on the client processes, which share its cores with the server.
Then two fresh servers compare creates/s at the highest concurrency with
``--group-commit true`` and ``false``. Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
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
    start_bare,
    start_kapi,
    stop,
    write_json,
)

GET_NAME = "bench-get"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
GOALS = {"get_ratio": 0.60, "create_ratio": 0.40}  # kapi ÷ bare at the highest concurrency


def measure(server: Server, *, create: bool, concurrency: int, args: argparse.Namespace, tag: str) -> LoadResult:
    """One point: GETs of the fixed ConfigMap, or creates of uniquely named ones."""
    if create:
        load = Load(url=server.url, path=CONFIGMAPS, ca_file=str(server.ca_file), token=server.token,
                    method="POST", body=configmap_body(), expect=201, concurrency=concurrency,
                    processes=args.clients, duration_s=args.duration, name_prefix=f"{tag}-c{concurrency}")
    else:
        load = Load(url=server.url, path=f"{CONFIGMAPS}/{GET_NAME}", ca_file=str(server.ca_file),
                    token=server.token, concurrency=concurrency, processes=args.clients,
                    duration_s=args.duration)
    # Best of --repeat: other work on the machine only ever lowers a rate.
    result = max((run_load(load, server.proc.pid) for _ in range(args.repeat)), key=lambda r: r.rate)
    kind = "create" if create else "get"
    print(f"  {tag:>6} {kind:>6} c={concurrency:<3} {result.rate:8.0f}/s  p50 {result.p50_ms:6.1f} ms  "
          f"p99 {result.p99_ms:6.1f} ms  client cpu {result.client_cpu_pct:4.0f}%  "
          f"server cpu {result.server_cpu_pct:4.0f}%  other {result.other_cpu_pct:3.0f}%"
          + (f"  ERRORS {result.errors}" if result.errors else ""), flush=True)
    return result


def ratio(a: LoadResult, b: LoadResult) -> float:
    return round(a.rate / b.rate, 3) if b.rate else 0.0


def compare(args: argparse.Namespace, root: Path) -> list[dict[str, Any]]:
    """kapi and the bare server side by side at each concurrency."""
    kapi = start_kapi(root / "kapi", "--storage-backend", "sqlite", "--group-commit", "true")
    bare: Server | None = None
    try:
        pki = root / "kapi" / "pki"
        bare = start_bare(pki / "apiserver.crt", pki / "apiserver.key", kapi.ca_file, root / "bare")
        status, text = kapi.request("POST", CONFIGMAPS, configmap_body(GET_NAME))
        if status != 201:
            raise RuntimeError(f"could not create the ConfigMap to GET: {status} {text[:300]!r}")
        points = []
        for concurrency in args.concurrency:
            kapi_get = measure(kapi, create=False, concurrency=concurrency, args=args, tag="kapi")
            bare_get = measure(bare, create=False, concurrency=concurrency, args=args, tag="bare")
            kapi_create = measure(kapi, create=True, concurrency=concurrency, args=args, tag="kapi")
            bare_create = measure(bare, create=True, concurrency=concurrency, args=args, tag="bare")
            points.append({
                "concurrency": concurrency,
                "kapi_get": kapi_get.to_json(),
                "bare_get": bare_get.to_json(),
                "kapi_create": kapi_create.to_json(),
                "bare_create": bare_create.to_json(),
                "get_ratio": ratio(kapi_get, bare_get),
                "create_ratio": ratio(kapi_create, bare_create),
            })
        return points
    finally:
        stop(kapi)
        if bare is not None:
            stop(bare)


def group_commit(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Creates/s at the highest concurrency on two fresh servers: group commit on and off."""
    concurrency = max(args.concurrency)
    out: dict[str, Any] = {"concurrency": concurrency}
    for enabled in ("true", "false"):
        server = start_kapi(root / f"gc-{enabled}", "--storage-backend", "sqlite", "--group-commit", enabled)
        try:
            out[enabled] = measure(server, create=True, concurrency=concurrency, args=args,
                                   tag="gc-on" if enabled == "true" else "gc-off").to_json()
        finally:
            stop(server)
    out["ratio"] = round(out["true"]["rate"] / out["false"]["rate"], 3) if out["false"]["rate"] else 0.0
    return out


def table(points: list[dict[str, Any]], gc: dict[str, Any]) -> str:
    """The results as Markdown."""
    lines = [
        "| concurrency | kapi GET/s | bare GET/s | GET kapi÷bare | kapi create/s | bare create/s | create kapi÷bare |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in points:
        lines.append(f"| {p['concurrency']} | {p['kapi_get']['rate']:.0f} | {p['bare_get']['rate']:.0f} | "
                     f"{p['get_ratio']:.2f} | {p['kapi_create']['rate']:.0f} | {p['bare_create']['rate']:.0f} | "
                     f"{p['create_ratio']:.2f} |")
    lines += [
        "",
        "| CPU, % of one core: server / clients / rest of machine | kapi GET | bare GET | kapi create | bare create |",
        "|---:|---:|---:|---:|---:|",
    ]
    for p in points:
        cells = [f"{p[k]['server_cpu_pct']:.0f} / {p[k]['client_cpu_pct']:.0f} / {p[k]['other_cpu_pct']:.0f}"
                 for k in ("kapi_get", "bare_get", "kapi_create", "bare_create")]
        lines.append(f"| c={p['concurrency']} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"| creates/s at {gc['concurrency']} | group commit on | group commit off | on÷off |",
        "|---|---:|---:|---:|",
        f"| kapi sqlite | {gc['true']['rate']:.0f} | {gc['false']['rate']:.0f} | {gc['ratio']:.2f} |",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds measured per point (default 5, or 1 with --quick)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64],
                        help="concurrent keep-alive connections per point")
    parser.add_argument("--clients", type=int, default=1,
                        help="client processes sharing the connections (the client is costly in CPU)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="measure each point this many times and keep the best (for a busy machine)")
    parser.add_argument("--quick", action="store_true", help="short points: a check that everything runs")
    parser.add_argument("--dir", default=None, help="where the temporary data directories go")
    parser.add_argument("--output", type=Path, default=RESULTS / "http.json", help="JSON results file")
    args = parser.parse_args(argv)
    if args.duration is None:
        args.duration = 1.0 if args.quick else 5.0

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kapi-bench-", dir=args.dir) as tmp:
        root = Path(tmp)
        print(f"kapi vs bare hypercorn, HTTPS/1.1 keep-alive, {args.duration:g} s per point (best of "
              f"{args.repeat}), {args.clients} client process(es), {os.cpu_count()} CPUs", flush=True)
        points = compare(args, root)
        gc = group_commit(args, root)
    top = points[-1]
    result = {
        "config": {"duration_s": args.duration, "concurrency": args.concurrency, "clients": args.clients,
                   "repeat": args.repeat,
                   "quick": args.quick, "cpus": os.cpu_count(), "python": platform.python_version(),
                   "client": "httpx, HTTP/1.1"},
        "points": points,
        "group_commit": gc,
        "goals": {
            "concurrency": top["concurrency"],
            "get_ratio": GOALS["get_ratio"],
            "create_ratio": GOALS["create_ratio"],
            "get_met": top["get_ratio"] >= GOALS["get_ratio"],
            "create_met": top["create_ratio"] >= GOALS["create_ratio"],
        },
        "elapsed_s": round(time.monotonic() - started, 1),
    }
    write_json(args.output, result)
    print()
    print(table(points, gc))
    print(f"\ngoals at c={top['concurrency']}: GET ≥ {GOALS['get_ratio']:.0%} of bare "
          f"({'met' if result['goals']['get_met'] else 'not met'}), create ≥ {GOALS['create_ratio']:.0%} "
          f"({'met' if result['goals']['create_met'] else 'not met'}); JSON: {args.output}")
    errors = sum(p[k]["errors"] for p in points for k in ("kapi_get", "bare_get", "kapi_create", "bare_create"))
    errors += gc["true"]["errors"] + gc["false"]["errors"]
    if errors:
        print(f"{errors} requests failed; the rates above count only successes", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
