"""The managedFields of a create, in kube's order: its create handler records the decoded, defaulted body
under the request's field manager before mutating admission runs and before the store's
``PrepareForCreate``; what admission or the strategy adds afterwards is no manager's.

A namespace's ``kubernetes`` finalizer (the namespace strategy's PrepareForCreate), a pod's service
account, token volume, priority and tolerations (admission), a Job's generated selector (its
strategy's) and a service's IP families (its REST's) are in the object and not in the creating
manager's fields; the name label (the v1 defaults of a Namespace) and a pod spec's defaults are.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.api.conftest import Api
from tests.api.test_apply import apply

NS_LABEL = {"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}}


def _entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    entries = obj["metadata"]["managedFields"]
    for entry in entries:
        assert entry.pop("time")
    return entries


async def test_created_namespace_finalizer_is_no_managers(api: Api) -> None:
    r = await api.create("/api/v1/namespaces?fieldManager=kubectl-create",
                         {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mf-plain"}})
    assert r.status == 201, r.body
    created = r.json()
    assert created["spec"] == {"finalizers": ["kubernetes"]} and created["status"] == {"phase": "Active"}
    assert created["metadata"]["labels"] == {"kubernetes.io/metadata.name": "mf-plain"}
    expected = [{"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                 "fieldsType": "FieldsV1", "fieldsV1": NS_LABEL}]
    assert _entries(copy.deepcopy(created)) == expected
    got = (await api.request("GET", "/api/v1/namespaces/mf-plain")).json()
    assert got["spec"] == {"finalizers": ["kubernetes"]}
    assert _entries(got) == _entries(created)  # (the timestamps left out) the stored entries are the answered ones


async def test_created_namespace_with_finalizers_owns_them(api: Api) -> None:
    """Finalizers the body names are the manager's; the strategy appends ``kubernetes`` after them."""
    r = await api.create("/api/v1/namespaces?fieldManager=ctl", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mf-own"},
        "spec": {"finalizers": ["example.com/hold"]}})
    assert r.status == 201, r.body
    created = r.json()
    assert created["spec"]["finalizers"] == ["example.com/hold", "kubernetes"]
    assert _entries(created) == [{"manager": "ctl", "operation": "Update", "apiVersion": "v1",
                                  "fieldsType": "FieldsV1",
                                  "fieldsV1": {**NS_LABEL, "f:spec": {"f:finalizers": {}}}}]


