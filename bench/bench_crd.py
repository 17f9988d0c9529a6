"""Custom objects against ConfigMaps of the same size: creates/s and GETs/s, one ``kapi serve``, same run.

Run ``python bench/bench_crd.py`` from the repository root (``--quick`` for short points).
One server (sqlite, a fresh data directory) gets a CustomResourceDefinition
``benchobjects.bench.kapi.dev`` (namespaced, v1) whose schema has the same top-level
``data`` map a ConfigMap has, with a CEL rule on it (``self.size() <= 64``) and a
pattern on its values, so that a custom object and a ConfigMap carry the same bytes
and every custom-object write goes through structural validation, pruning and CEL.
Then, at each concurrency, alternating kinds on the same server:

- creates/s: ``POST .../configmaps`` and ``POST .../benchobjects`` with unique names;
- GETs/s: ``GET`` of one object of each kind (served from the watch cache);

and the **custom ÷ ConfigMap** ratios (the goal: ≥ 0.8 for both), by rate and by requests per
second of server CPU (``per_cpu``: on a machine doing other work the server gets what it gets,
and requests per CPU-second hold better than rates). ``--object-bytes``
sets the size of the ``data`` value (default 100 bytes). Prints a Markdown table and
writes JSON (``bench/results/crd.json``). CPU figures as in ``bench_http.py``: read
the "other" column before the rates (a busy machine skews both kinds alike, so the
ratio holds better than the rates).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import NAME_PLACEHOLDER, RESULTS, Load, LoadResult, Server, run_load, start_kapi, stop, write_json  # noqa: E402

GROUP = "bench.kapi.dev"
PLURAL = "benchobjects"
NS = "default"
GOAL = 0.8
PATHS = {"configmap": f"/api/v1/namespaces/{NS}/configmaps",
         "custom": f"/apis/{GROUP}/v1/namespaces/{NS}/{PLURAL}"}


def crd() -> dict[str, Any]:
    """The CRD: a ``data`` map of strings as a ConfigMap's, a CEL rule and a pattern on it."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": PLURAL, "singular": "benchobject", "kind": "BenchObject",
                           "listKind": "BenchObjectList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object",
                     "properties": {"data": {"type": "object",
                                             "additionalProperties": {"type": "string", "pattern": "^[a-z]*$"},
                                             "x-kubernetes-validations": [
                                                 {"rule": "self.size() <= 64", "message": "at most 64 keys"}]}}}}}]},
    }


def body(kind: str, name: str | bytes, object_bytes: int) -> bytes:
    """A ConfigMap or a custom object of the same shape and size."""
    text = name.decode() if isinstance(name, bytes) else name
    head = ({"apiVersion": "v1", "kind": "ConfigMap"} if kind == "configmap"
            else {"apiVersion": f"{GROUP}/v1", "kind": "BenchObject"})
    return json.dumps({**head, "metadata": {"name": text}, "data": {"key": "v" * object_bytes}},
                      separators=(",", ":")).encode()


def install_crd(server: Server, timeout_s: float = 60.0) -> float:
    """Create the CRD and wait until it is Established and its objects are served; returns the seconds."""
    t0 = time.monotonic()
    status, text = server.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                  json.dumps(crd()).encode())
    if status != 201:
        raise RuntimeError(f"creating the CRD: {status} {text[:500]!r}")
    while time.monotonic() - t0 < timeout_s:
        status, text = server.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{PLURAL}.{GROUP}")
        conds = {c["type"]: c["status"] for c in json.loads(text).get("status", {}).get("conditions") or []}
        if conds.get("Established") == "True" and server.request("GET", PATHS["custom"])[0] == 200:
            return time.monotonic() - t0
        time.sleep(0.1)
    raise RuntimeError("the CRD did not become Established")


def point(server: Server, kind: str, verb: str, concurrency: int, args: argparse.Namespace) -> LoadResult:
    create = verb == "create"
    load = Load(url=server.url, path=PATHS[kind] if create else f"{PATHS[kind]}/bench-get",
                ca_file=str(server.ca_file), token=server.token, method="POST" if create else "GET",
                body=body(kind, NAME_PLACEHOLDER, args.object_bytes) if create else None,
                expect=201 if create else 200, concurrency=concurrency, processes=args.clients,
                duration_s=args.seconds, name_prefix=f"b-{kind[:2]}")
    result = run_load(load, server.proc.pid)
    print(f"  {kind:>9} {verb:>6} c={concurrency:<3} {result.rate:8.0f}/s  p50 {result.p50_ms:6.1f} ms  "
          f"server {result.server_cpu_pct:4.0f}%  client {result.client_cpu_pct:4.0f}%  "
          f"other {result.other_cpu_pct:4.0f}%  errors {result.errors}", file=sys.stderr)
    if result.errors:
        print(f"    first error: {result.first_error}", file=sys.stderr)
    return result


