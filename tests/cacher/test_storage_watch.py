"""Issue 10: the registry's storage-backed watch at start-up sizes, and its eager option checks."""

from __future__ import annotations

import pytest
import trio

from kapi import errors
from kapi.encoding import codec
from kapi.controllers.garbagecollector import GarbageCollector
from kapi.object.listopts import ListOptions
from kapi.metrics import Metrics
from kapi.apis import BUILTIN
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.registry.watching import DECODE_CHUNK

from .conftest import Backend


@pytest.fixture
async def registry(nursery: trio.Nursery, backend: Backend) -> Registry:
    storage = backend.make()
    await nursery.start(storage.run)
    return Registry(storage, ResourceTable(BUILTIN), metrics=Metrics())


def _has_owners(stored: bytes) -> bool:
    """The initial filter the collector used on this watch: objects that may have owners (or be going)."""
    return b"ownerReferences" in stored or b"deletionTimestamp" in stored


async def put_configmaps(registry: Registry, count: int) -> None:
    for i in range(count):
        await registry.storage.create(f"/registry/configmaps/default/cm-{i:05d}", codec.encode_value(
            {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": f"cm-{i:05d}", "namespace": "default"}}))


async def test_more_than_a_chunk_of_objects_none_needing_collection(registry: Registry) -> None:
    """Issue 10 defect 1: 504 ConfigMaps without owners; ``del page, items, chunk`` raised UnboundLocalError."""
    await put_configmaps(registry, DECODE_CHUNK + 4)
    res = registry.table.get("", "v1", "configmaps")
    assert res is not None
    events = registry.watch(res, "", ListOptions(), initial_filter=_has_owners, metadata_only=True)
    got = []
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            async def write_later() -> None:
                await trio.sleep(0.2)  # after the initial list
                await registry.storage.create("/registry/configmaps/default/late", codec.encode_value(
                    {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "late", "namespace": "default"}}))
            nursery.start_soon(write_later)
            async for kind, obj in events:
                # The initial state yields nothing (no owners, nothing being deleted); the next event is live.
                got.append((kind, obj["metadata"]["name"]))
                break
    await events.aclose()  # type: ignore[attr-defined]
    assert got == [("ADDED", "late")]


async def test_more_than_a_chunk_with_selector_matching_none(registry: Registry) -> None:
    """Issue 10: a full watch over more than a chunk whose selector matches nothing still goes live."""
    await put_configmaps(registry, DECODE_CHUNK + 4)
    res = registry.table.get("", "v1", "configmaps")
    assert res is not None
    events = registry.watch(res, "default", ListOptions(label_selector="app=none"))
    with trio.move_on_after(0.5) as scope:
        async for _ in events:
            pytest.fail("nothing matches")
    assert scope.cancelled_caught
    await events.aclose()  # type: ignore[attr-defined]


async def test_garbage_collector_starts_over_many_objects_without_owners(registry: Registry,
                                                                         nursery: trio.Nursery) -> None:
    """Issue 10 defect 1, as start-up meets it: the collector's watches start."""
    await put_configmaps(registry, DECODE_CHUNK + 4)
    with trio.fail_after(20):
        await nursery.start(GarbageCollector(registry).run)


@pytest.mark.parametrize("resource", ["events", "configmaps"])
@pytest.mark.parametrize("opts", [
    ListOptions(label_selector="a in (", watch=True),
    ListOptions(label_selector="!!x", watch=True),
    ListOptions(field_selector="spec.nope=x", watch=True),
    ListOptions(field_selector="metadata.name", watch=True),
    ListOptions(resource_version="abc", watch=True),
    ListOptions(resource_version="-1", watch=True),
], ids=["label-in", "label-bang", "field-unknown", "field-no-op", "rv-abc", "rv-negative"])
async def test_invalid_watch_options_fail_before_the_stream(registry: Registry, resource: str,
                                                            opts: ListOptions) -> None:
    """Issue 10 defect 6: a watch of events (served from storage) answered 200, then cut the stream.

    ``watch_lines`` must raise the 400 itself, before any line is asked for.
    """
    res = registry.table.get("", "v1", resource)
    assert res is not None
    if resource == "configmaps":
        cacher = registry.make_cacher(res, capacity=10)
        cacher.ready = True  # its options are checked before it is asked anything
    with pytest.raises(errors.BadRequest):
        await registry.watch_lines(res, "default", opts, deadline=trio.current_time() + 10)


async def test_send_initial_events_false_starts_now_without_the_current_objects(registry: Registry) -> None:
    """Issue 30: a storage-backed watch with sendInitialEvents=false (a client resuming from "now") sends no
    ADDED for the objects already there, as kube's etcd3 watch; it sent them all."""
    await put_configmaps(registry, 3)
    res = registry.table.get("", "v1", "configmaps")
    assert res is not None
    events = registry.watch(res, "", ListOptions(send_initial_events=False, resource_version_match="NotOlderThan"))
    got = []
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            async def write_later() -> None:
                while len(registry.storage_routes) == 0:  # once the watch has started
                    await trio.sleep(0.01)
                await registry.storage.create("/registry/configmaps/default/late", codec.encode_value(
                    {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "late", "namespace": "default"}}))
            nursery.start_soon(write_later)
            async for kind, obj in events:
                got.append((kind, obj["metadata"]["name"]))
                break
    await events.aclose()  # type: ignore[attr-defined]
    assert got == [("ADDED", "late")]
