"""CRD lifecycle (issue 14): names accepted or refused as kube's naming controller does, Established
once served, storedVersions, discovery following the table, deletion of a CRD's objects under its
cleanup finalizer (Terminating observed), and a restart serving a stored CRD."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest
import trio

from kapi.api.app import Health
from kapi.apis import BUILTIN
from kapi.apis.apiextensions import CUSTOM_RESOURCE_DEFINITIONS as CRDS
from kapi.config import Config
from kapi.encoding import listitems
from kapi.controllers.crd import CLEANUP_FINALIZER, GROUP, RESOURCE, CRDController, calculate_names
from kapi.controllers.namespace import NamespaceController
from kapi.object.listopts import ListOptions
from kapi.registry.informer import Informers
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry, WriteOptions
from kapi.server.bootstrap import bootstrap
from kapi.server.serve import build_app
from kapi.storage.memory import MemoryStorage
from tests.api.conftest import TOKEN, Api

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def crd(plural: str = "widgets", group: str = "example.com", kind: str = "Widget", *, versions: tuple[str, ...] = ("v1",),
        storage: str = "v1", scope: str = "Namespaced", **names: Any) -> dict[str, Any]:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": scope,
                     "names": {"plural": plural, "singular": plural[:-1], "kind": kind, **names},
                     "versions": [{"name": v, "served": True, "storage": v == storage, "schema": schema,
                                   "subresources": {"status": {}}} for v in versions]}}


@dataclass
class Cluster:
    api: Api
    registry: Registry
    controller: CRDController
    storage: MemoryStorage


async def start(nursery: trio.Nursery, storage: MemoryStorage | None = None) -> Cluster:
    if storage is None:
        storage = MemoryStorage()
        await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    informers = Informers(registry)
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",)), registry, TOKEN,
                    Health(ready=True), informers)
    namespaces = NamespaceController(registry)
    await bootstrap(registry, namespaces)
    await nursery.start(namespaces.run)
    controller = CRDController(registry, informers.informer(GROUP, RESOURCE))
    await nursery.start(informers.run)
    await nursery.start(controller.run)
    return Cluster(Api(app, registry), registry, controller, storage)


@pytest.fixture
async def cluster(nursery: trio.Nursery) -> Cluster:
    return await start(nursery)


async def until(check: Any, what: str) -> Any:
    """Poll ``check`` (an async callable) until it returns something true; fail saying ``what``."""
    with trio.move_on_after(10):
        while True:
            got = await check()
            if got:
                return got
            await trio.sleep(0.01)
    raise AssertionError(f"never: {what}")


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == ctype), None)


async def established(api: Api, name: str) -> dict[str, Any]:
    async def check() -> Any:
        got = (await api.request("GET", f"{CRD_PATH}/{name}")).json()
        c = condition(got, "Established")
        return got if c and c["status"] == "True" else None
    return await until(check, f"{name} established")


async def test_conditions_accepted_names_and_stored_versions(cluster: Cluster) -> None:
    api = cluster.api
    reply = await api.create(CRD_PATH, crd(shortNames=["wg"], categories=["all"]))
    assert reply.status == 201, reply.body
    got = await established(api, "widgets.example.com")
    assert condition(got, "NamesAccepted") | {"lastTransitionTime": ""} == {
        "type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found",
        "lastTransitionTime": ""}
    est = condition(got, "Established")
    assert (est["reason"], est["message"]) == ("InitialNamesAccepted", "the initial names have been accepted")
    assert got["status"]["acceptedNames"] == {"plural": "widgets", "singular": "widget", "kind": "Widget",
                                              "listKind": "WidgetList", "shortNames": ["wg"], "categories": ["all"]}
    assert got["status"]["storedVersions"] == ["v1"]
    assert cluster.registry.table.get("example.com", "v1", "widgets") is not None
    assert "finalizers" not in got["metadata"]  # added by the first DELETE, as kube's REST.Delete


async def test_stored_versions_keep_an_old_storage_version(cluster: Cluster) -> None:
    api = cluster.api
    await api.create(CRD_PATH, crd(versions=("v1", "v2")))
    got = await established(api, "widgets.example.com")
    new = copy.deepcopy(got)
    for v in new["spec"]["versions"]:
        v["storage"] = v["name"] == "v2"
    reply = await api.request("PUT", f"{CRD_PATH}/widgets.example.com", new)
    assert reply.status == 200, reply.body

    async def check() -> Any:
        got = (await api.request("GET", f"{CRD_PATH}/widgets.example.com")).json()
        return got["status"]["storedVersions"] == ["v1", "v2"]
    await until(check, "storedVersions v1, v2")


async def test_name_conflicts_within_a_group(cluster: Cluster) -> None:
    api = cluster.api
    await api.create(CRD_PATH, crd(shortNames=["wg"]))
    await established(api, "widgets.example.com")
    # Another CRD of the group asking for the plural the first accepted as a short name, and its kind.
    other = crd("wg", kind="Widget")
    other["spec"]["names"]["singular"] = "gadget"
    assert (await api.create(CRD_PATH, other)).status == 201

    async def refused() -> Any:
        got = (await api.request("GET", f"{CRD_PATH}/wg.example.com")).json()
        c = condition(got, "NamesAccepted")
        return got if c and c["status"] == "False" else None
    got = await until(refused, "wg.example.com's names refused")
    names = condition(got, "NamesAccepted")
    assert (names["reason"], names["message"]) == ("ListKindConflict", '"WidgetList" is already in use')
    est = condition(got, "Established")
    assert (est["status"], est["reason"], est["message"]) == ("False", "NotAccepted", "not all names are accepted")
    assert got["status"]["acceptedNames"]["plural"] == ""  # plural "wg" is in use too, so nothing is taken
    assert cluster.registry.table.get("example.com", "v1", "wg") is None
    # The same names in another group are fine.
    assert (await api.create(CRD_PATH, crd(group="other.io", shortNames=["wg"]))).status == 201
    await established(api, "widgets.other.io")
    # Freed when the first goes: the second is accepted then.
    assert (await api.request("DELETE", f"{CRD_PATH}/widgets.example.com")).status == 200
    await established(api, "wg.example.com")


def test_calculate_names_reasons() -> None:
    base = crd(shortNames=["a", "b"])
    assert calculate_names(base, {"widgets"}, set())[1] == ("False", "PluralConflict", '"widgets" is already in use')
    assert calculate_names(base, {"widget"}, set())[1] == ("False", "SingularConflict", '"widget" is already in use')
    assert calculate_names(base, {"a", "b"}, set())[1] == (
        "False", "ShortNamesConflict", '["a" is already in use, "b" is already in use]')
    base["spec"]["names"]["listKind"] = "WidgetList"
    assert calculate_names(base, set(), {"WidgetList"})[1] == ("False", "ListKindConflict",
                                                               '"WidgetList" is already in use')
    # A name already accepted stays accepted whoever else claims it.
    base["status"] = {"acceptedNames": {"plural": "widgets", "kind": "Widget"}}
    names, cond = calculate_names(base, {"widgets"}, {"Widget"})
    assert cond == ("True", "NoConflicts", "no conflicts found") and names["plural"] == "widgets"


async def test_conflict_with_a_built_in_resource(cluster: Cluster) -> None:
    api = cluster.api
    body = crd("leases", group="coordination.k8s.io", kind="Lease")
    body["metadata"]["annotations"] = {"api-approved.kubernetes.io": "unapproved, test only"}
    reply = await api.create(CRD_PATH, body)
    assert reply.status == 201, reply.body

    async def refused() -> Any:
        got = (await api.request("GET", f"{CRD_PATH}/leases.coordination.k8s.io")).json()
        c = condition(got, "NamesAccepted")
        return c if c and c["status"] == "False" else None
    c = await until(refused, "leases.coordination.k8s.io refused")
    # The last name checked wins, as kube's: the list kind after the kind.
    assert c["reason"] == "ListKindConflict" and c["message"] == '"LeaseList" is already in use'
    assert cluster.registry.table.get("coordination.k8s.io", "v1", "leases").kind == "Lease"


async def test_discovery_appears_and_disappears(cluster: Cluster) -> None:
    api = cluster.api
    await api.create(CRD_PATH, crd(versions=("v1alpha1", "v1", "v2beta1", "v1beta1"), storage="v1",
                                   shortNames=["wg"], categories=["all"]))
    await established(api, "widgets.example.com")
    groups = (await api.request("GET", "/apis")).json()["groups"]
    ours = next(g for g in groups if g["name"] == "example.com")
    assert [v["version"] for v in ours["versions"]] == ["v1", "v2beta1", "v1beta1", "v1alpha1"]
    assert ours["preferredVersion"] == {"groupVersion": "example.com/v1", "version": "v1"}
    group = (await api.request("GET", "/apis/example.com")).json()
    assert group["preferredVersion"]["version"] == "v1"
    listed = (await api.request("GET", "/apis/example.com/v1")).json()
    by_name = {r["name"]: r for r in listed["resources"]}
    assert by_name["widgets"]["shortNames"] == ["wg"] and by_name["widgets"]["categories"] == ["all"]
    assert by_name["widgets"]["singularName"] == "widget" and by_name["widgets"]["namespaced"] is True
    assert "widgets/status" in by_name
    agg = await api.request("GET", "/apis", headers={"accept": AGGREGATED})
    item = next(i for i in agg.json()["items"] if i["metadata"].get("name") == "example.com")
    assert [v["version"] for v in item["versions"]] == ["v1", "v2beta1", "v1beta1", "v1alpha1"]
    res = item["versions"][0]["resources"][0]
    assert (res["resource"], res["singularResource"], res["shortNames"], res["categories"]) == (
        "widgets", "widget", ["wg"], ["all"])
    assert [s["subresource"] for s in res["subresources"]] == ["status"]
    assert (await api.request("DELETE", f"{CRD_PATH}/widgets.example.com")).status == 200

    async def gone() -> bool:
        return (await api.request("GET", "/apis/example.com")).status == 404
    await until(gone, "example.com gone from discovery")
    assert all(g["name"] != "example.com" for g in (await api.request("GET", "/apis")).json()["groups"])
    assert (await api.request("GET", "/apis/example.com/v1")).status == 404
    assert (await api.request("GET", f"{CRD_PATH}/widgets.example.com")).status == 404


async def test_delete_crd_removes_its_objects_first(cluster: Cluster) -> None:
    api, registry = cluster.api, cluster.registry
    await api.create(CRD_PATH, crd())
    await established(api, "widgets.example.com")
    res = registry.table.get("example.com", "v1", "widgets")
    for ns in ("default", "kube-system"):
        for i in range(3):
            await registry.create(res, ns, {"apiVersion": "example.com/v1", "kind": "Widget",
                                            "metadata": {"name": f"w{i}", "namespace": ns}}, WriteOptions())
    # One made through the API as a client would.
    reply = await api.create("/apis/example.com/v1/namespaces/default/widgets",
                             {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "by-http"}})
    assert reply.status == 201, reply.body
    # One object held by a finalizer of its own: the CRD waits for it.
    await registry.create(res, "default", {"apiVersion": "example.com/v1", "kind": "Widget",
                                           "metadata": {"name": "held", "finalizers": ["example.com/hold"]}},
                          WriteOptions())
    seen: list[dict[str, Any]] = []

    async def watch_crd() -> None:
        async for _type, obj in registry.watch(CRDS, "", ListOptions(watch=True, resource_version="0")):
            if obj.get("metadata", {}).get("name") == "widgets.example.com":
                seen.append(obj)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch_crd)
        reply = await api.request("DELETE", f"{CRD_PATH}/widgets.example.com")
        assert reply.status == 200, reply.body
        assert CLEANUP_FINALIZER in reply.json()["metadata"]["finalizers"]

        async def terminating() -> Any:
            got = (await api.request("GET", f"{CRD_PATH}/widgets.example.com")).json()
            c = condition(got, "Terminating")
            return c if c and c["reason"] == "InstanceDeletionCheck" else None
        c = await until(terminating, "waiting for the held object")
        assert (c["status"], c["message"]) == ("True", "could not confirm zero CustomResources remaining: 1 remaining")
        # Every other object, in both namespaces, is gone already.
        left = listitems.objects((await registry.list(res, "", ListOptions())).items)
        assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in left] == [("default", "held")]
        # Release it: the CRD goes, and so do its resources.
        await registry.guaranteed_update(res, "default", "held",
                                         lambda o: {**o, "metadata": {**o["metadata"], "finalizers": []}},
                                         WriteOptions())

        async def gone() -> bool:
            return (await api.request("GET", f"{CRD_PATH}/widgets.example.com")).status == 404
        await until(gone, "the CRD deleted")
        nursery.cancel_scope.cancel()
    reasons = [(c["status"], c["reason"]) for o in seen for c in (o.get("status") or {}).get("conditions") or []
               if c["type"] == "Terminating"]
    assert ("True", "InstanceDeletionInProgress") in reasons
    assert ("False", "InstanceDeletionCompleted") in reasons
    # the controller stops serving the resource once its informer sees the CRD gone, a moment after

    async def unserved() -> bool:
        return registry.table.get("example.com", "v1", "widgets") is None
    await until(unserved, "the resource no longer served")
    assert (await registry.list(res, "", ListOptions())).items == []


async def test_restart_serves_a_stored_crd(nursery: trio.Nursery) -> None:
    first = await start(nursery)
    await first.api.create(CRD_PATH, crd(shortNames=["wg"]))
    await established(first.api, "widgets.example.com")
    # A second server over the same storage: served before the first request, with no write needed.
    second = await start(nursery, first.storage)
    assert second.registry.table.get("example.com", "v1", "widgets") is not None
    listed = (await second.api.request("GET", "/apis/example.com/v1")).json()
    assert [r["name"] for r in listed["resources"]] == ["widgets", "widgets/status"]


async def test_a_crd_that_cannot_be_built_does_not_stop_start_up(nursery: trio.Nursery,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    first = await start(nursery)
    await first.api.create(CRD_PATH, crd())
    await first.api.create(CRD_PATH, crd("gadgets", kind="Gadget"))
    await established(first.api, "gadgets.example.com")
    import kapi.controllers.crd as crdmod

    real = crdmod.crd_resources

    def broken(obj: dict[str, Any]) -> Any:
        if obj["metadata"]["name"] == "widgets.example.com":
            raise ValueError("no such schema")
        return real(obj)
    monkeypatch.setattr(crdmod, "crd_resources", broken)
    second = await start(nursery, first.storage)
    assert second.registry.table.get("example.com", "v1", "gadgets") is not None
    assert second.registry.table.get("example.com", "v1", "widgets") is None
    got = (await second.api.request("GET", f"{CRD_PATH}/widgets.example.com")).json()
    est = condition(got, "Established")
    assert (est["status"], est["reason"], est["message"]) == (
        "False", "InstallationFailed", "the resources cannot be built: no such schema")
