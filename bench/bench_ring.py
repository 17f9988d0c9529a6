"""The watch cache's event window: the compiled EventRing twin against the pure one, in one process.

Run ``python bench/bench_ring.py`` from the repository root (a ring of 100,000
events; ``--quick`` for 10,000). Both twins get the same events and the same
lookups: appends/s (filling the ring one and a half times, so it wraps and
evicts), ``events_after`` at random revisions across the window (half the
window comes back on average), and ``events_after`` near the newest event (a
watcher catching up a few events, the common case). Prints a Markdown table with
compiled ÷ pure for each (goal: lookups ≥ 3×) and writes JSON.
"""

from __future__ import annotations

import argparse
import importlib
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, write_json  # noqa: E402

GOAL_LOOKUP_RATIO = 3.0  # compiled ÷ pure events_after lookups/s (at least)


class Event:
    """The least a ring needs of an event."""

    __slots__ = ("revision",)

    def __init__(self, revision: int) -> None:
        self.revision = revision


def best_rate(fn: Callable[[], int], repeat: int) -> float:
    """Operations per second of the fastest of ``repeat`` runs of ``fn`` (which returns its operation count)."""
    best = 0.0
    for _ in range(repeat):
        started = time.perf_counter()
        ops = fn()
        elapsed = time.perf_counter() - started
        best = max(best, ops / elapsed if elapsed else 0.0)
    return best


def measure(module: Any, events: list[Event], random_rvs: list[int], tail_rvs: list[int],
            repeat: int) -> dict[str, float]:
    """Appends/s and events_after lookups/s of one twin."""
    size = len(events) * 2 // 3  # the ring holds the newest two thirds: it has wrapped and evicted

    def new_ring() -> Any:
        return module.EventRing(size, min_capacity=size, max_capacity=size)

    def appends() -> int:
        ring = new_ring()
        append = ring.append
        for event in events:
            append(event)
        return len(events)

    ring = new_ring()
    for event in events:
        ring.append(event)
    assert ring.oldest_known == events[-size - 1].revision

    def lookups(rvs: list[int]) -> Callable[[], int]:
        def run() -> int:
            after = ring.events_after
            for rv in rvs:
                after(rv)
            return len(rvs)
        return run

    return {
        "appends_per_s": best_rate(appends, repeat),
        "random_lookups_per_s": best_rate(lookups(random_rvs), repeat),
        "tail_lookups_per_s": best_rate(lookups(tail_rvs), repeat),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=None, help="events in the ring (default 100,000)")
    parser.add_argument("--lookups", type=int, default=None, help="lookups per run (default 2,000)")
    parser.add_argument("--repeat", type=int, default=5, help="best of this many runs per figure")
    parser.add_argument("--quick", action="store_true", help="10,000 events, 200 lookups, best of 2")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output", type=Path, default=RESULTS / "ring.json")
    args = parser.parse_args(argv)
    held = args.events or (10_000 if args.quick else 100_000)
    n_lookups = args.lookups or (200 if args.quick else 2_000)
    repeat = 2 if args.quick else args.repeat

    pure = importlib.import_module("kapi._fast.ring_py")
    try:
        compiled = importlib.import_module("kapi._fast.ring_c")
    except ImportError:
        print("the compiled twin kapi._fast.ring_c is not built (pip install -e .)", file=sys.stderr)
        return 1

    rng = random.Random(args.seed)
    # Revisions with gaps, as a cache of one resource sees them among all writes.
    revisions: list[int] = []
    rv = 1000
    for _ in range(held * 3 // 2):
        rv += rng.randint(1, 3)
        revisions.append(rv)
    events = [Event(r) for r in revisions]
    window = revisions[-held - 1:]  # oldest_known and every held revision
    random_rvs = [rng.randint(window[0], window[-1]) for _ in range(n_lookups)]
    tail_rvs = [rng.randint(window[-10], window[-1]) for _ in range(n_lookups * 50)]

    results = {name: measure(module, events, random_rvs, tail_rvs, repeat)
               for name, module in (("compiled", compiled), ("pure", pure))}
    # Named *_over_pure: the compiled-against-pure harness collects ratios by that suffix.
    ratios = {f"{key.removesuffix('_per_s')}_compiled_over_pure": results["compiled"][key] / results["pure"][key]
              for key in results["pure"]}

    print(f"EventRing, {held:,} events held; best of {repeat}\n")
    print("| operation | compiled /s | pure /s | compiled ÷ pure |")
    print("|---|---:|---:|---:|")
    labels = {"appends_per_s": "append", "random_lookups_per_s": "events_after, random rv (½ window back)",
              "tail_lookups_per_s": "events_after, rv among the newest 10"}
    for key, label in labels.items():
        ratio = results["compiled"][key] / results["pure"][key]
        print(f"| {label} | {results['compiled'][key]:,.0f} | {results['pure'][key]:,.0f} | {ratio:.1f}× |")
    lookup_ratio = min(ratios["random_lookups_compiled_over_pure"], ratios["tail_lookups_compiled_over_pure"])
    met = lookup_ratio >= GOAL_LOOKUP_RATIO
    print(f"\nlookups: compiled ÷ pure ≥ {GOAL_LOOKUP_RATIO:.0f}×: {'met' if met else 'NOT met'} ({lookup_ratio:.1f}×)")

    write_json(args.output, {
        "config": {"events": held, "random_lookups": len(random_rvs), "tail_lookups": len(tail_rvs),
                   "repeat": repeat, "quick": args.quick, "python": platform.python_version()},
        "compiled": {k: round(v, 1) for k, v in results["compiled"].items()},
        "pure": {k: round(v, 1) for k, v in results["pure"].items()},
        "ratios": {k: round(v, 2) for k, v in ratios.items()},
        "goals": {"lookup_ratio": GOAL_LOOKUP_RATIO, "lookup_ratio_met": met},
    })
    return 0


if __name__ == "__main__":
    sys.exit(main())
