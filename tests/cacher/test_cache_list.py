"""LIST from the watch cache by SEMANTICS §1.2 (kube-apiserver 1.34+), via Cacher.get_list and Registry.list."""

from __future__ import annotations

import pytest
import trio

from kapi import errors
from kapi._fast import EventRing
from kapi.cacher.store import Entry
from kapi.encoding import listitems
from kapi.object.listopts import ListOptions, decode_continue, encode_continue
from kapi.object.selectors import parse_field_selector, parse_label_selector

from kapi.registry import listing
from kapi.registry.deletion import DeleteOptions
from kapi.registry.store import Selection
from kapi.storage.base import ListResult, Predicate

from .conftest import Env, MakeEnv, names

LABELS = {"group": "", "resource": "pods"}


Select = tuple[str, Predicate[Entry]]  # the key prefix and the predicate of a LIST


def everything(env: Env, namespace: str = "") -> Select:
    return env.registry.prefix(env.res, namespace), listing.predicate(env.registry, env.res, Selection(None, None))


def selecting(env: Env, namespace: str = "", label: str = "", field: str = "") -> Select:
    fields = env.registry.selectable_fields(env.res)
    sel = Selection(parse_label_selector(label) if label else None,
                    parse_field_selector(field, fields, labels=env.res.strategy.field_labels) if field else None)
    return env.registry.prefix(env.res, namespace), listing.predicate(env.registry, env.res, sel)


async def cache_list(env: Env, opts: ListOptions, select: Select) -> ListResult[Entry]:
    """A LIST through the pods cacher (which may answer from storage)."""
    return await env.cacher.get_list(select[0], opts, select[1])


async def populate(env: Env) -> None:
    """Eight pods over two namespaces and two nodes; app=web on even ones."""
    for i in range(8):
        ns = "a" if i < 5 else "b"
        await env.put(ns, f"p{i}", node="node-1" if i % 3 == 0 else "node-2",
                      labels={"app": "web" if i % 2 == 0 else "db"})
    await env.synced()


ALL = ["a/p0", "a/p1", "a/p2", "a/p3", "a/p4", "b/p5", "b/p6", "b/p7"]


# ----------------------------------------------------- consistent reads


async def test_rv_unset_is_a_consistent_read(env: Env) -> None:
    await populate(env)
    # Written and listed at once: the read waits until the cache has the newest revision.
    rev = await env.put("b", "p9")
    got = await cache_list(env, ListOptions(), everything(env))
    assert names(got.items) == ALL + ["b/p9"]
    assert got.revision == rev
    assert got.source == "cache" and got.continue_token == "" and got.remaining is None
    assert env.sample("apiserver_watch_cache_consistent_read_total", **LABELS, success="true",
                      fallback="false") == 1


async def test_rv_unset_limit_pages_share_the_first_rv(env: Env) -> None:
    await populate(env)
    first = await cache_list(env, ListOptions(limit=3), everything(env))
    assert names(first.items) == ALL[:3]
    assert first.remaining == 5
    rv = first.revision
    token = decode_continue(first.continue_token)
    assert token.revision == rv and token.start == "a/p2\x00"
    # Changes between pages must not show: page 2 is read at page 1's rv.
    await env.put("a", "p3", labels={"changed": "yes"})
    await env.delete("a", "p4")
    await env.put("a", "p35")
    await env.synced()
    second = await cache_list(env, ListOptions(limit=3, continue_token=first.continue_token), everything(env))
    assert names(second.items) == ALL[3:6]
    assert second.source == "snapshot"
    assert second.revision == rv
    assert b'"changed"' not in second.items[0].data
    assert second.remaining == 2
    third = await cache_list(env, ListOptions(limit=3, continue_token=second.continue_token), everything(env))
    assert names(third.items) == ALL[6:]
    assert third.revision == rv and third.continue_token == "" and third.remaining is None


async def test_limit_exact_fit_has_no_continue(env: Env) -> None:
    await populate(env)
    got = await cache_list(env, ListOptions(limit=8), everything(env))
    assert len(got.items) == 8 and got.continue_token == "" and got.remaining is None


