"""Issue 30, items 4 and 5, against a real ``kapi serve``: where a custom resource's watches are served.

4. A storage-backed watch (here: a custom resource whose watch cache ``--watch-cache-sizes`` turns
   off) ends as soon as its CRD is deleted, as the cached ones do, not at its ``timeoutSeconds``;
   the client's next LIST is a 404.
5. Watches opened while a custom resource's watch cache is being made again (a CRD spec change
   replaces its resource and its cache, loaded again over every object) end up on that cache,
   not on storage for the rest of their lives, and see every later event exactly once.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
import trio

from kapi.client import ApiError, Client, Resource, load_kubeconfig

from .conftest import Server, start_server, stop_server

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]
UNCACHED = "uncached.routes.e2e.kapi.dev"  # its gadgets have no watch cache on this server
RELOADED = "reloaded.routes.e2e.kapi.dev"
OBJECTS = 3000  # enough that making the caches again takes a while
VERSIONS = 6
WATCHES = 12
HANG_S = 30  # guards against hangs, not timing assertions


@pytest.fixture(scope="module")
def routes_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("routes"), "--watch-cache-sizes", f"gadgets.{UNCACHED}#0")
    yield srv
    stop_server(srv)


def crd_versions(count: int, columns: bool = False) -> list[Obj]:
    """Versions v1 (stored) to v<count>, served alike (conversion None); each has a watch cache of its own."""
    schema = {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}
    extra = {"additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]} \
        if columns else {}
    return [{"name": f"v{i}", "served": True, "storage": i == 1, "schema": schema, **extra}
            for i in range(1, count + 1)]


def make_crd(server: Server, group: str, versions: int = 1) -> None:
    """Create ``gadgets.<group>`` and wait until it is Established and served."""
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"gadgets.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                    "versions": crd_versions(versions)}}
    status, _, text = server.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                     json.dumps(crd).encode(), {"Content-Type": "application/json"})
    assert status == 201, text
    deadline = time.monotonic() + HANG_S
    while server.request("GET", f"/apis/{group}/v{versions}/namespaces/default/gadgets")[0] != 200:
        assert time.monotonic() < deadline, "the CRD is not served"
        time.sleep(0.05)


def metric(server: Server, name: str, **labels: str) -> float:
    """One sample of ``/metrics`` (0 when absent)."""
    status, _, body = server.request("GET", "/metrics")
    assert status == 200
    for line in body.decode().splitlines():
        if not line.startswith(name + "{"):
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', line[len(name):line.rindex("}")]))
        if all(got.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def ametric(server: Server, name: str, **labels: str) -> float:
    return await trio.to_thread.run_sync(lambda: metric(server, name, **labels))


def gadget(group: str, name: str, version: str = "v1") -> Obj:
    return {"apiVersion": f"{group}/{version}", "kind": "Gadget", "metadata": {"name": name}, "spec": {"size": 1}}


async def test_storage_backed_watch_ends_when_its_crd_is_deleted(routes_server: Server) -> None:
    server = routes_server
    await trio.to_thread.run_sync(make_crd, server, UNCACHED)
    res = Resource(f"{UNCACHED}/v1", "gadgets", "Gadget")
    async with Client(load_kubeconfig(server.kubeconfig)) as c:
        await c.create(res, gadget(UNCACHED, "one"), "default")
        seen: list[str] = []
        with trio.fail_after(HANG_S):
            async with c.watch(res, "default", timeout_seconds=300) as events:
                async for ev in events:
                    seen.append(ev.type)
                    if len(seen) == 1:
                        # The watch is open (its initial ADDED came): the CRD goes now.
                        assert await ametric(server, "apiserver_registered_watchers", group=UNCACHED) == 0  # on storage
                        status, _, text = await trio.to_thread.run_sync(
                            server.request, "DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                            f"gadgets.{UNCACHED}")
                        assert status == 200, text
        # Ended well before its 300 s (the hang guard above), as a timeout ends it: the client re-lists.
        assert seen[0] == "ADDED"
        with pytest.raises(ApiError) as err:
            await c.list(res, "default")
        assert err.value.code == 404


class Watch:
    """A client's watch of the gadgets from now on, opened again whenever the server ends it."""

    def __init__(self, client: Client, res: Resource) -> None:
        self.client = client
        self.res = res
        self.names: list[str] = []
        self.open = False
        self.opened = 0

    async def run(self) -> None:
        while True:
            # From "now" (no initial state): nothing is written while watches are being opened.
            async with self.client.watch(self.res, "default", send_initial_events=False,
                                         resource_version_match="NotOlderThan", timeout_seconds=300) as events:
                self.open = True
                self.opened += 1
                async for ev in events:
                    if ev.type != "BOOKMARK":
                        self.names.append(ev.object["metadata"]["name"])
            self.open = False


