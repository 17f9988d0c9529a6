"""Storage that does not answer: requests get 503 or 504 Statuses with Retry-After (never a 500), /readyz fails
naming etcd while /livez stays ok, and the readiness check cannot flood storage."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from kapi import errors
from kapi.api.app import Health
from kapi.apis import BUILTIN
from kapi.chain.filters import Chain, recover
from kapi.chain.context import RequestContext
from kapi.config import Config
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry, storage_fault
from kapi.server.serve import READYCHECK_CACHE_S, StorageCheck, build_app
from kapi.storage.memory import MemoryStorage
from tests.api.conftest import TOKEN, Api

CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}


class FaultyStorage(MemoryStorage):
    """A memory backend whose reads and writes raise ``fault`` while it is set."""

    def __init__(self) -> None:
        super().__init__()
        self.fault: Exception | None = None

    def _check(self) -> None:
        if self.fault is not None:
            raise self.fault

    async def create(self, key: str, value: bytes) -> int:
        self._check()
        return await super().create(key, value)

    async def get(self, key: str) -> Any:
        self._check()
        return await super().get(key)

    async def current_revision(self) -> int:
        self._check()
        return await super().current_revision()


@pytest.fixture
async def faulty(nursery: trio.Nursery) -> tuple[Api, FaultyStorage]:
    storage = FaultyStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",), watch_cache=False),
                    registry, TOKEN, Health(ready=True))
    api = Api(app, registry)
    reply = await api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                             "metadata": {"name": "default"}})
    assert reply.status == 201, reply.body
    return api, storage


@pytest.mark.parametrize(("fault", "code", "reason"), [
    (errors.StorageUnavailable("etcd: UNAVAILABLE: connection refused"), 503, "ServiceUnavailable"),
    (errors.OutcomeUnknown("etcd: DEADLINE_EXCEEDED (the write may or may not have been applied)"), 504, "Timeout"),
])
async def test_a_storage_fault_is_a_status_to_retry_after(faulty: tuple[Api, FaultyStorage], fault: Exception,
                                                          code: int, reason: str) -> None:
    api, storage = faulty
    storage.fault = fault
    for method, path, body in (("POST", "/api/v1/namespaces/default/configmaps", CONFIGMAP),
                               ("GET", "/api/v1/namespaces/default/configmaps/c", None)):
        reply = await api.request(method, path, body)
        assert reply.status == code, reply.body
        status = reply.json()
        assert (status["kind"], status["reason"], status["code"]) == ("Status", reason, code)
        assert status["details"]["retryAfterSeconds"] == 1
        assert reply.headers["retry-after"] == "1"
        assert str(fault) in status["message"]
    storage.fault = None
    assert (await api.request("POST", "/api/v1/namespaces/default/configmaps", CONFIGMAP)).status == 201


def test_outcome_unknown_is_a_timeout_unreachable_is_unavailable() -> None:
    timeout = storage_fault(errors.OutcomeUnknown("lost"))
    assert isinstance(timeout, errors.ServerTimeout) and timeout.retry_after_s > 0
    unavailable = storage_fault(errors.StorageUnavailable("down"))
    assert isinstance(unavailable, errors.ServiceUnavailable) and unavailable.retry_after_s > 0


async def test_recover_answers_a_group_of_storage_faults_but_not_a_crash_beside_one() -> None:
    ctx = RequestContext("GET", "/api/v1/pods", {}, {})

    async def raising(exc: Exception) -> Any:
        async def inner(_: RequestContext) -> Any:
            raise exc
        return await recover(Chain(None, None), ctx, inner)  # type: ignore[arg-type]

    with pytest.raises(errors.ServiceUnavailable):
        await raising(ExceptionGroup("g", [errors.StorageUnavailable("down"), errors.StorageUnavailable("down")]))
    with pytest.raises(errors.InternalError):
        await raising(ExceptionGroup("g", [errors.StorageUnavailable("down"), KeyError("bug")]))
    with pytest.raises(errors.InternalError):
        await raising(errors.RevisionConflict("a storage error that reached no registry code is a bug"))


async def test_readyz_names_etcd_while_livez_stays_ok(nursery: trio.Nursery) -> None:
    storage = FaultyStorage()
    await nursery.start(storage.run)
    health = Health(ready=True, ready_checks={"etcd": StorageCheck(storage, 2.0)})
    assert (await health.report("readyz", "", True, [])).status == 200
    storage.fault = errors.StorageUnavailable("down")
    await trio.sleep(READYCHECK_CACHE_S)  # the last answer is kept this long
    reply = await health.report("readyz", "", True, [])
    assert reply.status == 503
    assert b"[-]etcd failed: reason withheld" in reply.body and b"[+]informer-sync ok" in reply.body
    assert (await health.report("readyz", "etcd", False, [])).status == 500
    assert (await health.report("readyz", "", False, ["etcd"])).status == 200
    live = await health.report("livez", "", True, [])
    assert live.status == 200 and b"etcd" not in live.body


class CountingStorage(MemoryStorage):
    def __init__(self) -> None:
        super().__init__()
        self.asked = 0
        self.hang = False

    async def current_revision(self) -> int:
        self.asked += 1
        if self.hang:
            await trio.sleep_forever()
        return await super().current_revision()


async def test_the_check_reads_storage_at_most_once_a_second_and_gives_up_in_time(
        nursery: trio.Nursery, autojump_clock: trio.abc.Clock) -> None:
    storage = CountingStorage()
    await nursery.start(storage.run)
    check = StorageCheck(storage, timeout_s=2.0)
    results: list[bool] = []

    async def probe() -> None:
        results.append(await check())

    async with trio.open_nursery() as probes:  # concurrent probes share one read
        for _ in range(5):
            probes.start_soon(probe)
    assert results == [True] * 5 and storage.asked == 1
    assert await check() and storage.asked == 1  # kept
    await trio.sleep(READYCHECK_CACHE_S)
    storage.hang = True
    assert not await check()  # no answer within the timeout: failed
    assert storage.asked == 2
