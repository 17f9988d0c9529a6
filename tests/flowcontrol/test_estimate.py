"""APF work estimates (issue 13): kube's list_work_estimator_test and mutating_work_estimator_test in spirit.

A real registry and pods watch cache hold objects of known size; the estimates are compared with
what kube's formulas give for the cache's own counts and sizes, both LIST estimators side by side.
The watch-initialized signal fires after a watch's initial events are handed off, not before.
"""

from __future__ import annotations

import copy
import math
import random
from dataclasses import dataclass
from typing import Any, AsyncIterator

import orjson
import pytest
import trio
import trio.testing

from kapi.apis import BUILTIN
from kapi.cacher.cache import Cacher
from kapi.cacher.store import CacheStore, Entry
from kapi.chain.context import RequestContext, RequestInfo, new_request_info
from kapi.chain.flowcontrol import Classification, WorkEstimate
from kapi.chain.flowcontrol.estimate import Estimator, seats_by_count, seats_by_size
from kapi.metrics import Metrics
from kapi.object.listopts import ListOptions
from kapi.registry.resources import Resource, ResourceTable
from kapi.registry.store import STALE_OBJECT_STATS, Registry, WriteOptions
from kapi.storage.memory import MemoryStorage

CLS = Classification("global-default", "fs-uid", "global-default", "pl-uid", "alice", False)


@dataclass
class Env:
    storage: MemoryStorage
    registry: Registry
    pods: Resource
    cacher: Cacher
    pod: dict[str, Any]

    async def create_pods(self, namespace: str, count: int, start: int = 0) -> None:
        for i in range(start, start + count):
            obj = copy.deepcopy(self.pod)
            obj["metadata"] = {"name": f"pod-{i}", "namespace": namespace, "labels": {"app": "web"}}
            obj.pop("status", None)
            await self.registry.create(self.pods, namespace, obj, WriteOptions())
        await self.synced()

    async def synced(self) -> None:
        await self.cacher.wait_for_rv(await self.storage.current_revision())

    def served_bytes(self) -> int:
        """The size of every cached object's served form, summed afresh (the store keeps a running sum)."""
        store = self.cacher.store
        return sum(len(e.data) for e in store.entries_of(list(store.keys_from("", None))))


@pytest.fixture
async def env(nursery: trio.Nursery, pod_json: dict[str, Any]) -> Env:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN), metrics=Metrics())
    pods = registry.table.get("", "v1", "pods")
    assert pods is not None
    namespaces = registry.table.get("", "v1", "namespaces")
    assert namespaces is not None
    for ns in ("a", "b"):
        await registry.create(namespaces, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
                              WriteOptions())
    cacher = registry.make_cacher(pods, capacity=100, indexed_fields=("spec.nodeName",))
    await nursery.start(cacher.run)
    return Env(storage, registry, pods, cacher, pod_json)


def info(method: str, path: str, query: dict[str, str] | None = None) -> RequestInfo:
    return new_request_info(method, path, query or {})


def estimate(est: Estimator, method: str, path: str, query: dict[str, str] | None = None,
             max_seats: int = 0) -> WorkEstimate:
    q = query or {}
    return est.estimate(info(method, path, q), q, CLS, max_seats)


# ---------------------------------------------------------------- the cache's sums


def test_store_running_byte_sum_follows_puts_and_deletes() -> None:
    """The store's total bytes equal the sum over its entries after any mix of puts, replaces and deletes."""
    rng = random.Random(13)
    store = CacheStore()

    def entry(key: str) -> Entry:
        return Entry(key, "ns", key, 1, {}, {}, b"x" * rng.randrange(0, 5000))

    store.replace_all([entry(f"/k{i}") for i in range(20)])
    for _ in range(500):
        key = f"/k{rng.randrange(40)}"
        if rng.random() < 0.3:
            store.delete(key)
        else:
            store.put(entry(key))
        expected = sum(len(e.data) for e in store.entries_of(list(store.keys_from("", None))))
        assert store.total_bytes == expected
    store.replace_all([])
    assert store.total_bytes == 0


