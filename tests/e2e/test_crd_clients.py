"""Custom objects through client libraries against a real ``kapi serve`` (issue 14).

The ``kubernetes`` Python client's CustomObjectsApi (create/get/list/patch/delete, the
status subresource), its dynamic client (discovery by apiVersion and kind, a strategic
merge patch refused 415 as kube refuses it for custom resources), and kapi.client's
informer watching a custom resource (add, update, delete).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
import trio
from kubernetes import client, config, dynamic
from kubernetes.client.rest import ApiException

from kapi.client import Client, Informer, Resource, load_kubeconfig

from .conftest import Server

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]


def make_crd(server: Server, scope: str = "Namespaced") -> str:
    """Create a fresh CRD ``gadgets.<random group>`` (status subresource) and wait until it serves; its group."""
    group = f"g{uuid.uuid4().hex[:8]}.e2e.kapi.dev"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {"group": group, "scope": scope,
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "properties": {
                                       "size": {"type": "integer", "minimum": 1},
                                       "note": {"type": "string"}}},
                                   "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                               }}}}]}}
    status, _, text = server.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                     json.dumps(crd).encode(), {"Content-Type": "application/json"})
    assert status == 201, text
    deadline = time.monotonic() + 60
    while True:
        _, _, text = server.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{group}")
        conds = {c["type"]: c["status"] for c in json.loads(text).get("status", {}).get("conditions") or []}
        if conds.get("Established") == "True" and server.request("GET", f"/apis/{group}/v1/gadgets")[0] == 200:
            return group
        assert time.monotonic() < deadline, f"the CRD did not become Established: {text!r}"
        time.sleep(0.1)


def drop_crd(server: Server, group: str) -> None:
    server.request("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{group}")


def gadget(group: str, name: str, size: int = 1, **labels: str) -> Obj:
    return {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": name, "labels": labels},
            "spec": {"size": size}}


@pytest.fixture
def api_client(server: Server) -> Any:
    return config.new_client_from_config(config_file=str(server.kubeconfig))


def test_custom_objects_api(server: Server, api_client: Any, namespace: str) -> None:
    group = make_crd(server)
    try:
        api = client.CustomObjectsApi(api_client)
        created = api.create_namespaced_custom_object(group, "v1", namespace, "gadgets",
                                                      gadget(group, "one", 2, tier="a"))
        assert created["metadata"]["uid"] and created["metadata"].get("generation") == 1
        assert created["metadata"]["namespace"] == namespace and created["spec"] == {"size": 2}
        api.create_namespaced_custom_object(group, "v1", namespace, "gadgets", gadget(group, "two", tier="b"))
        got = api.get_namespaced_custom_object(group, "v1", namespace, "gadgets", "one")
        assert got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

        listed = api.list_namespaced_custom_object(group, "v1", namespace, "gadgets")
        assert listed["kind"] == "GadgetList" and listed["apiVersion"] == f"{group}/v1"
        assert sorted(o["metadata"]["name"] for o in listed["items"]) == ["one", "two"]
        listed = api.list_namespaced_custom_object(group, "v1", namespace, "gadgets", label_selector="tier=b")
        assert [o["metadata"]["name"] for o in listed["items"]] == ["two"]
        listed = api.list_cluster_custom_object(group, "v1", "gadgets", field_selector="metadata.name=one")
        assert [o["metadata"]["name"] for o in listed["items"]] == ["one"]

        patched = api.patch_namespaced_custom_object(group, "v1", namespace, "gadgets", "one",
                                                     {"spec": {"note": "hi"}})  # a merge patch
        assert patched["spec"] == {"size": 2, "note": "hi"} and patched["metadata"]["generation"] == 2

        # status: only through the subresource; the main resource ignores status, the subresource spec
        ignored = api.patch_namespaced_custom_object(group, "v1", namespace, "gadgets", "one",
                                                     {"status": {"phase": "Nope"}})
        assert "status" not in ignored
        st = api.patch_namespaced_custom_object_status(group, "v1", namespace, "gadgets", "one",
                                                       {"status": {"phase": "Ready"}, "spec": {"size": 9}})
        assert st["status"] == {"phase": "Ready"} and st["spec"]["size"] == 2
        assert st["metadata"]["generation"] == 2
        got = api.get_namespaced_custom_object_status(group, "v1", namespace, "gadgets", "one")
        assert got["status"] == {"phase": "Ready"}

        with pytest.raises(ApiException) as exc:
            api.create_namespaced_custom_object(group, "v1", namespace, "gadgets", gadget(group, "bad", 0))
        assert exc.value.status == 422
        body = json.loads(exc.value.body)
        assert body["reason"] == "Invalid"
        assert [c["field"] for c in body["details"]["causes"]] == ["spec.size"]
        with pytest.raises(ApiException) as exc:
            api.create_namespaced_custom_object(group, "v1", namespace, "gadgets", gadget(group, "two"))
        assert exc.value.status == 409

        api.delete_namespaced_custom_object(group, "v1", namespace, "gadgets", "one")
        with pytest.raises(ApiException) as exc:
            api.get_namespaced_custom_object(group, "v1", namespace, "gadgets", "one")
        assert exc.value.status == 404
    finally:
        drop_crd(server, group)


def test_custom_objects_api_cluster_scope_and_deletecollection(server: Server, api_client: Any,
                                                              namespace: str) -> None:
    api = client.CustomObjectsApi(api_client)
    cluster = make_crd(server, "Cluster")
    try:
        made = api.create_cluster_custom_object(cluster, "v1", "gadgets", gadget(cluster, "c1", 1))
        assert "namespace" not in made["metadata"]
        assert api.get_cluster_custom_object(cluster, "v1", "gadgets", "c1")["metadata"]["uid"] == made["metadata"]["uid"]
        patched = api.patch_cluster_custom_object(cluster, "v1", "gadgets", "c1", {"metadata": {"labels": {"x": "y"}}})
        assert patched["metadata"]["labels"] == {"x": "y"} and patched["metadata"]["generation"] == 1
        status, _, _ = server.request("GET", f"/apis/{cluster}/v1/namespaces/{namespace}/gadgets")
        assert status == 404  # a cluster-scoped kind has no namespaced path
        api.delete_cluster_custom_object(cluster, "v1", "gadgets", "c1")
        assert api.list_cluster_custom_object(cluster, "v1", "gadgets")["items"] == []
    finally:
        drop_crd(server, cluster)
    group = make_crd(server)
    try:
        for i in range(3):
            api.create_namespaced_custom_object(group, "v1", namespace, "gadgets",
                                                gadget(group, f"n{i}", 1, keep="yes" if i == 0 else "no"))
        api.delete_collection_namespaced_custom_object(group, "v1", namespace, "gadgets", label_selector="keep=no")
        left = api.list_namespaced_custom_object(group, "v1", namespace, "gadgets")["items"]
        assert [o["metadata"]["name"] for o in left] == ["n0"]
    finally:
        drop_crd(server, group)


def test_dynamic_client(server: Server, api_client: Any, namespace: str) -> None:
    group = make_crd(server)
    try:
        dyn = dynamic.DynamicClient(api_client)
        gadgets = dyn.resources.get(api_version=f"{group}/v1", kind="Gadget")
        assert gadgets.name == "gadgets" and gadgets.namespaced and gadgets.group == group
        created = gadgets.create(body=gadget(group, "d1", 3), namespace=namespace)
        assert created.metadata.name == "d1" and created.spec.size == 3
        got = gadgets.get(name="d1", namespace=namespace)
        assert got.metadata.uid == created.metadata.uid
        assert [o.metadata.name for o in gadgets.get(namespace=namespace).items] == ["d1"]

        with pytest.raises(dynamic.exceptions.DynamicApiError) as exc:  # the dynamic client's default: SMP
            gadgets.patch(name="d1", namespace=namespace, body={"spec": {"size": 4}})
        assert exc.value.status == 415
        patched = gadgets.patch(name="d1", namespace=namespace, body={"spec": {"size": 4}},
                                content_type="application/merge-patch+json")
        assert patched.spec.size == 4
        patched = gadgets.patch(name="d1", namespace=namespace, body=[{"op": "replace", "path": "/spec/size",
                                                                       "value": 5}],
                                content_type="application/json-patch+json")
        assert patched.spec.size == 5

        status = dyn.resources.get(api_version=f"{group}/v1", kind="Gadget").subresources["status"]
        updated = status.patch(name="d1", namespace=namespace, body={"status": {"phase": "Up"}},
                               content_type="application/merge-patch+json")
        assert updated.status.phase == "Up"

        gadgets.delete(name="d1", namespace=namespace)
        assert gadgets.get(namespace=namespace).items == []
    finally:
        drop_crd(server, group)


@pytest.mark.parametrize("watch_list", [True, False], ids=["watch-list", "list-then-watch"])
async def test_informer_on_a_custom_resource(server: Server, namespace: str, watch_list: bool) -> None:
    group = await trio.to_thread.run_sync(make_crd, server)
    res = Resource(f"{group}/v1", "gadgets", "Gadget")
    seen: list[tuple[str, str, int]] = []

    def record(kind: str) -> Any:
        def handler(*objs: Obj) -> None:
            obj = objs[-1]
            seen.append((kind, obj["metadata"]["name"], obj["spec"]["size"]))
        return handler

    async def until(n: int) -> None:
        with trio.fail_after(30):
            while len(seen) < n:
                await trio.sleep(0.02)

    try:
        async with Client(load_kubeconfig(server.kubeconfig)) as c:
            await c.create(res, gadget(group, "before", 1), namespace)
            async with trio.open_nursery() as nursery:
                inf = Informer(c, res, namespace=namespace, watch_list=watch_list)
                inf.add_handler(on_add=record("ADDED"), on_update=record("MODIFIED"), on_delete=record("DELETED"))
                nursery.start_soon(inf.run)
                with trio.fail_after(30):
                    await inf.wait_for_sync()
                await until(1)
                await c.create(res, gadget(group, "after", 2), namespace)
                await until(2)
                await c.patch(res, "after", {"spec": {"size": 3}}, namespace, patch_type="merge")
                await until(3)
                await c.delete(res, "before", namespace)
                await until(4)
                assert seen == [("ADDED", "before", 1), ("ADDED", "after", 2), ("MODIFIED", "after", 3),
                                ("DELETED", "before", 1)]
                assert [o["metadata"]["name"] for o in inf.store.list()] == ["after"]
                nursery.cancel_scope.cancel()
    finally:
        await trio.to_thread.run_sync(drop_crd, server, group)


def test_string_printer_column_of_a_list_or_map_is_json(server: Server, namespace: str) -> None:
    """kube's CRD Table cell for a ``type: string`` column whose value is a list or map is its JSON (what
    kubectl's jsonpath prints: ``["a","b"]``, ``{"k":"v"}``), as kopf's examples/crd.yaml's Children column shows."""
    group = f"p{uuid.uuid4().hex[:8]}.e2e.kapi.dev"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"things.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                      "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}},
                                  "additionalPrinterColumns": [
                                      {"name": "List", "type": "string", "jsonPath": ".spec.list"},
                                      {"name": "Map", "type": "string", "jsonPath": ".spec.map"}]}]}}
    headers = {"Content-Type": "application/json"}
    status, _, text = server.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                     json.dumps(crd).encode(), headers)
    assert status == 201, text
    try:
        path = f"/apis/{group}/v1/namespaces/{namespace}/things"
        body = {"apiVersion": f"{group}/v1", "kind": "Thing", "metadata": {"name": "t"},
                "spec": {"list": ["a", "b"], "map": {"k": "v"}}}
        deadline = time.monotonic() + 60
        while (status := server.request("POST", path, json.dumps(body).encode(), headers)[0]) == 404:
            assert time.monotonic() < deadline, "the CRD was not served"
            time.sleep(0.1)
        assert status == 201
        _, _, text = server.request("GET", f"{path}/t", headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
        assert json.loads(text)["rows"][0]["cells"] == ["t", '["a","b"]', '{"k":"v"}']
    finally:
        server.request("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.{group}")
