"""Server-side apply across a CRD schema change (issue 16): a list that was a list-map when a manager
applied its items and is atomic now is owned as a whole by that manager (structured-merge-diff's
ReconcileFieldSetWithSchema), so another applier conflicts on the list itself."""

from __future__ import annotations

from typing import Any

import orjson

from tests.crd.test_lifecycle import CRD_PATH, Cluster, cluster, established, until  # noqa: F401 (fixture)

APPLY = "application/apply-patch+yaml"
NAME = "tagged.example.com"
OBJ = "/apis/example.com/v1/namespaces/default/tagged/t"


def tagged_crd(list_type: str) -> dict[str, Any]:
    tags: dict[str, Any] = {"type": "array", "x-kubernetes-list-type": list_type,
                            "items": {"type": "object", "required": ["name"],
                                      "properties": {"name": {"type": "string"}, "value": {"type": "string"}}}}
    if list_type == "map":
        tags["x-kubernetes-list-map-keys"] = ["name"]
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"tags": tags}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": NAME},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "tagged", "singular": "tagged", "kind": "Tagged"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}


def body(*tags: str) -> bytes:
    return orjson.dumps({"apiVersion": "example.com/v1", "kind": "Tagged", "metadata": {"name": "t"},
                         "spec": {"tags": [{"name": t, "value": "x"} for t in tags]}})


async def test_a_list_made_atomic_is_owned_whole_by_who_applied_its_items(cluster: Cluster) -> None:
    api = cluster.api
    assert (await api.create(CRD_PATH, tagged_crd("map"))).status == 201
    await established(api, NAME)
    r = await until(lambda: api.request("PATCH", f"{OBJ}?fieldManager=a", body("x"), content_type=APPLY),
                    "the custom resource served")
    assert r.status == 201, r.body
    # while the list is a list-map, b adds its own item without a conflict
    r = await api.request("PATCH", f"{OBJ}?fieldManager=b", body("y"), content_type=APPLY)
    assert r.status == 200, r.body
    assert [t["name"] for t in r.json()["spec"]["tags"]] == ["x", "y"]

    crd = (await api.request("GET", f"{CRD_PATH}/{NAME}")).json()
    crd["spec"] = tagged_crd("atomic")["spec"]
    assert (await api.request("PUT", f"{CRD_PATH}/{NAME}", orjson.dumps(crd))).status == 200

    async def conflicted() -> Any:
        r = await api.request("PATCH", f"{OBJ}?fieldManager=c", body("z"), content_type=APPLY)
        return r if r.status == 409 else None
    r = await until(conflicted, "the atomic list served")
    # a and b owned items of the list: now each owns the list, and c's change of it conflicts with both
    assert r.json()["message"] == ('Apply failed with 2 conflicts: conflicts with "a":\n- .spec.tags\n'
                                   'conflicts with "b":\n- .spec.tags'), r.json()["message"]
    r = await api.request("PATCH", f"{OBJ}?fieldManager=c&force=true", body("z"), content_type=APPLY)
    assert r.status == 200, r.body
    obj = r.json()
    assert obj["spec"]["tags"] == [{"name": "z", "value": "x"}]
    fields = {e["manager"]: e["fieldsV1"] for e in obj["metadata"]["managedFields"]}
    assert fields == {"c": {"f:spec": {"f:tags": {}}}}


async def test_a_manager_of_another_crd_version_is_judged_by_that_versions_schema(cluster: Cluster) -> None:
    """Two served versions (no conversion webhook): a v1 manager's list-map item, changed by a v2 apply,
    conflicts with it, as kube types each manager's fields by its own version's schema."""
    api = cluster.api
    crd = tagged_crd("map")
    v1 = crd["spec"]["versions"][0]
    crd["spec"]["versions"].append({**v1, "name": "v2", "storage": False})
    assert (await api.create(CRD_PATH, crd)).status == 201
    await established(api, NAME)
    r = await until(lambda: api.request("PATCH", f"{OBJ}?fieldManager=a", body("x"), content_type=APPLY),
                    "the custom resource served")
    assert r.status == 201, r.body
    v2_obj = "/apis/example.com/v2/namespaces/default/tagged/t"
    changed = orjson.dumps({"apiVersion": "example.com/v2", "kind": "Tagged", "metadata": {"name": "t"},
                            "spec": {"tags": [{"name": "x", "value": "changed"}]}})
    r = await until(lambda: api.request("PATCH", f"{v2_obj}?fieldManager=b", changed, content_type=APPLY),
                    "v2 served")
    assert r.status == 409, r.body
    assert r.json()["message"] == ('Apply failed with 1 conflict: conflict with "a": '
                                   '.spec.tags[name="x"].value'), r.json()["message"]
