"""The storage contract: every backend must pass every test here."""

from __future__ import annotations

from pathlib import Path
from typing import Awaitable, Callable

import pytest
import trio

from kapi.errors import KeyExists, KeyNotFound, RevisionCompacted, RevisionConflict, StorageUnavailable
from kapi.storage.base import Event, KeyValue, ListResult, Storage

BackendFactory = Callable[..., Storage]
StartStorage = Callable[..., Awaitable[Storage]]

PODS = "/registry/pods/"
A = "/registry/pods/default/a"
B = "/registry/pods/default/b"
C = "/registry/pods/default/c"


async def receive(events: trio.MemoryReceiveChannel[Event], n: int) -> list[Event]:
    """The next ``n`` events (a deadline turns a missing event into a failure, not a hang)."""
    with trio.fail_after(10):
        return [await events.receive() for _ in range(n)]


async def wait_for_revision(storage: Storage, revision: int) -> None:
    """Yield until ``storage`` has committed ``revision``."""
    with trio.fail_after(10):
        while await storage.current_revision() < revision:
            await trio.sleep(0.001)


# ------------------------------------------------------------------ CRUD


async def test_create_then_get(storage: Storage) -> None:
    base = await storage.current_revision()  # a fresh store's starting revision (etcd's is 1)
    revision = await storage.create(A, b"\x81\xa1a\x01")
    assert revision == base + 1 == await storage.current_revision()
    assert await storage.get(A) == KeyValue(A, b"\x81\xa1a\x01", base + 1, base + 1)


async def test_create_existing_key_raises_key_exists(storage: Storage) -> None:
    revision = await storage.create(A, b"one")
    with pytest.raises(KeyExists) as info:
        await storage.create(A, b"two")
    assert info.value.key == A
    assert info.value.revision == revision
    assert (await storage.get(A)).value == b"one"


async def test_get_missing_key_raises_key_not_found(storage: Storage) -> None:
    with pytest.raises(KeyNotFound) as info:
        await storage.get(A)
    assert info.value.key == A


async def test_update_compares_and_swaps(storage: Storage) -> None:
    created = await storage.create(A, b"one")
    updated = await storage.update(A, b"two", created)
    assert updated == created + 1
    assert await storage.get(A) == KeyValue(A, b"two", updated, created)
    with pytest.raises(RevisionConflict) as info:
        await storage.update(A, b"three", created)
    assert info.value.revision == updated
    assert info.value.key == A
    assert (await storage.get(A)).value == b"two"


async def test_update_missing_key_raises_key_not_found(storage: Storage) -> None:
    with pytest.raises(KeyNotFound):
        await storage.update(A, b"x", 1)


async def test_delete_returns_revision_and_deleted_value(storage: Storage) -> None:
    created = await storage.create(A, b"one")
    revision, old = await storage.delete(A, created)
    assert revision == created + 1
    assert old == KeyValue(A, b"one", created, created)
    with pytest.raises(KeyNotFound):
        await storage.get(A)
    with pytest.raises(KeyNotFound):
        await storage.delete(A)


async def test_delete_with_stale_revision_raises_conflict(storage: Storage) -> None:
    created = await storage.create(A, b"one")
    updated = await storage.update(A, b"two", created)
    with pytest.raises(RevisionConflict) as info:
        await storage.delete(A, created)
    assert info.value.revision == updated
    revision, old = await storage.delete(A)
    assert (revision, old.value) == (updated + 1, b"two")


async def test_recreate_after_delete_starts_a_new_lifetime(storage: Storage) -> None:
    await storage.create(A, b"one")
    await storage.delete(A)
    recreated = await storage.create(A, b"again")
    assert await storage.get(A) == KeyValue(A, b"again", recreated, recreated)


async def test_failed_writes_consume_no_revision(storage: Storage) -> None:
    created = await storage.create(A, b"one")
    for failing in (
        storage.create(A, b"dup"),
        storage.update(A, b"x", created + 7),
        storage.update(B, b"x", 1),
        storage.delete(B),
        storage.delete(A, created + 7),
    ):
        with pytest.raises((KeyExists, RevisionConflict, KeyNotFound)):
            await failing
    assert await storage.current_revision() == created
    assert await storage.create(B, b"two") == created + 1


