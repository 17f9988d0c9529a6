"""core/v1 ReplicationControllers (scale), LimitRanges and ResourceQuotas, and autoscaling v2/v1
HorizontalPodAutoscalers through the API (issue 14, builtins B): defaults, kube's 422s, Table columns,
the v1 <-> v2 round trip of one stored object."""

from __future__ import annotations

import json
from typing import Any, AsyncIterator

import pytest
import trio

from kapi.api.app import Health
from kapi.apis import BUILTIN
from kapi.config import Config
from kapi.controllers.namespace import NamespaceController
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.server.bootstrap import bootstrap
from kapi.server.serve import build_app
from kapi.storage.memory import MemoryStorage
from tests.api.conftest import TOKEN, Api

TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
NS = "/api/v1/namespaces/default"
HPA2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
HPA1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"


@pytest.fixture
async def api(nursery: trio.Nursery) -> AsyncIterator[Api]:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",),
                           enable_priority_and_fairness=False), registry, TOKEN, Health(ready=True))
    await bootstrap(registry, NamespaceController(registry))
    yield Api(app, registry)


def causes(reply: Any) -> list[tuple[str, str, str]]:
    assert reply.status == 422, reply.body
    return [(c["reason"], c["field"], c["message"]) for c in reply.json()["details"]["causes"]]


def columns(table: dict[str, Any]) -> list[str]:
    return [c["name"] for c in table["columnDefinitions"]]


def rc(name: str = "web", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"template": {"metadata": {"labels": {"app": name}},
                                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name}, "spec": body}


# ------------------------------------------------------------ ReplicationController


async def test_rc_defaults_table_and_scale(api: Api) -> None:
    r = await api.create(f"{NS}/replicationcontrollers", rc(replicas=2))
    assert r.status == 201, r.body
    obj = r.json()
    assert obj["spec"]["selector"] == {"app": "web"}
    assert obj["metadata"]["labels"] == {"app": "web"}
    assert obj["metadata"]["generation"] == 1
    assert obj["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    t = (await api.request("GET", f"{NS}/replicationcontrollers", headers=TABLE)).json()
    assert columns(t) == ["Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"]
    assert t["rows"][0]["cells"][:4] == ["web", 2, 0, 0]
    assert t["rows"][0]["cells"][5:] == ["c", "nginx", "app=web"]
    scale = (await api.request("GET", f"{NS}/replicationcontrollers/web/scale")).json()
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 2
    assert scale["status"]["selector"] == "app=web"
    scale["spec"]["replicas"] = 5
    r = await api.request("PUT", f"{NS}/replicationcontrollers/web/scale", scale)
    assert r.status == 200, r.body
    got = (await api.request("GET", f"{NS}/replicationcontrollers/web")).json()
    assert got["spec"]["replicas"] == 5 and got["metadata"]["generation"] == 2
    # status only by its subresource
    got["status"] = {"replicas": 5, "readyReplicas": 4}
    r = await api.request("PUT", f"{NS}/replicationcontrollers/web/status", got)
    assert r.status == 200, r.body
    t = (await api.request("GET", f"{NS}/replicationcontrollers/web", headers=TABLE)).json()
    assert t["rows"][0]["cells"][:4] == ["web", 5, 5, 4]


async def test_rc_refusals(api: Api) -> None:
    bad = rc()
    bad["spec"]["selector"] = {"app": "other"}
    bad["spec"]["replicas"] = -1
    got = causes(await api.create(f"{NS}/replicationcontrollers", bad))
    assert ("FieldValueInvalid", "spec.replicas", "Invalid value: -1: must be greater than or equal to 0") in got
    assert any(f == "spec.template.metadata.labels" and "`selector` does not match template `labels`" in m
               for _, f, m in got)


# ------------------------------------------------------------ LimitRange


async def test_limit_range_defaults_and_refusals(api: Api) -> None:
    lr = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
          "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}}]}}
    r = await api.create(f"{NS}/limitranges", lr)
    assert r.status == 201, r.body
    item = r.json()["spec"]["limits"][0]
    assert item["default"] == {"cpu": "2"}
    assert item["defaultRequest"] == {"cpu": "2", "memory": "64Mi"}
    bad = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "bad"},
           "spec": {"limits": [{"type": "Pod", "min": {"cpu": "2"}, "max": {"cpu": "1"}, "default": {"cpu": "1"}},
                               {"type": "Container", "max": {"storage": "1Gi"}},
                               {"type": "Nonsense"}]}}
    got = causes(await api.create(f"{NS}/limitranges", bad))
    assert ("FieldValueInvalid", "spec.limits[0].min[cpu]",
            'Invalid value: "2": min value 2 is greater than max value 1') in got
    assert ("FieldValueForbidden", "spec.limits[0].default",
            "Forbidden: may not be specified when `type` is 'Pod'") in got
    assert ("FieldValueInvalid", "spec.limits[1].max[storage]",
            'Invalid value: "storage": must be a standard resource for containers') in got
    assert ("FieldValueInvalid", "spec.limits[2].type",
            'Invalid value: "Nonsense": must be a standard limit type or fully qualified') in got
    names = [row["cells"][0] for row in (await api.request("GET", f"{NS}/limitranges", headers=TABLE)).json()["rows"]]
    assert names == ["lr"]