async def test_dry_run_namespace_has_the_finalizer(api: Api) -> None:
    r = await api.create("/api/v1/namespaces?fieldManager=ctl&dryRun=All",
                         {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mf-dry"}})
    assert r.status == 201, r.body
    assert r.json()["spec"] == {"finalizers": ["kubernetes"]}
    assert _entries(r.json())[0]["fieldsV1"] == NS_LABEL


async def test_applied_namespace_owns_its_configuration_only(api: Api) -> None:
    """A server-side apply that creates a namespace owns what it applied: neither the defaulted name
    label nor the strategy's finalizer."""
    r = await apply(api, "/api/v1/namespaces/mf-applied", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mf-applied", "labels": {"team": "a"}}},
        manager="ssa")
    assert r.status == 201, r.body
    created = r.json()
    assert created["spec"] == {"finalizers": ["kubernetes"]}
    assert created["metadata"]["labels"] == {"team": "a", "kubernetes.io/metadata.name": "mf-applied"}
    assert _entries(created) == [{"manager": "ssa", "operation": "Apply", "apiVersion": "v1",
                                  "fieldsType": "FieldsV1",
                                  "fieldsV1": {"f:metadata": {"f:labels": {"f:team": {}}}}}]


async def test_updated_namespace_keeps_its_finalizers_unowned(api: Api) -> None:
    """PrepareForUpdate keeps the old spec.finalizers: an update that leaves them out keeps them, and owns
    only what it changed (they change through /finalize)."""
    r = await api.create("/api/v1/namespaces?fieldManager=kubectl-create",
                         {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mf-update"}})
    assert r.status == 201, r.body
    obj = r.json()
    obj["metadata"]["labels"]["team"] = "b"
    del obj["spec"]
    r = await api.request("PUT", "/api/v1/namespaces/mf-update?fieldManager=editor", obj)
    assert r.status == 200, r.body
    updated = r.json()
    assert updated["spec"] == {"finalizers": ["kubernetes"]}
    assert sorted(_entries(updated), key=lambda e: e["manager"]) == [
        {"manager": "editor", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {"f:labels": {"f:team": {}}}}},
        {"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
         "fieldsV1": NS_LABEL}]


async def test_created_pod_admission_fields_are_no_managers(api: Api) -> None:
    """kube's ``kubectl run``: the manager owns the pod spec's defaults, not the service account, its
    token volume and mount, the priority or the tolerations admission adds after the fields were recorded."""
    r = await api.create("/api/v1/namespaces/default/pods?fieldManager=kubectl-run", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "mf-pod", "labels": {"run": "mf-pod"}},
        "spec": {"containers": [{"name": "c", "image": "registry.example/app:1"}]}})
    assert r.status == 201, r.body
    created = r.json()
    assert created["spec"]["serviceAccountName"] == "default" and created["spec"]["volumes"]
    assert created["spec"]["containers"][0]["volumeMounts"]
    assert _entries(created) == [{"manager": "kubectl-run", "operation": "Update", "apiVersion": "v1",
                                  "fieldsType": "FieldsV1", "fieldsV1": {
        "f:metadata": {"f:labels": {".": {}, "f:run": {}}},
        "f:spec": {"f:containers": {'k:{"name":"c"}': {
            ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:resources": {},
            "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
            "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {},
            "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}}}}]


async def test_created_job_generated_selector_is_no_managers(api: Api) -> None:
    r = await api.create("/apis/batch/v1/namespaces/default/jobs?fieldManager=kubectl-create", {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "mf-job"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "c", "image": "registry.example/app:1"}]}}}})
    assert r.status == 201, r.body
    created = r.json()
    assert created["spec"]["selector"]["matchLabels"]
    assert "controller-uid" in created["spec"]["template"]["metadata"]["labels"]
    [entry] = _entries(created)
    assert entry["manager"] == "kubectl-create"
    spec = entry["fieldsV1"]["f:spec"]
    assert "f:selector" not in spec and "f:metadata" not in spec["f:template"], spec


async def test_created_service_ip_families_are_no_managers(api: Api) -> None:
    """kube's ``kubectl create service clusterip``: the service REST fills the IP families and allocates
    the ClusterIP after the fields were recorded; the v1 defaults (sessionAffinity, internalTrafficPolicy,
    a port's protocol and targetPort) are the manager's."""
    r = await api.create("/api/v1/namespaces/default/services?fieldManager=kubectl-create", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "mf-svc"},
        "spec": {"selector": {"app": "mf"}, "ports": [{"name": "80-80", "port": 80}], "type": "ClusterIP"}})
    assert r.status == 201, r.body
    created = r.json()
    spec = created["spec"]
    assert (spec["ipFamilyPolicy"], spec["ipFamilies"]) == ("SingleStack", ["IPv4"])
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert _entries(created) == [{"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                                  "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {
        "f:internalTrafficPolicy": {},
        "f:ports": {".": {}, 'k:{"port":80,"protocol":"TCP"}': {
            ".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}, "f:targetPort": {}}},
        "f:selector": {}, "f:sessionAffinity": {}, "f:type": {}}}}]
    # families the body names are its manager's
    r = await api.create("/api/v1/namespaces/default/services?fieldManager=ctl", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "mf-svc2"},
        "spec": {"ports": [{"port": 80}], "ipFamilyPolicy": "SingleStack"}})
    assert r.status == 201, r.body
    [entry] = _entries(r.json())
    assert "f:ipFamilyPolicy" in entry["fieldsV1"]["f:spec"] and "f:ipFamilies" not in entry["fieldsV1"]["f:spec"]
