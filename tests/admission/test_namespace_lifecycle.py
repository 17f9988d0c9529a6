"""NamespaceLifecycle: creates in a missing namespace are 404 and in a terminating one 403 (kube's
message and NamespaceTerminating cause), from the namespaces' informer without a storage read per
request, and at once after a DELETE (the informer may lag: the namespace is then read live); the
namespaces kube keeps cannot be deleted; an update in a missing namespace is 404 too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from kapi import errors
from kapi.admission.chain import AdmissionChain, build_chain
from kapi.admission.plugin import Objects, PluginDeps
from kapi.apis import BUILTIN
from kapi.metrics import Metrics
from kapi.object.access import UserInfo
from kapi.registry.deletion import DeleteOptions
from kapi.registry.informer import Informers
from kapi.registry.resources import Resource, ResourceTable
from kapi.registry.store import Registry, WriteOptions
from kapi.storage.base import KeyValue, Storage
from kapi.storage.memory import MemoryStorage
from kapi.storage.sqlite import SqliteStorage

Obj = dict[str, Any]
USER = UserInfo("alice", groups=("system:authenticated",))


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


async def setup(storage: CountingStorage, nursery: trio.Nursery, informed: bool) -> tuple[Registry, AdmissionChain]:
    registry = Registry(storage, ResourceTable(BUILTIN), metrics=Metrics())  # type: ignore[arg-type]
    ns, _ = resources(registry)
    await registry.create(ns, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}},
                          WriteOptions())
    informers = Informers(registry) if informed else None
    chain = build_chain(["NamespaceLifecycle"], PluginDeps(registry, Objects(registry, informers)))
    if informers is not None:
        await nursery.start(informers.run)
    return registry, chain


def opts(chain: AdmissionChain) -> WriteOptions:
    return WriteOptions(admission=chain.bind(USER, []))


def delete_opts(chain: AdmissionChain) -> DeleteOptions:
    return DeleteOptions(admission=chain.bind(USER, []))


async def test_an_open_namespace_is_read_from_the_informer(storage: CountingStorage, nursery: trio.Nursery) -> None:
    registry, chain = await setup(storage, nursery, informed=True)
    _, cms = resources(registry)
    before = storage.namespace_gets
    for i in range(5):
        await registry.create(cms, "app", cm(f"c{i}"), opts(chain))
    assert storage.namespace_gets == before  # no storage GET of the namespace
    with pytest.raises(errors.NotFound) as caught:  # not in the informer: storage is asked, and says so
        await registry.create(cms, "nowhere", cm("x"), opts(chain))
    assert caught.value.message == 'namespaces "nowhere" not found'
    assert storage.namespace_gets == before + 1
    # Without the plugin (the server's own writes, or it disabled) nothing is checked.
    await registry.create(cms, "nowhere", cm("x"), WriteOptions())


@pytest.mark.parametrize("informed", [True, False], ids=["informer", "registry"])
async def test_a_namespace_being_deleted_refuses_content_at_once(storage: CountingStorage, nursery: trio.Nursery,
                                                                informed: bool) -> None:
    """Right after the DELETE (before the informer may have seen it) the answer is already 403."""
    registry, chain = await setup(storage, nursery, informed)
    ns, cms = resources(registry)
    held = cm("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await registry.create(cms, "app", held, opts(chain))
    result = await registry.delete(ns, "", "app", delete_opts(chain))
    assert not result.deleted
    with pytest.raises(errors.Forbidden) as caught:
        await registry.create(cms, "app", cm("late"), opts(chain))
    assert caught.value.message == ('configmaps "late" is forbidden: unable to create new content in namespace app '
                                    "because it is being terminated")
    assert caught.value.to_status()["details"] == {
        "name": "late", "kind": "configmaps",
        "causes": [{"reason": "NamespaceTerminating", "message": "namespace app is being terminated",
                    "field": "metadata.namespace"}]}
    await trio.sleep(0.05)
    with pytest.raises(errors.Forbidden):  # and so from the informer once it has caught up
        await registry.create(cms, "app", cm("later"), opts(chain))
    # Updates and deletes of what is there go on (the namespace controller's work).
    await registry.guaranteed_update(cms, "app", "held", lambda o: {**o, "data": {"k": "v"}}, opts(chain))
    await registry.delete(cms, "app", "held", delete_opts(chain))


async def test_a_deleted_namespace_is_not_found_at_once(storage: CountingStorage, nursery: trio.Nursery) -> None:
    registry, chain = await setup(storage, nursery, informed=True)
    ns, cms = resources(registry)
    await registry.create(ns, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"}},
                          opts(chain))
    await registry.create(cms, "gone", cm("before"), opts(chain))

    def drop_finalizers(obj: Obj) -> Obj:
        obj["spec"] = {"finalizers": []}
        return obj
    await registry.guaranteed_update(ns, "", "gone", drop_finalizers, WriteOptions(), subresource="finalize")
    assert (await registry.delete(ns, "", "gone", delete_opts(chain))).deleted
    with pytest.raises(errors.NotFound):
        await registry.create(cms, "gone", cm("late"), opts(chain))
    with pytest.raises(errors.NotFound) as caught:  # an update in a missing namespace too
        await registry.guaranteed_update(cms, "gone", "before", lambda o: o, opts(chain))
    assert caught.value.message == 'namespaces "gone" not found'  # the object itself is still stored


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
async def test_the_namespaces_kube_keeps_cannot_be_deleted(storage: CountingStorage, nursery: trio.Nursery,
                                                           name: str) -> None:
    registry, chain = await setup(storage, nursery, informed=False)
    ns, _ = resources(registry)
    await registry.create(ns, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                          WriteOptions())
    with pytest.raises(errors.Forbidden) as caught:
        await registry.delete(ns, "", name, delete_opts(chain))
    assert caught.value.message == f'namespaces "{name}" is forbidden: this namespace may not be deleted'
    assert await registry.get(ns, "", name)
