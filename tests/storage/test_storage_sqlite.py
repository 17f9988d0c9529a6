"""What only the SQLite backend promises: durability, restart, group commit."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

import pytest
import trio

from kapi.errors import KeyExists, StorageError, StorageUnavailable
from kapi.storage.base import Event
from kapi.storage.sqlite import SqliteStorage

ROOT = Path(__file__).resolve().parents[2]
PODS = "/registry/pods/"


@asynccontextmanager
async def running(storage: SqliteStorage) -> AsyncIterator[SqliteStorage]:
    """Run ``storage`` for the duration of the block, then stop it."""
    async with trio.open_nursery() as nursery:
        await nursery.start(storage.run)
        yield storage
        nursery.cancel_scope.cancel()


async def test_state_and_revisions_survive_a_restart(tmp_path: Path) -> None:
    path = str(tmp_path / "kapi.db")
    async with running(SqliteStorage(path)) as storage:
        a = await storage.create(f"{PODS}a", b"a1")
        await storage.create(f"{PODS}b", b"b1")
        a2 = await storage.update(f"{PODS}a", b"a2", a)
        gone, _ = await storage.delete(f"{PODS}b")
        await storage.compact(a)
        before = await storage.list(PODS, revision=a2)
        last = await storage.current_revision()

    async with running(SqliteStorage(path)) as storage:
        assert await storage.current_revision() == last == gone
        assert storage.compacted_revision() == a
        assert (await storage.get(f"{PODS}a")).value == b"a2"
        assert await storage.list(PODS, revision=a2) == before
        async with storage.watch(PODS, a) as events:
            with trio.fail_after(10):
                replayed = [await events.receive() for _ in range(3)]
        assert [(e.type, e.revision) for e in replayed] == [("ADDED", 2), ("MODIFIED", a2), ("DELETED", gone)]
        assert await storage.create(f"{PODS}c", b"c") == last + 1


async def test_group_commit_shares_transactions(tmp_path: Path) -> None:
    async with running(SqliteStorage(str(tmp_path / "kapi.db"))) as storage:
        async with trio.open_nursery() as nursery:
            for i in range(64):
                nursery.start_soon(storage.create, f"{PODS}{i}", b"x")
        stats = storage.statistics()
        assert stats.writes == 64
        assert 1 <= stats.transactions < stats.writes
        assert await storage.count(PODS) == 64


async def test_without_group_commit_each_write_commits_alone(tmp_path: Path) -> None:
    async with running(SqliteStorage(str(tmp_path / "kapi.db"), group_commit=False)) as storage:
        async with trio.open_nursery() as nursery:
            for i in range(16):
                nursery.start_soon(storage.create, f"{PODS}{i}", b"x")
        assert storage.statistics().transactions == storage.statistics().writes == 16


async def test_a_failed_write_does_not_fail_its_batch(tmp_path: Path) -> None:
    async with running(SqliteStorage(str(tmp_path / "kapi.db"), max_batch=4)) as storage:
        await storage.create(f"{PODS}taken", b"")
        outcomes: dict[str, str] = {}

        async def create(key: str) -> None:
            try:
                await storage.create(key, b"")
                outcomes[key] = "ok"
            except KeyExists:
                outcomes[key] = "exists"

        async with trio.open_nursery() as nursery:
            for i in range(12):
                nursery.start_soon(create, f"{PODS}taken" if i % 3 == 0 else f"{PODS}{i}")
        assert sorted(outcomes.values()) == ["exists"] + ["ok"] * 8
        assert await storage.current_revision() == 9
        assert storage.statistics().writes == 13


async def test_a_write_failing_halfway_leaves_no_trace(tmp_path: Path) -> None:
    path = str(tmp_path / "kapi.db")
    async with running(SqliteStorage(path)):
        pass
    # A trigger makes the second statement of one create fail after its log row was written.
    setup = sqlite3.connect(path, isolation_level=None)
    setup.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON current WHEN NEW.key LIKE '%bad'"
        " BEGIN SELECT RAISE(ABORT, 'refused'); END"
    )
    setup.close()
    async with running(SqliteStorage(path)) as storage:
        failed: list[str] = []

        async def create(key: str) -> None:
            try:
                await storage.create(key, b"")
            except StorageError:
                failed.append(key)

        async with trio.open_nursery() as nursery:
            for i in range(16):
                nursery.start_soon(create, f"{PODS}{i}-{'bad' if i % 4 == 0 else 'good'}")
        assert sorted(failed) == sorted(f"{PODS}{i}-bad" for i in range(0, 16, 4))
        assert await storage.current_revision() == 12
        assert len((await storage.list(PODS, revision=12)).items) == 12
        async with storage.watch(PODS, 0) as events:
            with trio.fail_after(10):
                got = [await events.receive() for _ in range(12)]
        assert all(e.key.endswith("good") for e in got)
        assert [e.revision for e in got] == list(range(1, 13))


async def test_a_second_process_writing_the_file_is_detected(tmp_path: Path) -> None:
    path = str(tmp_path / "kapi.db")
    async with running(SqliteStorage(path)) as storage:
        await storage.create(f"{PODS}a", b"")
        intruder = sqlite3.connect(path, isolation_level=None)
        intruder.execute("UPDATE meta SET value = value + 1 WHERE name = 'revision'")
        intruder.close()
        with pytest.raises(StorageUnavailable):
            await storage.create(f"{PODS}b", b"")


async def test_watch_replays_from_the_log_across_many_chunks(tmp_path: Path) -> None:
    async with running(SqliteStorage(str(tmp_path / "kapi.db"), watch_buffer=16)) as storage:
        async with trio.open_nursery() as nursery:
            for w in range(8):
                nursery.start_soon(_create_many, storage, f"{PODS}{w}/", 150)
        async with storage.watch(PODS, 0) as events:
            with trio.fail_after(20):
                got: list[Event] = [await events.receive() for _ in range(1200)]
        assert [e.revision for e in got] == list(range(1, 1201))


async def _create_many(storage: SqliteStorage, prefix: str, n: int) -> None:
    for i in range(n):
        await storage.create(f"{prefix}{i}", b"x")


# A child that writes with the SQLite backend and prints each acknowledged write.
CHILD = """
import sys
import trio
from kapi.storage.sqlite import SqliteStorage