async def test_remaining_count_only_without_selectors(env: Env) -> None:
    await populate(env)
    got = await cache_list(env, ListOptions(limit=1), selecting(env, label="app=web"))
    assert names(got.items) == ["a/p0"]
    assert got.continue_token and got.remaining is None
    got = await cache_list(env, ListOptions(limit=1), selecting(env, field="spec.nodeName=node-2"))
    assert got.continue_token and got.remaining is None
    got = await cache_list(env, ListOptions(limit=1), everything(env, "b"))
    assert names(got.items) == ["b/p5"] and got.remaining == 2


async def test_selector_pages_collect_matching_items(env: Env) -> None:
    await populate(env)
    filt = selecting(env, label="app=web")
    seen: list[str] = []
    token = ""
    rvs = set()
    for _ in range(10):
        page = await cache_list(env, ListOptions(limit=2, continue_token=token), filt)
        seen += names(page.items)
        rvs.add(page.revision)
        token = page.continue_token
        if not token:
            break
    assert seen == ["a/p0", "a/p2", "a/p4", "b/p6"]
    assert len(rvs) == 1


async def test_namespace_scoped_list(env: Env) -> None:
    await populate(env)
    got = await cache_list(env, ListOptions(), everything(env, "b"))
    assert names(got.items) == ["b/p5", "b/p6", "b/p7"]
    got = await cache_list(env, ListOptions(), everything(env, "c"))
    assert got.items == []


async def test_continue_token_at_latest_reads_from_key(env: Env) -> None:
    await populate(env)
    token = encode_continue(-1, env.key("a", "p3") + "\x00", env.registry.prefix(env.res, ""))
    await env.put("a", "p35")  # not yet seen by the cache: a consistent read waits for it
    got = await cache_list(env, ListOptions(continue_token=token), everything(env))
    assert names(got.items) == ["a/p35", "a/p4", "b/p5", "b/p6", "b/p7"]
    assert got.revision == await env.storage.current_revision()


# ------------------------------------------------------------- rv = 0


async def test_rv_0_ignores_limit(env: Env) -> None:
    await populate(env)
    got = await cache_list(env, ListOptions(resource_version="0", limit=2), everything(env))
    assert names(got.items) == ALL
    assert got.continue_token == "" and got.remaining is None
    assert got.revision == env.cacher.rv


async def test_rv_0_does_not_wait_for_freshness(env: Env) -> None:
    await populate(env)
    got = await cache_list(env, ListOptions(resource_version="0"), everything(env))
    assert env.sample("apiserver_watch_cache_consistent_read_total", **LABELS, success="true",
                      fallback="false") == 0
    assert len(got.items) == 8


# ------------------------------------------------- rv = N, not older than


async def test_rv_n_not_older_than_serves_current_state(env: Env) -> None:
    await populate(env)
    await env.put("a", "p9")
    now = await env.synced()
    for opts in (ListOptions(resource_version="3"),
                 ListOptions(resource_version="3", resource_version_match="NotOlderThan")):
        got = await cache_list(env, opts, everything(env))
        assert got.revision == now  # the cache's rv, not N
        assert "a/p9" in names(got.items) and got.source == "cache"


async def test_rv_n_not_older_than_honours_limit(env: Env) -> None:
    await populate(env)
    got = await cache_list(env, ListOptions(resource_version="2", resource_version_match="NotOlderThan",
                                            limit=3), everything(env))
    assert names(got.items) == ALL[:3]
    assert got.revision == env.cacher.rv
    assert decode_continue(got.continue_token).revision == env.cacher.rv


async def test_rv_n_not_older_than_waits_for_the_cache(env: Env) -> None:
    await populate(env)
    target = await env.storage.current_revision() + 1
    results: list[int] = []

    async def lister() -> None:
        got = await cache_list(env, ListOptions(resource_version=str(target),
                                                resource_version_match="NotOlderThan"), everything(env))
        results.append(got.revision)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(lister)
        await trio.testing.wait_all_tasks_blocked()
        assert results == []
        await env.put("a", "p9")
    assert results == [target]


