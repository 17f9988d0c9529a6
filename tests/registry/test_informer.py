"""The in-process informer (issue 11): over a real watch cache, or storage when the resource has none."""

from __future__ import annotations

from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import trio
import trio.testing

from kapi.apis import BUILTIN
from kapi.cacher.cache import Cacher
from kapi.metrics import Metrics
from kapi.registry.deletion import DeleteOptions
from kapi.registry.informer import Informer, Informers, Item
from kapi.registry.resources import Resource, ResourceTable
from kapi.registry.store import Registry, WriteOptions
from kapi.storage.base import Storage
from kapi.storage.memory import MemoryStorage
from kapi.storage.sqlite import SqliteStorage

Obj = dict[str, Any]


class Env:
    def __init__(self, registry: Registry, res: Resource, cacher: Cacher | None, nursery: trio.Nursery) -> None:
        self.cacher_scope = trio.CancelScope()
        self.registry = registry
        self.res = res
        self.cacher = cacher
        self.nursery = nursery

    async def create(self, namespace: str, name: str, **data: str) -> Obj:
        return await self.registry.create(self.res, namespace, {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}, WriteOptions())

    async def update(self, namespace: str, name: str, **data: str) -> Obj:
        def mutate(obj: Obj) -> Obj:
            obj["data"] = data
            return obj
        return await self.registry.guaranteed_update(self.res, namespace, name, mutate, WriteOptions())

    async def delete(self, namespace: str, name: str) -> None:
        await self.registry.delete(self.res, namespace, name, DeleteOptions())

    async def start(self, informer: Informer) -> Informer:
        await self.nursery.start(informer.run)
        with trio.fail_after(10):
            await informer.wait_for_sync()
        return informer

    def watchers(self) -> float:
        value = self.registry.metrics.registry.get_sample_value(
            "apiserver_registered_watchers", {"group": "", "version": "", "kind": "ConfigMap"})
        return 0.0 if value is None else value


@pytest.fixture(params=["memory", "sqlite"])
async def storage(request: pytest.FixtureRequest, tmp_path: Path, nursery: trio.Nursery) -> Storage:
    storage: Storage = MemoryStorage() if request.param == "memory" else SqliteStorage(str(tmp_path / "kapi.db"))
    await nursery.start(storage.run)
    return storage


@pytest.fixture(params=["cache", "storage"])
async def env(request: pytest.FixtureRequest, storage: Storage, nursery: trio.Nursery) -> AsyncIterator[Env]:
    registry = Registry(storage, ResourceTable(BUILTIN), metrics=Metrics())
    res = registry.table.get("", "v1", "configmaps")
    ns = registry.table.get("", "v1", "namespaces")
    assert res is not None and ns is not None
    for name in ("default", "other"):
        await registry.create(ns, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                              WriteOptions())
    cacher = registry.make_cacher(res, capacity=100) if request.param == "cache" else None
    env = Env(registry, res, cacher, nursery)
    if cacher is not None:
        await nursery.start(_run_in, env.cacher_scope, cacher)
    yield env


