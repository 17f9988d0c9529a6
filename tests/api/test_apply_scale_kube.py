"""kube's TestScaleAllResources and TestScaleUpdateOnlyStatus (test/integration/apiserver/apply/scale_test.go):
the owners of ``.spec.replicas`` as applies, merge patches and PUTs of the ``scale`` subresource and of
the parent move it between managers, for every kind with a ``scale`` subresource."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api
from tests.api.test_apply import apply

MERGE = "application/merge-patch+json"
SCALABLE = [("apps/v1", "Deployment", "deployments"), ("apps/v1", "StatefulSet", "statefulsets"),
            ("apps/v1", "ReplicaSet", "replicasets"), ("v1", "ReplicationController", "replicationcontrollers")]


def valid(api_version: str, kind: str) -> dict[str, Any]:
    labels = {"app": "nginx"}
    selector: dict[str, Any] = labels if kind == "ReplicationController" else {"matchLabels": labels}
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "test"}, "spec": {
        "replicas": 1, "selector": selector, "template": {
            "metadata": {"labels": {"app": "nginx"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]}}}}


def scale(replicas: int) -> dict[str, Any]:
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": "test", "namespace": "default"},
            "spec": {"replicas": replicas}}


async def replicas_and_owners(api: Api, path: str) -> tuple[int, set[str]]:
    obj = (await api.request("GET", path)).json()
    owners = {e["manager"] for e in obj["metadata"].get("managedFields", [])
              if "f:replicas" in e.get("fieldsV1", {}).get("f:spec", {})}
    return obj["spec"]["replicas"], owners


@pytest.mark.parametrize(("api_version", "kind", "resource"), SCALABLE, ids=[k for _, k, _ in SCALABLE])
async def test_scale_all_resources(api: Api, api_version: str, kind: str, resource: str) -> None:
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    path = f"{prefix}/namespaces/default/{resource}/test"
    obj = valid(api_version, kind)
    assert (await apply(api, path, obj, manager="apply_test")).status == 201
    assert await replicas_and_owners(api, path) == (1, {"apply_test"})

    r = await api.request("PATCH", f"{path}/scale?fieldManager=scale_test", {"spec": {"replicas": 5}},
                          content_type=MERGE)
    assert r.status == 200, r.body
    assert await replicas_and_owners(api, path) == (5, {"scale_test"})

    # re-applying the original object conflicts: the replicas changed under another manager
    r = await apply(api, path, obj, manager="apply_test")
    assert r.status == 409, r.body
    assert (await apply(api, path, obj, manager="apply_test", extra="&force=true")).status == 200
    assert await replicas_and_owners(api, path) == (1, {"apply_test"})

    # an apply of a Scale with other replicas conflicts with the parent's applier, until forced
    r = await apply(api, f"{path}/scale", scale(17), manager="apply_scale")
    assert r.status == 409 and "apply_test" in r.json()["message"], r.body
    r = await apply(api, f"{path}/scale", scale(17), manager="apply_scale", extra="&force=true")
    assert r.status == 200, r.body
    assert await replicas_and_owners(api, path) == (17, {"apply_scale"})

    # a PUT of the Scale takes the replicas; an apply of the same value shares them
    r = await api.request("PUT", f"{path}/scale?fieldManager=replace_test", scale(7))
    assert r.status == 200, r.body
    assert await replicas_and_owners(api, path) == (7, {"replace_test"})
    assert (await apply(api, f"{path}/scale", scale(7), manager="co_owning_test")).status == 200
    assert await replicas_and_owners(api, path) == (7, {"replace_test", "co_owning_test"})

    # scaling again leaves a single owner
    r = await api.request("PATCH", f"{path}/scale?fieldManager=scale_test", {"spec": {"replicas": 5}},
                          content_type=MERGE)
    assert r.status == 200, r.body
    assert await replicas_and_owners(api, path) == (5, {"scale_test"})


async def test_scale_update_only_status(api: Api) -> None:
    """A patch of the Scale's status changes neither the replicas nor their owner."""
    path = "/apis/apps/v1/namespaces/default/deployments/test"
    assert (await apply(api, path, valid("apps/v1", "Deployment"), manager="apply_test")).status == 201
    r = await api.request("PATCH", f"{path}/scale?fieldManager=scale_test", {"status": {"replicas": 42}},
                          content_type=MERGE)
    assert r.status == 200, r.body
    assert await replicas_and_owners(api, path) == (1, {"apply_test"})