async def test_rv_in_the_future_times_out_with_504(env: Env, autojump_clock: trio.abc.Clock) -> None:
    await populate(env)
    current = env.cacher.rv
    future = current + 100
    start = trio.current_time()
    for match in ("NotOlderThan", "", "Exact"):
        with pytest.raises(errors.ServerTimeout) as info:
            await cache_list(env, ListOptions(resource_version=str(future), resource_version_match=match),
                                  everything(env))
        err = info.value
        assert err.code == 504 and err.reason == "Timeout"
        assert err.message == f"Timeout: Too large resource version: {future}, current: {current}"
        status = err.to_status()
        assert status["details"]["causes"] == [{"reason": "ResourceVersionTooLarge",
                                                "message": "Too large resource version"}]
        assert status["details"]["retryAfterSeconds"] == 1
    assert trio.current_time() - start >= 9.0  # three 3-second waits (virtual time)


# ----------------------------------------------------- exact (snapshots)


async def test_exact_rv_is_served_from_a_snapshot(env: Env) -> None:
    await populate(env)
    at = await env.storage.current_revision()
    await env.put("a", "p1", labels={"app": "changed"})
    await env.delete("a", "p2")
    await env.put("a", "p25")
    await env.synced()
    got = await cache_list(env, ListOptions(resource_version=str(at), resource_version_match="Exact"),
                                everything(env))
    assert names(got.items) == ALL
    assert got.source == "snapshot" and got.revision == at
    assert b'"changed"' not in b"".join(e.data for e in got.items)
    assert env.sample("apiserver_cache_list_total", **LABELS, index="", source="snapshot") == 1


async def test_exact_rv_snapshot_applies_selectors(env: Env) -> None:
    await populate(env)
    at = await env.storage.current_revision()
    await env.put("a", "p1", labels={"app": "web"})  # starts matching after `at`
    await env.put("a", "p0", labels={"app": "db"})  # stops matching after `at`
    await env.synced()
    got = await cache_list(env, ListOptions(resource_version=str(at), resource_version_match="Exact"),
                                selecting(env, label="app=web"))
    assert names(got.items) == ["a/p0", "a/p2", "a/p4", "b/p6"]
    got = await cache_list(env, ListOptions(resource_version=str(at), resource_version_match="Exact"),
                                selecting(env, field="spec.nodeName=node-1"))
    assert names(got.items) == ["a/p0", "a/p3", "b/p6"]


async def test_legacy_rv_with_limit_is_exact_and_pages(env: Env) -> None:
    await populate(env)
    at = await env.storage.current_revision()
    await env.delete("a", "p0")
    await env.put("a", "p00")
    await env.synced()
    first = await cache_list(env, ListOptions(resource_version=str(at), limit=3), everything(env))
    assert names(first.items) == ALL[:3]
    assert first.source == "snapshot" and first.revision == at
    assert first.remaining == 5
    second = await cache_list(env, ListOptions(limit=3, continue_token=first.continue_token), everything(env))
    assert names(second.items) == ALL[3:6]
    assert second.source == "snapshot" and second.revision == at


async def test_exact_rv_equal_to_cache_rv_reads_current_state(env: Env) -> None:
    await populate(env)
    at = env.cacher.rv
    got = await cache_list(env, ListOptions(resource_version=str(at), resource_version_match="Exact"),
                                everything(env))
    assert got.revision == at and names(got.items) == ALL


async def test_exact_rv_older_than_the_window_delegates(make_env: MakeEnv) -> None:
    env = await make_env(start=False)
    revs = [await env.put("a", f"p{i}") for i in range(4)]
    old = revs[1]  # the state of p0 and p1
    async with trio.open_nursery() as nursery:
        await nursery.start(env.cacher.run)  # relists at revs[3]: the window starts there
        await env.put("a", "p9")
        await env.synced()
        # The cacher answers from the storage it wraps, exactly at the old rv, and counts why.
        got = await cache_list(env, ListOptions(resource_version=str(old), resource_version_match="Exact"),
                               everything(env))
        assert got.source == "storage" and got.revision == old and names(got.items) == ["a/p0", "a/p1"]
        assert env.sample("kapi_storage_list_total", **LABELS, reason="snapshot-not-retained") == 1
        got = await cache_list(env, ListOptions(resource_version=str(old), limit=1), everything(env))
        assert got.source == "storage"
        token = encode_continue(old, env.key("a", "p0") + "\x00", env.registry.prefix(env.res, ""))
        got = await cache_list(env, ListOptions(continue_token=token), everything(env))
        assert got.source == "storage"
        assert env.sample("kapi_storage_list_total", **LABELS, reason="snapshot-not-retained") == 3
        # The registry answers from storage, exactly at the old rv.
        page = await env.registry.list(env.res, "", ListOptions(resource_version=str(old),
                                                                 resource_version_match="Exact"))
        assert page.source == "storage" and page.revision == old
        assert [o["metadata"]["name"] for o in listitems.objects(page.items)] == ["p0", "p1"]
        assert env.sample("kapi_storage_list_total", **LABELS, reason="snapshot-not-retained") == 4
        # The relist rv itself is still covered.
        got = await cache_list(env, ListOptions(resource_version=str(revs[3]), resource_version_match="Exact"),
                               everything(env))
        assert got.source == "snapshot" and names(got.items) == ["a/p0", "a/p1", "a/p2", "a/p3"]
        nursery.cancel_scope.cancel()


