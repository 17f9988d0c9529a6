"""RoutedStorage: each key and range goes to the backend owning its prefix (--etcd-servers-overrides)."""

from __future__ import annotations

import pytest
import trio

from kapi import errors
from kapi.storage.memory import MemoryStorage
from kapi.storage.routed import RoutedStorage, backend_of, backends_of

EVENTS = "/registry/events/"


async def routed(nursery: trio.Nursery) -> tuple[RoutedStorage, MemoryStorage, MemoryStorage]:
    default, events = MemoryStorage(), MemoryStorage()
    storage = RoutedStorage(default, {EVENTS: events})
    await nursery.start(storage.run)  # runs both
    return storage, default, events


async def test_keys_and_ranges_go_to_the_backend_owning_them(nursery: trio.Nursery) -> None:
    storage, default, events = await routed(nursery)
    await storage.create("/registry/configmaps/default/a", b"a")
    await storage.create("/registry/configmaps/default/b", b"b")
    rev = await storage.create("/registry/events/default/e", b"e")
    assert rev == 1  # the events backend numbers its own writes
    assert (await events.get("/registry/events/default/e")).value == b"e"
    with pytest.raises(errors.KeyNotFound):
        await default.get("/registry/events/default/e")
    assert [kv.key for kv in (await storage.list(EVENTS)).items] == ["/registry/events/default/e"]
    assert await storage.count("/registry/configmaps/") == 2
    rev = await storage.update("/registry/events/default/e", b"e2", 1)
    assert (await storage.get("/registry/events/default/e")).value == b"e2"
    deleted, _ = await storage.delete("/registry/events/default/e", rev)
    assert deleted == 3 == await events.current_revision()
    assert await storage.current_revision() == 2 == await default.current_revision()  # keyless: the default's


async def test_a_watch_follows_its_backend_and_progress_reaches_every_backend(nursery: trio.Nursery) -> None:
    storage, _, events = await routed(nursery)
    await storage.create("/registry/configmaps/default/a", b"a")
    async with storage.watch(EVENTS, 0) as watch:
        await storage.create("/registry/events/default/e", b"e")
        assert (await watch.receive()).key == "/registry/events/default/e"
        storage.request_progress()
        progress = await watch.receive()
        assert (progress.type, progress.revision) == ("PROGRESS", 1)


async def test_a_range_over_several_backends_is_refused(nursery: trio.Nursery) -> None:
    storage, _, _ = await routed(nursery)
    with pytest.raises(ValueError, match="spans"):
        await storage.list("/registry/")
    await storage.list("/registry/configmaps/")  # beside the override: the default's


def test_the_longest_prefix_owns_a_key() -> None:
    default, services, endpoints = MemoryStorage(), MemoryStorage(), MemoryStorage()
    storage = RoutedStorage(default, {"/registry/services/": services, "/registry/services/endpoints/": endpoints})
    assert backend_of(storage, "/registry/services/endpoints/ns/x") is endpoints
    assert backend_of(storage, "/registry/services/specs/ns/x") is services
    assert backend_of(storage, "/registry/pods/ns/x") is default
    assert backends_of(storage)[0] is default
    assert {id(b) for b in backends_of(storage)} == {id(default), id(services), id(endpoints)}
    plain = MemoryStorage()
    assert backend_of(plain, "/registry/pods/") is plain and backends_of(plain) == [plain]
    assert storage.consistent_reads_from_cache  # memory: always
    with pytest.raises(ValueError, match="must end with"):
        RoutedStorage(default, {"/registry/events": services})
