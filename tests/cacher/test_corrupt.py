"""Issue 10: nothing storage holds can kill a consumer.

Bad values are put straight into storage (each backend), then the watch cache, the
registry's LIST/GET/WATCH/DELETE and the controllers run over them: each bad object is left
out (and logged), the good ones are served, and nothing raises.
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

import msgpack
import orjson
import pytest
import trio

from kapi import errors
from kapi.cacher.store import Entry
from kapi.encoding import codec
from kapi.controllers.garbagecollector import GarbageCollector
from kapi.controllers.namespace import NamespaceController
from kapi.object.listopts import ListOptions
from kapi.metrics import Metrics
from kapi.apis import BUILTIN
from kapi.registry.resources import ResourceTable
from kapi.registry.deletion import DeleteOptions
from kapi.registry.store import Registry, WriteOptions
from kapi.storage.base import Storage

from .conftest import Backend

PREFIX = "/registry/configmaps/default/"


def cm(name: str, **md: Any) -> dict[str, Any]:
    return {"kind": "ConfigMap", "apiVersion": "v1", "data": {"k": "v"},
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", **md}}


# Each bad value, by what is wrong with it: the reproductions of issue 10 and one of each kind.
BAD_VALUES: dict[str, bytes] = {
    "not-msgpack": b"\xc1\xff garbage",
    "empty": b"",
    "msgpack-list": msgpack.packb([1, 2, 3]),
    "msgpack-string": msgpack.packb("hello"),
    "metadata-list": msgpack.packb({"kind": "ConfigMap", "metadata": ["a"]}),
    "labels-list": codec.encode_value(cm("labels-list", labels=["a"])),
    "labels-int-values": codec.encode_value(cm("labels-int-values", labels={"a": 1})),
    "labels-list-of-ints": codec.encode_value(cm("labels-list-of-ints", labels=[1])),
    "annotations-string": codec.encode_value(cm("annotations-string", annotations="x")),
    "owner-refs-int": codec.encode_value(cm("owner-refs-int", ownerReferences=1)),
    "owner-refs-true": codec.encode_value(cm("owner-refs-true", ownerReferences=True)),
    "owner-ref-not-object": codec.encode_value(cm("owner-ref-not-object", ownerReferences=[1])),
    "owner-ref-uid-int": codec.encode_value(cm("owner-ref-uid-int", ownerReferences=[{"uid": 5, "kind": "X"}])),
    "finalizers-int": codec.encode_value(cm("finalizers-int", finalizers=1)),
    "finalizers-of-ints": codec.encode_value(cm("finalizers-of-ints", finalizers=[1])),
    "name-int": codec.encode_value({**cm("x"), "metadata": {"name": 7, "namespace": "default"}}),
    "namespace-list": codec.encode_value(cm("namespace-list", namespace=[])),
    "generation-string": codec.encode_value(cm("generation-string", generation="1")),
    "deletion-timestamp-int": codec.encode_value(cm("deletion-timestamp-int", deletionTimestamp=3)),
    "grace-string": codec.encode_value(cm("grace-string", deletionGracePeriodSeconds="0")),
    "managed-fields-string": codec.encode_value(cm("managed-fields-string", managedFields="x")),
    "kind-int": codec.encode_value({**cm("kind-int"), "kind": 3}),
    "bytes-in-data": codec.encode_value({**cm("bytes-in-data"), "data": {"k": b"\x00\x01"}}),
    "int-map-key": msgpack.packb({**cm("int-map-key"), "data": {1: "x"}}),
    "extension-type": msgpack.packb({**cm("extension-type"), "data": msgpack.ExtType(5, b"x")}),
}
GOOD = ("good-a", "good-b")


@pytest.fixture
async def storage(backend: Backend, nursery: trio.Nursery) -> Storage:
    """The backend under test (each of them: see conftest), running."""
    store = backend.make()
    await nursery.start(store.run)
    return store


async def fill(storage: Storage) -> None:
    """The default namespace, two good ConfigMaps and every bad value, straight into storage."""
    await storage.create("/registry/namespaces/default", codec.encode_value(
        {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "default", "uid": "ns-uid"}}))
    for name in GOOD:
        await storage.create(PREFIX + name, codec.encode_value(cm(name, labels={"app": "x"})))
    for name, value in BAD_VALUES.items():
        await storage.create(PREFIX + name, value)


def names_of(items: Sequence[Entry]) -> list[str]:
    return [orjson.loads(e.data)["metadata"]["name"] for e in items]


def registry_over(storage: Storage) -> Registry:
    return Registry(storage, ResourceTable(BUILTIN), metrics=Metrics())


def configmaps(registry: Registry) -> Any:
    res = registry.table.get("", "v1", "configmaps")
    assert res is not None
    return res


async def test_every_bad_value_is_corrupt_to_the_checked_decoder() -> None:
    """Issue 10: the decoder the consumers use refuses each bad value with CorruptObject."""
    for name, value in BAD_VALUES.items():
        with pytest.raises(codec.CorruptObject):
            obj = codec.decode_object(value)
            codec.check_json(obj)
            pytest.fail(f"{name} decoded")
    for name in GOOD:
        codec.check_json(codec.decode_object(codec.encode_value(cm(name))))


async def test_watch_cache_starts_and_serves_the_good_objects(storage: Storage, nursery: trio.Nursery,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    """Issue 10: a cache over bad values starts (make_entry raised AttributeError before) and lists the rest."""
    await fill(storage)
    registry = registry_over(storage)
    res = configmaps(registry)
    cacher = registry.make_cacher(res, capacity=100)
    with caplog.at_level(logging.ERROR, "kapi.cacher"):
        await nursery.start(cacher.run)
    page = await registry.list(res, "default", ListOptions(resource_version="0"))
    assert page.source == "cache"
    assert sorted(names_of(page.items)) == sorted(GOOD)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for name in BAD_VALUES:
        assert PREFIX + name in logged
    # Live events: a bad value written now is left out too; a good one still arrives.
    await storage.create(PREFIX + "late-bad", codec.encode_value(cm("late-bad", labels=["b"])))
    await storage.create(PREFIX + "late-good", codec.encode_value(cm("late-good")))
    await cacher.wait_for_rv(await storage.current_revision())
    page = await registry.list(res, "default", ListOptions())
    assert sorted(names_of(page.items)) == sorted((*GOOD, "late-good"))


async def test_an_object_that_turns_corrupt_leaves_the_cache_and_watchers_see_it_go(
        storage: Storage, nursery: trio.Nursery) -> None:
    """Issue 10: corrupt after good is DELETED (with its last good state); good again is ADDED."""
    registry = registry_over(storage)
    res = configmaps(registry)
    cacher = registry.make_cacher(res, capacity=100)
    await nursery.start(cacher.run)
    rev = await storage.create(PREFIX + "flip", codec.encode_value(cm("flip")))
    await cacher.wait_for_rv(rev)
    lines = await registry.watch_lines(res, "default", ListOptions(resource_version=str(rev), watch=True),
                                       deadline=trio.current_time() + 30)
    rev2 = await storage.update(PREFIX + "flip", codec.encode_value(cm("flip", finalizers=1)), rev)
    rev3 = await storage.update(PREFIX + "flip", codec.encode_value(cm("flip", labels={"a": "b"})), rev2)
    await cacher.wait_for_rv(rev3)
    events = []
    with trio.fail_after(5):
        async for chunk in lines:
            events += [orjson.loads(line) for line in chunk.split(b"\n") if line]
            if len(events) >= 2:
                break
    await lines.aclose()  # type: ignore[attr-defined]
    assert [e["type"] for e in events] == ["DELETED", "ADDED"]
    assert events[0]["object"]["metadata"]["resourceVersion"] == str(rev2)
    assert events[1]["object"]["metadata"]["labels"] == {"a": "b"}
    assert cacher.entry(PREFIX + "flip") is not None


async def test_storage_list_get_and_watch_leave_corrupt_objects_out(storage: Storage) -> None:
    """Issue 10: LIST from storage (paged or not) skips them, GET answers a 500 Status, WATCH skips them."""
    await fill(storage)
    registry = registry_over(storage)  # no cacher: every read goes to storage
    res = configmaps(registry)
    page = await registry.list(res, "default", ListOptions())
    assert sorted(names_of(page.items)) == sorted(GOOD)
    selected = await registry.list(res, "default", ListOptions(label_selector="app=x"))
    assert sorted(names_of(selected.items)) == sorted(GOOD)
    seen: list[str] = []
    token = ""
    while True:
        page = await registry.list(res, "default", ListOptions(limit=3, continue_token=token))
        seen += names_of(page.items)
        token = page.continue_token
        if not token:
            break
    assert sorted(seen) == sorted(GOOD)
    for name in ("labels-list", "not-msgpack", "bytes-in-data"):
        with pytest.raises(errors.InternalError) as err:
            await registry.get(res, "default", name)
        status = err.value.to_status()
        assert status["code"] == 500 and "corrupt object" in status["message"] and PREFIX + name in status["message"]
    events = registry.watch(res, "default", ListOptions())
    got = []
    with trio.fail_after(5):
        async for kind, obj in events:
            got.append((kind, obj["metadata"]["name"]))
            if len(got) == len(GOOD):
                break
    await events.aclose()  # type: ignore[attr-defined]
    assert sorted(got) == sorted(("ADDED", n) for n in GOOD)


async def test_update_and_delete_of_a_corrupt_object(storage: Storage) -> None:
    """Issue 10: PUT and DELETE answer 500; DELETE with ignoreStoreReadErrorWithClusterBreakingPotential removes it."""
    await fill(storage)
    registry = registry_over(storage)
    res = configmaps(registry)
    with pytest.raises(errors.InternalError):
        await registry.update(res, "default", "owner-refs-int", cm("owner-refs-int"), WriteOptions())
    with pytest.raises(errors.InternalError):
        await registry.delete(res, "default", "owner-refs-int", DeleteOptions())
    with pytest.raises(errors.Invalid):  # kube: the option is only for objects that cannot be read
        await registry.delete(res, "default", "good-a", DeleteOptions(ignore_store_read_error=True))
    result = await registry.delete(res, "default", "owner-refs-int", DeleteOptions(ignore_store_read_error=True))
    assert result.deleted
    with pytest.raises(errors.KeyNotFound):
        await storage.get(PREFIX + "owner-refs-int")
    await registry.get(res, "default", "good-a")  # still there


async def test_controllers_run_over_corrupt_objects(storage: Storage, nursery: trio.Nursery) -> None:
    """Issue 10: the garbage collector and the namespace controller start and work beside bad values.

    ``_observe`` raised TypeError on ownerReferences: 1 / true and the process exited.
    """
    await fill(storage)
    registry = registry_over(storage)
    res = configmaps(registry)
    # A namespace whose stored value is corrupt, beside the good one.
    await storage.create("/registry/namespaces/broken", msgpack.packb({"metadata": {"name": "broken",
                                                                                    "finalizers": 1}}))
    gc = GarbageCollector(registry)
    ns = NamespaceController(registry)
    with trio.fail_after(20):
        await nursery.start(gc.run)
        await nursery.start(ns.run)
    owner = await registry.get(res, "default", "good-a")
    dep = cm("dependent", ownerReferences=[{"apiVersion": "v1", "kind": "ConfigMap", "name": "good-a",
                                            "uid": owner["metadata"]["uid"]}])
    del dep["metadata"]["uid"]
    del dep["metadata"]["namespace"]
    await registry.create(res, "default", dep, WriteOptions())
    await registry.delete(res, "default", "good-a", DeleteOptions())
    with trio.fail_after(10):
        while True:
            try:
                await registry.get(res, "default", "dependent")
            except errors.NotFound:
                break
            await trio.sleep(0.02)
    # The namespace controller gave the good namespace its default ServiceAccount.
    sa = registry.table.get("", "v1", "serviceaccounts")
    assert sa is not None
    with trio.fail_after(10):
        while True:
            try:
                await registry.get(sa, "default", "default")
                break
            except errors.NotFound:
                await trio.sleep(0.02)