# ------------------------------------------------------------ ResourceQuota


async def test_resource_quota_status_and_table(api: Api) -> None:
    rq = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
          "spec": {"hard": {"pods": "10", "requests.cpu": "4", "limits.memory": "8Gi"}},
          "status": {"hard": {"pods": "99"}}}
    r = await api.create(f"{NS}/resourcequotas", rq)
    assert r.status == 201, r.body
    assert r.json().get("status", {}) == {}  # reset on create: the status subresource owns it
    obj = r.json()
    obj["status"] = {"hard": obj["spec"]["hard"], "used": {"pods": "3", "requests.cpu": "500m"}}
    r = await api.request("PUT", f"{NS}/resourcequotas/q/status", obj)
    assert r.status == 200, r.body
    t = (await api.request("GET", f"{NS}/resourcequotas/q", headers=TABLE)).json()
    assert columns(t) == ["Name", "Age", "Request", "Limit"]
    assert t["rows"][0]["cells"][2:] == ["pods: 3/10, requests.cpu: 500m/4", "limits.memory: 0/8Gi"]


async def test_resource_quota_refusals(api: Api) -> None:
    rq = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
          "spec": {"hard": {"pods": "1.5", "cpu": "-1", "widgets": "3"}, "scopes": ["Sometimes"]}}
    got = causes(await api.create(f"{NS}/resourcequotas", rq))
    assert ("FieldValueInvalid", "spec.hard[pods]", 'Invalid value: "1.5": must be an integer') in got
    assert ("FieldValueInvalid", "spec.hard[cpu]", 'Invalid value: "-1": must be greater than or equal to 0') in got
    assert ("FieldValueInvalid", "spec.hard[widgets]",
            'Invalid value: "widgets": must be a standard resource for quota') in got
    assert any(f == "spec.scopes" and m.endswith("unsupported scope") for _, f, m in got)


# ------------------------------------------------------------ HorizontalPodAutoscaler


def hpa_v1(name: str = "web", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                            "maxReplicas": 5}
    body.update(spec)
    return {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
            "spec": body}


def hpa_v2(name: str = "web", **spec: Any) -> dict[str, Any]:
    obj = hpa_v1(name, **spec)
    obj["apiVersion"] = "autoscaling/v2"
    return obj


async def test_hpa_v2_defaults_and_table(api: Api) -> None:
    r = await api.create(HPA2, hpa_v2(behavior={"scaleDown": {"stabilizationWindowSeconds": 60}}))
    assert r.status == 201, r.body
    spec = r.json()["spec"]
    assert spec["minReplicas"] == 1
    assert spec["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    assert spec["behavior"]["scaleUp"] == {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]}
    assert spec["behavior"]["scaleDown"] == {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
        {"type": "Percent", "value": 100, "periodSeconds": 15}]}
    for path in (HPA2, HPA1):
        t = (await api.request("GET", path, headers=TABLE)).json()
        assert columns(t) == ["Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"]
        assert t["rows"][0]["cells"][:6] == ["web", "Deployment/web", "cpu: <unknown>/80%", 1, 5, 0]


