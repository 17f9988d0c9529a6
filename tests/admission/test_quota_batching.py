"""The quota evaluator's batches: a request cancelled while it waits for its namespace's batch is
not charged later; a batch is not cut short when its worker's request is cancelled."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from kapi.admission.plugin import Attributes, Objects, PluginDeps
from kapi.admission.plugins.resourcequota import ResourceQuota
from kapi.apis import BUILTIN
from kapi.object.access import UserInfo
from kapi.registry.admit import CREATE, AdmissionRequest
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry, WriteOptions
from kapi.storage.memory import MemoryStorage

Obj = dict[str, Any]


async def setup(nursery: trio.Nursery) -> tuple[Registry, ResourceQuota]:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    quotas = registry.table.get("", "v1", "resourcequotas")
    assert quotas is not None
    q = await registry.create(quotas, "ns", {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
                                             "spec": {"hard": {"configmaps": "10"}}}, WriteOptions())
    q["status"] = {"hard": {"configmaps": "10"}, "used": {"configmaps": "0"}}
    await registry.update(quotas, "ns", "q", q, WriteOptions(), subresource="status")
    return registry, ResourceQuota(PluginDeps(registry, Objects(registry, None)))


def attrs(registry: Registry, name: str) -> Attributes:
    res = registry.table.get("", "v1", "configmaps")
    assert res is not None
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}
    return Attributes(AdmissionRequest(CREATE, res, "", "ns", name, obj, None), UserInfo("u"), {}, [])


async def used(registry: Registry) -> Obj:
    res = registry.table.get("", "v1", "resourcequotas")
    assert res is not None
    return dict((await registry.get(res, "ns", "q"))["status"]["used"])


async def test_cancelled_waiter_is_not_charged_and_the_batch_finishes(nursery: trio.Nursery) -> None:
    registry, plugin = await setup(nursery)
    gate = trio.Event()
    writing = trio.Event()
    inner = registry.update

    async def slow_update(*args: Any, **kw: Any) -> Any:
        writing.set()
        await gate.wait()
        return await inner(*args, **kw)

    registry.update = slow_update  # type: ignore[method-assign]
    results: dict[str, str] = {}

    async def admit(name: str, scope: trio.CancelScope) -> None:
        with scope:
            await plugin.validate(attrs(registry, name))
            results[name] = "admitted"
            return
        results[name] = "cancelled"

    first, second = trio.CancelScope(), trio.CancelScope()
    async with trio.open_nursery() as n:
        n.start_soon(admit, "a", first)
        await writing.wait()  # "a" works its batch: its quota write is under way
        n.start_soon(admit, "b", second)
        await trio.testing.wait_all_tasks_blocked()
        second.cancel()  # "b" waited for the next batch: it goes uncharged
        first.cancel()  # cancelled mid-write: its batch (shielded) finishes all the same
        await trio.testing.wait_all_tasks_blocked()
        gate.set()
    assert results == {"a": "admitted", "b": "cancelled"}
    assert await used(registry) == {"configmaps": "1"}  # "a"'s batch was written; "b" never charged
    registry.update = inner  # type: ignore[method-assign]
    await plugin.validate(attrs(registry, "c"))
    assert await used(registry) == {"configmaps": "2"}
    assert not plugin._work and not plugin._busy


async def test_a_failing_quota_write_fails_the_batch_with_its_error(nursery: trio.Nursery) -> None:
    from kapi import errors

    registry, plugin = await setup(nursery)

    async def broken(*args: Any, **kw: Any) -> Any:
        raise errors.StorageUnavailable("storage is down")

    registry.update = broken  # type: ignore[method-assign]
    failures: list[errors.StatusError] = []

    async def admit(name: str) -> None:
        try:
            await plugin.validate(attrs(registry, name))
        except errors.StatusError as exc:
            failures.append(exc)

    async with trio.open_nursery() as n:
        for name in ("a", "b", "c"):
            n.start_soon(admit, name)
    assert [(f.code, f.message) for f in failures] == [(500, "Internal error occurred: storage is down")] * 3