def per_cpu(r: LoadResult) -> float:
    """Requests per second of server CPU."""
    return r.rate / (r.server_cpu_pct / 100) if r.server_cpu_pct else 0.0


def table(points: list[dict[str, Any]]) -> str:
    rows = ["| concurrency | verb | ConfigMap /s | custom /s | custom ÷ ConfigMap | per server CPU-s (cm / cr) | "
            "÷ per CPU | server CPU % (cm / cr) | other CPU % |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for p in points:
        cm, cr = p["configmap"], p["custom"]
        rows.append(f"| {p['concurrency']} | {p['verb']} | {cm['rate']:.0f} | {cr['rate']:.0f} | {p['ratio']:.2f} | "
                    f"{p['configmap_per_cpu']:.0f} / {p['custom_per_cpu']:.0f} | {p['ratio_per_cpu']:.2f} | "
                    f"{cm['server_cpu_pct']:.0f} / {cr['server_cpu_pct']:.0f} | "
                    f"{max(cm['other_cpu_pct'], cr['other_cpu_pct']):.0f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=None, help="seconds per point (default 5, 1 with --quick)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=None, help="default 1 16 (4 with --quick)")
    parser.add_argument("--clients", type=int, default=1, help="client processes")
    parser.add_argument("--repeat", type=int, default=1, help="best of N per point (the kinds alternate)")
    parser.add_argument("--object-bytes", type=int, default=100, help="size of the data value")
    parser.add_argument("--quick", action="store_true", help="short points: a check that everything runs")
    parser.add_argument("--dir", default=None, help="where the temporary data directory goes")
    parser.add_argument("--output", type=Path, default=RESULTS / "crd.json", help="JSON results file")
    args = parser.parse_args(argv)
    args.seconds = args.seconds if args.seconds is not None else (1.0 if args.quick else 5.0)
    concurrencies = args.concurrency or ([4] if args.quick else [1, 16])

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        server = start_kapi(Path(tmp) / "kapi")
        try:
            established_s = install_crd(server)
            for kind in PATHS:
                status, text = server.request("POST", PATHS[kind], body(kind, "bench-get", args.object_bytes))
                if status != 201:
                    raise RuntimeError(f"creating the {kind} to GET: {status} {text[:500]!r}")
            print(f"CRD Established and served after {established_s:.2f} s; {args.seconds:g} s per point, "
                  f"best of {args.repeat}, {args.object_bytes}-byte values", file=sys.stderr)
            points = []
            for concurrency in concurrencies:
                for verb in ("create", "get"):
                    best: dict[str, LoadResult] = {}
                    for _ in range(args.repeat):
                        for kind in PATHS:
                            r = point(server, kind, verb, concurrency, args)
                            if kind not in best or r.rate > best[kind].rate:
                                best[kind] = r
                    cm, cr = best["configmap"], best["custom"]
                    points.append({"concurrency": concurrency, "verb": verb, "configmap": cm.to_json(),
                                   "custom": cr.to_json(), "ratio": round(cr.rate / cm.rate, 3) if cm.rate else 0.0,
                                   "configmap_per_cpu": round(per_cpu(cm), 1), "custom_per_cpu": round(per_cpu(cr), 1),
                                   "ratio_per_cpu": round(per_cpu(cr) / per_cpu(cm), 3) if per_cpu(cm) else 0.0})
        finally:
            stop(server)

    errors = sum(p[k]["errors"] for p in points for k in PATHS)
    result = {
        "config": {"seconds": args.seconds, "concurrency": concurrencies, "clients": args.clients,
                   "repeat": args.repeat, "object_bytes": args.object_bytes, "quick": args.quick,
                   "python": platform.python_version(), "machine": platform.machine()},
        "established_s": round(established_s, 3),
        "points": points,
        "ratios": {**{f"{p['verb']}_c{p['concurrency']}": p["ratio"] for p in points},
                   **{f"{p['verb']}_c{p['concurrency']}_per_cpu": p["ratio_per_cpu"] for p in points}},
        "goal": GOAL,
    }
    write_json(args.output, result)
    print(table(points))
    print(f"\ngoal: custom ÷ ConfigMap ≥ {GOAL} for creates/s and GETs/s")
    if errors:
        print(f"{errors} requests failed; the rates above count only successes", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
