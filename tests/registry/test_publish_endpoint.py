"""The ``kubernetes`` Service and Endpoints a server publishes for itself: a routable address is
published; a loopback one is refused by Endpoints validation, as kube-apiserver advertising 127.0.0.1
is, leaving the Service without Endpoints and a warning that says why."""

from __future__ import annotations

import logging

import pytest
import trio

from kapi import errors
from kapi.apis import BUILTIN
from kapi.registry.resources import Resource, ResourceTable
from kapi.registry.store import Registry
from kapi.server.bootstrap import publish_endpoint
from kapi.storage.memory import MemoryStorage


@pytest.fixture
async def registry(nursery: trio.Nursery) -> Registry:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    return Registry(storage, ResourceTable(BUILTIN))


def _res(registry: Registry, resource: str) -> Resource:
    res = registry.table.get("", "v1", resource)
    assert res is not None
    return res


async def test_a_routable_address_is_published(registry: Registry) -> None:
    await publish_endpoint(registry, "192.0.2.10", 6443)
    ep = await registry.get(_res(registry, "endpoints"), "default", "kubernetes")
    assert ep["subsets"] == [{"addresses": [{"ip": "192.0.2.10"}],
                              "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}]
    # a new port on restart (--secure-port 0) is written over the old one
    await publish_endpoint(registry, "192.0.2.10", 7443)
    ep = await registry.get(_res(registry, "endpoints"), "default", "kubernetes")
    assert ep["subsets"][0]["ports"][0]["port"] == 7443


async def test_a_loopback_address_leaves_the_service_without_endpoints(
        registry: Registry, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="kapi"):
        await publish_endpoint(registry, "127.0.0.1", 6443)
    svc = await registry.get(_res(registry, "services"), "default", "kubernetes")
    assert svc["spec"]["ports"][0]["targetPort"] == 6443
    with pytest.raises(errors.NotFound):
        await registry.get(_res(registry, "endpoints"), "default", "kubernetes")
    [record] = [r for r in caplog.records if "kubernetes Service" in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert "127.0.0.1" in record.getMessage() and "--bind-address" in record.getMessage()
