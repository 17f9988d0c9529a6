"""The compiled twins against the pure ones, and kapi against the machine's limits, in one run.

``python -m bench`` from the repository root (``--quick`` for tiny sizes, under two
minutes on 2 cores). Three groups of figures, each a ratio with its min, median and
max over ``--repeat`` repeats:

- micro: every twin micro-benchmark in ``bench/`` (a ``bench_*.py`` script whose
  JSON ``ratios`` hold ``*_over_pure`` figures, found by name), run as it is; its
  compiled ÷ pure ratios;
- macro: ``kapi serve`` twice over copies of the same data directory, once as it
  is (compiled twins) and once with ``KAPI_NO_EXTENSIONS=1`` (pure twins), driven
  by the same load, the two taking turns: LIST all, by label and by an indexed
  field at resourceVersion=0, consistent LIST, a watch fan-out, GETs/s and
  creates/s; compiled ÷ pure of each rate;
- limits: a bare hypercorn app over TLS sending as many bytes as the LIST all, and
  its trivial-endpoint request rate; kapi ÷ limit for both twins.

Results go to ``summary.json``, ``summary.md`` and ``summary.png`` under ``bench/results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))  # the scripts import their shared parts as top-level modules

import _common  # noqa: E402
import _workload  # noqa: E402
from _common import Load, Server, configmap_body, run_load, start_bare, start_kapi, stop  # noqa: E402

RESULTS = BENCH / "results"
MODES = ("compiled", "pure")
TWIN_MARK = "_over_pure"  # how a twin micro-benchmark names its ratios


@dataclass(frozen=True, slots=True)
class Sizes:
    """How big each macro benchmark is."""

    pods: int
    namespaces: int
    nodes: int
    list_repeat: int  # LISTs of everything per figure, best kept
    selector_repeat: int  # selector LISTs timed per figure, median kept
    watchers: int
    updates: int
    update_rate: float
    load_seconds: float  # per GET/create point
    concurrency: int


QUICK = Sizes(pods=300, namespaces=10, nodes=30, list_repeat=2, selector_repeat=10, watchers=20, updates=40,
              update_rate=100.0, load_seconds=0.5, concurrency=8)
FULL = Sizes(pods=5000, namespaces=50, nodes=500, list_repeat=3, selector_repeat=100, watchers=200, updates=400,
             update_rate=100.0, load_seconds=3.0, concurrency=16)


class Progress:
    """A one-line text progress bar on stderr."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.started = total, 0, time.monotonic()

    def step(self, label: str) -> None:
        """Count one step done and show the next one's label."""
        self.done = min(self.total, self.done + 1)
        width = 30
        filled = width * self.done // self.total
        line = (f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                f"{time.monotonic() - self.started:5.0f} s  {label}")
        sys.stderr.write(line[:120].ljust(120))
        sys.stderr.flush()

    def finish(self) -> None:
        """End the line."""
        sys.stderr.write("\n")
        sys.stderr.flush()


def spread(values: list[float]) -> dict[str, Any]:
    """Min, median and max of positive figures."""
    return {"min": min(values), "median": statistics.median(values), "max": max(values),
            "values": [round(v, 4) for v in values]}


# ---------------------------------------------------------------- micro


def micro_scripts() -> list[Path]:
    """The twin micro-benchmarks present now: scripts that report ``*_over_pure`` ratios."""
    return [p for p in sorted(BENCH.glob("bench_*.py")) if TWIN_MARK in p.read_text()]


def run_micro(script: Path, quick: bool, output: Path) -> dict[str, float]:
    """Run one micro-benchmark as it is; its compiled ÷ pure ratios (raise with its output if it fails)."""
    # The scripts name their results file --output or --out; ask rather than guess.
    usage = subprocess.run([sys.executable, str(script), "--help"], cwd=REPO, capture_output=True, text=True,
                           timeout=120).stdout
    flag = "--output" if "--output" in usage else "--out" if "--out" in usage else None
    if flag is None:
        raise RuntimeError("takes neither --output nor --out")
    cmd = [sys.executable, str(script), flag, str(output), *(["--quick"] if quick else [])]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-300:]}")
    result = json.loads(output.read_text())
    # Ratios under "ratios", or at the top level of the results.
    found = {**{k: v for k, v in result.items() if k != "ratios"}, **result.get("ratios", {})}
    return {k: float(v) for k, v in found.items() if k.endswith(TWIN_MARK) and isinstance(v, (int, float))}


