"""Owner references: background deletion of dependents, orphan and foreground propagation."""

from __future__ import annotations

from typing import Any

import trio

from kapi import errors
from kapi.controllers.garbagecollector import GarbageCollector
from kapi.apis import BUILTIN
from kapi.registry.resources import ResourceTable
from kapi.registry.deletion import DeleteOptions
from kapi.registry.store import Registry, WriteOptions
from kapi.storage.memory import MemoryStorage

from .conftest import Api


def owned_cm(name: str, owner: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "ownerReferences": [{
        "apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True}]}}


async def _owner_and_dependents(api: Api, prefix: str) -> dict[str, Any]:
    owner = (await api.create("/api/v1/namespaces/default/configmaps",
                              {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": prefix}})).json()
    for i in range(3):
        r = await api.create("/api/v1/namespaces/default/configmaps", owned_cm(f"{prefix}-dep{i}", owner))
        assert r.status == 201
    return owner


async def _wait_gone(api: Api, path: str) -> None:
    for _ in range(500):
        if (await api.request("GET", path)).status == 404:
            return
        await trio.sleep(0.01)
    raise AssertionError(f"{path} still exists")


async def test_background_deletes_dependents(api: Api) -> None:
    await _owner_and_dependents(api, "bg")
    r = await api.request("DELETE", "/api/v1/namespaces/default/configmaps/bg")
    assert r.status == 200
    for i in range(3):
        await _wait_gone(api, f"/api/v1/namespaces/default/configmaps/bg-dep{i}")


async def test_orphan_keeps_dependents_without_the_reference(api: Api) -> None:
    await _owner_and_dependents(api, "or")
    r = await api.request("DELETE", "/api/v1/namespaces/default/configmaps/or?propagationPolicy=Orphan")
    assert r.status == 200
    assert "orphan" in r.json()["metadata"]["finalizers"]
    await _wait_gone(api, "/api/v1/namespaces/default/configmaps/or")
    for i in range(3):
        dep = (await api.request("GET", f"/api/v1/namespaces/default/configmaps/or-dep{i}")).json()
        assert "ownerReferences" not in dep["metadata"]


async def test_foreground_waits_for_dependents(api: Api) -> None:
    await _owner_and_dependents(api, "fg")
    r = await api.request("DELETE", "/api/v1/namespaces/default/configmaps/fg",
                          {"propagationPolicy": "Foreground"})
    assert r.status == 200
    assert r.json()["metadata"]["finalizers"] == ["foregroundDeletion"]
    await _wait_gone(api, "/api/v1/namespaces/default/configmaps/fg")
    for i in range(3):
        assert (await api.request("GET", f"/api/v1/namespaces/default/configmaps/fg-dep{i}")).status == 404


async def test_dependent_with_a_live_owner_stays(api: Api) -> None:
    a = (await api.create("/api/v1/namespaces/default/configmaps",
                          {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "own-a"}})).json()
    b = (await api.create("/api/v1/namespaces/default/configmaps",
                          {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "own-b"}})).json()
    dep = owned_cm("shared", a)
    dep["metadata"]["ownerReferences"] += owned_cm("x", b)["metadata"]["ownerReferences"]
    assert (await api.create("/api/v1/namespaces/default/configmaps", dep)).status == 201
    await api.request("DELETE", "/api/v1/namespaces/default/configmaps/own-a")
    await _wait_gone(api, "/api/v1/namespaces/default/configmaps/own-a")
    await trio.sleep(0.2)
    assert (await api.request("GET", "/api/v1/namespaces/default/configmaps/shared")).status == 200
    await api.request("DELETE", "/api/v1/namespaces/default/configmaps/own-b")
    await _wait_gone(api, "/api/v1/namespaces/default/configmaps/shared")


async def test_dependents_stored_before_start_up_are_collected_and_nothing_else_is_decoded(
        nursery: trio.Nursery) -> None:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    cms, nss = registry.table.get("", "v1", "configmaps"), registry.table.get("", "v1", "namespaces")
    assert cms is not None and nss is not None
    await registry.create(nss, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
                          WriteOptions())
    owner = await registry.create(cms, "default", {"apiVersion": "v1", "kind": "ConfigMap",
                                                   "metadata": {"name": "early"}}, WriteOptions())
    for i in range(3):
        await registry.create(cms, "default", owned_cm(f"early-dep{i}", owner), WriteOptions())
    for i in range(20):
        await registry.create(cms, "default", {"apiVersion": "v1", "kind": "ConfigMap",
                                               "metadata": {"name": f"plain-{i}"}}, WriteOptions())
    decoded: list[str] = []
    decode = registry.decode_metadata
    registry.decode_metadata = (  # type: ignore[method-assign]
        lambda res, kv: (decoded.append(kv.key), decode(res, kv))[1])
    gc = GarbageCollector(registry)
    await nursery.start(gc.run)
    # Only the dependents were decoded from the initial state (their metadata alone).
    assert sorted(decoded) == [f"/registry/configmaps/default/early-dep{i}" for i in range(3)]
    assert sorted(k[3] for k in gc.owners) == ["early-dep0", "early-dep1", "early-dep2"]
    await registry.delete(cms, "default", "early", DeleteOptions())
    for i in range(3):
        for _ in range(500):
            try:
                await registry.get(cms, "default", f"early-dep{i}")
            except errors.NotFound:
                break
            await trio.sleep(0.01)
        else:
            raise AssertionError(f"early-dep{i} still exists")


async def test_a_resource_added_to_the_table_is_collected_too(nursery: trio.Nursery) -> None:
    """Issue 11: the collector follows the resource table; it watches a resource added while it runs."""
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable([r for r in BUILTIN if r.resource != "configmaps"]))
    nss, secrets = registry.table.get("", "v1", "namespaces"), registry.table.get("", "v1", "secrets")
    cms = next(r for r in BUILTIN if r.resource == "configmaps")
    assert nss is not None and secrets is not None
    await registry.create(nss, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
                          WriteOptions())
    gc = GarbageCollector(registry)
    await nursery.start(gc.run)
    registry.table.add(cms)
    owner = await registry.create(secrets, "default", {"apiVersion": "v1", "kind": "Secret",
                                                       "metadata": {"name": "owner"}}, WriteOptions())
    dep = owned_cm("dep", owner)
    dep["metadata"]["ownerReferences"][0].update(kind="Secret")
    await registry.create(cms, "default", dep, WriteOptions())
    with trio.fail_after(10):
        while ("", "configmaps", "default", "dep") not in gc.owners:
            await trio.sleep(0.01)
    await registry.delete(secrets, "default", "owner", DeleteOptions())
    with trio.fail_after(10):
        while True:
            try:
                await registry.get(cms, "default", "dep")
            except errors.NotFound:
                break
            await trio.sleep(0.01)
