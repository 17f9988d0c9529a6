"""List body assembly: the compiled twin against the pure twin, on the same items in one process.

Run ``python bench/bench_listenc.py`` from the repository root (``--quick`` for a
short run). The items are N realistic pods as JSON bytes (the pod fixture, each
with its own name); one call assembles ``head + items joined by commas + tail``
in chunks of about a megabyte, as a LIST body is sent. Prints a Markdown table
and writes JSON, with the ratio ``assemble_compiled_over_pure``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

RESULTS = REPO / "bench" / "results"
CHUNK_BYTES = 1 << 20
TWINS = {"compiled twin": "kapi._fast.listenc_c", "pure twin": "kapi._fast.listenc_py"}


def best_rate(fn: Callable[[], object], seconds: float, repeat: int) -> float:
    """Calls per second of ``fn``, the best of ``repeat`` timed rounds of about ``seconds``."""
    n = 1
    while True:  # size a round
        start = time.perf_counter()
        for _ in range(n):
            fn()
        took = time.perf_counter() - start
        if took > seconds / 4:
            break
        n *= 2
    per_round = max(1, int(n * seconds / took))
    best = 0.0
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(per_round):
            fn()
        best = max(best, per_round / (time.perf_counter() - start))
    return best


def pod_items(count: int) -> list[bytes]:
    """``count`` pods as compact JSON, each with its own name."""
    pod = json.loads((REPO / "tests" / "fixtures" / "pod.json").read_text())
    items = []
    for i in range(count):
        pod["metadata"]["name"] = f"pod-{i:06d}"
        items.append(json.dumps(pod, separators=(",", ":")).encode())
    return items


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Time both twins on the same items; rows and the compiled ÷ pure ratio."""
    items = pod_items(args.items)
    head, tail = b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[', b"]}"
    body_bytes = len(head) + len(tail) + sum(len(x) for x in items) + max(0, len(items) - 1)
    rows: list[dict[str, Any]] = []
    for label, module in TWINS.items():
        try:
            encode = importlib.import_module(module).encode_list_chunks
        except ImportError:
            print(f"{module} is not built; skipped", file=sys.stderr)
            continue
        # The twins must agree before their speeds mean anything.
        assembled = b"".join(encode(head, items, tail, CHUNK_BYTES))
        if len(assembled) != body_bytes:
            raise RuntimeError(f"{module}: {len(assembled)} bytes, expected {body_bytes}")

        def once(encode: Callable[..., Any] = encode) -> None:
            for _ in encode(head, items, tail, CHUNK_BYTES):
                pass

        rate = best_rate(once, args.seconds, args.repeat)
        rows.append({"twin": label, "lists_per_s": rate, "mb_per_s": rate * body_bytes / 1e6})
    by = {r["twin"]: r for r in rows}
    ratios = {}
    if len(by) == 2:
        ratios = {"assemble_compiled_over_pure": by["compiled twin"]["lists_per_s"] / by["pure twin"]["lists_per_s"]}
    return {"python": platform.python_version(), "items": args.items, "body_bytes": body_bytes,
            "seconds": args.seconds, "repeat": args.repeat, "rows": rows, "ratios": ratios}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer items, short rounds")
    parser.add_argument("--items", type=int, default=None, help="pods in the list (default 10000, 1000 quick)")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per timed round (default 1, 0.1 quick)")
    parser.add_argument("--repeat", type=int, default=None, help="timed rounds, best kept (default 5, 2 quick)")
    parser.add_argument("--output", type=Path, default=RESULTS / "listenc.json")
    args = parser.parse_args(argv)
    args.items = args.items if args.items is not None else (1000 if args.quick else 10_000)
    args.seconds = args.seconds if args.seconds is not None else (0.1 if args.quick else 1.0)
    args.repeat = args.repeat if args.repeat is not None else (2 if args.quick else 5)
    result = run(args)
    print(f"| list of {args.items} pods ({result['body_bytes'] / 1e6:.1f} MB) | lists/s | MB/s |")
    print("|---|---:|---:|")
    for r in result["rows"]:
        print(f"| {r['twin']} | {r['lists_per_s']:,.1f} | {r['mb_per_s']:,.0f} |")
    for name, value in result["ratios"].items():
        print(f"\n{name}: {value:.2f}x")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
