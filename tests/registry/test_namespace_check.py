"""The namespace check on namespaced creates (issue 11): read from the namespaces' watch cache when it
has seen the registry's own namespace writes, else from storage; the same answers either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from kapi import errors
from kapi.apis import BUILTIN
from kapi.metrics import Metrics
from kapi.registry.deletion import DeleteOptions
from kapi.registry.resources import Resource, ResourceTable
from kapi.registry.store import Registry, WriteOptions
from kapi.storage.base import KeyValue, Storage
from kapi.storage.memory import MemoryStorage
from kapi.storage.sqlite import SqliteStorage

Obj = dict[str, Any]


class CountingStorage:
    """A storage whose GETs of namespaces are counted."""

    def __init__(self, inner: Storage) -> None:
        self._inner = inner
        self.namespace_gets = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def get(self, key: str) -> KeyValue:
        if key.startswith("/registry/namespaces/"):
            self.namespace_gets += 1
        return await self._inner.get(key)


@pytest.fixture(params=["memory", "sqlite"])
async def storage(request: pytest.FixtureRequest, tmp_path: Path, nursery: trio.Nursery) -> CountingStorage:
    inner: Storage = MemoryStorage() if request.param == "memory" else SqliteStorage(str(tmp_path / "kapi.db"))
    await nursery.start(inner.run)
    return CountingStorage(inner)


def resources(registry: Registry) -> tuple[Resource, Resource]:
    ns, cms = registry.table.get("", "v1", "namespaces"), registry.table.get("", "v1", "configmaps")
    assert ns is not None and cms is not None
    return ns, cms


def cm(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


async def make_registry(storage: CountingStorage, nursery: trio.Nursery, cached: bool) -> Registry:
    registry = Registry(storage, ResourceTable(BUILTIN), metrics=Metrics())  # type: ignore[arg-type]
    ns, _ = resources(registry)
    await registry.create(ns, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}},
                          WriteOptions())
    if cached:
        await nursery.start(registry.make_cacher(ns, capacity=100).run)
    return registry


async def wait_cached(registry: Registry, name: str) -> None:
    ns, _ = resources(registry)
    cacher = registry.cachers[("", "namespaces")]
    with trio.fail_after(10):
        while cacher.entry(registry.key(ns, "", name)) is None:
            await trio.sleep(0.01)


async def test_an_open_namespace_is_read_from_its_cache(storage: CountingStorage, nursery: trio.Nursery) -> None:
    registry = await make_registry(storage, nursery, cached=True)
    _, cms = resources(registry)
    await wait_cached(registry, "app")
    before = storage.namespace_gets
    for i in range(5):
        await registry.create(cms, "app", cm(f"c{i}"), WriteOptions())
    assert storage.namespace_gets == before  # no storage GET of the namespace
    with pytest.raises(errors.NotFound):  # not in the cache: storage is asked, and says so
        await registry.create(cms, "nowhere", cm("x"), WriteOptions())
    assert storage.namespace_gets == before + 1


@pytest.mark.parametrize("cached", [True, False], ids=["cached", "uncached"])
async def test_a_namespace_being_deleted_refuses_content_at_once(storage: CountingStorage, nursery: trio.Nursery,
                                                                cached: bool) -> None:
    """Right after the DELETE (before the cache may have seen it) the answer is already 403."""
    registry = await make_registry(storage, nursery, cached=cached)
    ns, cms = resources(registry)
    if cached:
        await wait_cached(registry, "app")
    held = cm("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await registry.create(cms, "app", held, WriteOptions())
    result = await registry.delete(ns, "", "app", DeleteOptions())
    assert not result.deleted
    with pytest.raises(errors.Forbidden) as caught:
        await registry.create(cms, "app", cm("late"), WriteOptions())
    assert caught.value.message == "unable to create new content in namespace app because it is being terminated"
    await trio.sleep(0.05)
    with pytest.raises(errors.Forbidden):  # and so from the cache once it has caught up
        await registry.create(cms, "app", cm("later"), WriteOptions())


async def test_a_deleted_namespace_is_not_found_at_once(storage: CountingStorage, nursery: trio.Nursery) -> None:
    registry = await make_registry(storage, nursery, cached=True)
    ns, cms = resources(registry)
    await wait_cached(registry, "app")
    registry_ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"}}
    await registry.create(ns, "", registry_ns, WriteOptions())
    await wait_cached(registry, "gone")
    # No finalizers: the DELETE removes it from storage at once (the namespace controller is not running).
    def drop_finalizers(obj: Obj) -> Obj:
        obj["spec"] = {"finalizers": []}
        return obj
    await registry.guaranteed_update(ns, "", "gone", drop_finalizers, WriteOptions(), subresource="finalize")
    assert (await registry.delete(ns, "", "gone", DeleteOptions())).deleted
    with pytest.raises(errors.NotFound):
        await registry.create(cms, "gone", cm("late"), WriteOptions())
