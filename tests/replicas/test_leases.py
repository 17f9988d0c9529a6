"""The replicas' Leases against one in-memory registry: APIServerIdentity Leases (kube's identity lease
controller and its collector), and client-go's leader election of kube-controller-manager's
controllers (held, taken over when the holder dies or releases, lost when another holder writes)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
import trio

from kapi.apis import BUILTIN
from kapi.apis.coordination import LEASES
from kapi.controllers.writes import Writes
from kapi.registry.resources import ResourceTable
from kapi.encoding import listitems
from kapi.object.listopts import ListOptions
from kapi.registry.store import Registry, WriteOptions
from kapi.server.replica.leases import (IDENTITY_LABEL, LeaderElection, apiserver_id,
                                        collect_expired_identities_once, keep_identity, micro_time)
from kapi.storage.memory import MemoryStorage


@pytest.fixture
async def registry(nursery: trio.Nursery) -> Registry:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    return Registry(storage, ResourceTable(BUILTIN))


def _lease(name: str, holder: str, renewed: float, duration: int, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "kube-system", "labels": labels or {}},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration, "renewTime": micro_time(renewed)}}


def test_the_identity_names_the_host_and_port() -> None:
    a = apiserver_id(6443, "host-a")
    assert a == apiserver_id(6443, "host-a") and a.startswith("apiserver-") and a == a.lower()
    assert len({a, apiserver_id(6444, "host-a"), apiserver_id(6443, "host-b")}) == 3


async def test_the_identity_lease_is_kept_with_kubes_labels(registry: Registry, nursery: trio.Nursery,
                                                           autojump_clock: trio.testing.MockClock) -> None:
    writer = Writes(registry).apiserver()
    await nursery.start(keep_identity, registry, writer, "apiserver-abc")
    lease = await registry.get(LEASES, "kube-system", "apiserver-abc")
    assert lease["metadata"]["labels"][IDENTITY_LABEL] == "kube-apiserver"
    assert "kubernetes.io/hostname" in lease["metadata"]["labels"]
    assert lease["spec"]["holderIdentity"].startswith("apiserver-abc_")
    assert lease["spec"]["leaseDurationSeconds"] == 3600
    await trio.sleep(10.5)  # one renewal
    renewed = await registry.get(LEASES, "kube-system", "apiserver-abc")
    assert renewed["metadata"]["resourceVersion"] != lease["metadata"]["resourceVersion"]
    assert renewed["spec"]["holderIdentity"] == lease["spec"]["holderIdentity"]


async def test_expired_identity_leases_are_collected(registry: Registry) -> None:
    writer = Writes(registry).apiserver()
    now, label = time.time(), {IDENTITY_LABEL: "kube-apiserver"}
    for obj in (_lease("apiserver-dead", "x", now - 3700, 3600, label),
                _lease("apiserver-live", "y", now - 60, 3600, label),
                _lease("someone-elses", "z", now - 3700, 3600)):  # not an identity lease
        await registry.create(LEASES, "kube-system", obj, _opts())
    assert await collect_expired_identities_once(registry, writer) == ["apiserver-dead"]
    names = {o["metadata"]["name"] for o in await _leases(registry)}
    assert names == {"apiserver-live", "someone-elses"}


def _opts() -> WriteOptions:
    return WriteOptions()


async def _leases(registry: Registry) -> list[dict[str, Any]]:
    return list(listitems.objects((await registry.list(LEASES, "kube-system", ListOptions())).items))


class _Controller:
    """A service that records whether it runs."""

    def __init__(self) -> None:
        self.running = False
        self.starts = 0

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self.running, self.starts = True, self.starts + 1
        try:
            task_status.started()
            await trio.sleep_forever()
        finally:
            self.running = False


def _candidate(registry: Registry, name: str, **kw: Any) -> tuple[LeaderElection, _Controller]:
    controller = _Controller()
    return LeaderElection(registry, Writes(registry).apiserver(), [("c", controller.run)], identity=name,
                          **kw), controller


async def _until(cond: Callable[[], bool]) -> None:
    while not cond():
        await trio.sleep(0.5)


async def test_one_candidate_leads_and_another_takes_over_when_it_dies(
        registry: Registry, autojump_clock: trio.testing.MockClock) -> None:
    a, ca = _candidate(registry, "a")
    b, cb = _candidate(registry, "b")
    async with trio.open_nursery() as nursery:
        scope_a = trio.CancelScope()

        async def run_a(*, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
            with scope_a:
                await a.run(task_status=task_status)

        await nursery.start(run_a)
        assert a.leading and ca.running  # took the free lease at once, controllers up before started()
        await nursery.start(b.run)
        assert not b.leading and not cb.running
        await trio.sleep(30)
        assert not cb.running  # a renews: b waits
        lease = await registry.get(LEASES, "kube-system", "kube-controller-manager")
        assert lease["spec"]["holderIdentity"] == "a" and lease["spec"]["leaseDurationSeconds"] == 15
        scope_a.cancel()  # a dies without releasing
        await _until(lambda: cb.running)
        lease = await registry.get(LEASES, "kube-system", "kube-controller-manager")
        assert lease["spec"]["holderIdentity"] == "b" and lease["spec"]["leaseTransitions"] == 1
        nursery.cancel_scope.cancel()


async def test_a_released_lease_is_taken_without_waiting_out_its_duration(
        registry: Registry, autojump_clock: trio.testing.MockClock) -> None:
    a, ca = _candidate(registry, "a", lease_duration_s=3600)
    b, cb = _candidate(registry, "b", lease_duration_s=3600)
    a_returned = False

    async def run_a(*, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        nonlocal a_returned
        await a.run(task_status=task_status)
        a_returned = True

    async with trio.open_nursery() as nursery:
        await nursery.start(run_a)
        await nursery.start(b.run)
        await a.release()
        assert not ca.running  # the controllers stop before the lease is let go
        with trio.fail_after(60):  # far less than the lease's hour
            await _until(lambda: cb.running)
        assert not a.leading and not a_returned  # released, a stays idle (not a service that stopped)
        nursery.cancel_scope.cancel()


async def test_the_leader_stops_its_controllers_when_another_holds_the_lease(
        registry: Registry, autojump_clock: trio.testing.MockClock) -> None:
    a, ca = _candidate(registry, "a")
    async with trio.open_nursery() as nursery:
        await nursery.start(a.run)
        assert ca.running
        lease = await registry.get(LEASES, "kube-system", "kube-controller-manager")
        lease["spec"]["holderIdentity"] = "usurper"
        await registry.update(LEASES, "kube-system", "kube-controller-manager", lease, _opts())
        await _until(lambda: not ca.running)
        assert not a.leading
        nursery.cancel_scope.cancel()


async def test_alone_on_its_storage_a_candidate_takes_a_lease_left_by_an_earlier_run(registry: Registry) -> None:
    await registry.create(LEASES, "kube-system", _lease("kube-controller-manager", "earlier-run", time.time(), 15),
                          _opts())
    a, ca = _candidate(registry, "a", exclusive=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(a.run)
        assert ca.running  # at once: no lease duration waited
        nursery.cancel_scope.cancel()
