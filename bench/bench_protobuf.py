"""Protobuf codec speed on the realistic pod: compiled twin, pure twin and orjson JSON, same run.

Run ``python bench/bench_protobuf.py`` from the repository root (``--quick`` for a
short run). Encode is dict -> message bytes (no envelope), decode is bytes -> dict;
MB/s count the bytes of each format (the protobuf pod is about half the size of its
JSON), so objects/s is the figure to compare across formats. Prints a Markdown
table and writes JSON.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from _common import best_rate  # noqa: E402

from kapi.encoding import protobuf  # noqa: E402
from kapi.object.schema import load_builtin  # noqa: E402

RESULTS = REPO / "bench" / "results"


def run(args: argparse.Namespace) -> dict[str, Any]:
    schema = load_builtin()
    pod = json.loads((REPO / "tests" / "fixtures" / "pod.json").read_text())
    gvk = ("", "v1", "Pod")
    rows: list[dict[str, Any]] = []
    twins = {"protobuf (compiled twin)": "kapi._fast.protowire_c", "protobuf (pure twin)": "kapi._fast.protowire_py"}
    for label, module in twins.items():
        try:
            wire = importlib.import_module(module)
        except ImportError:
            print(f"{module} is not built; skipped", file=sys.stderr)
            continue
        codec = protobuf.Codec(wire)
        data = protobuf.encode(schema, gvk, pod, codec)
        enc = best_rate(lambda: protobuf.encode(schema, gvk, pod, codec), args.seconds, args.repeat)
        dec = best_rate(lambda: protobuf.decode(schema, gvk, data, codec), args.seconds, args.repeat)
        rows.append({"codec": label, "bytes": len(data), "encode_per_s": enc, "decode_per_s": dec})
    body = orjson.dumps(pod)
    rows.append({
        "codec": "JSON (orjson)",
        "bytes": len(body),
        "encode_per_s": best_rate(lambda: orjson.dumps(pod), args.seconds, args.repeat),
        "decode_per_s": best_rate(lambda: orjson.loads(body), args.seconds, args.repeat),
    })
    for row in rows:
        row["encode_mb_s"] = row["encode_per_s"] * row["bytes"] / 1e6
        row["decode_mb_s"] = row["decode_per_s"] * row["bytes"] / 1e6
    by = {r["codec"]: r for r in rows}
    ratios = {}
    if "protobuf (compiled twin)" in by:
        c, py = by["protobuf (compiled twin)"], by["protobuf (pure twin)"]
        ratios = {"encode_compiled_over_pure": c["encode_per_s"] / py["encode_per_s"],
                  "decode_compiled_over_pure": c["decode_per_s"] / py["decode_per_s"]}
    return {"python": platform.python_version(), "seconds": args.seconds, "repeat": args.repeat,
            "rows": rows, "ratios": ratios}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short rounds")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per timed round (default 1, 0.1 quick)")
    parser.add_argument("--repeat", type=int, default=None, help="timed rounds, best kept (default 5, 2 quick)")
    parser.add_argument("--output", type=Path, default=RESULTS / "protobuf.json")
    args = parser.parse_args(argv)
    args.seconds = args.seconds if args.seconds is not None else (0.1 if args.quick else 1.0)
    args.repeat = args.repeat if args.repeat is not None else (2 if args.quick else 5)
    result = run(args)
    print("| codec | bytes | encode objects/s | encode MB/s | decode objects/s | decode MB/s |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in result["rows"]:
        print(f"| {r['codec']} | {r['bytes']} | {r['encode_per_s']:,.0f} | {r['encode_mb_s']:.1f} "
              f"| {r['decode_per_s']:,.0f} | {r['decode_mb_s']:.1f} |")
    for name, value in result["ratios"].items():
        print(f"\n{name}: {value:.1f}x", end="")
    print()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
