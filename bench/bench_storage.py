"""Creates per second on SqliteStorage: group commit against one commit per write.

Run ``python bench/bench_storage.py`` from the repository root. Each case
writes into a fresh file in a temporary directory (``--dir`` to pick the disk,
since the cost being shared is the fsync).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout

from kapi.storage.sqlite import SqliteStorage  # noqa: E402

VALUE = bytes(range(256)) * 4  # 1 KiB, about a small pod in msgpack


@dataclass(frozen=True, slots=True)
class Result:
    """One case: writes done, seconds taken, transactions committed."""

    writes: int
    seconds: float
    transactions: int

    @property
    def rate(self) -> float:
        return self.writes / self.seconds if self.seconds else 0.0


async def measure(path: str, *, group_commit: bool, concurrency: int, writes: int, max_seconds: float) -> Result:
    """Create ``writes`` keys from ``concurrency`` tasks (stopping early after ``max_seconds``)."""
    storage = SqliteStorage(path, group_commit=group_commit)
    done = 0
    async with trio.open_nursery() as nursery:
        await nursery.start(storage.run)
        started = time.perf_counter()
        deadline = started + max_seconds

        async def writer(task: int) -> None:
            nonlocal done
            i = 0
            while done < writes and time.perf_counter() < deadline:
                await storage.create(f"/registry/bench/{task}/{i}", VALUE)
                done += 1
                i += 1

        async with trio.open_nursery() as writers:
            for task in range(concurrency):
                writers.start_soon(writer, task)
        elapsed = time.perf_counter() - started
        transactions = storage.statistics().transactions
        nursery.cancel_scope.cancel()
    return Result(done, elapsed, transactions)


async def main(args: argparse.Namespace) -> None:
    print(f"SqliteStorage creates/s, {args.writes} writes per case, value {len(VALUE)} bytes")
    print(f"{'concurrency':>11} | {'group commit':>12} {'writes/txn':>10} | {'commit each':>11} | {'ratio':>6}")
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        for concurrency in args.concurrency:
            results: dict[bool, Result] = {}
            for group_commit in (True, False):
                path = str(Path(directory) / f"bench-{concurrency}-{group_commit}.db")
                results[group_commit] = await measure(
                    path,
                    group_commit=group_commit,
                    concurrency=concurrency,
                    writes=args.writes,
                    max_seconds=args.max_seconds,
                )
            grouped, single = results[True], results[False]
            per_txn = grouped.writes / max(grouped.transactions, 1)
            ratio = grouped.rate / single.rate if single.rate else float("nan")
            print(
                f"{concurrency:>11} | {grouped.rate:>12,.0f} {per_txn:>10.1f} | {single.rate:>11,.0f} | {ratio:>5.1f}x"
            )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=2000, help="writes per case")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--max-seconds", type=float, default=8.0, help="cap per case, keeps the run short")
    parser.add_argument("--dir", default=None, help="directory for the database files")
    return parser.parse_args()


if __name__ == "__main__":
    trio.run(main, parse_args())