# ---------------------------------------------------------- not ready


async def test_not_ready_delegates_limit_without_selectors(make_env: MakeEnv) -> None:
    env = await make_env(start=False)
    await env.put("a", "p0")
    await env.put("a", "p1")
    got = await cache_list(env, ListOptions(limit=1), everything(env))
    assert got.source == "storage" and names(got.items) == ["a/p0"]
    assert env.sample("kapi_storage_list_total", **LABELS, reason="not-ready") == 1
    page = await env.registry.list(env.res, "", ListOptions(limit=1))
    assert page.source == "storage" and len(page.items) == 1 and page.continue_token
    assert env.sample("kapi_storage_list_total", **LABELS, reason="not-ready") == 2


async def test_not_ready_rv0_with_limit_goes_to_storage_and_honours_limit(make_env: MakeEnv) -> None:
    """SEMANTICS §1.2: rv=0 ignores limit, except when a cache that is not ready hands the list to storage."""
    env = await make_env(start=False)
    for i in range(3):
        await env.put("a", f"p{i}")
    page = await env.registry.list(env.res, "", ListOptions(resource_version="0", limit=1))
    assert page.source == "storage"
    assert [o["metadata"]["name"] for o in listitems.objects(page.items)] == ["p0"]
    assert page.continue_token and page.remaining == 2


@pytest.mark.parametrize("opts", [
    ListOptions(),
    ListOptions(resource_version="0"),
    ListOptions(limit=1, label_selector="app=web"),
    ListOptions(limit=1, field_selector="spec.nodeName=node-1"),
])
async def test_not_ready_answers_429(make_env: MakeEnv, opts: ListOptions) -> None:
    env = await make_env(start=False)
    with pytest.raises(errors.TooManyRequests) as info:
        await env.registry.list(env.res, "", opts)
    err = info.value
    assert err.code == 429 and err.message == "storage is (re)initializing"
    assert 1 <= err.retry_after_s <= 30
    assert err.to_status()["details"]["retryAfterSeconds"] == err.retry_after_s


async def test_not_ready_retry_after_grows_with_downtime(make_env: MakeEnv,
                                                         autojump_clock: trio.abc.Clock) -> None:
    env = await make_env(start=False)
    await trio.sleep(40)  # e^(0.06*40) = 11.02
    with pytest.raises(errors.TooManyRequests) as info:
        await cache_list(env, ListOptions(), everything(env))
    assert info.value.retry_after_s == 11
    await trio.sleep(100)
    with pytest.raises(errors.TooManyRequests) as info:
        await cache_list(env, ListOptions(), everything(env))
    assert info.value.retry_after_s == 30


# ---------------------------------------------------------------- index


