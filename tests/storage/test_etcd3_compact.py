"""kube's etcd compactor (kapi.storage.etcd3.compact): replicas on one etcd take turns through
compact_rev_key, exactly one compacts per round, and every replica learns the compacted revision."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from kapi.errors import RevisionCompacted
from kapi.storage.etcd3.compact import COMPACT_REV_KEY, compact, compactor
from kapi.storage.etcd3.store import EtcdStorage
from tests._needs import require_module
from tests.storage.etcd_support import etcd_cluster

require_module("grpc")

pytestmark = pytest.mark.e2e

HANG_GUARD_S = 60  # only against a hang; nothing here is timed


@pytest.fixture
async def replicas(tmp_path: Path, nursery: trio.Nursery) -> AsyncIterator[tuple[EtcdStorage, EtcdStorage]]:
    """Two stores on one etcd, as two kapi replicas."""
    async with etcd_cluster(tmp_path) as cluster:
        a, b = EtcdStorage(cluster.endpoints), EtcdStorage(cluster.endpoints)
        await nursery.start(a.run)
        await nursery.start(b.run)
        yield a, b


def _record_compactions(storage: EtcdStorage, into: list[tuple[str, int, int]], name: str) -> None:
    """Record (replica, compact_rev_key's version, revision) of every Compact ``storage`` sends."""
    client = storage.client
    send = client.compact

    async def recorded(revision: int, **kwargs: Any) -> Any:
        [kv] = (await client.range(COMPACT_REV_KEY)).kvs
        into.append((name, int(kv.version), revision))
        return await send(revision, **kwargs)

    client.compact = recorded  # type: ignore[method-assign]


async def _assert_compacted_below(storage: EtcdStorage, revision: int) -> None:
    with pytest.raises(RevisionCompacted):
        await storage.list("/registry/", revision=revision - 1)
    with pytest.raises(RevisionCompacted):
        async with storage.watch("/registry/", revision - 1):
            pass


async def test_rounds_in_turn_one_compaction_each_and_both_learn_it(replicas: tuple[EtcdStorage, EtcdStorage]) -> None:
    a, b = replicas
    compactions: list[tuple[str, int, int]] = []
    _record_compactions(a, compactions, "a")
    _record_compactions(b, compactions, "b")
    state = {"a": (0, 0), "b": (0, 0)}
    per_round = []
    for i in range(5):
        await a.create(f"/registry/configmaps/default/cm-{i}", b"v")
        before = len(compactions)
        for name, storage in (("a", a), ("b", b)) if i % 2 == 0 else (("b", b), ("a", a)):
            state[name] = await compact(storage, *state[name])
        per_round.append(len(compactions) - before)
        if compactions:
            assert a.compacted_revision() == b.compacted_revision() == compactions[-1][2]
    # the first round only starts the clock (nothing seen an interval earlier); then one winner a round,
    # the replica that went first
    assert per_round == [0, 1, 1, 1, 1]
    assert [name for name, _, _ in compactions] == ["b", "a", "b", "a"]
    [kv] = (await a.client.range(COMPACT_REV_KEY)).kvs
    assert int(kv.version) == 5 and int(kv.value) == compactions[-1][2]
    for storage in (a, b):
        await _assert_compacted_below(storage, compactions[-1][2])


async def test_two_running_compactors_never_compact_the_same_round(replicas: tuple[EtcdStorage, EtcdStorage],
                                                                   nursery: trio.Nursery) -> None:
    a, b = replicas
    compactions: list[tuple[str, int, int]] = []
    _record_compactions(a, compactions, "a")
    _record_compactions(b, compactions, "b")

    async def write() -> None:
        for i in range(100_000):
            await a.create(f"/registry/configmaps/default/w-{i}", b"v")
            await trio.sleep(0.02)

    nursery.start_soon(write)
    nursery.start_soon(compactor, a, 0.2)
    nursery.start_soon(compactor, b, 0.2)
    with trio.fail_after(HANG_GUARD_S):
        while len(compactions) < 4:
            await trio.sleep(0.05)
        latest = compactions[-1][2]
        while min(a.compacted_revision(), b.compacted_revision()) < latest:
            await trio.sleep(0.05)
    versions = [version for _, version, _ in compactions]
    assert len(set(versions)) == len(versions), compactions  # one compaction per turn of compact_rev_key
    revisions = [revision for _, _, revision in compactions]
    assert revisions == sorted(set(revisions)), compactions
    for storage in (a, b):
        await _assert_compacted_below(storage, latest)


async def test_no_interval_means_no_compactor(replicas: tuple[EtcdStorage, EtcdStorage]) -> None:
    a, _ = replicas
    with trio.fail_after(HANG_GUARD_S):
        await compactor(a, 0)
    assert not (await a.client.range(COMPACT_REV_KEY)).kvs
