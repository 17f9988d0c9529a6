"""A resource table that changes while serving (issue 11), against real in-process servers.

A second copy of ConfigMap's description is served as ``example.com/v1 widgets``: it appears in
discovery and OpenAPI, gets a watch cache that LIST and WATCH use, and when it is removed it
leaves discovery, its cache stops and its watches end. Two servers in one process share no
schema state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from kapi import errors
from kapi.client import ApiError, Client, Resource as ClientResource, load_kubeconfig
from kapi.config import Config
from kapi.encoding import protobuf
from kapi.object.schema import GVK, Schema
from kapi.registry.resources import Resource
from kapi.server.serve import Server, serve

WIDGETS = ClientResource("example.com/v1", "widgets", "Widget")
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
WAIT_S = 20  # a deadline against hangs, not a timing assertion


@dataclasses.dataclass
class Running:
    server: Server
    client: Client
    data_dir: Path


async def _start(nursery: trio.Nursery, data_dir: Path) -> Running:
    config = Config(data_dir=str(data_dir), storage_backend="memory", secure_port=0,
                    etcd_compaction_interval_s=0)
    server: Server = await nursery.start(serve, config)
    client = Client(load_kubeconfig(data_dir / "admin.kubeconfig"), http2=False)
    return Running(server, client, data_dir)


@pytest.fixture
async def running(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[Running]:
    r = await _start(nursery, tmp_path / "a")
    async with r.client:
        yield r
    nursery.cancel_scope.cancel()


def widgets_of(server: Server) -> Resource:
    """ConfigMap's description, served as example.com/v1 widgets (a storage prefix of its own)."""
    cm = server.registry.table.get("", "v1", "configmaps")
    assert cm is not None
    return dataclasses.replace(cm, group="example.com", version="v1", resource="widgets", kind="Widget",
                               short_names=(), storage_prefix="example.com/widgets")


def register_widget_types(schema: Schema) -> None:
    """ConfigMap's types under the Widget kind (no protobuf message, as a custom resource's)."""
    cm = schema.type_for("", "v1", "ConfigMap")
    cm_list = schema.type_for("", "v1", "ConfigMapList")
    assert cm is not None and cm_list is not None
    schema.register([
        dataclasses.replace(cm, name="com.example.v1.Widget", gvks=(GVK("example.com", "v1", "Widget"),), proto=""),
        dataclasses.replace(cm_list, name="com.example.v1.WidgetList",
                            gvks=(GVK("example.com", "v1", "WidgetList"),), proto=""),
    ])


def widget(name: str) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name, "namespace": "default"},
            "data": {"size": "3"}}


async def _get(client: Client, path: str, accept: str = "application/json") -> tuple[int, dict[str, str], Any]:
    resp = await client._http.get(path, headers=client._headers(accept))
    return resp.status_code, dict(resp.headers), orjson.loads(resp.content) if resp.content else None


def _aggregated_resources(doc: dict[str, Any], group: str) -> list[str]:
    return [r["resource"] for item in doc["items"] if item["metadata"].get("name") == group
            for v in item["versions"] for r in v["resources"]]


