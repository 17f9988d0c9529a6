"""Writes store Go's shape, and validation and defaults still hold on it (issue 10)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api, api

__all__ = ["api"]

TEMPLATE = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


async def test_created_deployment_has_status_and_keeps_its_defaults(api: Api) -> None:
    path = "/apis/apps/v1/namespaces/default/deployments"
    reply = await api.create(path, {"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"app": "a"}}, "template": TEMPLATE}})
    assert reply.status == 201, reply.body
    dep = reply.json()
    assert dep["status"] == {}
    assert dep["spec"]["strategy"]["type"] == "RollingUpdate"  # defaulted into the zero struct
    assert dep["spec"]["replicas"] == 1
    assert dep["spec"]["template"]["metadata"]["creationTimestamp"] is None
    assert dep["metadata"]["creationTimestamp"]  # the server's, not the zero
    # the status subresource and a replace keep the shape
    reply = await api.request("PUT", f"{path}/d", {**dep, "spec": {**dep["spec"], "replicas": 2}})
    assert reply.status == 200, reply.body
    assert reply.json()["status"] == {}
    reply = await api.request("PATCH", f"{path}/d/status", {"status": {"replicas": 0, "readyReplicas": 1}},
                              content_type="application/merge-patch+json")
    assert reply.status == 200, reply.body
    assert reply.json()["status"] == {"readyReplicas": 1}


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/apis/apps/v1/namespaces/default/deployments", {"metadata": {"name": "nosel"}, "spec": {"template": TEMPLATE}},
     "spec.selector"),
    ("/api/v1/namespaces/default/pods", {"metadata": {"name": "noctr"}, "spec": {}}, "spec.containers"),
    ("/api/v1/namespaces/default/pods", {"metadata": {"name": "nullspec"}, "spec": None}, "spec.containers"),
])
async def test_nulls_for_missing_required_fields_are_still_422(api: Api, path: str, body: dict[str, Any],
                                                               field: str) -> None:
    reply = await api.create(path, body)
    assert reply.status == 422, reply.body
    assert field in {c.get("field") for c in reply.json()["details"]["causes"]}, reply.body


async def test_aggregated_clusterrole_has_null_rules(api: Api) -> None:
    reply = await api.create("/apis/rbac.authorization.k8s.io/v1/clusterroles", {
        "metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}})
    assert reply.status == 201, reply.body
    assert reply.json()["rules"] is None  # Go: a nil slice without omitempty
    assert (await api.request("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles")).status == 200


async def test_node_and_service_come_back_go_shaped(api: Api) -> None:
    node = await api.create("/api/v1/nodes", {"metadata": {"name": "n1"}})
    assert node.status == 201, node.body
    # the spec has only what TaintNodesByCondition (on by default) adds at creation
    assert node.json()["spec"] == {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}
    assert node.json()["status"]["nodeInfo"]["osImage"] == ""
    svc = await api.create("/api/v1/namespaces/default/services", {"metadata": {"name": "s"},
                                                                   "spec": {"ports": [{"port": 80}]}})
    assert svc.status == 201, svc.body
    out = svc.json()
    assert out["status"] == {"loadBalancer": {}}
    assert out["spec"]["ports"][0]["targetPort"] == 80  # defaulting reads the IntOrString zero as unset


async def test_job_and_cronjob_keep_generated_selector_and_status(api: Api) -> None:
    job = await api.create("/apis/batch/v1/namespaces/default/jobs", {"metadata": {"name": "j"}, "spec": {
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}})
    assert job.status == 201, job.body
    out = job.json()
    assert out["status"] == {}
    assert out["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"] == out["metadata"]["uid"]
    cj = await api.create("/apis/batch/v1/namespaces/default/cronjobs", {"metadata": {"name": "c"}, "spec": {
        "schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}}}})
    assert cj.status == 201, cj.body
    assert cj.json()["status"] == {}
    assert cj.json()["spec"]["jobTemplate"]["metadata"] == {"creationTimestamp": None}


async def test_configmap_is_unchanged(api: Api) -> None:
    reply = await api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "c"}, "data": {"a": ""}})
    assert reply.status == 201
    out = reply.json()
    assert set(out) == {"kind", "apiVersion", "metadata", "data"} and out["data"] == {"a": ""}


async def test_object_stored_before_go_shape_keeps_its_generation_on_a_label_patch(api: Api) -> None:
    """An object stored without Go's shape (an older kapi wrote it) takes it on its next write, and
    that write is not mistaken for a spec change."""
    from kapi.encoding import codec

    res = api.registry.table.get("apps", "v1", "deployments")
    assert res is not None
    old_shape = {"apiVersion": "apps/v1", "kind": "Deployment",
                 "metadata": {"name": "old", "namespace": "default", "uid": "u-1", "generation": 1,
                              "creationTimestamp": "2025-01-01T00:00:00Z"},
                 "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "a"}},
                          "template": {"metadata": {"labels": {"app": "a"}},
                                       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    await api.registry.storage.create(api.registry.key(res, "default", "old"), codec.encode_value(old_shape))
    path = "/apis/apps/v1/namespaces/default/deployments/old"
    reply = await api.request("PATCH", path, {"metadata": {"labels": {"x": "y"}}},
                              content_type="application/merge-patch+json")
    assert reply.status == 200, reply.body
    dep = reply.json()
    assert dep["metadata"]["generation"] == 1
    assert dep["status"] == {} and dep["metadata"]["labels"] == {"x": "y"}
