"""The etcd3 backend's own semantics beyond the contract suite: a future revision as its own error,
a conflict carrying the current value (kube's GuaranteedUpdate retries with it), a no-op update
that writes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from kapi.errors import RevisionInFuture
from kapi.storage.etcd3.store import EtcdStorage
from tests._needs import require_module
from tests.storage.etcd_support import etcd_cluster

require_module("grpc")

pytestmark = pytest.mark.e2e


@pytest.fixture
async def etcd3(tmp_path: Path, nursery: trio.Nursery) -> AsyncIterator[EtcdStorage]:
    async with etcd_cluster(tmp_path) as cluster:
        storage = EtcdStorage(cluster.endpoints)
        await nursery.start(storage.run)
        yield storage


async def test_a_list_above_the_current_revision_reads_the_current_state(etcd3: EtcdStorage) -> None:
    rev = await etcd3.create("/registry/pods/a", b"v1")
    with pytest.raises(RevisionInFuture) as info:
        await etcd3._c().range(b"/registry/pods/", b"/registry/pods0", revision=rev + 100)
    assert info.value.revision == rev + 100
    result = await etcd3.list("/registry/pods/", revision=rev + 100)
    assert [kv.value for kv in result.items] == [b"v1"] and result.revision == rev