async def test_a_resource_added_while_serving_is_served_then_removed(running: Running) -> None:
    """Issue 11: discovery, OpenAPI, routing and the watch cache follow an addition and a removal."""
    server, client = running.server, running.client
    registry = server.registry
    _, headers, before = await _get(client, "/apis", AGGREGATED)
    assert "example.com" not in [i["metadata"].get("name") for i in before["items"]]
    etag_before = headers["etag"]
    status, _, _ = await _get(client, "/apis/example.com/v1")
    assert status == 404
    with pytest.raises(ApiError) as exc:
        await client.list(WIDGETS, "default")
    assert exc.value.code == 404

    res = widgets_of(server)
    register_widget_types(registry.schema)
    changes: list[tuple[str, str]] = []
    unsubscribe = registry.table.subscribe(lambda change, r: changes.append((change, r.qualified)))
    generation = registry.table.generation
    registry.table.add(res)
    assert registry.table.generation == generation + 1 and changes == [("added", "widgets.example.com")]
    assert registry.table.get("example.com", "v1", "widgets") is res and res in registry.table.resources
    with pytest.raises(errors.AlreadyExists):
        registry.table.add(res)

    # Discovery: the group, its resource list and the aggregated document (a new ETag).
    _, _, groups = await _get(client, "/apis")
    assert "example.com" in [g["name"] for g in groups["groups"]]
    _, _, rl = await _get(client, "/apis/example.com/v1")
    assert [r["name"] for r in rl["resources"]] == ["widgets"]
    assert rl["resources"][0]["kind"] == "Widget" and rl["resources"][0]["namespaced"] is True
    _, headers, after = await _get(client, "/apis", AGGREGATED)
    assert _aggregated_resources(after, "example.com") == ["widgets"]
    assert headers["etag"] != etag_before
    # OpenAPI v2 and v3.
    _, _, v2 = await _get(client, "/openapi/v2")
    assert "/apis/example.com/v1/namespaces/{namespace}/widgets" in v2["paths"]
    assert "com.example.v1.Widget" in v2["definitions"]
    _, _, v3 = await _get(client, "/openapi/v3")
    assert "apis/example.com/v1" in v3["paths"]
    _, _, v3gv = await _get(client, "/openapi/v3/apis/example.com/v1")
    assert "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}" in v3gv["paths"]

    # Its watch cache starts, and the registry uses it once loaded.
    with trio.fail_after(WAIT_S):
        while ("example.com", "widgets") not in registry.cachers:
            await trio.sleep(0.01)
    cacher = registry.cachers[("example.com", "widgets")]
    assert cacher.ready

    # create / list / watch through the API.
    created = await client.create(WIDGETS, widget("one"), "default")
    assert created["kind"] == "Widget" and created["apiVersion"] == "example.com/v1"
    listed = await client.list(WIDGETS, "default")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["one"]
    assert listed["kind"] == "WidgetList"
    assert cacher.entry(registry.key(res, "default", "one")) is not None  # the cache holds it

    seen: list[tuple[str, str]] = []
    ended = trio.Event()
    opened = trio.Event()

    async def watch() -> None:
        async with client.watch(WIDGETS, "default", resource_version=listed["metadata"]["resourceVersion"]) as events:
            opened.set()
            async for ev in events:
                seen.append((ev.type, ev.object["metadata"]["name"]))
        ended.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch)
        with trio.fail_after(WAIT_S):
            await opened.wait()
            await client.create(WIDGETS, widget("two"), "default")
            while ("ADDED", "two") not in seen:
                await trio.sleep(0.01)

            # Removal: out of discovery and OpenAPI, its cache stopped and its watch ended.
            removed = registry.table.remove("example.com", "v1", "widgets")
            assert removed is res and changes[-1] == ("removed", "widgets.example.com")
            await ended.wait()
    assert ("example.com", "widgets") not in registry.cachers
    assert not cacher.ready  # stopped, not merely unused
    status, _, _ = await _get(client, "/apis/example.com/v1")
    assert status == 404
    _, _, gone = await _get(client, "/apis", AGGREGATED)
    assert _aggregated_resources(gone, "example.com") == []
    _, _, v2 = await _get(client, "/openapi/v2")
    assert not [p for p in v2["paths"] if p.startswith("/apis/example.com/")]
    with pytest.raises(ApiError) as exc:
        await client.get(WIDGETS, "one", "default")
    assert exc.value.code == 404
    with pytest.raises(errors.NotFound):
        registry.table.remove("example.com", "v1", "widgets")

    # Served again: its objects are still in storage, and a new cache loads them.
    registry.table.add(res)
    with trio.fail_after(WAIT_S):
        while ("example.com", "widgets") not in registry.cachers:
            await trio.sleep(0.01)
    assert registry.cachers[("example.com", "widgets")] is not cacher
    again = await client.list(WIDGETS, "default")
    assert sorted(i["metadata"]["name"] for i in again["items"]) == ["one", "two"]
    unsubscribe()
    registry.table.remove("example.com", "v1", "widgets")
    assert changes[-1] == ("added", "widgets.example.com")  # no longer told


async def test_two_servers_in_one_process_share_no_schema_state(nursery: trio.Nursery, tmp_path: Path) -> None:
    """Issue 11: each server loads its own schema, and its registry and API read that one."""
    a = await _start(nursery, tmp_path / "a")
    b = await _start(nursery, tmp_path / "b")
    async with a.client, b.client:
        sa, sb = a.server.registry.schema, b.server.registry.schema
        assert sa is not sb and sa.go is not sb.go
        assert a.server.app.handlers.schema is sa  # the API reads the registry's schema, not a second load
        # A protobuf read on each fills each server's own codec.
        for r in (a, b):
            async with Client(load_kubeconfig(r.data_dir / "admin.kubeconfig"), http2=False, protobuf=True) as c:
                ns = await c.get(ClientResource("v1", "namespaces", "Namespace", namespaced=False), "default")
                assert ns["metadata"]["name"] == "default"
        assert protobuf.codec_for(sa) is not protobuf.codec_for(sb)

        register_widget_types(sa)
        assert sa.type_for("example.com", "v1", "Widget") is not None
        assert sb.type_for("example.com", "v1", "Widget") is None
        _, _, va = await _get(a.client, "/openapi/v2")
        _, _, vb = await _get(b.client, "/openapi/v2")
        assert "com.example.v1.Widget" in va["definitions"]
        assert "com.example.v1.Widget" not in vb["definitions"]
    nursery.cancel_scope.cancel()