async def test_values_are_opaque_bytes(storage: Storage) -> None:
    value = bytes(range(256)) * 64
    await storage.create(A, value)
    await storage.create(B, b"")
    assert (await storage.get(A)).value == value
    assert (await storage.get(B)).value == b""


async def test_concurrent_creates_of_one_key_admit_exactly_one(storage: Storage) -> None:
    base = await storage.current_revision()
    outcomes: list[str] = []

    async def create(i: int) -> None:
        try:
            await storage.create(A, b"%d" % i)
            outcomes.append("created")
        except KeyExists:
            outcomes.append("exists")
        await storage.create(f"{PODS}other/{i}", b"x")  # unrelated writes in the same batches

    async with trio.open_nursery() as nursery:
        for i in range(32):
            nursery.start_soon(create, i)
    assert sorted(outcomes) == ["created"] + ["exists"] * 31
    assert await storage.count(f"{PODS}other/") == 32
    assert await storage.current_revision() == base + 33


async def test_concurrent_compare_and_swap_loses_no_increment(storage: Storage) -> None:
    await storage.create(A, b"0")

    async def increment(times: int) -> None:
        for _ in range(times):
            while True:
                current = await storage.get(A)
                try:
                    await storage.update(A, b"%d" % (int(current.value) + 1), current.revision)
                    break
                except RevisionConflict:
                    continue

    async with trio.open_nursery() as nursery:
        for _ in range(8):
            nursery.start_soon(increment, 10)
    assert (await storage.get(A)).value == b"80"


async def test_current_revision_is_monotonic_and_covers_acknowledged_writes(storage: Storage) -> None:
    base = await storage.current_revision()
    acknowledged: list[int] = []
    seen: list[int] = []

    async def write(i: int) -> None:
        for j in range(10):
            revision = await storage.create(f"{PODS}{i}/{j}", b"x")
            assert await storage.current_revision() >= revision
            acknowledged.append(revision)
            seen.append(await storage.current_revision())

    async with trio.open_nursery() as nursery:
        for i in range(16):
            nursery.start_soon(write, i)
    assert sorted(acknowledged) == list(range(base + 1, base + 161))
    assert seen == sorted(seen)
    assert await storage.current_revision() == base + 160


async def test_count(storage: Storage) -> None:
    assert await storage.count(PODS) == 0
    await storage.create(A, b"")
    await storage.create(B, b"")
    await storage.create("/registry/podsx/c", b"")
    await storage.create("/registry/services/specs/d", b"")
    assert await storage.count(PODS) == 2
    assert await storage.count("/registry/") == 4
    assert await storage.count("") == 4
    await storage.delete(A)
    assert await storage.count(PODS) == 1


# ------------------------------------------------------------------ list


async def fill(storage: Storage) -> list[str]:
    """Five pods in ``ns1``, one in ``ns2`` and neighbours outside the pods prefix."""
    keys = [f"{PODS}ns1/{name}" for name in "abcde"] + [f"{PODS}ns2/x"]
    for key in reversed(keys):  # insertion order must not matter
        await storage.create(key, key.encode())
    await storage.create("/registry/podsx/y", b"")
    await storage.create("/registry/pods", b"")
    await storage.create("/registry/services/specs/z", b"")
    return keys


def keys_of(result: ListResult) -> list[str]:
    return [item.key for item in result.items]


async def test_list_latest_by_prefix_in_key_order(storage: Storage) -> None:
    base = await storage.current_revision()
    keys = await fill(storage)
    result = await storage.list(PODS)
    assert keys_of(result) == keys
    assert (result.revision, result.more, result.remaining) == (await storage.current_revision(), False, 0)
    assert keys_of(await storage.list(f"{PODS}ns1/")) == keys[:5]
    assert len((await storage.list("")).items) == 9
    first = (await storage.list(f"{PODS}ns2/")).items[0]
    assert first.value == first.key.encode()
    assert first.revision == first.create_revision == base + 1


