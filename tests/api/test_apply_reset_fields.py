"""kube's TestApplyResetFields and TestApplyStatus (test/integration/apiserver/apply), over every built-in
resource with a ``status`` subresource: a manager applying to the main resource owns none of what the
strategy resets there (the status), one applying to ``/status`` none of what that resets (the spec and the
kept metadata); so a second manager applies a changed spec and status to ``/status`` without a conflict,
and the same two objects then conflict the other way round."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kapi.apis import BUILTIN
from kapi.object.patch import apply_merge_patch
from tests.api.conftest import Api
from tests.api.test_apply import apply
from tests.apis.test_builtin_groups_b_certs import csr_pem

NS = "reset-fields"
IMAGE, IMAGE2 = "registry.example/busybox:1", "registry.example/etcd:2"


def _pod_spec(container: str, **extra: Any) -> dict[str, Any]:
    return {"containers": [{"image": IMAGE, "name": container}], **extra}


def _template(labels: dict[str, str], container: str, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"labels": labels}, "spec": _pod_spec(container, **extra)}


def _containers(container: str) -> dict[str, Any]:
    return {"spec": {"containers": [{"image": IMAGE2, "name": container}]}}


_VAP_SPEC = {"validations": [{"expression": "object.metadata.name != ''"}], "matchConstraints": {
    "resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"],
                       "resources": ["deployments"]}]}}
_CRD_SPEC = {"group": "reset.example.com", "scope": "Namespaced",
             "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object"}}}]}
_CONDITION = {"type": "MyStatus", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z",
              "reason": "Testing", "message": "first"}

# resource -> (the created object, the change of its spec that conflicts with the first manager,
#              the first status, the second, conflicting one)
DATA: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "namespaces": ({"metadata": {"name": "reset-ns1"}, "spec": {"finalizers": ["kubernetes"]}},
                   {"spec": {"finalizers": ["kubernetes2"]}},
                   {"conditions": [_CONDITION]}, {"conditions": [{**_CONDITION, "status": "False"}]}),
    "pods": ({"metadata": {"name": "pod1"}, "spec": _pod_spec("container7")},
             {"spec": {"containers": [{"image": IMAGE2, "name": "container7"}]}},
             {"conditions": [{"type": "Ready", "status": "True"}]},
             {"conditions": [{"type": "Ready", "status": "False"}]}),
    "nodes": ({"metadata": {"name": "node1"}, "spec": {"unschedulable": True}}, {"spec": {"unschedulable": False}},
              {"conditions": [{"type": "Ready", "status": "True"}]},
              {"conditions": [{"type": "Ready", "status": "False"}]}),
    "services": ({"metadata": {"name": "service1"}, "spec": {"type": "LoadBalancer", "selector": {"test": "data"},
                                                             "ports": [{"port": 10000, "targetPort": 11000}]}},
                 {"spec": {"selector": {"test": "data2"}}},
                 {"loadBalancer": {"ingress": [{"ip": "127.0.0.1"}]}},
                 {"loadBalancer": {"ingress": [{"ip": "127.0.0.2"}]}}),
    "persistentvolumeclaims": ({"metadata": {"name": "pvc1"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2M"}}}},
        {"spec": {"resources": {"requests": {"storage": "21M"}}}},
        {"phase": "Pending"}, {"phase": "Bound"}),
    "persistentvolumes": ({"metadata": {"name": "pv1name"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "3M"}, "hostPath": {"path": "/tmp/test/"}}},
        {"spec": {"capacity": {"storage": "23M"}}}, {"message": "hello"}, {"message": "hello2"}),
    "replicationcontrollers": ({"metadata": {"name": "rc1"}, "spec": {
        "selector": {"new": "stuff"}, "template": _template({"new": "stuff"}, "container8")}},
        {"spec": {"selector": {"new": "stuff2"}}}, {"replicas": 1}, {"replicas": 2}),
    "resourcequotas": ({"metadata": {"name": "rq1name"}, "spec": {"hard": {"cpu": "5M"}}},
                       {"spec": {"hard": {"cpu": "25M"}}}, {"used": {"cpu": "5M"}}, {"used": {"cpu": "25M"}}),
    "deployments": ({"metadata": {"name": "deployment4"}, "spec": {
        "selector": {"matchLabels": {"f": "z"}}, "template": _template({"f": "z"}, "container6")}},
        {"metadata": {"labels": {"a": "c"}}, "spec": {"template": _containers("container6")}},
        {"replicas": 1}, {"replicas": 2}),
    "replicasets": ({"metadata": {"name": "rs3"}, "spec": {
        "selector": {"matchLabels": {"g": "h"}}, "template": _template({"g": "h"}, "container4")}},
        {"spec": {"template": _containers("container4")}}, {"replicas": 1}, {"replicas": 2}),
    "statefulsets": ({"metadata": {"name": "ss3"}, "spec": {
        "selector": {"matchLabels": {"a": "b"}}, "template": _template({"a": "b"}, "container6")}},
        {"spec": {"selector": {"matchLabels": {"a2": "b2"}}}}, {"replicas": 1}, {"replicas": 2}),
    "daemonsets": ({"metadata": {"name": "ds6"}, "spec": {
        "selector": {"matchLabels": {"a": "b"}}, "template": _template({"a": "b"}, "container6")}},
        {"spec": {"template": _containers("container6")}}, {"numberReady": 1}, {"numberReady": 2}),
    "horizontalpodautoscalers": ({"metadata": {"name": "hpa"}, "spec": {
        "maxReplicas": 3, "scaleTargetRef": {"kind": "Deployment", "name": "cross", "apiVersion": "apps/v1"}}},
        {"spec": {"maxReplicas": 23}}, {"currentReplicas": 5}, {"currentReplicas": 25}),
    "jobs": ({"metadata": {"name": "job1"}, "spec": {
        "manualSelector": True, "selector": {"matchLabels": {"controller-uid": "uid1"}},
        "template": _template({"controller-uid": "uid1"}, "container1", restartPolicy="Never")}},
        {"spec": {"template": _containers("container1")}}, {"active": 1}, {"active": 2}),
    "cronjobs": ({"metadata": {"name": "cjv1"}, "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {
        "template": _template({"controller-uid": "uid0"}, "container0", restartPolicy="Never")}}}},
        {"spec": {"jobTemplate": {"spec": {"template": _containers("container0")}}}},
        {"lastScheduleTime": "2020-01-01T00:00:00Z"}, {"lastScheduleTime": "2021-01-01T00:00:00Z"}),
    "certificatesigningrequests": ({"metadata": {"name": "csr2"}, "spec": {
        "signerName": "example.com/signer", "usages": ["any"], "request": "<a request>"}}, {},
        {"conditions": [_CONDITION]}, {"conditions": [{**_CONDITION, "status": "False"}]}),
    "ingresses": ({"metadata": {"name": "ingress3"}, "spec": {
        "defaultBackend": {"service": {"name": "service", "port": {"number": 5000}}}}},
        {"spec": {"defaultBackend": {"service": {"name": "service2"}}}},
        {"loadBalancer": {"ingress": [{"ip": "127.0.0.1"}]}}, {"loadBalancer": {"ingress": [{"ip": "127.0.0.2"}]}}),
    "poddisruptionbudgets": ({"metadata": {"name": "pdbv1"}, "spec": {
        "selector": {"matchLabels": {"anokkey": "anokvalue"}}}},
        {"spec": {"selector": {"matchLabels": {"anokkey2": "anokvalue"}}}},
        {"currentHealthy": 5, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0},
        {"currentHealthy": 25, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}),
    "volumeattachments": ({"metadata": {"name": "va3"}, "spec": {
        "attacher": "gce", "nodeName": "localhost", "source": {"persistentVolumeName": "pv3"}}},
        {"spec": {"nodeName": "localhost2"}}, {"attached": True}, {"attached": False}),
    "validatingadmissionpolicies": ({"metadata": {"name": "vap1"}, "spec": _VAP_SPEC},
                                    {"metadata": {"labels": {"a": "c"}}, "spec": {"failurePolicy": "Ignore"}},
                                    {"conditions": [_CONDITION]}, {"conditions": [{**_CONDITION, "status": "False"}]}),
    "apiservices": ({"metadata": {"name": "v1.reset.example.com"}, "spec": {
        "group": "reset.example.com", "version": "v1", "groupPriorityMinimum": 100, "versionPriority": 10,
        "service": {"namespace": "default", "name": "api"}}},
        {"metadata": {"labels": {"a": "c"}}, "spec": {"groupPriorityMinimum": 200}},
        {"conditions": [_CONDITION]}, {"conditions": [{**_CONDITION, "status": "False"}]}),
    "customresourcedefinitions": ({"metadata": {"name": "gadgets.reset.example.com"}, "spec": _CRD_SPEC},
                                  {"metadata": {"labels": {"a": "c"}}, "spec": {"group": "reset2.example.com"}},
                                  {"conditions": [_CONDITION]}, {"conditions": [{**_CONDITION, "status": "False"}]}),
    "flowschemas": ({"metadata": {"name": "fs1"}, "spec": {"priorityLevelConfiguration": {"name": "name1"}}},
                    {"metadata": {"labels": {"a": "c"}}, "spec": {"priorityLevelConfiguration": {"name": "name2"}}},
                    {"conditions": [_CONDITION]}, {"conditions": [{**_CONDITION, "status": "False"}]}),
    "prioritylevelconfigurations": ({"metadata": {"name": "plc1"}, "spec": {
        "type": "Limited", "limited": {"nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}}},
        {"metadata": {"labels": {"a": "c"}}, "spec": {"limited": {"nominalConcurrencyShares": 23}}},
        {"conditions": [_CONDITION]}, {"conditions": [{**_CONDITION, "status": "False"}]}),
}

# kube's noConflicts: a CSR's spec and status are both reset on the main resource, a namespace's spec
# is its finalizers, which apply on the main resource leaves alone: neither can conflict
NO_CONFLICTS = {"certificatesigningrequests", "namespaces"}

WITH_STATUS = [r for r in BUILTIN if "status" in r.subresources]


def test_every_resource_with_status_has_data() -> None:
    assert sorted({r.resource for r in WITH_STATUS}) == sorted(DATA)


@pytest.mark.parametrize("res", WITH_STATUS, ids=lambda r: f"{r.resource}.{r.version}.{r.group or 'core'}")
async def test_apply_reset_fields(api: Api, res: Any) -> None:
    if res.namespaced:
        r = await api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        assert r.status == 201, r.body
    stub, spec_change, status1, status2 = copy.deepcopy(DATA[res.resource])
    if res.resource == "certificatesigningrequests":
        stub["spec"]["request"] = csr_pem()[0]
    prefix = "/api/v1" if not res.group else f"/apis/{res.group}/{res.version}"
    path = f"{prefix}/namespaces/{NS}/{res.resource}" if res.namespaced else f"{prefix}/{res.resource}"
    name = stub["metadata"]["name"]
    obj1 = {"apiVersion": res.group_version, "kind": res.kind, **stub, "status": status1}
    obj2 = {**apply_merge_patch(obj1, spec_change), "status": status2}
    assert obj1 != obj2

    # TestApplyStatus: an apply creates the object, a forced apply of the status by another manager adds
    # that manager beside the first
    r = await apply(api, f"{path}/{name}", obj1, manager="fieldmanager1")
    assert r.status == 201, r.body
    # the second manager's apply to /status does not conflict: the first owns no status
    r = await apply(api, f"{path}/{name}/status", obj2, manager="fieldmanager2")
    assert r.status == 200, r.body
    managers = {(e["manager"], e.get("subresource", "")) for e in r.json()["metadata"].get("managedFields", [])}
    if res.resource == "certificatesigningrequests":  # spec and status reset on the main resource, the
        assert managers == set()                        # spec and conditions on /status: nothing is owned
    else:
        assert managers == {("fieldmanager1", ""), ("fieldmanager2", "status")}, managers
    if res.resource not in NO_CONFLICTS:
        # the second object's spec conflicts with the first manager's on the main resource ...
        r = await apply(api, f"{path}/{name}", obj2, manager="fieldmanager2")
        assert r.status == 409 and r.json()["message"].startswith("Apply failed with"), r.body
        assert all(c["message"].startswith('conflict with "fieldmanager1"') for c in r.json()["details"]["causes"])
        # ... and the first object's status with the second manager's on /status
        r = await apply(api, f"{path}/{name}/status", obj1, manager="fieldmanager1")
        assert r.status == 409 and r.json()["message"].startswith("Apply failed with"), r.body
        assert all(c["message"].startswith('conflict with "fieldmanager2" with subresource "status"')
                   for c in r.json()["details"]["causes"])