async def main(path):
    storage = SqliteStorage(path)
    async with trio.open_nursery() as nursery:
        await nursery.start(storage.run)

        async def write(w):
            for i in range(10**9):
                key = f"/registry/kill/{w}/{i}"
                revision = await storage.create(key, b"v" * 200)
                print(key, revision, flush=True)

        for w in range(8):
            nursery.start_soon(write, w)

trio.run(main, sys.argv[1])
"""


async def test_kill_9_loses_no_acknowledged_write(tmp_path: Path) -> None:
    path = str(tmp_path / "kapi.db")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", CHILD, path], stdout=subprocess.PIPE, env=env, cwd=str(ROOT)
    )
    assert process.stdout is not None
    acknowledged: dict[str, int] = {}
    pending = b""
    try:
        with trio.fail_after(60):
            killed = False
            while True:
                chunk = await process.stdout.receive_some()
                if not chunk:
                    break
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    key, acked = line.decode().split()
                    acknowledged[key] = int(acked)
                if not killed and len(acknowledged) >= 500:
                    process.kill()  # SIGKILL mid-stream; lines already printed are still read
                    killed = True
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == -signal.SIGKILL
    assert len(acknowledged) >= 500

    async with running(SqliteStorage(path)) as storage:
        assert await storage.current_revision() >= max(acknowledged.values())
        for key, revision in acknowledged.items():
            kv = await storage.get(key)
            assert kv.revision == revision