async def test_list_pages_with_start_and_limit(storage: Storage) -> None:
    keys = await fill(storage)
    ns1 = f"{PODS}ns1/"
    page = await storage.list(ns1, limit=2)
    assert (keys_of(page), page.more, page.remaining) == (keys[:2], True, 3)
    page = await storage.list(ns1, start=keys[2], limit=2)
    assert (keys_of(page), page.more, page.remaining) == (keys[2:4], True, 1)
    page = await storage.list(ns1, start=keys[2], limit=3)
    assert (keys_of(page), page.more, page.remaining) == (keys[2:5], False, 0)
    page = await storage.list(ns1, start=keys[3] + "\x00", limit=5)
    assert (keys_of(page), page.more, page.remaining) == (keys[4:5], False, 0)
    page = await storage.list(ns1, start="/", limit=1)  # a start before the prefix changes nothing
    assert (keys_of(page), page.remaining) == (keys[:1], 4)
    page = await storage.list(ns1, start=f"{PODS}ns2/")
    assert (keys_of(page), page.more) == ([], False)
    assert keys_of(await storage.list(ns1, limit=0)) == keys[:5]


async def test_list_at_historical_revisions(storage: Storage) -> None:
    base = await storage.current_revision()
    a1 = await storage.create(A, b"a1")
    b1 = await storage.create(B, b"b1")
    a2 = await storage.update(A, b"a2", a1)
    b_gone, _ = await storage.delete(B)
    c1 = await storage.create(C, b"c1")
    b3 = await storage.create(B, b"b3")

    async def at(revision: int) -> list[tuple[str, bytes, int, int]]:
        result = await storage.list(PODS, revision=revision)
        assert result.revision == revision
        return [(kv.key, kv.value, kv.revision, kv.create_revision) for kv in result.items]

    assert await at(base) == []
    assert await at(a1) == [(A, b"a1", a1, a1)]
    assert await at(b1) == [(A, b"a1", a1, a1), (B, b"b1", b1, b1)]
    assert await at(a2) == [(A, b"a2", a2, a1), (B, b"b1", b1, b1)]
    assert await at(b_gone) == [(A, b"a2", a2, a1)]
    assert await at(c1) == [(A, b"a2", a2, a1), (C, b"c1", c1, c1)]
    assert await at(b3) == [(A, b"a2", a2, a1), (B, b"b3", b3, b3), (C, b"c1", c1, c1)]

    page = await storage.list(PODS, revision=a2, limit=1)
    assert (keys_of(page), page.more, page.remaining, page.revision) == ([A], True, 1, a2)
    page = await storage.list(PODS, revision=c1, start=B, limit=1)
    assert (keys_of(page), page.more, page.remaining) == ([C], False, 0)

    ahead = await storage.list(PODS, revision=b3 + 10)
    assert ahead.revision == await storage.current_revision()
    assert keys_of(ahead) == [A, B, C]


# ------------------------------------------------------------ compaction


async def make_history(storage: Storage) -> None:
    """Creates, updates, deletes and re-creates across two prefixes."""
    for i in range(6):
        await storage.create(f"{PODS}k{i}", b"v0")
    await storage.create("/registry/nodes/n", b"n0")
    for round_ in range(1, 4):
        for i in range(0, 6, round_):
            key = f"{PODS}k{i}"
            current = await storage.get(key)
            await storage.update(key, b"v%d" % round_, current.revision)
        await storage.delete(f"{PODS}k{round_}")
        await storage.create(f"{PODS}k{round_ + 10}", b"new")
    await storage.create(f"{PODS}k1", b"back")


async def all_events(storage: Storage, prefix: str, from_revision: int) -> list[Event]:
    """Every event under ``prefix`` after ``from_revision`` up to now (fence writes left out)."""
    fence = prefix + "\x7ffence"
    out: list[Event] = []
    async with storage.watch(prefix, from_revision) as events:
        with trio.fail_after(10):
            end = await storage.create(fence, b"")  # marks the end of what was there
            async for event in events:
                if event.revision == end:
                    break
                if event.key != fence:
                    out.append(event)
    await storage.delete(fence)
    return out


