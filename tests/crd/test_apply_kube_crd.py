"""kube's apply_crd_test.go (test/integration/apiserver/apply): apply on custom resources whose CRD has a
structural schema (a list-map of ports, finalizers as a set), and on one whose schema keeps every unknown
field (the v1 form of kube's TestApplyCRDNoSchema)."""

from __future__ import annotations

from typing import Any

import trio

from tests.api.conftest import Api
from tests.crd.serving_support import serve_crds

GROUP = "mygroup.example.com"
PATH = f"/apis/{GROUP}/v1beta1/noxus"
APPLY, MERGE = "application/apply-patch+yaml", "application/merge-patch+json"
AGENT = {"user-agent": "apiserver.test/v0.0.0 (linux/amd64) kubernetes/$Format"}  # the manager of merge patches

STRUCTURAL: dict[str, Any] = {"type": "object", "properties": {"spec": {
    "type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {
        "cronSpec": {"type": "string", "pattern": r"^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$"},
        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                  "items": {"type": "object", "required": ["containerPort", "protocol"], "properties": {
                      "containerPort": {"type": "integer", "format": "int32"}, "hostIP": {"type": "string"},
                      "hostPort": {"type": "integer", "format": "int32"}, "name": {"type": "string"},
                      "protocol": {"type": "string"}}}}}}}}
UNKNOWN_KEPT: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def noxu_crd(schema: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"noxus.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Cluster",
                     "names": {"plural": "noxus", "singular": "nonenglishnoxu", "kind": "WishIHadChosenNoxu",
                               "listKind": "NoxuItemList"},
                     "versions": [{"name": "v1beta1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}


def body(name: str, spec: str, metadata: str = "") -> bytes:
    return (f"apiVersion: {GROUP}/v1beta1\nkind: WishIHadChosenNoxu\nmetadata:\n  name: {name}\n{metadata}"
            f"spec:\n{spec}").encode()


async def apply(api: Api, name: str, raw: bytes, manager: str = "apply_test", force: bool = False) -> Any:
    query = f"?fieldManager={manager}" + ("&force=true" if force else "")
    return await api.request("PATCH", f"{PATH}/{name}{query}", raw, content_type=APPLY)


async def replicas_conflict_until_forced(api: Api, config: bytes) -> None:
    """Another manager changes the replicas: re-applying ``config`` is one conflict, until forced."""
    r = await api.request("PATCH", f"{PATH}/mytest", {"spec": {"replicas": 5}}, content_type=MERGE, headers=AGENT)
    assert r.status == 200 and r.json()["spec"]["replicas"] == 5
    r = await apply(api, "mytest", config)
    assert r.status == 409 and len(r.json()["details"]["causes"]) == 1, r.body
    r = await apply(api, "mytest", config, force=True)
    assert r.status == 200 and r.json()["spec"]["replicas"] == 1


async def test_apply_crd_structural_schema(nursery: trio.Nursery) -> None:
    api = await serve_crds(nursery, noxu_crd(STRUCTURAL))
    config = body("mytest", '  cronSpec: "* * * * */5"\n  replicas: 1\n  ports:\n  - name: x\n'
                  "    containerPort: 80\n    protocol: TCP\n", "  finalizers:\n  - test-finalizer\n")
    r = await apply(api, "mytest", config)
    assert r.status == 201, r.body
    obj = r.json()
    assert obj["metadata"]["finalizers"] == ["test-finalizer"]
    assert obj["spec"]["replicas"] == 1 and len(obj["spec"]["ports"]) == 1

    # another finalizer by a merge patch; finalizers are a set, so the same config applies again
    r = await api.request("PATCH", f"{PATH}/mytest", {"metadata": {"finalizers": ["test-finalizer", "another-one"]}},
                          content_type=MERGE, headers=AGENT)
    assert r.status == 200 and r.json()["metadata"]["finalizers"] == ["test-finalizer", "another-one"]
    r = await apply(api, "mytest", config)
    assert r.status == 200, r.body
    assert sorted(r.json()["metadata"]["finalizers"]) == ["another-one", "test-finalizer"]

    await replicas_conflict_until_forced(api, config)

    # a new applier changing an existing list item conflicts; adding its own item does not
    item = '  ports:\n  - name: "y"\n    containerPort: 80\n    protocol: TCP\n'
    r = await apply(api, "mytest", body("mytest", item), manager="apply_test_2")
    assert r.status == 409 and len(r.json()["details"]["causes"]) == 1, r.body
    assert r.json()["details"]["causes"][0]["field"] == '.spec.ports[containerPort=80,protocol="TCP"].name'
    r = await apply(api, "mytest", body("mytest", '  ports:\n  - name: "y"\n    containerPort: 8080\n'
                                                  "    protocol: TCP\n"), manager="apply_test_2")
    assert r.status == 200 and len(r.json()["spec"]["ports"]) == 2, r.body

    # a PUT does not create
    put = {"apiVersion": f"{GROUP}/v1beta1", "kind": "WishIHadChosenNoxu", "metadata": {"name": "should-not-exist"},
           "spec": {"replicas": 1}}
    assert (await api.request("PUT", f"{PATH}/should-not-exist?fieldManager=apply_test", put)).status == 404


async def test_apply_crd_keeping_unknown_fields(nursery: trio.Nursery) -> None:
    api = await serve_crds(nursery, noxu_crd(UNKNOWN_KEPT))
    config = body("mytest", "  replicas: 1\n")
    r = await apply(api, "mytest", config)
    assert r.status == 201 and r.json()["spec"]["replicas"] == 1, r.body
    await replicas_conflict_until_forced(api, config)
