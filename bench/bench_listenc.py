"""List and watch body assembly: the compiled twin against the pure twin, on the same items in one process.

Run ``python bench/bench_listenc.py`` from the repository root (``--quick`` for a
short run). Four workloads, each timed on both twins:

- ``assemble``: N realistic pods as JSON bytes (the pod fixture, each with its own
  name) assembled as ``head + items joined by commas + tail`` in chunks of about a
  megabyte, with the Content-Length computed first, as a LIST body is sent;
- ``assemble_small``: the same for N small objects (a Lease, ~400 bytes), where the
  per-item work rather than the copying is the cost;
- ``watch_lines``: one JSON watch event line per pod (``{"type":..,"object":..}``);
- ``bookmarks``: N BOOKMARK event lines, half with the initial-events-end annotation.

Prints a Markdown table and writes JSON with ``<workload>_compiled_over_pure`` ratios.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from _common import best_rate  # noqa: E402

RESULTS = REPO / "bench" / "results"
CHUNK_BYTES = 1 << 20
TWINS = {"compiled twin": "kapi._fast.listenc_c", "pure twin": "kapi._fast.listenc_py"}


def pod_items(count: int) -> list[bytes]:
    """``count`` pods as compact JSON, each with its own name."""
    pod = json.loads((REPO / "tests" / "fixtures" / "pod.json").read_text())
    items = []
    for i in range(count):
        pod["metadata"]["name"] = f"pod-{i:06d}"
        items.append(json.dumps(pod, separators=(",", ":")).encode())
    return items


def lease_items(count: int) -> list[bytes]:
    """``count`` Leases as compact JSON (~400 bytes each), each with its own name."""
    items = []
    for i in range(count):
        lease = {"metadata": {"name": f"node-{i:06d}", "namespace": "kube-node-lease", "uid": f"{i:08d}-5d1f-4b53-9d6f-2c7e1f0a8b3c",
                              "resourceVersion": str(1000 + i), "creationTimestamp": "2026-11-30T00:00:00Z",
                              "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": f"node-{i:06d}",
                                                   "uid": f"{i:08d}-aaaa-bbbb-cccc-000000000000"}]},
                 "spec": {"holderIdentity": f"node-{i:06d}", "leaseDurationSeconds": 40,
                          "renewTime": "2026-11-30T00:00:10.123456Z"}}
        items.append(json.dumps(lease, separators=(",", ":")).encode())
    return items


HEAD = b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":['
TAIL = b"]}"
TYPE_PREFIX = b'{"kind":"Pod","apiVersion":"v1",'


def workloads(mod: Any, pods: list[bytes], leases: list[bytes]) -> dict[str, tuple[Callable[[], Any], int]]:
    """Each workload as (one call, bytes it produces) for the twin module ``mod``."""

    def assemble(items: list[bytes]) -> Callable[[], Any]:
        def once() -> int:
            size, chunks = mod.list_body(HEAD, items, TAIL, CHUNK_BYTES)
            for _ in chunks:
                pass
            return size
        return once

    def watch_lines() -> list[bytes]:
        line = mod.watch_line
        return [line(b"MODIFIED", TYPE_PREFIX, p) for p in pods]

    def bookmarks() -> list[bytes]:
        line = mod.bookmark_line
        return [line(b"Pod", b"v1", 1_000_000 + i, i % 2 == 0) for i in range(len(pods))]

    return {"assemble": (assemble(pods), mod.list_body(HEAD, pods, TAIL, CHUNK_BYTES)[0]),
            "assemble_small": (assemble(leases), mod.list_body(HEAD, leases, TAIL, CHUNK_BYTES)[0]),
            "watch_lines": (watch_lines, sum(len(x) for x in watch_lines())),
            "bookmarks": (bookmarks, sum(len(x) for x in bookmarks()))}


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Time both twins on the same items; rows and the compiled ÷ pure ratios."""
    pods, leases = pod_items(args.items), lease_items(args.items)
    rows: list[dict[str, Any]] = []
    outputs: dict[str, dict[str, Any]] = {}
    for label, module in TWINS.items():
        try:
            mod = importlib.import_module(module)
        except ImportError:
            print(f"{module} is not built; skipped", file=sys.stderr)
            continue
        for name, (once, out_bytes) in workloads(mod, pods, leases).items():
            # The twins must agree before their speeds mean anything.
            result = once()
            outputs.setdefault(name, {})[label] = b"".join(result) if isinstance(result, list) else result
            rate = best_rate(once, args.seconds, args.repeat)
            rows.append({"workload": name, "twin": label, "calls_per_s": rate, "mb_per_s": rate * out_bytes / 1e6})
    for name, by_twin in outputs.items():
        if len(set(by_twin.values())) > 1:
            raise RuntimeError(f"{name}: the twins disagree")
    rate = {(r["workload"], r["twin"]): r["calls_per_s"] for r in rows}
    ratios = {f"{name}_compiled_over_pure": rate[(name, "compiled twin")] / rate[(name, "pure twin")]
              for name in outputs if (name, "compiled twin") in rate and (name, "pure twin") in rate}
    return {"python": platform.python_version(), "items": args.items, "seconds": args.seconds,
            "repeat": args.repeat, "rows": rows, "ratios": ratios}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer items, short rounds")
    parser.add_argument("--items", type=int, default=None, help="items per workload (default 10000, 1000 quick)")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per timed round (default 1, 0.1 quick)")
    parser.add_argument("--repeat", type=int, default=None, help="timed rounds, best kept (default 5, 2 quick)")
    parser.add_argument("--output", type=Path, default=RESULTS / "listenc.json")
    args = parser.parse_args(argv)
    args.items = args.items if args.items is not None else (1000 if args.quick else 10_000)
    args.seconds = args.seconds if args.seconds is not None else (0.1 if args.quick else 1.0)
    args.repeat = args.repeat if args.repeat is not None else (2 if args.quick else 5)
    result = run(args)
    print(f"| {args.items} items: workload | twin | calls/s | MB/s |")
    print("|---|---|---:|---:|")
    for r in result["rows"]:
        print(f"| {r['workload']} | {r['twin']} | {r['calls_per_s']:,.1f} | {r['mb_per_s']:,.0f} |")
    for name, value in result["ratios"].items():
        print(f"\n{name}: {value:.2f}x")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