async def test_compaction_keeps_later_history_and_latest_state(storage: Storage) -> None:
    base = await storage.current_revision()
    await make_history(storage)
    last = await storage.current_revision()
    lists = {r: await storage.list(PODS, revision=r) for r in range(base, last + 1)}
    history = await all_events(storage, PODS, base)
    latest = await storage.list("")
    node = base + 7
    assert [e.revision for e in history] == [r for r in range(base + 1, last + 1) if r != node]

    for compact_to in (base + 3, node, base + 12, last - 1):
        await storage.compact(compact_to)
        assert storage.compacted_revision() == compact_to
        for r in range(base, last + 1):
            if r <= compact_to:
                with pytest.raises(RevisionCompacted) as info:
                    await storage.list(PODS, revision=r)
                assert info.value.revision == compact_to
            else:
                assert await storage.list(PODS, revision=r) == lists[r]
        assert await all_events(storage, PODS, compact_to) == [e for e in history if e.revision > compact_to]
        with pytest.raises(RevisionCompacted) as info:
            async with storage.watch(PODS, compact_to - 1):
                pass
        assert info.value.revision == compact_to
        assert (await storage.list("")).items == latest.items


async def test_compact_is_clamped_and_never_goes_back(storage: Storage) -> None:
    a = await storage.create(A, b"1")
    b = await storage.create(B, b"2")
    await storage.compact(b + 100)
    assert storage.compacted_revision() == b
    await storage.compact(a)
    assert storage.compacted_revision() == b
    assert keys_of(await storage.list(PODS)) == [A, B]
    assert (await storage.get(A)).value == b"1"
    updated = await storage.update(A, b"3", a)
    assert keys_of(await storage.list(PODS, revision=updated)) == [A, B]


# ----------------------------------------------------------------- watch


async def test_watch_replays_history_then_follows_live(storage: Storage) -> None:
    a1 = await storage.create(A, b"a1")
    a2 = await storage.update(A, b"a2", a1)
    b1 = await storage.create(B, b"b1")
    a_gone, _ = await storage.delete(A, a2)
    async with storage.watch(PODS, 0) as events:
        replayed = await receive(events, 4)
        c1 = await storage.create(C, b"c1")
        b2 = await storage.update(B, b"b2", b1)
        live = await receive(events, 2)
    assert replayed == [
        Event("ADDED", A, b"a1", None, a1, a1, 0),
        Event("MODIFIED", A, b"a2", b"a1", a2, a1, a1),
        Event("ADDED", B, b"b1", None, b1, b1, 0),
        Event("DELETED", A, None, b"a2", a_gone, a1, a2),
    ]
    assert live == [
        Event("ADDED", C, b"c1", None, c1, c1, 0),
        Event("MODIFIED", B, b"b2", b"b1", b2, b1, b1),
    ]


async def test_watch_from_a_middle_revision(storage: Storage) -> None:
    a1 = await storage.create(A, b"a1")
    b1 = await storage.create(B, b"b1")
    a2 = await storage.update(A, b"a2", a1)
    async with storage.watch(PODS, b1) as events:
        assert await receive(events, 1) == [Event("MODIFIED", A, b"a2", b"a1", a2, a1, a1)]


async def test_watch_filters_by_prefix(storage: Storage) -> None:
    await storage.create("/registry/podsx/a", b"")
    a = await storage.create(A, b"")
    async with storage.watch(PODS, 0) as events:
        await storage.create("/registry/podsx/b", b"")
        await storage.create("/registry/nodes/n", b"")
        b = await storage.create(B, b"")
        got = await receive(events, 2)
    assert [(e.key, e.revision) for e in got] == [(A, a), (B, b)]


async def test_watch_from_a_future_revision_waits_for_it(storage: Storage) -> None:
    base = await storage.current_revision()
    async with storage.watch(PODS, base + 2) as events:
        for key in (A, B, C):
            await storage.create(key, b"")
        got = await receive(events, 1)
    assert [e.key for e in got] == [C]


