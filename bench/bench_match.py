"""Label selector matching over the watch cache's entries: dict loop against the interned table twins.

Run ``python bench/bench_match.py`` from the repository root (100,000 entries;
``--quick`` for 5,000). Each entry carries six realistic pod labels (app, tier,
pod-template-hash, version, team, env), 5 % of them ``tier=gold``. The selector
``tier=gold,env!=dev`` (two requirements) is timed as: the ``LabelSelector.matches``
loop over label dicts (what the cache did), the pure table twin and the compiled
one. Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import argparse
import importlib
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, write_json  # noqa: E402

from kapi.object.selectors import parse_label_selector  # noqa: E402

SELECTOR = "tier=gold,env!=dev"
GOALS = {"compiled_over_pure": 10.0, "compiled_ms": 2.0}  # (at least), (at most)


def pod_labels(n: int, seed: int = 1) -> list[dict[str, str]]:
    """``n`` label sets as a cluster of deployments would have them."""
    rng = random.Random(seed)
    apps = [f"app-{i}" for i in range(400)]
    out = []
    for i in range(n):
        app = rng.choice(apps)
        out.append({
            "app": app,
            "tier": "gold" if i % 20 == 0 else rng.choice(["frontend", "backend", "cache"]),
            "pod-template-hash": f"{rng.getrandbits(40):010x}",
            "version": f"v{rng.randint(1, 30)}",
            "team": f"team-{rng.randint(1, 40)}",
            "env": rng.choice(["prod", "staging", "dev"]),
        })
    return out


def best_ms(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(best, median) milliseconds of ``repeat`` runs of ``fn``."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return min(times), statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="5,000 entries")
    parser.add_argument("--entries", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS / "match.json")
    args = parser.parse_args(argv)
    n = args.entries or (5_000 if args.quick else 100_000)
    repeat = 5 if args.quick else 9

    rows = pod_labels(n)
    selector = parse_label_selector(SELECTOR)
    expected = [i for i, labels in enumerate(rows) if selector.matches(labels)]

    results: dict[str, Any] = {"entries": n, "selector": SELECTOR, "matches": len(expected)}
    dict_best, dict_med = best_ms(lambda: [i for i, labels in enumerate(rows) if selector.matches(labels)], repeat)
    results["dict_loop_ms"] = round(dict_best, 3)
    results["dict_loop_median_ms"] = round(dict_med, 3)

    twins = {"pure": "kapi._fast.match_py", "compiled": "kapi._fast.match_c"}
    for name, module_name in twins.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            results[f"{name}_ms"] = None
            continue
        table = module.MatchTable()
        t0 = time.perf_counter()
        slots = [table.add(labels) for labels in rows]
        load_s = time.perf_counter() - t0
        assert slots == list(range(n))
        compiled = table.compile(selector)
        assert table.scan(compiled) == expected, name
        scan_best, scan_med = best_ms(lambda: table.scan(compiled), 3 if name == "pure" else repeat * 4)
        results[f"{name}_ms"] = round(scan_best, 3)
        results[f"{name}_median_ms"] = round(scan_med, 3)
        results[f"{name}_load_us_per_entry"] = round(load_s / n * 1e6, 2)
        compile_best, _ = best_ms(lambda: table.compile(selector), repeat)
        results[f"{name}_compile_ms"] = round(compile_best, 4)

    pure, compiled_ms = results.get("pure_ms"), results.get("compiled_ms")
    if pure and compiled_ms:
        results["compiled_over_pure"] = round(pure / compiled_ms, 1)
        results["compiled_over_dict_loop"] = round(dict_best / compiled_ms, 1)
    if pure:
        results["pure_over_dict_loop"] = round(dict_best / pure, 2)
    results["goals"] = GOALS
    results["python"] = platform.python_version()

    print(f"| {n:,} entries, `{SELECTOR}` ({len(expected):,} match) | best ms | median ms |")
    print("|---|---|---|")
    for label, key in (("LabelSelector.matches loop", "dict_loop"), ("pure twin", "pure"),
                       ("compiled twin", "compiled")):
        print(f"| {label} | {results.get(key + '_ms')} | {results.get(key + '_median_ms')} |")
    for key in ("compiled_over_pure", "compiled_over_dict_loop", "pure_over_dict_loop"):
        if key in results:
            print(f"{key}: {results[key]}")
    write_json(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