async def test_hpa_v1_to_v2_and_back(api: Api) -> None:
    r = await api.create(HPA1, hpa_v1(targetCPUUtilizationPercentage=50, minReplicas=2))
    assert r.status == 201, r.body
    assert r.json()["apiVersion"] == "autoscaling/v1"
    assert r.json()["spec"]["targetCPUUtilizationPercentage"] == 50
    v2 = (await api.request("GET", f"{HPA2}/web")).json()
    assert v2["apiVersion"] == "autoscaling/v2"
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]
    assert "targetCPUUtilizationPercentage" not in v2["spec"]
    # v2 adds a metric v1 cannot express: v1 carries it in the annotation, and a v1 update keeps it
    pods_metric = {"type": "Pods", "pods": {"metric": {"name": "qps"},
                                            "target": {"type": "AverageValue", "averageValue": "10"}}}
    v2["spec"]["metrics"].append(pods_metric)
    r = await api.request("PUT", f"{HPA2}/web", v2)
    assert r.status == 200, r.body
    v1 = (await api.request("GET", f"{HPA1}/web")).json()
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 50
    annotation = json.loads(v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"])
    assert annotation == [{"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}}]
    v1["spec"]["maxReplicas"] = 7
    r = await api.request("PUT", f"{HPA1}/web", v1)
    assert r.status == 200, r.body
    v2 = (await api.request("GET", f"{HPA2}/web")).json()
    assert v2["spec"]["maxReplicas"] == 7
    assert len(v2["spec"]["metrics"]) == 2
    assert "annotations" not in v2["metadata"]  # the round-trip annotations are not stored
    # status written in v2 is seen in v1
    # (after the v1 update the metrics are in kube's v1 conversion order: the annotation's, then CPU)
    assert v2["spec"]["metrics"][0] == pods_metric
    v2["status"] = {"currentReplicas": 3, "desiredReplicas": 3, "currentMetrics": [
        {"type": "Pods", "pods": {"metric": {"name": "qps"}, "current": {"averageValue": "7"}}},
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 42}}}],
        "conditions": [{"type": "AbleToScale", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    r = await api.request("PUT", f"{HPA2}/web/status", v2)
    assert r.status == 200, r.body
    v1 = (await api.request("GET", f"{HPA1}/web")).json()
    assert v1["status"]["currentCPUUtilizationPercentage"] == 42 and v1["status"]["currentReplicas"] == 3
    assert "autoscaling.alpha.kubernetes.io/conditions" in v1["metadata"]["annotations"]
    t = (await api.request("GET", f"{HPA1}/web", headers=TABLE)).json()
    assert t["rows"][0]["cells"][2] == "7/10, cpu: 42%/50%"
    # the list in each version
    items = (await api.request("GET", HPA1)).json()["items"]
    assert [(i["spec"]["targetCPUUtilizationPercentage"], i["spec"]["maxReplicas"]) for i in items] == [(50, 7)]
    items = (await api.request("GET", HPA2)).json()["items"]
    assert [len(i["spec"]["metrics"]) for i in items] == [2]


async def test_hpa_v1_without_target_gets_cpu_80(api: Api) -> None:
    r = await api.create(HPA1, hpa_v1())
    assert r.status == 201, r.body
    assert r.json()["spec"]["targetCPUUtilizationPercentage"] == 80
    assert "annotations" not in r.json()["metadata"]


async def test_hpa_refusals(api: Api) -> None:
    bad = hpa_v2(minReplicas=0, maxReplicas=0, metrics=[
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 0}}},
        {"type": "Bogus"}])
    bad["spec"]["scaleTargetRef"] = {"name": "web"}
    got = causes(await api.create(HPA2, bad))
    assert ("FieldValueRequired", "spec.scaleTargetRef.kind", "Required value") in got
    assert ("FieldValueInvalid", "spec.minReplicas", "Invalid value: 0: must be greater than or equal to 1") in got
    assert ("FieldValueInvalid", "spec.maxReplicas", "Invalid value: 0: must be greater than 0") in got
    assert ("FieldValueInvalid", "spec.metrics[0].resource.target.averageUtilization",
            "Invalid value: 0: must be greater than 0") in got
    assert any(f == "spec.metrics[1].type" and r == "FieldValueNotSupported" for r, f, _ in got)
    # v1 is validated as the v2 object it becomes, with v2's paths
    got = causes(await api.create(HPA1, hpa_v1(minReplicas=3, maxReplicas=2)))
    assert ("FieldValueInvalid", "spec.maxReplicas",
            "Invalid value: 2: must be greater than or equal to `minReplicas`") in got
