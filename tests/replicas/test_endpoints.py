"""The ``kubernetes`` Service's Endpoints and EndpointSlice list the live replicas (kube's lease
endpoint reconciler): each replica's record renewed with a TTL, a stopped replica taken out, a
killed one aged out; and the start-up reconciliations every replica runs (bootstrap objects, RBAC
policy, APF configuration) race on one registry without errors."""

from __future__ import annotations

import ipaddress
import logging
import socket
from typing import Any

import pytest
import trio

from kapi.apis import BUILTIN
from kapi.controllers.namespace import NamespaceController
from kapi.controllers.writes import Writes
from kapi.encoding import listitems
from kapi.object.listopts import ListOptions
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.server.apfbootstrap import keep_apf_bootstrap
from kapi.server.bootstrap import bootstrap
from kapi.server.rbacbootstrap import reconcile_bootstrap_policy
from kapi.server.replica.endpoints import EndpointLeases
from kapi.server.replica.member import advertise_address
from kapi.storage.memory import MemoryStorage


@pytest.fixture
async def registry(nursery: trio.Nursery) -> Registry:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    return Registry(storage, ResourceTable(BUILTIN))


def _replica(registry: Registry, ip: str, port: int = 6443, ttl_s: float = 15.0) -> EndpointLeases:
    return EndpointLeases(registry, Writes(registry).apiserver(), ip, port, ttl_s=ttl_s)


async def _endpoints(registry: Registry) -> list[dict[str, Any]]:
    res = registry.table.get("", "v1", "endpoints")
    assert res is not None
    return (await registry.get(res, "default", "kubernetes"))["subsets"]  # type: ignore[no-any-return]


async def _slices(registry: Registry) -> dict[str, dict[str, Any]]:
    res = registry.table.get("discovery.k8s.io", "v1", "endpointslices")
    assert res is not None
    page = await registry.list(res, "default", ListOptions(label_selector="kubernetes.io/service-name=kubernetes"))
    return {o["metadata"]["name"]: o for o in listitems.objects(page.items)}


async def test_the_endpoints_list_every_live_replica(registry: Registry) -> None:
    a, b = _replica(registry, "192.0.2.10"), _replica(registry, "192.0.2.11")
    await a.reconcile()
    await b.reconcile()
    assert await _endpoints(registry) == [{"addresses": [{"ip": "192.0.2.10"}, {"ip": "192.0.2.11"}],
                                           "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}]
    [slice_] = (await _slices(registry)).values()
    assert slice_["metadata"]["name"] == "kubernetes" and slice_["addressType"] == "IPv4"
    assert [e["addresses"] for e in slice_["endpoints"]] == [["192.0.2.10"], ["192.0.2.11"]]
    assert slice_["ports"] == [{"name": "https", "port": 6443, "protocol": "TCP"}]
    await a.remove()  # a stops
    assert await _endpoints(registry) == [{"addresses": [{"ip": "192.0.2.11"}],
                                           "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}]
    assert [e["addresses"] for e in (await _slices(registry))["kubernetes"]["endpoints"]] == [["192.0.2.11"]]


async def test_a_replica_that_stops_renewing_ages_out(registry: Registry) -> None:
    killed = _replica(registry, "192.0.2.10", ttl_s=-1.0)  # its record has expired by the next look
    await killed.reconcile()
    live = _replica(registry, "192.0.2.11")
    await live.reconcile()
    assert await _endpoints(registry) == [{"addresses": [{"ip": "192.0.2.11"}],
                                           "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}]
    assert [kv.key for kv in (await registry.storage.list("/registry/masterleases/")).items] == \
        ["/registry/masterleases/192.0.2.11:6443"]


async def test_replicas_on_one_host_are_listed_by_port(registry: Registry) -> None:
    await _replica(registry, "192.0.2.10", 6443).reconcile()
    await _replica(registry, "192.0.2.10", 7443).reconcile()
    assert await _endpoints(registry) == [
        {"addresses": [{"ip": "192.0.2.10"}], "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]},
        {"addresses": [{"ip": "192.0.2.10"}], "ports": [{"name": "https", "port": 7443, "protocol": "TCP"}]}]
    assert set(await _slices(registry)) == {"kubernetes", "kubernetes-7443"}


async def test_replicas_reconciling_together_agree(registry: Registry) -> None:
    replicas = [_replica(registry, f"192.0.2.{10 + i}") for i in range(4)]
    for r in replicas:
        await r._renew()
    async with trio.open_nursery() as nursery:
        for r in replicas:
            nursery.start_soon(r.reconcile)
    assert [a["ip"] for a in (await _endpoints(registry))[0]["addresses"]] == [f"192.0.2.{10 + i}" for i in range(4)]


async def test_start_up_reconciliations_race_without_errors(registry: Registry,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """Two replicas' post-start hooks at once on one store: each ends with kube's objects, none logs an error."""
    async def start_up(*, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        writer = Writes(registry).apiserver()
        await bootstrap(registry, NamespaceController(registry), writer)
        await reconcile_bootstrap_policy(registry, writer)
        async with trio.open_nursery() as nursery:
            await nursery.start(lambda task_status: keep_apf_bootstrap(registry, writer=writer,
                                                                      task_status=task_status))
            task_status.started()

    with caplog.at_level(logging.WARNING):
        async with trio.open_nursery() as nursery:
            await nursery.start(start_up)  # one alone first: what a single server makes
            alone = await _state(registry)
            await _wipe(registry)
            started = 0
            async with trio.open_nursery() as race:
                async def replica() -> None:
                    nonlocal started
                    await race.start(start_up)
                    started += 1
                    if started == 2:  # both have made their objects: stop them
                        race.cancel_scope.cancel()

                race.start_soon(replica)
                race.start_soon(replica)
            assert started == 2
            nursery.cancel_scope.cancel()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert await _state(registry) == alone


_KINDS = [("", "namespaces"), ("rbac.authorization.k8s.io", "clusterroles"),
          ("rbac.authorization.k8s.io", "clusterrolebindings"), ("rbac.authorization.k8s.io", "roles"),
          ("flowcontrol.apiserver.k8s.io", "flowschemas"),
          ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"), ("", "serviceaccounts"),
          ("", "configmaps"), ("scheduling.k8s.io", "priorityclasses")]


async def _state(registry: Registry) -> dict[str, list[tuple[str, str, Any]]]:
    out = {}
    for group, resource in _KINDS:
        res = registry.resource_of(group, resource)
        assert res is not None
        objs = listitems.objects((await registry.list(res, "", ListOptions())).items)
        out[resource] = sorted((o["metadata"].get("namespace", ""), o["metadata"]["name"],
                                o.get("rules", o.get("spec", o.get("subjects")))) for o in objs)
    return out


async def _wipe(registry: Registry) -> None:
    for kv in (await registry.storage.list("/registry/")).items:
        await registry.storage.delete(kv.key)


def test_the_advertised_address_is_kubes_choice() -> None:
    """--advertise-address wins; a specific --bind-address is published as it is; an unspecified one
    publishes the host's default-route interface address, a local, routable one (or nothing)."""
    assert advertise_address("10.1.2.3", "0.0.0.0") == "10.1.2.3"
    assert advertise_address("", "10.0.0.7") == "10.0.0.7"
    assert advertise_address("", "127.0.0.1") == "127.0.0.1"  # loopback: not published, as today
    chosen = advertise_address("", "0.0.0.0")
    if chosen:
        assert not ipaddress.ip_address(chosen).is_loopback and ipaddress.ip_address(chosen).version == 4
        with socket.socket() as s:
            s.bind((chosen, 0))  # an address of this host: binding elsewhere fails