async def _run_in(scope: trio.CancelScope, cacher: Cacher, *,
                  task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    with scope:
        await cacher.run(task_status=task_status)


class Recorder:
    """Handlers that write down what they were told, in order."""

    def __init__(self, informer: Informer) -> None:
        self.seen: list[tuple[str, str, str]] = []
        self.changed = trio.Event()
        self.registration = informer.add_handler(self.added, self.updated, self.deleted)

    def _note(self, what: str, item: Item, value: str = "") -> None:
        self.seen.append((what, f"{item.namespace}/{item.name}", value))
        self.changed.set()

    def added(self, item: Item) -> None:
        self._note("add", item)

    def updated(self, old: Item, new: Item) -> None:
        assert old.resource_version < new.resource_version
        self._note("update", new, new.object()["data"].get("v", ""))

    def deleted(self, item: Item) -> None:
        self._note("delete", item)

    async def wait_for(self, count: int) -> list[tuple[str, str, str]]:
        with trio.fail_after(10):
            while len(self.seen) < count:
                self.changed = trio.Event()
                await self.changed.wait()
        return self.seen


async def test_initial_sync_delivers_every_object_once(env: Env) -> None:
    await env.create("default", "a")
    await env.create("other", "b")
    await env.create("default", "c")
    informer = Informer(env.registry, env.res)
    rec = Recorder(informer)
    await env.start(informer)
    assert informer.has_synced
    assert sorted(rec.seen) == [("add", "default/a", ""), ("add", "default/c", ""), ("add", "other/b", "")]
    assert informer.statistics().source == ("cache" if env.cacher is not None else "storage")


async def test_handlers_see_adds_updates_and_deletes_in_order(env: Env) -> None:
    informer = await env.start(Informer(env.registry, env.res))
    rec = Recorder(informer)
    await env.create("default", "a")
    await env.update("default", "a", v="1")
    await env.update("default", "a", v="2")
    await env.delete("default", "a")
    await env.create("other", "b")
    assert await rec.wait_for(5) == [("add", "default/a", ""), ("update", "default/a", "1"),
                                     ("update", "default/a", "2"), ("delete", "default/a", ""),
                                     ("add", "other/b", "")]


async def test_get_and_list_answer_decoded_objects(env: Env) -> None:
    created = await env.create("default", "a", k="v")
    await env.create("other", "b")
    informer = await env.start(Informer(env.registry, env.res))
    got = informer.get("default", "a")
    assert got is not None
    assert got["kind"] == "ConfigMap" and got["apiVersion"] == "v1"
    assert got["data"] == {"k": "v"}
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    assert got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert informer.get("default", "b") is None and informer.get("default", "nope") is None
    assert [o["metadata"]["name"] for o in informer.list()] == ["a", "b"]
    assert [o["metadata"]["name"] for o in informer.list("other")] == ["b"]
    rec = Recorder(informer)  # a late handler is told of every object held
    assert sorted(rec.seen) == [("add", "default/a", ""), ("add", "other/b", "")]
    await env.delete("default", "a")
    await env.create("default", "c")
    await rec.wait_for(4)
    assert [o["metadata"]["name"] for o in informer.list()] == ["c", "b"]  # key order: default/c, other/b


async def test_objects_are_decoded_only_when_asked_for(env: Env) -> None:
    for i in range(20):
        await env.create("default", f"cm-{i}")
    informer = Informer(env.registry, env.res)
    names: list[str] = []
    informer.add_handler(lambda item: names.append(item.name))  # identity needs no decoding
    await env.start(informer)
    assert len(names) == 20
    stats = informer.statistics()
    assert stats.objects == 20 and stats.decoded == 0
    assert informer.get("default", "cm-3") is not None
    assert informer.statistics().decoded == 1
    item = informer.item("default", "cm-4")
    assert item is not None and not item.may_have("ownerReferences") and item.may_have("metadata")
    assert item.metadata()["name"] == "cm-4"


async def test_a_failing_handler_neither_stops_the_informer_nor_the_others(env: Env) -> None:
    informer = Informer(env.registry, env.res)

    def explode(item: Item) -> None:
        raise RuntimeError(f"handler bug on {item.name}")

    informer.add_handler(explode, lambda old, new: explode(new), explode)
    rec = Recorder(informer)
    await env.start(informer)
    await env.create("default", "a")
    await env.update("default", "a", v="1")
    await env.create("default", "b")
    assert await rec.wait_for(3) == [("add", "default/a", ""), ("update", "default/a", "1"),
                                     ("add", "default/b", "")]
    assert informer.statistics().handler_errors == 3
    assert informer.get("default", "b") is not None


async def test_stop_unregisters_and_removed_handlers_hear_nothing(env: Env) -> None:
    informer = await env.start(Informer(env.registry, env.res))
    rec = Recorder(informer)
    other = Recorder(informer)
    informer.remove_handler(other.registration)
    await env.create("default", "a")
    await rec.wait_for(1)
    if env.cacher is not None:
        assert env.watchers() == 1
    informer.stop()
    await trio.testing.wait_all_tasks_blocked()
    if env.cacher is not None:
        assert env.watchers() == 0  # its watcher is gone from the cacher
    await env.create("default", "b")
    later = Informer(env.registry, env.res)  # a fresh one sees b: the write did happen
    await env.start(later)
    assert later.get("default", "b") is not None
    assert rec.seen == [("add", "default/a", "")] and other.seen == []
    assert informer.get("default", "a") is not None and informer.get("default", "b") is None


async def test_corrupt_stored_objects_are_left_out_of_reads(env: Env) -> None:
    """A value nobody can decode is never handed out decoded (as LIST and WATCH leave it out)."""
    await env.create("default", "good")
    key = env.registry.key(env.res, "default", "bad")
    await env.registry.storage.create(key, b"\xc1 not msgpack")
    informer = await env.start(Informer(env.registry, env.res))
    assert [o["metadata"]["name"] for o in informer.list()] == ["good"]
    assert informer.get("default", "bad") is None
    await env.create("default", "later")
    with trio.fail_after(10):
        while informer.get("default", "later") is None:
            await trio.sleep(0.01)


@pytest.mark.parametrize("env", ["cache"], indirect=True)
async def test_a_removed_cache_gives_way_to_storage(env: Env) -> None:
    """A resource whose cache is stopped (removed from the table) is followed on storage, nothing lost."""
    assert env.cacher is not None
    informer = await env.start(Informer(env.registry, env.res))
    rec = Recorder(informer)
    await env.create("default", "a")
    await rec.wait_for(1)
    del env.registry.cachers[(env.res.group, env.res.resource)]  # as the server stops a removed resource's
    env.cacher_scope.cancel()
    await env.create("default", "b")
    await env.update("default", "a", v="1")
    seen = await rec.wait_for(3)
    assert sorted(seen[1:]) == [("add", "default/b", ""), ("update", "default/a", "1")]
    assert informer.statistics().source == "storage"
    assert env.watchers() == 0


async def test_an_informer_stopped_before_it_runs_starts_and_ends(env: Env) -> None:
    informer = Informer(env.registry, env.res)
    informer.stop()
    with trio.fail_after(10):
        await env.nursery.start(informer.run)
    assert not informer.has_synced and informer.statistics().objects == 0


async def test_wait_caught_up_returns_once_the_handlers_have_every_change(env: Env) -> None:
    """What the server waits for before serving: the start-up objects have reached the handlers
    (RBAC's informers), not only the watch caches."""
    informers = Informers(env.registry)
    informer = informers.informer("", "configmaps")
    rec = Recorder(informer)
    await env.nursery.start(informers.run)
    for i in range(50):
        await env.create("default", f"cm{i}")
    revision = await env.registry.storage.current_revision()
    if env.cacher is not None:
        await env.cacher.wait_for_rv(revision)  # the cache holds every change; the informer may not yet
    with trio.fail_after(10):
        await informers.wait_caught_up(revision)
    if env.cacher is not None:
        assert len(rec.seen) == 50
    assert informer.caught_up_with(revision)
