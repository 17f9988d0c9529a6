"""Several served versions of one CRD with the None conversion, against an in-process server: an
object created in one version reads in every served version (apiVersion rewritten, nothing else),
LIST and WATCH of each version give its own apiVersion, a served: false version is 404, a
deprecated one answers a Warning header."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from kapi.client import Client
from kapi.server.serve import Server
from tests.crd.conversion_support import GROUP, SCHEMA_V1, SCHEMA_V2, crd, request, served_resources, start

WAIT_S = 20  # a deadline against hangs, not a timing assertion
NS = "/apis/stable.example.com/{v}/namespaces/default/crontabs"

VERSIONS = [
    {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": SCHEMA_V1}},
    {"name": "v2", "served": True, "storage": False, "schema": {"openAPIV3Schema": SCHEMA_V2}},
    {"name": "v1beta1", "served": True, "storage": False, "deprecated": True,
     "deprecationWarning": "stable.example.com/v1beta1 CronTab is deprecated; use stable.example.com/v1"},
    {"name": "v0", "served": False, "storage": False},
]


@pytest.fixture
async def served(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[tuple[Server, Client]]:
    server, client = await start(nursery, tmp_path / "a")
    for res in served_resources(crd(VERSIONS)):
        server.registry.table.add(res)
    async with client:
        yield server, client
    nursery.cancel_scope.cancel()


def crontab(name: str, version: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{version}", "kind": "CronTab",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": name}}, "spec": spec}


async def test_created_in_one_version_read_in_the_others(served: tuple[Server, Client]) -> None:
    _, client = served
    status, _, made = await request(client, "POST", NS.format(v="v1"), crontab("a", "v1", {"cronSpec": "*/5"}))
    assert status == 201, made
    status, _, made2 = await request(client, "POST", NS.format(v="v2"), crontab("b", "v2", {"schedule": "@daily"}))
    assert status == 201, made2
    assert made2["apiVersion"] == f"{GROUP}/v2"
    for version in ("v1", "v2", "v1beta1"):
        for name, spec in (("a", {"cronSpec": "*/5"}), ("b", {"schedule": "@daily"})):
            status, _, got = await request(client, "GET", NS.format(v=version) + f"/{name}")
            assert status == 200, got
            assert got["apiVersion"] == f"{GROUP}/{version}"
            assert got["spec"] == spec  # None conversion: nothing but apiVersion changes
            assert got["metadata"]["labels"] == {"app": name}
    # Both read the same stored object: one uid, one resourceVersion.
    _, _, in_v1 = await request(client, "GET", NS.format(v="v1") + "/b")
    _, _, in_v2 = await request(client, "GET", NS.format(v="v2") + "/b")
    assert in_v1["metadata"]["uid"] == in_v2["metadata"]["uid"] == made2["metadata"]["uid"]
    assert in_v1["metadata"]["resourceVersion"] == in_v2["metadata"]["resourceVersion"]
    # An update in v2 is seen in v1.
    in_v2["spec"] = {"schedule": "@hourly"}
    status, _, put = await request(client, "PUT", NS.format(v="v2") + "/b", in_v2)
    assert status == 200 and put["apiVersion"] == f"{GROUP}/v2", put
    _, _, again = await request(client, "GET", NS.format(v="v1") + "/b")
    assert again["spec"] == {"schedule": "@hourly"} and again["apiVersion"] == f"{GROUP}/v1"


async def test_list_and_watch_in_each_version(served: tuple[Server, Client]) -> None:
    server, client = served
    await request(client, "POST", NS.format(v="v1"), crontab("a", "v1", {"cronSpec": "x"}))
    for version in ("v1", "v2"):
        status, _, listed = await request(client, "GET", NS.format(v=version))
        assert status == 200, listed
        assert listed["apiVersion"] == f"{GROUP}/{version}" and listed["kind"] == "CronTabList"
        # kube's custom resource lists name each item's apiVersion (the built-ins' leave it out)
        assert [(i["apiVersion"], i["metadata"]["name"]) for i in listed["items"]] == \
            [(f"{GROUP}/{version}", "a")]

    # Each version's watch cache (its own: cache_key) answers a LIST at resourceVersion=0 too.
    with trio.fail_after(WAIT_S):
        while (GROUP, "crontabs/v2") not in server.registry.cachers or \
                not server.registry.cachers[(GROUP, "crontabs/v2")].ready:
            await trio.sleep(0.01)
    _, _, cached = await request(client, "GET", NS.format(v="v2") + "?resourceVersion=0")
    assert [i.get("apiVersion", f"{GROUP}/v2") for i in cached["items"]] == [f"{GROUP}/v2"]
    assert len(cached["items"]) == 1

    got: dict[str, list[tuple[str, str, str]]] = {"v1": [], "v2": []}
    rv = cached["metadata"]["resourceVersion"]

    async def watch(version: str, ready: trio.Event) -> None:
        path = NS.format(v=version) + f"?watch=1&resourceVersion={rv}"
        async with client._http.stream("GET", path, headers=client._headers("application/json")) as resp:
            assert resp.status_code == 200
            ready.set()
            async for line in resp.aiter_lines():
                if not line:
                    continue
                ev = orjson.loads(line)
                got[version].append((ev["type"], ev["object"]["apiVersion"], ev["object"]["metadata"]["name"]))
                if len(got[version]) == 2:
                    return

    with trio.fail_after(WAIT_S):
        async with trio.open_nursery() as nursery:
            ready = [trio.Event(), trio.Event()]
            nursery.start_soon(watch, "v1", ready[0])
            nursery.start_soon(watch, "v2", ready[1])
            for r in ready:
                await r.wait()
            await request(client, "POST", NS.format(v="v2"), crontab("b", "v2", {"schedule": "y"}))
            await request(client, "DELETE", NS.format(v="v1") + "/a")
    for version in ("v1", "v2"):
        assert got[version] == [("ADDED", f"{GROUP}/{version}", "b"), ("DELETED", f"{GROUP}/{version}", "a")]


async def test_served_false_is_404_and_deprecated_warns(served: tuple[Server, Client]) -> None:
    _, client = served
    status, _, body = await request(client, "GET", NS.format(v="v0"))
    assert status == 404, body
    status, _, body = await request(client, "POST", NS.format(v="v0"), crontab("z", "v0", {}))
    assert status == 404
    status, _, discovery = await request(client, "GET", f"/apis/{GROUP}")
    assert status == 200
    assert sorted(v["version"] for v in discovery["versions"]) == ["v1", "v1beta1", "v2"]

    status, headers, body = await request(client, "POST", NS.format(v="v1beta1"), crontab("d", "v1beta1", {}))
    assert status == 201, body
    assert headers["warning"] == ('299 - "stable.example.com/v1beta1 CronTab is deprecated; '
                                  'use stable.example.com/v1"')
    status, headers, body = await request(client, "GET", NS.format(v="v1beta1") + "/d")
    assert status == 200 and "is deprecated" in headers["warning"]
    status, headers, _ = await request(client, "GET", NS.format(v="v1") + "/d")
    assert status == 200 and headers["warning"] == ""