async def test_watch_sees_every_revision_under_concurrent_writers(storage: Storage) -> None:
    writers, per_writer = 16, 20
    base = await storage.current_revision()
    total = writers * per_writer * 2
    last = base + total
    results: dict[str, list[int]] = {}

    async def write(i: int) -> None:
        for j in range(per_writer):
            key = f"{PODS}w{i}/{j}"
            created = await storage.create(key, b"v1")
            await storage.update(key, b"v2", created)

    async def watch(name: str, from_revision: int) -> None:
        async with storage.watch(PODS, from_revision) as events:
            got = results.setdefault(name, [])
            with trio.fail_after(20):
                async for event in events:
                    got.append(event.revision)
                    if event.revision == last:
                        return

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch, "from-start", base)
        for i in range(writers):
            nursery.start_soon(write, i)
        await wait_for_revision(storage, base + 100)
        # Joins while writes are in flight: replay and live must meet without gap or repeat.
        nursery.start_soon(watch, "mid-replay", base)
        joined_at = await storage.current_revision()
        nursery.start_soon(watch, "mid-live", joined_at)
    assert results["from-start"] == list(range(base + 1, last + 1))
    assert results["mid-replay"] == list(range(base + 1, last + 1))
    assert results["mid-live"] == list(range(joined_at + 1, last + 1))


async def test_slow_subscriber_is_closed_and_can_resume(start_storage: StartStorage) -> None:
    storage = await start_storage(watch_buffer=4)
    base = await storage.current_revision()
    async with storage.watch(PODS, base) as events:
        for i in range(10):
            await storage.create(f"{PODS}{i}", b"")
        with trio.fail_after(10):
            got = [event.revision async for event in events]  # ends: the watch was closed
    assert got == [base + 1, base + 2, base + 3, base + 4]
    async with storage.watch(PODS, got[-1]) as events:
        # The replay waits for the reader, so it may be longer than the buffer.
        assert [e.revision for e in await receive(events, 6)] == list(range(base + 5, base + 11))


async def test_watch_closes_when_backend_stops(backend_factory: BackendFactory, tmp_path: Path) -> None:
    backend = backend_factory(tmp_path)
    stopped = trio.Event()
    scope = trio.CancelScope()

    async def serve(*, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        with scope:
            await backend.run(task_status=task_status)
        stopped.set()

    async with trio.open_nursery() as nursery:
        await nursery.start(serve)
        base = await backend.current_revision()
        a = await backend.create(A, b"")
        async with backend.watch(PODS, base) as replaying, backend.watch(PODS, a) as live:
            scope.cancel()
            with trio.fail_after(10):
                await stopped.wait()
                assert [e async for e in live] == []
                assert [e.revision async for e in replaying] in ([], [a])
    with pytest.raises(StorageUnavailable):
        await backend.create(B, b"")
    with pytest.raises(StorageUnavailable):
        async with backend.watch(PODS, 0):
            pass


async def test_backend_refuses_work_before_run(backend_factory: BackendFactory, tmp_path: Path) -> None:
    backend = backend_factory(tmp_path)
    with pytest.raises(StorageUnavailable):
        await backend.create(A, b"")
    with pytest.raises(StorageUnavailable):
        await backend.list(PODS)


async def test_request_progress_sends_one_marker_until_it_is_read(storage) -> None:  # type: ignore[no-untyped-def]
    """Issue 13: consistent LISTs ask for progress at their own rate; a watch whose last marker is still
    unread gets no other (each one costs its reader a step, and a flood of LISTs made a watch cache fall
    behind its own events). Once it is read, the next request sends a new one, at the current revision."""
    async with storage.watch("/p/", await storage.current_revision()) as events:
        for _ in range(50):
            storage.request_progress()
        await storage.create("/p/a", b"1")
        first = await events.receive()
        assert first.type == "PROGRESS"
        added = await events.receive()
        assert added.type == "ADDED" and added.key == "/p/a"  # no 49 more markers ahead of it
        with pytest.raises(trio.WouldBlock):
            events.receive_nowait()
        storage.request_progress()
        marker = await events.receive()
        assert marker.type == "PROGRESS" and marker.revision == await storage.current_revision()


async def test_request_progress_marks_delivery(storage) -> None:  # type: ignore[no-untyped-def]
    """A PROGRESS event follows every event committed before the request, at the current revision."""
    await storage.create("/p/a", b"1")
    async with storage.watch("/p/", await storage.current_revision()) as events:
        await storage.create("/p/b", b"2")
        await storage.create("/other/x", b"3")
        storage.request_progress()
        first = await events.receive()
        assert first.type == "ADDED" and first.key == "/p/b"
        marker = await events.receive()
        assert marker.type == "PROGRESS" and marker.revision == await storage.current_revision()