async def test_watches_opened_while_the_cache_is_made_again_are_served_by_it(routes_server: Server) -> None:
    server = routes_server
    await trio.to_thread.run_sync(make_crd, server, RELOADED, VERSIONS)
    # The last version: its cache is made again after those of the others (one at a time), so a watch of
    # it opened once the old caches have stopped is opened while it loads.
    res = Resource(f"{RELOADED}/v{VERSIONS}", "gadgets", "Gadget")
    crds = Resource("apiextensions.k8s.io/v1", "customresourcedefinitions", "CustomResourceDefinition",
                    namespaced=False)
    async with Client(load_kubeconfig(server.kubeconfig)) as c:
        with trio.fail_after(10 * HANG_S):
            async with trio.open_nursery() as nursery:
                for worker in range(8):
                    async def create(first: int) -> None:
                        for i in range(first, OBJECTS, 8):
                            await c.create(res, gadget(RELOADED, f"g-{i:05d}", f"v{VERSIONS}"), "default")
                    nursery.start_soon(create, worker)
        loads = await ametric(server, "apiserver_watch_cache_initializations_total", group=RELOADED)
        watches: list[Watch] = []
        async with trio.open_nursery() as nursery:
            # A watch on the cache now: its end tells that the cache has stopped.
            probe = Watch(c, res)
            nursery.start_soon(probe.run)
            with trio.fail_after(HANG_S):
                while not probe.open:
                    await trio.sleep(0.005)
            # A spec change replaces the resource: its watch cache is made again over every object, and
            # storage alone could serve a watch meanwhile.
            await c.patch(crds, f"gadgets.{RELOADED}", {"spec": {"versions": crd_versions(VERSIONS, columns=True)}},
                          patch_type="merge")
            with trio.fail_after(HANG_S):
                while probe.opened < 2 and probe.open:
                    await trio.sleep(0.002)
                # The old cache has stopped; the new one is loading: watches opened now.
                watches = [probe] + [Watch(c, res) for _ in range(WATCHES)]
                for watch in watches[1:]:
                    nursery.start_soon(watch.run)
                while await ametric(server, "apiserver_watch_cache_initializations_total", group=RELOADED) < loads + VERSIONS \
                        or not all(w.open for w in watches):
                    await trio.sleep(0.01)
            # Every one of them is on the cache (a storage-backed one is not counted there).
            with trio.fail_after(HANG_S):
                while await ametric(server, "apiserver_registered_watchers", group=RELOADED) < len(watches):
                    await trio.sleep(0.05)
            # ... and sees each later event exactly once.
            later = [f"later-{i}" for i in range(5)] + ["last"]
            for name in later:
                await c.create(res, gadget(RELOADED, name, f"v{VERSIONS}"), "default")
            with trio.fail_after(HANG_S):
                while not all("last" in w.names for w in watches):
                    await trio.sleep(0.02)
            for w in watches:
                assert w.names == later
            nursery.cancel_scope.cancel()
