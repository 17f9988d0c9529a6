"""Memory and SQLite backends answer the same random workload identically."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import trio

from kapi.errors import StorageError
from kapi.storage.base import Event, Storage
from kapi.storage.memory import MemoryStorage
from kapi.storage.sqlite import SqliteStorage

PREFIXES = ("/registry/pods/a/", "/registry/pods/b/", "/registry/nodes/")


async def apply(storage: Storage, rng: random.Random, steps: int) -> list[object]:
    """Run a random mix of writes (many of them failing on purpose); return every outcome."""
    outcomes: list[object] = []
    for _ in range(steps):
        key = rng.choice(PREFIXES) + rng.choice("uvwxyz")
        expected = rng.randint(0, await storage.current_revision() + 1)
        op = rng.random()
        try:
            if op < 0.4:
                outcomes.append(await storage.create(key, rng.randbytes(rng.randint(0, 40))))
            elif op < 0.75:
                if rng.random() < 0.7:
                    try:
                        expected = (await storage.get(key)).revision
                    except StorageError:
                        pass
                outcomes.append(await storage.update(key, rng.randbytes(8), expected))
            elif op < 0.97:
                outcomes.append(await storage.delete(key, expected if rng.random() < 0.3 else None))
            else:
                await storage.compact(await storage.current_revision() - rng.randint(0, 20))
                outcomes.append(("compacted", storage.compacted_revision()))
        except StorageError as exc:
            outcomes.append((type(exc).__name__, exc.key, exc.revision))
    return outcomes


async def replay(storage: Storage, prefix: str, from_revision: int) -> list[Event]:
    """The events under ``prefix`` after ``from_revision``, up to the current revision."""
    out: list[Event] = []
    if await storage.current_revision() <= from_revision:
        return out
    async with storage.watch("", from_revision) as events:
        with trio.fail_after(10):
            async for event in events:
                if event.key.startswith(prefix):
                    out.append(event)
                if event.revision == await storage.current_revision():
                    return out
    return out


@pytest.mark.parametrize("seed", range(4))
async def test_backends_agree(seed: int, tmp_path: Path, nursery: trio.Nursery) -> None:
    memory, sqlite = MemoryStorage(), SqliteStorage(str(tmp_path / "kapi.db"))
    await nursery.start(memory.run)
    await nursery.start(sqlite.run)
    assert await apply(memory, random.Random(seed), 400) == await apply(sqlite, random.Random(seed), 400)
    assert await memory.current_revision() == await sqlite.current_revision()
    assert memory.compacted_revision() == sqlite.compacted_revision()
    floor = memory.compacted_revision()
    for prefix in ("", *PREFIXES):
        assert await memory.count(prefix) == await sqlite.count(prefix)
        for revision in range(floor + 1, await memory.current_revision() + 2):
            for limit in (None, 2):
                mine = await memory.list(prefix, revision=revision, limit=limit)
                theirs = await sqlite.list(prefix, revision=revision, limit=limit)
                assert mine == theirs
        assert await replay(memory, prefix, floor) == await replay(sqlite, prefix, floor)
