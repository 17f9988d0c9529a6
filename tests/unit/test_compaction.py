"""The periodic compactor keeps one interval of history, as kube-apiserver's does."""

from __future__ import annotations

import trio

from kapi.server.serve import compact_periodically
from kapi.storage.memory import MemoryStorage


async def test_compacts_to_the_revision_seen_one_interval_earlier(nursery: trio.Nursery,
                                                                  autojump_clock: trio.abc.Clock) -> None:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    await storage.create("/registry/configmaps/default/a", b"1")
    nursery.start_soon(compact_periodically, storage, 300.0)
    await trio.sleep(301)  # first tick: remembers the revision, compacts nothing
    assert storage.compacted_revision() == 0
    seen = await storage.current_revision()
    await storage.create("/registry/configmaps/default/b", b"2")
    await trio.sleep(300)  # second tick: compacts what the first one saw
    assert storage.compacted_revision() == seen
    assert storage.compacted_revision() < await storage.current_revision()
