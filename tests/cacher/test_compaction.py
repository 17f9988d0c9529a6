"""A watch cache forgets what storage compacted (KEP-4988, kube-apiserver 1.34): LISTs at a compacted
revision and watches from before it answer 410 Expired, as storage answers them, on every backend."""

from __future__ import annotations

import pytest
import trio

from kapi import errors
from kapi.object.listopts import ListOptions, decode_continue, encode_continue

from .conftest import Env, names
from .test_cache_list import cache_list, everything
from .test_cache_watch import Opener, open_stream, select, summary  # noqa: F401 (a fixture)

LIST_GONE = "The resourceVersion for the provided list is too old."
CONTINUE_GONE = "The provided continue parameter is too old to display a consistent list result."


async def history(env: Env) -> tuple[list[int], int]:
    """Five pod writes, then compaction at the third; (their revisions, the compacted revision).

    The cache's window still holds every one of them: only compaction can make it refuse them.
    """
    revs = [await env.put("a", f"p{i}") for i in range(5)]
    await env.synced()
    assert env.cacher.ring.covers(revs[0] - 1)
    await env.storage.compact(revs[2])
    assert env.storage.compacted_revision() == revs[2]
    return revs, revs[2]


async def gone_from_both(env: Env, opts: ListOptions) -> errors.Gone:
    """The 410 the cache answers ``opts`` with, checked to be the one storage answers."""
    select_all = everything(env)
    with pytest.raises(errors.Gone) as cached:
        await cache_list(env, opts, select_all)
    with pytest.raises(errors.Gone) as stored:
        await env.storage.get_list(select_all[0], opts, select_all[1])
    assert cached.value.to_status() == stored.value.to_status()
    return cached.value


async def test_exact_list_at_or_below_the_compacted_revision_is_gone(env: Env) -> None:
    revs, compacted = await history(env)
    for rv in (revs[0], compacted):
        for opts in (ListOptions(resource_version=str(rv), resource_version_match="Exact"),
                     ListOptions(resource_version=str(rv), limit=2)):  # legacy exact
            gone = await gone_from_both(env, opts)
            assert gone.code == 410 and gone.reason == "Expired" and gone.message == LIST_GONE
    with pytest.raises(errors.Gone):
        await env.registry.list(env.res, "", ListOptions(resource_version=str(compacted),
                                                         resource_version_match="Exact"))
    # Just above it, the cache still answers from its snapshot.
    got = await cache_list(env, ListOptions(resource_version=str(revs[3]), resource_version_match="Exact"),
                           everything(env))
    assert got.source == "snapshot" and names(got.items) == ["a/p0", "a/p1", "a/p2", "a/p3"]
    # Not older than a compacted revision is any later state: still served.
    got = await cache_list(env, ListOptions(resource_version=str(revs[0]), resource_version_match="NotOlderThan"),
                           everything(env))
    assert got.source == "cache" and len(got.items) == 5


async def test_continue_token_at_a_compacted_revision_is_gone_with_a_fresh_token(env: Env) -> None:
    revs, compacted = await history(env)
    prefix = env.registry.prefix(env.res, "")
    token = encode_continue(compacted, env.key("a", "p1") + "\x00", prefix)
    gone = await gone_from_both(env, ListOptions(continue_token=token, limit=2))
    assert gone.code == 410 and gone.message.startswith(CONTINUE_GONE)
    fresh = decode_continue(gone.list_continue)
    assert fresh.revision == -1 and fresh.start == "a/p1\x00"  # where the old token would have gone on
    # The fresh token continues at the latest revision.
    got = await cache_list(env, ListOptions(continue_token=gone.list_continue, limit=2), everything(env))
    assert names(got.items) == ["a/p2", "a/p3"]
    # A token just above the compacted revision is still served from the cache.
    token = encode_continue(revs[3], env.key("a", "p1") + "\x00", prefix)
    got = await cache_list(env, ListOptions(continue_token=token, limit=2), everything(env))
    assert got.source == "snapshot" and names(got.items) == ["a/p2", "a/p3"]


async def test_watch_from_below_the_compacted_revision_is_gone(env: Env, open_stream: Opener) -> None:
    revs, compacted = await history(env)
    older = str(compacted - 1)
    with pytest.raises(errors.Gone) as info:
        await env.cacher.open_watch(ListOptions(watch=True, resource_version=older), select(env),
                                    trio.current_time() + 60)
    assert info.value.message == f"too old resource version: {older} ({compacted})"
    assert env.cacher._watchers == set()
    s = await open_stream(env, resource_version=older)
    [event] = await s.take(1)
    assert event["type"] == "ERROR"
    status = event["object"]
    assert status["kind"] == "Status" and status["code"] == 410 and status["reason"] == "Expired"
    assert await s.ended()
    # Storage refuses the same watch.
    with pytest.raises(errors.RevisionCompacted):
        async with env.storage.watch(env.registry.prefix(env.res, ""), compacted - 1):
            pass
    # From the compacted revision itself: the events after it (etcd's semantics).
    s = await open_stream(env, resource_version=str(compacted))
    assert summary(await s.take(2)) == [("ADDED", "p3", revs[3]), ("ADDED", "p4", revs[4])]