# ---------------------------------------------------------------- macro


def kapi_env(mode: str) -> dict[str, str]:
    """The server's environment: the compiled twins, or the pure ones forced."""
    env = {k: v for k, v in os.environ.items() if k not in ("KAPI_NO_EXTENSIONS", "KAPI_REQUIRE_EXTENSIONS")}
    if mode == "pure":
        env["KAPI_NO_EXTENSIONS"] = "1"
    else:
        env["KAPI_REQUIRE_EXTENSIONS"] = "1"  # a server silently on the pure twins would make the ratio 1
    return env


def seed(data_dir: Path, sizes: Sizes) -> _workload.Layout:
    """One data directory holding the pods (through the API) and the ConfigMap the GETs read."""
    layout = _workload.Layout(sizes.pods, sizes.nodes, sizes.namespaces)
    server = start_kapi(data_dir, "--storage-backend", "sqlite", timeout_s=600, env=kapi_env("compiled"))
    try:
        for k in range(layout.namespaces):
            check(server.request("POST", "/api/v1/namespaces", json.dumps(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns-{k}"}}).encode()), 201)
        check(server.request("POST", "/api/v1/namespaces/default/configmaps", configmap_body("bench-get")), 201)
        _workload.load_pods(server, layout, 1, sizes.concurrency)
    finally:
        stop(server)
    return layout


def check(answer: tuple[int, bytes], status: int) -> None:
    """Raise unless a request answered ``status``."""
    if answer[0] != status:
        raise RuntimeError(f"expected {status}, got {answer[0]}: {answer[1][:300]!r}")


def list_mb_per_s(target: _workload.Target, path: str, repeat: int) -> float:
    """MB/s of one LIST read by the raw client, best of ``repeat``."""
    fetched = [_workload.raw_get(target, path) for _ in range(repeat)]
    if any(f.status != 200 for f in fetched):
        raise RuntimeError(f"GET {path}: {[f.status for f in fetched]}")
    return max(f.body_bytes / f.seconds for f in fetched) / 1e6


def lists_per_s(target: _workload.Target, paths: list[str], accept: str = "application/json") -> float:
    """LISTs/s over one kept-alive connection read by the raw client, from the median time."""
    return 1000 / statistics.median(_workload.kept_alive_gets(target, paths, accept))


def fan_out(server: Server, sizes: Sizes, layout: _workload.Layout) -> float:
    """Watch events delivered per second of server CPU: N raw watchers of every pod, a steady writer."""
    target = _workload.Target.of(server)
    rv = _workload.current_rv(server)
    paths = [_workload.watch_path("/api/v1/pods", rv)] * sizes.watchers
    watching = _workload.Watching.open(target, paths, 1)
    pods = [(layout.namespace(i), layout.name(i)) for i in range(min(layout.pods, sizes.updates))]
    cpu0 = server.cpu_seconds()
    written = _workload.write_updates(target, pods, sizes.update_rate, sizes.updates)
    time.sleep(0.5)  # let the last events arrive
    cpu = server.cpu_seconds() - cpu0
    delivered = sum(p.deliveries for p in watching.close())
    expected = written.sent * watching.connected
    if delivered < expected:
        raise RuntimeError(f"watch fan-out: {delivered} of {expected} events delivered")
    return delivered / cpu


def request_rate(server: Server, sizes: Sizes, *, create: bool) -> float:
    """GETs/s of one ConfigMap, or creates/s of new ones, at ``sizes.concurrency``."""
    path = "/api/v1/namespaces/default/configmaps" + ("" if create else "/bench-get")
    load = Load(url=server.url, path=path, ca_file=str(server.ca_file), token=server.token,
                method="POST" if create else "GET", body=configmap_body() if create else None,
                expect=201 if create else 200, concurrency=sizes.concurrency, duration_s=sizes.load_seconds)
    result = run_load(load, server.proc.pid)
    if result.errors or not result.requests:
        raise RuntimeError(f"{load.method} {path}: {result.errors} errors; first: {result.first_error}")
    return result.rate


@dataclass(frozen=True, slots=True)
class Figure:
    """One macro figure: what it is, its unit, and how to measure it on a server."""

    key: str
    label: str
    unit: str
    measure: Callable[[Server], float]


def figures(sizes: Sizes, layout: _workload.Layout) -> list[Figure]:
    """The macro figures, all rates (higher is better), so compiled ÷ pure > 1 means the twins help."""
    every = "/api/v1/pods?resourceVersion=0"
    label = "/api/v1/pods?resourceVersion=0&labelSelector=tier%3Dgold"
    indexed = [f"/api/v1/pods?resourceVersion=0&fieldSelector=spec.nodeName%3Dnode-{k % layout.nodes}"
               for k in range(sizes.selector_repeat)]

    def target(s: Server) -> _workload.Target:
        return _workload.Target.of(s)

    return [
        Figure("list_all", f"LIST all {sizes.pods} pods, rv=0", "MB/s",
               lambda s: list_mb_per_s(target(s), every, sizes.list_repeat)),
        Figure("list_label", "LIST tier=gold (5 %), rv=0", "LISTs/s",
               lambda s: lists_per_s(target(s), [label] * sizes.selector_repeat)),
        Figure("list_label_protobuf", "LIST tier=gold (5 %), rv=0, protobuf", "LISTs/s",
               lambda s: lists_per_s(target(s), [label] * sizes.selector_repeat,
                                     "application/vnd.kubernetes.protobuf")),
        Figure("list_indexed", "LIST spec.nodeName=node-K (indexed), rv=0", "LISTs/s",
               lambda s: lists_per_s(target(s), indexed)),
        Figure("list_consistent", "LIST all, consistent", "MB/s",
               lambda s: list_mb_per_s(target(s), "/api/v1/pods", sizes.list_repeat)),
        Figure("watch_fan_out", f"watch fan-out, {sizes.watchers} watchers", "events/CPU-s",
               lambda s: fan_out(s, sizes, layout)),
        Figure("get", f"GET one ConfigMap, {sizes.concurrency} connections", "GETs/s",
               lambda s: request_rate(s, sizes, create=False)),
        Figure("create", f"create ConfigMaps, {sizes.concurrency} connections", "creates/s",
               lambda s: request_rate(s, sizes, create=True)),
    ]


def run_macro(sizes: Sizes, repeat: int, root: Path, progress: Progress) -> dict[str, Any]:
    """Both servers over copies of the same data, and the bare limits; every figure ``repeat`` times."""
    progress.step(f"loading {sizes.pods} pods")
    layout = seed(root / "seed", sizes)
    servers: dict[str, Server] = {}
    bare: Server | None = None
    values: dict[str, dict[str, list[float]]] = {}
    try:
        for mode in MODES:
            progress.step(f"starting kapi ({mode})")
            shutil.copytree(root / "seed", root / mode)
            servers[mode] = start_kapi(root / mode, "--storage-backend", "sqlite", timeout_s=600,
                                       env=kapi_env(mode))
        # Same data: both LIST bodies hold the same pods.
        bodies = {m: _workload.raw_get(_workload.Target.of(s), "/api/v1/pods?resourceVersion=0", keep=True)
                  for m, s in servers.items()}
        counts = {m: len(json.loads(f.body)["items"]) for m, f in bodies.items()}
        if set(counts.values()) != {sizes.pods}:
            raise RuntimeError(f"the servers list {counts} pods, not {sizes.pods}")
        list_bytes = len(bodies["compiled"].body)
        del bodies
        pki = root / "compiled" / "pki"
        bare = start_bare(pki / "apiserver.crt", pki / "apiserver.key", servers["compiled"].ca_file,
                          root / "bare", list_bytes=list_bytes)
        bare_target = _workload.Target.of(bare)
        limits = [Figure("bare_list", f"bare app sending {list_bytes / 1e6:.1f} MB", "MB/s",
                         lambda s: list_mb_per_s(bare_target, _common.BARE_LIST_PATH, sizes.list_repeat)),
                  Figure("bare_get", "bare app, trivial GET", "GETs/s",
                         lambda s: request_rate(s, sizes, create=False))]
        macro = figures(sizes, layout)
        for r in range(repeat):
            # Taking turns, first one then the other, so that drift on the machine touches both alike.
            order = MODES if r % 2 == 0 else MODES[::-1]
            for fig in macro:
                for mode in order:
                    progress.step(f"repeat {r + 1}: {fig.label} ({mode})")
                    values.setdefault(fig.key, {}).setdefault(mode, []).append(fig.measure(servers[mode]))
            for fig in limits:
                progress.step(f"repeat {r + 1}: {fig.label}")
                values.setdefault(fig.key, {}).setdefault("bare", []).append(fig.measure(bare))
    finally:
        for server in [*servers.values(), *([bare] if bare else [])]:
            stop(server)
    units = {f.key: (f.label, f.unit) for f in [*macro, *limits]}
    return {"layout": {"pods": layout.pods, "namespaces": layout.namespaces, "nodes": layout.nodes},
            "list_bytes": list_bytes, "values": values, "units": units}


def macro_ratios(macro: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Compiled ÷ pure per macro figure, and kapi ÷ the bare limit, repeat by repeat."""
    vals, units = macro["values"], macro["units"]
    ratios: dict[str, dict[str, Any]] = {}
    for key, by_mode in vals.items():
        if "bare" in by_mode:
            continue
        label, unit = units[key]
        c, p = by_mode["compiled"], by_mode["pure"]
        ratios[f"macro.{key}"] = {"group": "macro", "label": f"{label}: compiled ÷ pure",
                                  **spread([a / b for a, b in zip(c, p)]),
                                  "detail": f"{statistics.median(c):,.1f} ÷ {statistics.median(p):,.1f} {unit}"}
    for kapi_key, bare_key in (("list_all", "bare_list"), ("get", "bare_get")):
        bare = vals[bare_key]["bare"]
        label, unit = units[kapi_key]
        for mode in MODES:
            kapi = vals[kapi_key][mode]
            ratios[f"limit.{kapi_key}.{mode}"] = {
                "group": "limit", "label": f"{label}: kapi ({mode}) ÷ bare",
                **spread([a / b for a, b in zip(kapi, bare)]),
                "detail": f"{statistics.median(kapi):,.1f} ÷ {statistics.median(bare):,.1f} {unit}"}
    return ratios


# ---------------------------------------------------------------- output


def machine() -> dict[str, Any]:
    """What the run ran on."""
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = re.search(r"^model name\s*:\s*(.*)$", cpuinfo, re.M)
    meminfo = Path("/proc/meminfo").read_text() if Path("/proc/meminfo").exists() else ""
    mem = re.search(r"^MemTotal:\s*(\d+) kB", meminfo, re.M)
    return {"nproc": len(os.sched_getaffinity(0)), "cpu_model": model.group(1).strip() if model else "unknown",
            "memory_gb": round(int(mem.group(1)) / 1024 ** 2, 1) if mem else 0.0,
            "python": platform.python_version(), "platform": platform.platform()}


def markdown(summary: dict[str, Any]) -> str:
    """The Markdown table of every ratio."""
    rows = ["| group | figure | median | min | max | medians |", "|---|---|---:|---:|---:|---|"]
    for r in summary["ratios"].values():
        rows.append(f"| {r['group']} | {r['label']} | {r['median']:.2f} | {r['min']:.2f} | {r['max']:.2f} "
                    f"| {r.get('detail', '')} |")
    for name, why in summary["skipped"].items():
        rows.append(f"| micro | {name}: skipped ({why.replace('|', '/')}) | | | | |")
    return "\n".join(rows) + "\n"


def chart(summary: dict[str, Any], path: Path) -> str:
    """A horizontal bar per ratio (median, with min–max whiskers); returns what was done."""
    try:
        import matplotlib
    except ImportError:
        return "matplotlib is not installed: no chart (pip install matplotlib)"
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    items = list(summary["ratios"].values())
    colors = {"micro": "#4c72b0", "macro": "#55a868", "limit": "#c44e52"}
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(items) + 1.2))
    ys = list(range(len(items)))[::-1]
    med = [r["median"] for r in items]
    err = [[r["median"] - r["min"] for r in items], [r["max"] - r["median"] for r in items]]
    ax.barh(ys, med, xerr=err, color=[colors[r["group"]] for r in items], capsize=2)
    ax.set_yticks(ys, [r["label"] for r in items], fontsize=7)
    ax.axvline(1.0, color="black", linewidth=0.8)
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color=c, label=g) for g, c in colors.items()], fontsize=7, loc="lower right")
    ax.set_xscale("log")
    ax.set_xlabel("ratio (log scale; micro and macro: compiled ÷ pure, limit: kapi ÷ bare)", fontsize=8)
    ax.set_title(f"kapi, {summary['config']['repeat']} repeats" + (" (--quick)" if summary["config"]["quick"]
                                                                    else ""), fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=72)
    plt.close(fig)
    return f"chart: {path}"


# ---------------------------------------------------------------- the run


def main(argv: list[str] | None = None) -> int:
    """Run every group, then write summary.json, summary.md and summary.png."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: under two minutes on 2 cores")
    parser.add_argument("--repeat", type=int, default=None, help="repeats per figure (default 3, 2 with --quick)")
    parser.add_argument("--pods", type=int, default=None, help=f"pods held (default {FULL.pods}, {QUICK.pods} quick)")
    parser.add_argument("--skip-micro", action="store_true", help="only the servers")
    parser.add_argument("--skip-macro", action="store_true", help="only the micro-benchmarks")
    parser.add_argument("--dir", default=None, help="where the temporary data directories go")
    parser.add_argument("--output", type=Path, default=RESULTS, help="folder for summary.json/.md/.png")
    args = parser.parse_args(argv)
    repeat = args.repeat if args.repeat is not None else (2 if args.quick else 3)
    if repeat < 1:
        parser.error("--repeat must be at least 1")
    sizes = QUICK if args.quick else FULL
    if args.pods is not None:
        sizes = replace(sizes, pods=args.pods)

    scripts = [] if args.skip_micro else micro_scripts()
    n_macro = len(figures(sizes, _workload.Layout(sizes.pods, sizes.nodes, sizes.namespaces))) * 2 + 2
    progress = Progress(len(scripts) * repeat + (0 if args.skip_macro else 3 + n_macro * repeat))
    started = time.monotonic()
    ratios: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    macro: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="kapi-bench-", dir=args.dir) as tmp:
        root = Path(tmp)
        for script in scripts:
            runs: list[dict[str, float]] = []
            try:
                for r in range(repeat):
                    progress.step(f"micro {script.stem} ({r + 1}/{repeat})")
                    runs.append(run_micro(script, args.quick, root / f"{script.stem}-{r}.json"))
            except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as err:
                # Another engineer's script that fails must not hide every other figure: it is reported.
                print(f"\n{script.name}: {err}", file=sys.stderr)
                skipped[script.stem] = str(err).splitlines()[0][:200]
                continue
            if not all(runs):
                skipped[script.stem] = "no compiled twin built"
                continue
            # Only the ratios every run reported (a run may lack one).
            runs[0] = {k: v for k, v in runs[0].items() if all(k in run for run in runs)}
            for key in runs[0]:
                ratios[f"micro.{script.stem}.{key}"] = {
                    "group": "micro", "label": f"{script.stem.removeprefix('bench_')}: {key}",
                    **spread([run[key] for run in runs])}
        if not args.skip_macro:
            macro = run_macro(sizes, repeat, root, progress)
            ratios.update(macro_ratios(macro))
    progress.finish()
    bad = {k: r for k, r in ratios.items() if not all(v > 0 for v in r["values"])}
    if bad:
        raise RuntimeError(f"ratios that are not positive: {sorted(bad)}")
    summary = {"config": {"quick": args.quick, "repeat": repeat, "sizes": asdict(sizes),
                          "micro_scripts": [s.name for s in scripts]},
               "machine": machine(), "ratios": ratios, "skipped": skipped, "macro": macro,
               "elapsed_s": round(time.monotonic() - started, 1)}
    args.output.mkdir(parents=True, exist_ok=True)
    _common.write_json(args.output / "summary.json", summary)
    table = markdown(summary)
    (args.output / "summary.md").write_text(table)
    print(table)
    print(chart(summary, args.output / "summary.png"))
    print(f"JSON: {args.output / 'summary.json'}  ({summary['elapsed_s']} s)")
    return 0