async def test_indexed_field_selector_scans_only_matching_pods(env: Env) -> None:
    for i in range(30):
        await env.put("a" if i % 2 else "b", f"p{i:02}", node=f"node-{i % 5}")
    await env.synced()
    got = await cache_list(env, ListOptions(), selecting(env, field="spec.nodeName=node-1"))
    assert names(got.items) == ["a/p01", "a/p11", "a/p21", "b/p06", "b/p16", "b/p26"]
    assert got.index == "spec.nodeName"
    assert got.scanned == 6
    # Within one namespace: the index is cut to the namespace's key range.
    got = await cache_list(env, ListOptions(), selecting(env, "a", field="spec.nodeName=node-1"))
    assert names(got.items) == ["a/p01", "a/p11", "a/p21"] and got.scanned == 3
    # An unindexed field: every pod is read.
    got = await cache_list(env, ListOptions(), selecting(env, field="status.phase=Pending"))
    assert got.index == "" and got.scanned == 30 and len(got.items) == 30
    got = await cache_list(env, ListOptions(), selecting(env, field="spec.nodeName!=node-1"))
    assert got.index == "" and got.scanned == 30 and len(got.items) == 24
    assert env.sample("apiserver_cache_list_total", **LABELS, index="spec.nodeName", source="cache") == 2
    assert env.sample("apiserver_cache_list_total", **LABELS, index="", source="cache") == 2
    assert env.sample("apiserver_cache_list_fetched_objects_total", **LABELS, index="spec.nodeName",
                      source="cache") == 9
    assert env.sample("apiserver_cache_list_fetched_objects_total", **LABELS, index="",
                      source="cache") == 60
    assert env.sample("apiserver_cache_list_returned_objects_total", **LABELS, source="cache") == 6 + 3 + 30 + 24


async def test_index_with_other_requirements_and_paging(env: Env) -> None:
    for i in range(12):
        await env.put("a", f"p{i:02}", node="node-1" if i < 8 else "node-2",
                      labels={"app": "web" if i % 2 else "db"})
    await env.synced()
    filt = selecting(env, label="app=web", field="spec.nodeName=node-1")
    first = await cache_list(env, ListOptions(limit=2), filt)
    assert names(first.items) == ["a/p01", "a/p03"] and first.index == "spec.nodeName"
    rest = await cache_list(env, ListOptions(limit=10, continue_token=first.continue_token), filt)
    assert names(rest.items) == ["a/p05", "a/p07"] and rest.continue_token == ""


async def test_index_follows_node_moves(env: Env) -> None:
    await env.put("a", "x", node="node-1")
    await env.put("a", "x", node="node-2")
    await env.synced()
    got = await cache_list(env, ListOptions(), selecting(env, field="spec.nodeName=node-1"))
    assert got.items == [] and got.scanned == 0
    got = await cache_list(env, ListOptions(), selecting(env, field="spec.nodeName=node-2"))
    assert names(got.items) == ["a/x"]


# ------------------------------------------------------ through Registry


async def test_registry_list_uses_the_cache(env: Env) -> None:
    await populate(env)
    page = await env.registry.list(env.res, "a", ListOptions(limit=2, label_selector="app=web"))
    assert page.source == "cache"
    assert [o["metadata"]["name"] for o in listitems.objects(page.items)] == ["p0", "p2"]
    assert page.revision == env.cacher.rv
    page2 = await env.registry.list(env.res, "a", ListOptions(limit=2, label_selector="app=web",
                                                               continue_token=page.continue_token))
    assert [o["metadata"]["name"] for o in listitems.objects(page2.items)] == ["p4"]
    assert page2.continue_token == ""
    page = await env.registry.list(env.res, "", ListOptions(field_selector="spec.nodeName=node-1"))
    assert page.index == "spec.nodeName" and page.scanned == 3
    objs = listitems.objects(page.items)
    assert all(o["spec"]["nodeName"] == "node-1" for o in objs)
    assert all(o["metadata"]["resourceVersion"] for o in objs)
    assert env.sample("kapi_storage_list_total", **LABELS, reason="uncached") == 0


