"""Issue 30, items 4 and 5: a storage-backed watch ends when its resource's route changes.

A watch served from storage (a resource whose cache is off, or one opened while its cache loads)
ends when the resource leaves the table, as the watches of its stopped cache do, and when the
cache starts serving it, so that the client resumes on the cache; a watch opened while the cache
loads waits for it. The server's ``WatchCaches`` runs the caches, as in ``kapi serve``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, AsyncIterator

import orjson
import pytest
import trio
import trio.testing

from kapi.apis import BUILTIN
from kapi.cacher.cache import RELIST_PAGE
from kapi.config import Config
from kapi.metrics import Metrics
from kapi.object.listopts import ListOptions
from kapi.object.schema import GVK
from kapi.registry.informer import Informer, Item
from kapi.registry.resources import Resource, ResourceTable
from kapi.registry.store import CACHE_WAIT_S, Registry, WriteOptions
from kapi.server.caches import WatchCaches
from kapi.storage.base import KeyValue, ListResult
from kapi.storage.memory import MemoryStorage

Obj = dict[str, Any]
WIDGETS_PREFIX = "/registry/example.com/widgets/"
HANG_S = 10  # a guard against hangs, not a timing assertion


class GatedStorage(MemoryStorage):
    """Memory storage whose watch cache of widgets cannot load its first list until ``gate`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = trio.Event()

    async def list(self, prefix: str, *, revision: int | None = None, start: str | None = None,
                   limit: int | None = None) -> ListResult[KeyValue]:
        if limit == RELIST_PAGE and prefix == WIDGETS_PREFIX:  # the cacher's relist
            await self.gate.wait()
        return await super().list(prefix, revision=revision, start=start, limit=limit)


def widgets_of(registry: Registry) -> Resource:
    """ConfigMap's description served as example.com/v1 widgets, as a custom resource is added at run time."""
    cm = registry.table.get("", "v1", "configmaps")
    assert cm is not None
    cm_type = registry.schema.type_for("", "v1", "ConfigMap")
    list_type = registry.schema.type_for("", "v1", "ConfigMapList")
    assert cm_type is not None and list_type is not None
    registry.schema.register([
        dataclasses.replace(cm_type, name="com.example.v1.Widget", gvks=(GVK("example.com", "v1", "Widget"),),
                            proto=""),
        dataclasses.replace(list_type, name="com.example.v1.WidgetList",
                            gvks=(GVK("example.com", "v1", "WidgetList"),), proto=""),
    ])
    return dataclasses.replace(cm, group="example.com", version="v1", resource="widgets", kind="Widget",
                               short_names=(), storage_prefix="example.com/widgets")


@dataclasses.dataclass
class Env:
    storage: GatedStorage
    registry: Registry
    res: Resource
    nursery: trio.Nursery

    async def create(self, name: str) -> int:
        obj = await self.registry.create(self.res, "default", {
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "data": {"a": "b"}},
            WriteOptions())
        return int(obj["metadata"]["resourceVersion"])

    def cache_watchers(self) -> float:
        value = self.registry.metrics.registry.get_sample_value(
            "apiserver_registered_watchers", {"group": "example.com", "version": "", "kind": "Widget"})
        return 0.0 if value is None else value

    async def on_storage(self, count: int) -> None:
        """Wait until ``count`` storage-backed watches are open (a watch opens its storage watch once
        its initial events are taken)."""
        with trio.fail_after(HANG_S):
            while len(self.registry.storage_routes) != count:
                await trio.sleep(0.01)

    async def cache_serving(self) -> None:
        with trio.fail_after(HANG_S):
            while self.registry.cacher_of(self.res) is None:
                await trio.sleep(0.01)


async def _env(nursery: trio.Nursery, config: Config) -> Env:
    storage = GatedStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN), metrics=Metrics())
    await nursery.start(WatchCaches(config, registry).follow, nursery)
    res = widgets_of(registry)
    registry.table.add(res)
    return Env(storage, registry, res, nursery)


@pytest.fixture
async def uncached(nursery: trio.Nursery) -> Env:
    """Widgets with their watch cache off (``--watch-cache-sizes widgets.example.com=0``)."""
    return await _env(nursery, Config(watch_cache_sizes={"widgets.example.com": 0}))


@pytest.fixture
async def loading(nursery: trio.Nursery) -> Env:
    """Widgets whose watch cache is loading until ``storage.gate`` is set."""
    return await _env(nursery, Config())


class Stream:
    """A watch's event lines read in the background, as the API's writer reads them."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, int]] = []  # (type, name, resourceVersion)
        self.ended = trio.Event()
        self.changed = trio.Event()

    async def read(self, lines: AsyncIterator[bytes]) -> None:
        try:
            async for chunk in lines:
                for line in chunk.splitlines():
                    ev = orjson.loads(line)
                    md = ev["object"]["metadata"]
                    self.events.append((ev["type"], md.get("name", ""), int(md["resourceVersion"])))
                self.changed.set()
                self.changed = trio.Event()
        finally:
            await lines.aclose()  # type: ignore[attr-defined]
            self.ended.set()

    async def wait_for(self, count: int) -> list[tuple[str, str, int]]:
        with trio.fail_after(HANG_S):
            while len(self.events) < count and not self.ended.is_set():
                await self.changed.wait()
        return self.events

    async def wait_ended(self) -> None:
        with trio.fail_after(HANG_S):
            await self.ended.wait()


async def open_stream(env: Env, resource_version: str = "") -> Stream:
    lines = await env.registry.watch_lines(env.res, "default", ListOptions(resource_version=resource_version),
                                           deadline=math.inf)
    stream = Stream()
    env.nursery.start_soon(stream.read, lines)
    return stream


# --------------------------------------------------------------------------------- item 4


async def test_uncached_watch_ends_when_its_resource_leaves_the_table(uncached: Env) -> None:
    env = uncached
    await env.create("w1")
    stream = await open_stream(env)
    assert [e[:2] for e in await stream.wait_for(1)] == [("ADDED", "w1")]
    await env.on_storage(1)
    assert env.cache_watchers() == 0
    events_res = env.registry.table.get("", "v1", "events")  # never cached
    assert events_res is not None
    other = Stream()
    env.nursery.start_soon(other.read, await env.registry.watch_lines(events_res, "default", ListOptions(),
                                                                        deadline=math.inf))
    await env.on_storage(2)

    env.registry.table.remove("example.com", "v1", "widgets")  # as the CRD controller does when its CRD goes
    await stream.wait_ended()  # at once, not at the watch's deadline (none here)
    assert len(env.registry.storage_routes) == 1 and not other.ended.is_set()  # another resource's goes on


async def test_watch_on_storage_while_the_cache_loads_ends_when_its_resource_leaves(
        loading: Env, autojump_clock: trio.testing.MockClock) -> None:
    env = loading
    await env.create("w1")
    stream = await open_stream(env)  # waits CACHE_WAIT_S for the cache, then storage serves it
    assert [e[:2] for e in await stream.wait_for(1)] == [("ADDED", "w1")]
    await env.on_storage(1)
    assert env.cache_watchers() == 0

    env.registry.table.remove("example.com", "v1", "widgets")
    await stream.wait_ended()
    assert len(env.registry.storage_routes) == 0


async def test_storage_watch_of_a_resource_no_longer_served_ends_at_once(uncached: Env) -> None:
    """Removed between the request's lookup and the storage watch's start: ended as soon as it starts."""
    env = uncached
    env.registry.table.remove("example.com", "v1", "widgets")
    stream = await open_stream(env)
    await stream.wait_ended()
    assert stream.events == [] and len(env.registry.storage_routes) == 0


# --------------------------------------------------------------------------------- item 5


async def test_watch_opened_while_the_cache_loads_waits_and_is_served_by_it(loading: Env) -> None:
    env = loading
    await env.create("w1")
    opened: list[Stream] = []

    async def open_one() -> None:
        opened.append(await open_stream(env))

    env.nursery.start_soon(open_one)
    await trio.testing.wait_all_tasks_blocked()
    assert opened == []  # waiting for the cache, not on storage
    assert len(env.registry.storage_routes) == 0

    env.storage.gate.set()
    with trio.fail_after(HANG_S):
        while not opened:
            await trio.sleep(0.01)
    stream = opened[0]
    assert env.cache_watchers() == 1 and len(env.registry.storage_routes) == 0
    await env.create("w2")
    await env.create("w3")
    events = await stream.wait_for(3)
    assert [e[:2] for e in events] == [("ADDED", "w1"), ("ADDED", "w2"), ("ADDED", "w3")]


async def test_watch_on_storage_moves_to_the_cache_when_it_is_ready(
        loading: Env, autojump_clock: trio.testing.MockClock) -> None:
    """Past the wait, storage serves the watch until the cache is ready: then it ends cleanly, and the
    client's resumption from its last resourceVersion is served by the cache, nothing lost or repeated."""
    env = loading
    await env.create("w1")
    before = trio.current_time()
    stream = await open_stream(env)
    assert trio.current_time() - before >= CACHE_WAIT_S  # it waited for the cache first
    await stream.wait_for(1)
    await env.on_storage(1)
    await env.create("w2")
    events = await stream.wait_for(2)
    assert [e[:2] for e in events] == [("ADDED", "w1"), ("ADDED", "w2")]
    assert env.cache_watchers() == 0  # on storage

    env.storage.gate.set()
    await stream.wait_ended()  # ended cleanly (no ERROR event): the client resumes
    assert len(env.registry.storage_routes) == 0
    resumed = await open_stream(env, str(stream.events[-1][2]))
    assert env.cache_watchers() == 1 and len(env.registry.storage_routes) == 0
    await env.create("w3")
    await env.create("w4")
    after = await resumed.wait_for(2)
    seen = [e[:2] for e in stream.events + after]
    assert seen == [("ADDED", "w1"), ("ADDED", "w2"), ("ADDED", "w3"), ("ADDED", "w4")]


async def test_in_process_informer_on_storage_moves_to_the_cache(loading: Env) -> None:
    """The server's own informers (the garbage collector's of a new custom resource) move too; the
    informer's diff against what it holds tells its handlers nothing twice."""
    env = loading
    await env.create("w1")
    informer = Informer(env.registry, env.res)
    seen: list[tuple[str, str]] = []
    changed = trio.Event()

    def note(what: str, item: Item) -> None:
        nonlocal changed
        seen.append((what, item.name))
        changed.set()
        changed = trio.Event()

    informer.add_handler(lambda item: note("add", item), lambda _old, new: note("update", new),
                         lambda item: note("delete", item))
    await env.nursery.start(informer.run)
    with trio.fail_after(HANG_S):
        await informer.wait_for_sync()
    assert informer.statistics().source == "storage"
    await env.create("w2")
    with trio.fail_after(HANG_S):
        while len(seen) < 2:
            await changed.wait()

    env.storage.gate.set()
    await env.cache_serving()
    with trio.fail_after(HANG_S):
        while env.cache_watchers() < 1:
            await trio.sleep(0.01)
    assert informer.statistics().source == "cache" and len(env.registry.storage_routes) == 0
    await env.create("w3")
    with trio.fail_after(HANG_S):
        while len(seen) < 3:
            await changed.wait()
    await trio.testing.wait_all_tasks_blocked()
    assert seen == [("add", "w1"), ("add", "w2"), ("add", "w3")]
    informer.stop()
