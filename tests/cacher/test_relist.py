"""The relist reads the next page while it makes entries of the one before (issue 33): the same
entries, at the first page's revision, and a later page's storage error is seen as it is."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio

from kapi import errors
from kapi.cacher import cache
from kapi.cacher.cache import Cacher
from kapi.metrics import Metrics
from kapi.storage.base import KeyValue, ListResult, Storage

from .conftest import Env, MakeEnv, names


class Pages:
    """The storage's ``list`` recorded (and ``on_page`` called before page N is read); the rest passes through."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self.calls: list[dict[str, Any]] = []
        self.on_page: dict[int, Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._storage, name)

    async def list(self, prefix: str, **kw: Any) -> ListResult[KeyValue]:
        self.calls.append(kw)
        hook = self.on_page.pop(len(self.calls), None)
        if hook is not None:
            await hook()
        return await self._storage.list(prefix, **kw)


def cacher_over(env: Env, storage: Pages) -> Cacher:
    return Cacher(storage, env.cacher.prefix, env.cacher.entries, group="", resource="pods", kind="Pod",  # type: ignore[arg-type]
                  metrics=Metrics())


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "RELIST_PAGE", 3)
    monkeypatch.setattr(cache, "RELIST_CHUNK", 2)


async def test_paged_relist_reads_every_page_at_the_first_pages_revision(make_env: MakeEnv) -> None:
    env = await make_env(start=False)
    for i in range(10):
        await env.put("a", f"p{i}")
    at = await env.storage.current_revision()
    pages = Pages(env.storage)
    # A write while the relist runs: not in the list (read at the first page's revision), then watched.
    pages.on_page[3] = lambda: env.put("a", "p99")
    cacher = cacher_over(env, pages)
    async with trio.open_nursery() as nursery:
        await nursery.start(cacher.run)
        assert [c.get("revision") for c in pages.calls] == [None, at, at, at]
        assert [c["limit"] for c in pages.calls] == [3] * 4
        assert cacher.rv >= at
        await cacher.wait_for_rv(await env.storage.current_revision())
        listed = names([cacher.store.get(k) for k in cacher.store.keys_from("", None)])  # type: ignore[misc]
        assert listed == [f"a/p{i}" for i in range(10)] + ["a/p99"]
        nursery.cancel_scope.cancel()


async def test_a_later_pages_compaction_relists_as_a_first_pages_does(make_env: MakeEnv,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    env = await make_env(start=False)
    for i in range(7):
        await env.put("a", f"p{i}")
    pages = Pages(env.storage)

    async def compacted() -> None:
        raise errors.RevisionCompacted("compacted meanwhile", revision=1)

    pages.on_page[2] = compacted
    cacher = cacher_over(env, pages)
    with caplog.at_level(logging.INFO, logger="kapi.cacher"):
        async with trio.open_nursery() as nursery:
            await nursery.start(cacher.run)
            assert len(cacher.store) == 7
            nursery.cancel_scope.cancel()
    said = [r for r in caplog.records if r.name == "kapi.cacher"]
    assert [r.levelno for r in said] == [logging.INFO] and "compacted meanwhile" in said[0].getMessage()
    assert len(pages.calls) == 2 + 3  # the failed attempt's two pages, then the three of the relist
