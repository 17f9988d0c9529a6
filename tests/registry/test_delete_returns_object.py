"""DELETE answers with the object exactly for the kinds whose kube registry sets ReturnDeletedObject (issue 10)."""

from __future__ import annotations

import pytest

from kapi.apis import BUILTIN
from tests.api.conftest import Api, api

__all__ = ["api"]

# kubernetes pkg/registry/*/storage/storage.go: the served kinds with ReturnDeletedObject: true
RETURNS_OBJECT = {"namespaces", "pods", "services", "serviceaccounts", "persistentvolumes",
                  "persistentvolumeclaims"}


def test_the_table_matches_kube_registries() -> None:
    assert {r.resource for r in BUILTIN if r.strategy.delete_returns_object and not r.group} == RETURNS_OBJECT
    assert not [r.resource for r in BUILTIN if r.strategy.delete_returns_object and r.group]


@pytest.mark.parametrize(
    ("path", "body", "kind"),
    [
        ("/api/v1/namespaces/default/services",
         {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}, "Service"),
        ("/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "sa"}}, "ServiceAccount"),
        ("/api/v1/namespaces/default/persistentvolumeclaims",
         {"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                               "resources": {"requests": {"storage": "1Gi"}}}},
         "PersistentVolumeClaim"),
        ("/api/v1/persistentvolumes",
         {"metadata": {"name": "v"}, "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                               "hostPath": {"path": "/tmp/v"}}}, "PersistentVolume"),
    ],
)
async def test_delete_answers_the_object(api: Api, path: str, body: dict, kind: str) -> None:  # type: ignore[type-arg]
    created = await api.create(path, body)
    assert created.status == 201, created.body
    name = body["metadata"]["name"]
    reply = await api.request("DELETE", f"{path}/{name}")
    assert reply.status == 200, reply.body
    out = reply.json()
    assert out["kind"] == kind and out["metadata"]["name"] == name
    assert out["metadata"]["uid"] == created.json()["metadata"]["uid"]
    after = await api.request("GET", f"{path}/{name}")
    if kind in ("PersistentVolumeClaim", "PersistentVolume"):
        # StorageObjectInUseProtection's finalizer keeps it until the protection controller (not run
        # here) releases it
        assert after.status == 200 and after.json()["metadata"]["deletionTimestamp"]
    else:
        assert after.status == 404


async def test_configmap_delete_still_answers_a_status(api: Api) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    created = await api.create(path, {"metadata": {"name": "cm"}, "data": {"a": "b"}})
    assert created.status == 201
    reply = await api.request("DELETE", f"{path}/cm")
    assert reply.status == 200, reply.body
    out = reply.json()
    assert out["kind"] == "Status" and out["status"] == "Success"
    assert out["details"] == {"name": "cm", "kind": "configmaps", "uid": created.json()["metadata"]["uid"]}