async def test_registry_list_matches_storage_list(env: Env) -> None:
    """Cache and storage give the same items and metadata for the same request."""
    await populate(env)
    at = await env.storage.current_revision()
    await env.put("a", "p1", labels={"app": "web"})
    await env.delete("b", "p6")
    await env.synced()
    sel = env.registry.selection(env.res, ListOptions())
    for opts in (ListOptions(), ListOptions(limit=3), ListOptions(resource_version=str(at), limit=3),
                 ListOptions(resource_version=str(at), resource_version_match="Exact"),
                 ListOptions(label_selector="app=web", limit=2)):
        cached = await env.registry.list(env.res, "", opts)
        sel = env.registry.selection(env.res, opts)
        stored = await env.storage.get_list(env.registry.prefix(env.res, ""), opts,
                                           listing.predicate(env.registry, env.res, sel))
        assert cached.source != "storage"
        # Cached items are in list-item form (no kind/apiVersion), as the API sends them.
        assert listitems.objects(cached.items) == [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")}
                                    for o in listitems.objects(stored.items)], opts
        assert cached.revision == stored.revision, opts
        assert cached.remaining == stored.remaining, opts
        assert bool(cached.continue_token) == bool(stored.continue_token), opts
        if cached.continue_token:
            assert decode_continue(cached.continue_token) == decode_continue(stored.continue_token), opts


async def test_delete_collection_through_the_cache_deletes(env: Env) -> None:
    """delete_collection lists first; a page served from the cache holds its entries."""
    for i in range(5):  # unscheduled pods: deleted at once, no grace period
        await env.put("a", f"p{i}", labels={"app": "web" if i % 2 == 0 else "db"})
    await env.put("b", "p5", labels={"app": "web"})
    await env.synced()
    result = await env.registry.delete_collection(env.res, "a", ListOptions(label_selector="app=web"),
                                                  DeleteOptions())
    assert sorted(o["metadata"]["name"] for o in result.items) == ["p0", "p2", "p4"]
    left = await env.storage.list(env.registry.prefix(env.res, "a"))
    assert [kv.key.rsplit("/", 1)[1] for kv in left.items] == ["p1", "p3"]


# ------------------------------------------------------- a small window


async def test_exact_list_after_eviction(make_env: MakeEnv, nursery: trio.Nursery) -> None:
    env = await make_env(start=False)
    env.cacher.ring = EventRing(4, min_capacity=4, max_capacity=4)  # a window that never grows
    await nursery.start(env.cacher.run)
    revs = [await env.put("a", f"p{i}") for i in range(7)]
    await env.synced()
    assert env.cacher.ring.oldest_known == revs[2]  # events 1..3 evicted
    got = await cache_list(env, ListOptions(resource_version=str(revs[1]), resource_version_match="Exact"),
                           everything(env))
    assert got.source == "storage" and names(got.items) == ["a/p0", "a/p1"]
    got = await cache_list(env, ListOptions(resource_version=str(revs[2]), resource_version_match="Exact"),
                                everything(env))
    assert got.source == "snapshot" and names(got.items) == ["a/p0", "a/p1", "a/p2"]
    page = await env.registry.list(env.res, "", ListOptions(resource_version=str(revs[1]), limit=10))
    assert page.source == "storage" and len(page.items) == 2
    # "Not older than" an evicted rv is still answered by the cache, from its current state.
    got = await cache_list(env, ListOptions(resource_version=str(revs[0]), resource_version_match="NotOlderThan"),
                                everything(env))
    assert got.source == "cache" and got.revision == revs[-1] and len(got.items) == 7


async def test_continue_token_ahead_of_the_cache_waits_for_it(env: Env) -> None:
    """A token from a storage-served page may be ahead of the cache: the page must not be older than it."""
    await populate(env)
    ahead = env.cacher.rv + 1
    token = encode_continue(ahead, env.key("a", "p3") + "\x00", env.registry.prefix(env.res, ""))
    results: list[int] = []

    async def lister() -> None:
        got = await cache_list(env, ListOptions(continue_token=token), everything(env))
        results.append(got.revision)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(lister)
        await trio.testing.wait_all_tasks_blocked()
        assert results == []  # still waiting for the cache to reach the token's rv
        await env.put("a", "p35")
    assert results == [ahead]


async def test_cache_metrics_follow_events(env: Env) -> None:
    assert env.sample("apiserver_watch_cache_initializations_total", **LABELS) == 1
    assert env.sample("apiserver_watch_cache_capacity", **LABELS) == 100
    for i in range(3):
        await env.put("a", f"p{i}")
    await env.delete("a", "p0")
    rev = await env.synced()
    assert env.sample("apiserver_watch_cache_events_received_total", **LABELS) == 4
    assert env.sample("apiserver_watch_cache_resource_version", **LABELS) == rev
