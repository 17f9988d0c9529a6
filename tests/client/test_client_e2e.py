"""The async client against a real kapi serve: verbs, errors, encodings, watches, HTTP/1.1 and HTTP/2."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator

import pytest
import trio

from kapi.client import (CONFIGMAPS, DEPLOYMENTS, PODS, ApiError, Client, Informer, Resource, load_kubeconfig)
from tests.e2e.conftest import Server, start_server, stop_server

from .proxy import Proxy, host_port

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("kapi"))
    yield srv
    stop_server(srv)


def cm(name: str, ns: str = "default", **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": data}


@pytest.mark.parametrize("http2", [True, False], ids=["h2", "http1.1"])
@pytest.mark.parametrize("protobuf", [False, True], ids=["json", "protobuf"])
async def test_verbs(server: Server, http2: bool, protobuf: bool) -> None:
    name = f"verbs-{int(http2)}{int(protobuf)}"
    async with Client(load_kubeconfig(server.kubeconfig), http2=http2, protobuf=protobuf) as c:
        created = await c.create(CONFIGMAPS, cm(name, a="1"))
        assert created["kind"] == "ConfigMap" and created["data"] == {"a": "1"}
        got = await c.get(CONFIGMAPS, name, "default")
        assert got["metadata"]["uid"] == created["metadata"]["uid"]
        got["data"]["b"] = "2"
        updated = await c.update(CONFIGMAPS, got)
        assert updated["data"] == {"a": "1", "b": "2"}
        patched = await c.patch(CONFIGMAPS, name, {"data": {"c": "3"}}, "default")
        assert patched["data"] == {"a": "1", "b": "2", "c": "3"}
        patched = await c.patch(CONFIGMAPS, name, [{"op": "remove", "path": "/data/a"}], "default", patch_type="json")
        assert "a" not in patched["data"]
        merged = await c.patch(CONFIGMAPS, name, {"data": {"d": "4"}}, "default", patch_type="strategic",
                               field_manager="tests")
        assert merged["data"]["d"] == "4"
        assert any(f.get("manager") == "tests" for f in merged["metadata"]["managedFields"])
        listed = await c.list(CONFIGMAPS, "default", field_selector=f"metadata.name={name}")
        assert [o["metadata"]["name"] for o in listed["items"]] == [name]
        with pytest.raises(ApiError) as conflict:
            await c.update(CONFIGMAPS, got)  # stale resourceVersion
        assert conflict.value.code == 409 and conflict.value.reason == "Conflict"
        await c.delete(CONFIGMAPS, name, "default")
        with pytest.raises(ApiError) as missing:
            await c.get(CONFIGMAPS, name, "default")
        assert missing.value.code == 404 and missing.value.reason == "NotFound"
        assert missing.value.status["details"]["name"] == name


async def test_invalid_objects_come_back_as_422_with_the_servers_message(server: Server) -> None:
    async with Client(load_kubeconfig(server.kubeconfig)) as c:
        with pytest.raises(ApiError) as err:
            await c.create(CONFIGMAPS, cm("Not_Valid"))
    assert err.value.code == 422 and err.value.reason == "Invalid"
    assert "RFC 1123" in err.value.message


async def test_pages_follow_continue_tokens(server: Server) -> None:
    async with Client(load_kubeconfig(server.kubeconfig)) as c:
        for i in range(7):
            await c.create(CONFIGMAPS, cm(f"page-{i}", "kube-public"))
        pages = [p async for p in c.list_pages(CONFIGMAPS, "kube-public", limit=3)]
    names = [o["metadata"]["name"] for p in pages for o in p["items"]]
    assert len(pages) >= 3 and sorted(n for n in names if n.startswith("page-")) == [f"page-{i}" for i in range(7)]


async def test_discovery_finds_resources(server: Server) -> None:
    async with Client(load_kubeconfig(server.kubeconfig)) as c:
        assert await c.discover("deployments.apps") == DEPLOYMENTS
        assert await c.discover("pods") == PODS
        leases = await c.discover("leases.coordination.k8s.io")
        assert leases == Resource("coordination.k8s.io/v1", "leases", "Lease", True)
        with pytest.raises(ApiError):
            await c.discover("nothings")


@pytest.mark.parametrize("protobuf", [False, True], ids=["json", "protobuf"])
async def test_watch_streams_events(server: Server, protobuf: bool) -> None:
    async with Client(load_kubeconfig(server.kubeconfig), protobuf=protobuf) as c:
        rv = (await c.list(CONFIGMAPS, "default"))["metadata"]["resourceVersion"]
        await c.create(CONFIGMAPS, cm(f"watched-{int(protobuf)}"))
        async with c.watch(CONFIGMAPS, "default", resource_version=rv, timeout_seconds=5) as events:
            async for ev in events:
                assert ev.type == "ADDED" and ev.object["metadata"]["name"] == f"watched-{int(protobuf)}"
                break


async def test_quiet_watches_do_not_hold_up_requests_over_http2(server: Server) -> None:
    """Several watches on an HTTP/2 client that also creates: every create answers (a watch
    sharing the requests' connection used to leave answers waiting for the watch's next event)."""
    async with Client(load_kubeconfig(server.kubeconfig), http2=True) as c:
        informers = [Informer(c, CONFIGMAPS, label_selector=f"quiet-{i}") for i in range(3)]
        async with trio.open_nursery() as nursery:
            for inf in informers:
                nursery.start_soon(inf.run)
            for inf in informers:
                await inf.wait_for_sync()
            for k in range(8):
                with trio.fail_after(5):
                    made = await c.create(CONFIGMAPS, {**cm(f"h2-{k}"), "metadata": {
                        "name": f"h2-{k}", "namespace": "default", "labels": {"quiet-0": "x"}}})
                assert made["metadata"]["name"] == f"h2-{k}"
            with trio.fail_after(20):
                while len(informers[0].store) < 8:
                    await trio.sleep(0.05)
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("http2", [True, False], ids=["h2", "http1.1"])
async def test_a_closed_kept_alive_connection_is_retried_once(server: Server, http2: bool) -> None:
    proxy = Proxy(host_port(server.url))
    async with trio.open_nursery() as nursery:
        await nursery.start(proxy.run)
        cfg = dataclasses.replace(load_kubeconfig(server.kubeconfig), server=proxy.url)
        async with Client(cfg, http2=http2) as c:
            await c.get(CONFIGMAPS, "kube-root-ca.crt", "default")
            proxy.drop()  # the server side of the kept-alive connection goes away
            await trio.sleep(0.1)
            got = await c.get(CONFIGMAPS, "kube-root-ca.crt", "default")
            assert got["metadata"]["name"] == "kube-root-ca.crt"
            assert len(proxy.accepted) == 2  # a second connection, made for the retry
        nursery.cancel_scope.cancel()