async def test_cacher_object_stats_are_its_objects_served_sizes(env: Env) -> None:
    assert env.registry.object_stats("", "pods") == (0, 0)
    await env.create_pods("a", 30)
    count, average = env.cacher.object_stats()
    assert count == 30
    assert average == env.served_bytes() // 30
    assert average > 3000  # the realistic pod (without its status): several kB of JSON
    assert env.registry.object_stats("", "pods") == (count, average)
    await env.registry.delete(env.pods, "a", "pod-0", _delete_options())
    await env.synced()
    assert env.registry.object_stats("", "pods") == (29, env.served_bytes() // 29)
    assert env.registry.object_stats("", "nosuchresource") is None


def _delete_options() -> Any:
    from kapi.registry.deletion import DeleteOptions
    return DeleteOptions(grace_period_s=0)


# --------------------------------------------------------------------- LIST


async def test_list_from_cache_by_size_and_by_count(env: Env) -> None:
    """kube's two LIST estimators on the same cache: bytes (capped at 1 MB) ÷ 100 kB vs objects ÷ 100."""
    by_size = Estimator(env.registry, env.registry.metrics)
    by_count = Estimator(env.registry, env.registry.metrics, size_based=False)
    await env.create_pods("a", 50)
    count, average = env.registry.object_stats("", "pods")  # type: ignore[misc]
    path = "/api/v1/namespaces/a/pods"
    # 50 pods of ~3 kB: ~170 kB from the cache -> 2 seats by size, 1 by count
    assert estimate(by_size, "GET", path).initial_seats == math.ceil(50 * average / 100_000) >= 2
    assert estimate(by_count, "GET", path).initial_seats == 1
    assert estimate(by_size, "GET", path, {"resourceVersion": "0"}).initial_seats == \
        math.ceil(50 * average / 100_000)
    # a limit from the cache: only the page is held
    assert estimate(by_size, "GET", path, {"limit": "10"}).initial_seats == math.ceil(10 * average / 100_000)
    await env.create_pods("b", 350)
    count, average = env.registry.object_stats("", "pods")  # type: ignore[misc]
    assert count == 400 and 400 * average > 1_000_000
    # from the cache the memory held at once is capped at 1 MB: 10 seats; by count ceil(400/100) = 4
    assert estimate(by_size, "GET", "/api/v1/pods").initial_seats == 10
    assert estimate(by_count, "GET", "/api/v1/pods").initial_seats == 4
    # the priority level's maxSeats caps both
    assert estimate(by_size, "GET", "/api/v1/pods", max_seats=4).initial_seats == 4
    assert estimate(by_count, "GET", "/api/v1/pods", max_seats=2).initial_seats == 2


async def test_list_from_storage_by_size_and_by_count(env: Env) -> None:
    """A LIST at an rv older than the cache's start goes to storage: kube's storage cases (selector, limit)."""
    by_size = Estimator(env.registry, env.registry.metrics)
    by_count = Estimator(env.registry, env.registry.metrics, size_based=False)
    await env.create_pods("a", 150)
    count, average = env.registry.object_stats("", "pods")  # type: ignore[misc]
    old = {"resourceVersion": "1", "resourceVersionMatch": "Exact", "limit": "20"}  # before the cache began
    assert not env.registry.lists_from_cache("", "pods", old)
    path = "/api/v1/pods"
    assert estimate(by_size, "GET", path, old).initial_seats == math.ceil(20 * average / 100_000)
    assert estimate(by_count, "GET", path, old).initial_seats == math.ceil(2 * 20 / 100)
    selected = dict(old, labelSelector="app=web")
    # by size: max(limit, count/2) objects loaded; by count: count + limit processed
    assert estimate(by_size, "GET", path, selected).initial_seats == \
        min(math.ceil(max(20, count // 2) * average / 100_000), 100)
    assert estimate(by_count, "GET", path, selected).initial_seats == math.ceil((count + 20) / 100)


def test_list_formulas_match_kube_cases() -> None:
    """kube's list_work_estimator_test numbers, on the formulas alone."""
    # by count: cache -> all stored objects; storage with a selector -> stored + limit; else 2 x limit
    assert seats_by_count(799, 0, True, False, False) == 8
    assert seats_by_count(799, 0, False, False, True) == 16
    assert seats_by_count(799, 399, False, False, False) == 8
    assert seats_by_count(799, 0, False, True, False) == 1
    # by size: objects of 10 kB; the cache's memory at once is capped at 1 MB
    assert seats_by_size((1000, 10_000), 0, True, False, False) == 10
    assert seats_by_size((1000, 10_000), 50, True, False, False) == 5
    assert seats_by_size((1000, 10_000), 50, False, False, True) == 50  # max(50, 1000/2) objects
    assert seats_by_size((1000, 10_000), 50, False, False, False) == 5
    assert seats_by_size((1000, 10_000), 0, False, False, False) == 100
    assert seats_by_size((1000, 0), 0, False, True, False) == 15  # an unknown size is kube's 1.5 MB
    assert seats_by_size((0, 0), 0, True, False, False) == 0


async def test_list_unknown_stale_and_bad_options(env: Env) -> None:
    est = Estimator(env.registry, env.registry.metrics)
    # no watch cache and never counted: kube's "not found" is the minimum
    assert estimate(est, "GET", "/api/v1/events").initial_seats == 1
    # a limit it cannot convert: kube answers the maximum (the priority level's, else 100)
    assert estimate(est, "GET", "/api/v1/pods", {"limit": "x"}, max_seats=7).initial_seats == 7
    assert estimate(est, "GET", "/api/v1/pods", {"limit": "x"}).initial_seats == 100
    # an empty limit does not convert either (ParseInt(""), a 400 once served): the maximum too
    assert estimate(est, "GET", "/api/v1/pods", {"limit": ""}, max_seats=7).initial_seats == 7
    assert Estimator(env.registry, env.registry.metrics, size_based=False).estimate(
        info("GET", "/api/v1/pods"), {"limit": "x"}, CLS, 0).initial_seats == 10


async def test_uncached_resource_counts_go_stale(nursery: trio.Nursery, autojump_clock: Any) -> None:
    """Events have no watch cache: the periodic storage count, an average from a sample, stale after 3 min."""
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN), metrics=Metrics())
    events = registry.table.get("", "v1", "events")
    namespaces = registry.table.get("", "v1", "namespaces")
    assert events is not None and namespaces is not None
    await registry.create(namespaces, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}},
                          WriteOptions())
    values = []
    for i in range(7):
        ev = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"e{i}", "namespace": "a"},
              "involvedObject": {"kind": "Pod", "name": "p", "namespace": "a"}, "reason": "r" * (10 * i),
              "message": "m"}
        await registry.create(events, "a", ev, WriteOptions())
        values.append(len((await registry.get_kv(events, "a", f"e{i}")).value))
    assert registry.object_stats("", "events") is None
    await registry.refresh_object_counts()
    assert registry.object_stats("", "events") == (7, sum(values) // 7)
    # events.k8s.io serves the same stored objects
    assert registry.object_stats("events.k8s.io", "events") == (7, sum(values) // 7)
    await trio.sleep(181)
    assert registry.object_stats("", "events") == STALE_OBJECT_STATS
    est = Estimator(registry, registry.metrics)
    assert estimate(est, "GET", "/api/v1/events", max_seats=8).initial_seats == 8
    await registry.refresh_object_counts()
    assert registry.object_stats("", "events") == (7, sum(values) // 7)


async def test_lists_from_cache_is_the_route_the_cacher_takes(env: Env) -> None:
    """The predicate APF reads agrees with where get_list really answered, for each kind of LIST."""
    await env.create_pods("a", 30)
    rv = await env.storage.current_revision()
    page = await env.registry.list(env.pods, "", ListOptions(limit=5))
    queries: list[dict[str, str]] = [
        {}, {"resourceVersion": "0"}, {"resourceVersion": "0", "limit": "5"}, {"limit": "5"},
        {"resourceVersion": str(rv)}, {"resourceVersion": str(rv), "resourceVersionMatch": "NotOlderThan"},
        {"resourceVersion": str(rv), "resourceVersionMatch": "Exact"},
        {"resourceVersion": str(rv - 3), "limit": "5"}, {"continue": page.continue_token, "limit": "5"},
        {"resourceVersion": "1", "resourceVersionMatch": "Exact"}, {"resourceVersion": "2", "limit": "5"},
        {"labelSelector": "app=web", "limit": "5"},
    ]
    await env.create_pods("a", 10, start=30)  # the snapshots at rv and rv - 3 are in the window now
    seen = set()
    for q in queries:
        from kapi.object.listopts import parse_list_options
        answered = await env.registry.list(env.pods, "", parse_list_options(q))
        from_cache = answered.source in ("cache", "snapshot")
        seen.add(from_cache)
        assert env.registry.lists_from_cache("", "pods", q) == from_cache, q
    assert seen == {True, False}
    assert not env.registry.lists_from_cache("", "events", {})  # no watch cache
    assert not env.registry.lists_from_cache("", "pods", {"continue": "garbage"})


# -------------------------------------------------------------------- WATCH


async def test_watch_costs_a_list_only_when_it_sends_initial_events(env: Env) -> None:
    est = Estimator(env.registry, env.registry.metrics)
    await env.create_pods("a", 400)
    path = "/api/v1/pods"
    assert estimate(est, "GET", path, {"watch": "true", "resourceVersion": "5"}).initial_seats == 1
    assert estimate(est, "GET", path, {"watch": "true"}).initial_seats == 10  # rv "": the state first
    assert estimate(est, "GET", path, {"watch": "true", "resourceVersion": "0"}).initial_seats == 10
    sie = {"watch": "true", "sendInitialEvents": "true", "resourceVersion": "5",
           "resourceVersionMatch": "NotOlderThan"}
    assert estimate(est, "GET", path, sie).initial_seats == 10
    assert estimate(est, "GET", path, dict(sie, sendInitialEvents="false")).initial_seats == 1
    # a watch is served by the cache: the cap applies even with a limit-less storage-looking rv
    assert estimate(est, "GET", path, {"watch": "true"}, max_seats=3).initial_seats == 3


# ---------------------------------------------------------------- mutations


class Watches:
    """Opens watch streams on the registry and closes them at the end."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.streams: list[AsyncIterator[bytes]] = []

    async def open(self, namespace: str = "", n: int = 1, **opts: Any) -> None:
        for _ in range(n):
            lines = await self.env.registry.watch_lines(self.env.pods, namespace, ListOptions(watch=True, **opts),
                                                        trio.current_time() + 600)
            self.streams.append(lines)

    async def close(self) -> None:
        for s in self.streams:
            await s.aclose()  # type: ignore[attr-defined]
        self.streams = []


async def test_mutation_widened_by_the_watchers_it_notifies(env: Env) -> None:
    """kube's mutating estimator over the cache's real watchers: 10 a seat, 5 ms each, capped at 10 seats."""
    est = Estimator(env.registry, env.registry.metrics)
    watches = Watches(env)
    try:
        await watches.open("", 12)  # every pod
        await watches.open("a", 9)  # namespace a
        await watches.open("a", 4, field_selector="metadata.name=p1")  # that pod
        await watches.open("", 30, field_selector="spec.nodeName=n1")  # indexed: not counted (kube's tracker)
        await watches.open("", 2, label_selector="app=web")  # selectors are not looked at
        assert env.registry.watch_count("", "pods", "a", "p1") == 12 + 9 + 4 + 2
        assert env.registry.watch_count("", "pods", "a", "") == 12 + 9 + 2
        assert env.registry.watch_count("", "pods", "b", "p1") == 14
        assert env.registry.watch_count("", "configmaps", "a", "x") == 0
        update = estimate(est, "PUT", "/api/v1/namespaces/a/pods/p1")
        assert update == WorkEstimate(1, 3, pytest.approx(0.005))  # ceil(27/10) seats for 5 ms each
        create = estimate(est, "POST", "/api/v1/namespaces/a/pods")
        assert create.final_seats == 3
        status = estimate(est, "PATCH", "/api/v1/namespaces/b/pods/p1/status")
        assert status == WorkEstimate(1, 2, pytest.approx(0.005))
        assert estimate(est, "DELETE", "/api/v1/namespaces/b/pods/p1").final_seats == 2
        # deletecollection and reads: one seat, as kube
        assert estimate(est, "DELETE", "/api/v1/namespaces/a/pods") == WorkEstimate(1)
        assert estimate(est, "GET", "/api/v1/namespaces/a/pods/p1") == WorkEstimate(1)
        await watches.open("", 150)
        # 177 watchers: ceil(17.7) = 18 seats of 5 ms -> capped at 10 seats holding the same seat-seconds
        update = estimate(est, "PUT", "/api/v1/namespaces/a/pods/p1")
        assert update.final_seats == 10
        assert update.additional_latency_s == pytest.approx(18 * 0.005 / 10)
        update = estimate(est, "PUT", "/api/v1/namespaces/a/pods/p1", max_seats=4)
        assert update.final_seats == 4
        assert update.additional_latency_s == pytest.approx(18 * 0.005 / 4)
    finally:
        await watches.close()
    assert env.registry.watch_count("", "pods", "a", "p1") == 0
    assert estimate(est, "PUT", "/api/v1/namespaces/a/pods/p1") == WorkEstimate(1)


async def test_few_watchers_and_token_requests(env: Env) -> None:
    est = Estimator(env.registry, env.registry.metrics)
    watches = Watches(env)
    try:
        await watches.open("", 9)
        assert estimate(est, "PUT", "/api/v1/namespaces/a/pods/p1") == WorkEstimate(1)
        await watches.open("", 1)
        assert estimate(est, "PUT", "/api/v1/namespaces/a/pods/p1") == WorkEstimate(1, 1, pytest.approx(0.005))
    finally:
        await watches.close()
    # a token request makes no event: exempt from the watchers' widening
    assert estimate(est, "POST", "/api/v1/namespaces/a/serviceaccounts/default/token") == WorkEstimate(1)


async def test_storage_watches_are_counted(env: Env) -> None:
    """A resource without a watch cache is watched on storage: those watchers count too."""
    events = env.registry.table.get("", "v1", "events")
    assert events is not None
    streams = []
    for ns in ("", "a", "a"):
        lines = await env.registry.watch_lines(events, ns, ListOptions(watch=True, resource_version="1"),
                                               trio.current_time() + 600)
        streams.append(lines)
    tasks_started = []
    async with trio.open_nursery() as nursery:
        for lines in streams:
            # a storage watch is registered once its generator runs up to the storage watch
            nursery.start_soon(_first_line, lines)
            tasks_started.append(lines)
        await trio.testing.wait_all_tasks_blocked()
        assert env.registry.watch_count("", "events", "a", "e1") == 3
        assert env.registry.watch_count("events.k8s.io", "events", "a", "e1") == 3  # the same objects
        assert env.registry.watch_count("", "events", "b", "e1") == 1
        nursery.cancel_scope.cancel()
    for lines in streams:
        await lines.aclose()  # type: ignore[attr-defined]
    assert env.registry.watch_count("", "events", "a", "e1") == 0


async def _first_line(lines: AsyncIterator[bytes]) -> None:
    await lines.__anext__()


async def test_metrics_observed(env: Env) -> None:
    est = Estimator(env.registry, env.registry.metrics)
    await env.create_pods("a", 50)
    labels = {"priority_level": CLS.priority_level, "flow_schema": CLS.flow_schema}
    sample = env.registry.metrics.registry.get_sample_value
    seats = estimate(est, "GET", "/api/v1/pods").max_seats
    estimate(est, "PUT", "/api/v1/namespaces/a/pods/p")
    assert sample("apiserver_flowcontrol_work_estimated_seats_count", labels) == 2
    assert sample("apiserver_flowcontrol_work_estimated_seats_sum", labels) == seats + 1
    assert sample("apiserver_flowcontrol_watch_count_samples_count", labels) == 1
    # an exempt level's requests are not estimated (kube dispatches them first)
    exempt = Classification("exempt", "u1", "exempt", "u2", "admin", True)
    assert est.estimate(info("GET", "/api/v1/pods"), {}, exempt, 0) == WorkEstimate(1)
    assert sample("apiserver_flowcontrol_work_estimated_seats_count",
                  {"priority_level": "exempt", "flow_schema": "exempt"}) is None


# ------------------------------------------------------- the watch-initialized signal


async def test_watch_initialized_after_initial_events_not_before(env: Env) -> None:
    """issue 13: a watch's seats are freed once its initial events are handed off, and only then."""
    await env.create_pods("a", 40)
    fired: list[int] = []
    read: list[bytes] = []
    lines = await env.registry.watch_lines(env.pods, "a", ListOptions(watch=True), trio.current_time() + 600,
                                           initialized=lambda: fired.append(len(read)))
    try:
        assert fired == []
        read.append(await lines.__anext__())
        assert fired == []  # the writer holds the initial events, but has not come back for more
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_read_into, lines, read)
            await trio.testing.wait_all_tasks_blocked()
            assert fired == [1]  # fired as the writer came back, before any live event
            nursery.cancel_scope.cancel()
        added = [orjson.loads(x) for x in b"".join(read).split(b"\n") if x]
        assert len(added) == 40 and {e["type"] for e in added} == {"ADDED"}
    finally:
        await lines.aclose()  # type: ignore[attr-defined]
    assert fired == [1]  # once


async def test_watch_initialized_at_once_without_initial_events(env: Env) -> None:
    await env.create_pods("a", 3)
    rv = await env.storage.current_revision()
    fired: list[bool] = []
    lines = await env.registry.watch_lines(env.pods, "a", ListOptions(watch=True, resource_version=str(rv)),
                                           trio.current_time() + 600, initialized=lambda: fired.append(True))
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_read_into, lines, [])
            await trio.testing.wait_all_tasks_blocked()
            assert fired == [True]  # the stream started: nothing to wait for
            nursery.cancel_scope.cancel()
    finally:
        await lines.aclose()  # type: ignore[attr-defined]


async def test_storage_watch_initialized_after_initial_events(env: Env) -> None:
    events = env.registry.table.get("", "v1", "events")
    assert events is not None
    for i in range(3):
        await env.registry.create(events, "a", {"apiVersion": "v1", "kind": "Event", "metadata": {
            "name": f"e{i}", "namespace": "a"}, "involvedObject": {"name": "p", "namespace": "a"}}, WriteOptions())
    fired: list[int] = []
    read: list[bytes] = []
    lines = await env.registry.watch_lines(events, "a", ListOptions(watch=True), trio.current_time() + 600,
                                           initialized=lambda: fired.append(len(read)))
    try:
        for _ in range(3):
            read.append(await lines.__anext__())
        assert fired == []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_read_into, lines, read)
            await trio.testing.wait_all_tasks_blocked()
            assert fired == [3]
            nursery.cancel_scope.cancel()
    finally:
        await lines.aclose()  # type: ignore[attr-defined]


