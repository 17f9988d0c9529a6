"""DetectCacheInconsistency (kube 1.34): a watch cache compared with storage at its revision, counted,
and rebuilt when they differ; on every backend."""

from __future__ import annotations

import dataclasses

import pytest
import trio

from kapi.cacher import consistency

from .conftest import Env, MakeEnv

LABELS = {"group": "", "resource": "pods"}


def checks(env: Env, status: str) -> float:
    return env.sample("apiserver_storage_consistency_checks_total", **LABELS, status=status)


def initializations(env: Env) -> float:
    return env.sample("apiserver_watch_cache_initializations_total", **LABELS)


async def populated(env: Env) -> list[int]:
    revs = [await env.put("a", f"p{i}") for i in range(5)]
    await env.synced()
    return revs


async def rebuilt(env: Env) -> None:
    """Until the cache has loaded its second list and serves again."""
    with trio.fail_after(30):  # a guard against hanging, not a timing assertion
        while initializations(env) < 2 or not env.cacher.ready:
            await trio.sleep(0.01)


async def test_a_cache_like_storage_passes(env: Env) -> None:
    await populated(env)
    await env.delete("a", "p2")
    await env.synced()
    assert await consistency.check(env.cacher) == "success"
    assert checks(env, "success") == 1 and checks(env, "failure") == 0
    assert initializations(env) == 1


def drop(env: Env) -> None:
    env.cacher.store.delete(env.key("a", "p2"))


def alter(env: Env) -> None:
    entry = env.cacher.store.get(env.key("a", "p2"))
    assert entry is not None
    env.cacher.store.put(dataclasses.replace(entry, rv=entry.rv - 1))


def add(env: Env) -> None:
    entry = env.cacher.store.get(env.key("a", "p2"))
    assert entry is not None
    env.cacher.store.put(dataclasses.replace(entry, key=env.key("a", "p2x")))


@pytest.mark.parametrize("corrupt", [drop, alter, add])
async def test_a_cache_unlike_storage_is_counted_and_rebuilt(env: Env, corrupt: object,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    revs = await populated(env)
    corrupt(env)  # type: ignore[operator]
    assert await consistency.check(env.cacher) == "failure"
    assert checks(env, "failure") == 1
    assert "inconsistent with storage" in caplog.text
    await rebuilt(env)
    versions = env.cacher.store.versions()
    assert versions == [(env.key("a", f"p{i}"), rev) for i, rev in enumerate(revs)]
    assert await consistency.check(env.cacher) == "success"


async def test_values_the_cache_refuses_are_no_difference(env: Env) -> None:
    await populated(env)
    await env.storage.create(env.key("a", "p25"), b"\xc1 not msgpack")
    await env.synced()
    assert env.cacher.store.get(env.key("a", "p25")) is None
    assert await consistency.check(env.cacher) == "success"


async def test_a_revision_compacted_meanwhile_is_skipped(env: Env) -> None:
    await populated(env)
    await env.put("a", "p0")
    rev = await env.synced()
    await env.storage.compact(rev)
    drop(env)  # a difference no check sees: storage no longer has the cache's revision
    assert await consistency.check(env.cacher) == "error"
    assert checks(env, "error") == 1 and checks(env, "failure") == 0
    assert initializations(env) == 1


async def test_checks_run_periodically(make_env: MakeEnv, autojump_clock: trio.abc.Clock) -> None:
    env = await make_env(start=False)
    env.cacher.check_period_s = 10.0
    await env.put("a", "p0")
    async with trio.open_nursery() as nursery:
        await nursery.start(env.cacher.run)
        await trio.sleep(16)  # one check within 10-15 s (virtual time)
        assert checks(env, "success") == 1
        drop_key = env.key("a", "p0")
        env.cacher.store.delete(drop_key)
        await trio.sleep(15)
        assert checks(env, "failure") == 1
        await rebuilt(env)
        assert env.cacher.store.get(drop_key) is not None
        nursery.cancel_scope.cancel()
