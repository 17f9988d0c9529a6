"""Consistent LISTs from the watch cache (kube 1.34 ConsistentListFromCache): a quorum read of the current
revision, a wait for the cache with progress asked every 100 ms while anyone waits, and storage's answer
when the backend cannot serve consistent reads from a cache (kube's ConsistentReadSupported)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from kapi.encoding import codec
from kapi.object.listopts import ListOptions, encode_continue
from kapi.storage.base import Storage

from .conftest import Backend, Env, MakeEnv, names
from .test_cache_list import cache_list, everything

LABELS = {"group": "", "resource": "pods"}


class Wrapped:
    """A backend seen through a wrapper: ``request_progress`` counted (and passed on only when
    ``forward``), ``consistent_reads_from_cache`` as given; everything else the backend's own."""

    def __init__(self, inner: Storage, *, forward: bool = True, consistent: bool = True) -> None:
        self.inner = inner
        self.forward = forward
        self.consistent_reads_from_cache = consistent
        self.asked = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def request_progress(self) -> None:
        self.asked += 1
        if self.forward:
            self.inner.request_progress()


async def wrapped_env(make_env: MakeEnv, backend: Backend, nursery: trio.Nursery, **options: Any
                      ) -> tuple[Env, Wrapped]:
    inner = backend.make()
    await nursery.start(inner.run)
    storage = Wrapped(inner, **options)
    return await make_env(storage=storage), storage


async def elsewhere(env: Env, name: str) -> int:
    """A write under another resource's prefix: the pods cache sees no event of it."""
    return await env.storage.create(f"/registry/configmaps/default/{name}", codec.encode_value(
        {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": name, "namespace": "default"}}))


async def test_a_consistent_list_reaches_a_revision_written_elsewhere_through_progress(env: Env) -> None:
    r = await env.put("a", "p1")
    await env.synced()
    current = await elsewhere(env, "cm")
    assert env.cacher.rv == r < current
    got = await cache_list(env, ListOptions(), everything(env))
    assert got.source == "cache" and got.revision == current and names(got.items) == ["a/p1"]
    assert env.sample("apiserver_watch_cache_consistent_read_total", **LABELS, success="true",
                      fallback="false") == 1


async def test_progress_is_asked_every_100ms_while_anyone_waits(make_env: MakeEnv, backend: Backend,
                                                               nursery: trio.Nursery,
                                                               autojump_clock: trio.abc.Clock) -> None:
    """Five LISTs wait together for a revision the cache never sees: one request every 100 ms (virtual
    time) for all of them, not one per reader; none once nobody waits. Each falls back to storage."""
    env, storage = await wrapped_env(make_env, backend, nursery, forward=False)
    await env.put("a", "p1")
    await env.synced()  # may have waited, and asked
    await elsewhere(env, "cm")
    await trio.sleep(1)  # nobody waits now
    before = storage.asked
    results = []

    async def consistent_list() -> None:
        results.append(await cache_list(env, ListOptions(), everything(env)))

    async with trio.open_nursery() as readers:
        for _ in range(5):
            readers.start_soon(consistent_list)
    # 3 s of waiting: at 0, 0.1, ... 2.9 s (and perhaps at 3.0 s, as the waits end).
    assert 30 <= storage.asked - before <= 31
    assert [r.source for r in results] == ["storage"] * 5
    assert env.sample("apiserver_watch_cache_consistent_read_total", **LABELS, success="true",
                      fallback="true") == 5
    assert env.sample("kapi_storage_list_total", **LABELS, reason="consistent-read-timeout") == 5
    asked = storage.asked
    await trio.sleep(5)
    assert storage.asked == asked


async def test_without_consistent_reads_from_cache_storage_answers(make_env: MakeEnv, backend: Backend,
                                                                   nursery: trio.Nursery) -> None:
    """kube's delegator when etcd cannot serve consistent reads (older than 3.5.13): consistent LISTs,
    consistent continues and exact LISTs at a revision the cache has not seen go to storage."""
    env, storage = await wrapped_env(make_env, backend, nursery, consistent=False)
    r = await env.put("a", "p1")
    await env.put("a", "p2")
    await env.synced()
    prefix = env.registry.prefix(env.res, "")
    current = await elsewhere(env, "cm")
    asked = storage.asked  # env.synced() may have waited
    consistent = ListOptions()
    assert not env.cacher.lists_from_cache(consistent, True)
    got = await cache_list(env, consistent, everything(env))
    assert got.source == "storage" and got.revision == current and names(got.items) == ["a/p1", "a/p2"]
    token = encode_continue(-1, env.key("a", "p1") + "\x00", prefix)
    got = await cache_list(env, ListOptions(continue_token=token), everything(env))
    assert got.source == "storage" and names(got.items) == ["a/p2"]
    got = await cache_list(env, ListOptions(resource_version=str(current), resource_version_match="Exact"),
                           everything(env))
    assert got.source == "storage" and got.revision == current
    assert env.sample("kapi_storage_list_total", **LABELS, reason="consistent-read-unsupported") == 3
    # kube counts a consistent read only when the cache took it.
    assert env.sample("apiserver_watch_cache_consistent_read_total", **LABELS, success="true",
                      fallback="false") == 0
    # What the cache holds it still answers.
    got = await cache_list(env, ListOptions(resource_version=str(r), resource_version_match="Exact"),
                           everything(env))
    assert got.source == "snapshot" and names(got.items) == ["a/p1"]
    got = await cache_list(env, ListOptions(resource_version="0"), everything(env))
    assert got.source == "cache"
    # The registry's LIST takes the same route.
    page = await env.registry.list(env.res, "", consistent)
    assert page.source == "storage"
    assert storage.asked == asked  # nobody waited for the cache


@pytest.mark.parametrize("backend", [pytest.param("etcd3-as-is", marks=pytest.mark.e2e)], indirect=True)
async def test_etcd_before_3_5_13_takes_the_fallback(env: Env) -> None:
    """The tests' etcd is 3.5.1: its RequestProgress answers are not ordered with events."""
    assert env.storage.consistent_reads_from_cache is False
    await env.put("a", "p1")
    got = await cache_list(env, ListOptions(), everything(env))
    assert got.source == "storage" and names(got.items) == ["a/p1"]
    assert env.sample("kapi_storage_list_total", **LABELS, reason="consistent-read-unsupported") == 1