async def test_handler_runs_on_watch_initialized_once(env: Env) -> None:
    """The watch handler hands ctx.on_watch_initialized to the stream: each callback runs once."""
    from kapi.api.app import Health
    from kapi.config import Config
    from kapi.server.serve import build_app

    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",)), env.registry, "t",
                    Health(ready=True))
    await env.create_pods("a", 5)
    query = {"watch": "true"}
    ctx = RequestContext("GET", "/api/v1/namespaces/a/pods", query, {})
    ctx.info = new_request_info("GET", "/api/v1/namespaces/a/pods", query)
    calls: list[str] = []
    ctx.on_watch_initialized.append(lambda: calls.append("seats"))
    ctx.on_watch_initialized.append(lambda: calls.append("other"))
    response = await app.handlers.watch(ctx, env.pods)
    assert response.stream is not None
    try:
        first = await response.stream.__anext__()
        assert first.count(b'"ADDED"') == 5 and calls == []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_read_into, response.stream, [])
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
        assert calls == ["seats", "other"]
        assert ctx.on_watch_initialized == []
    finally:
        await response.stream.aclose()  # type: ignore[attr-defined]


async def _read_into(lines: AsyncIterator[bytes], into: list[bytes]) -> None:
    async for chunk in lines:
        into.append(chunk)

