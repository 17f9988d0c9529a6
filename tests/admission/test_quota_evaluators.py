"""Quota's measures: quantities summed and printed as kube's resource.Quantity (canonical form, the
first non-zero term's format), and each evaluator's usage, matching resources, scopes and constraints
as kube's pkg/quota/v1/evaluator/core."""

from __future__ import annotations

import datetime as dt

import pytest

from kapi.admission.quota.evaluators import (Evaluator, Evaluators, PersistentVolumeClaimEvaluator, PodEvaluator,
                                             ServiceEvaluator, object_count_name, parse_count_name)
from kapi.admission.quota.resources import (Quantity, add, less_than_or_equal, parse_list, pretty_print, render,
                                            subtract_non_negative)
from kapi.registry.admit import CREATE, DELETE, UPDATE


@pytest.mark.parametrize("raw, canonical", [
    ("1", "1"), ("1000m", "1"), ("500m", "500m"), ("0.5", "500m"), ("1Gi", "1Gi"), ("1536", "1536"),
    ("1.5Gi", "1536Mi"), ("2000", "2k"), ("1500", "1500"), ("1e3", "1e3"), ("0", "0"), (3, "3"),
    ("100Mi", "100Mi"), ("512", "512"), ("1024Ki", "1Mi"), ("0.1m", "100u"), ("1n", "1n"),
])
def test_canonical_form(raw: object, canonical: str) -> None:
    q = Quantity.parse(raw)
    assert q is not None and str(q) == canonical


def test_sums_keep_the_first_nonzero_format() -> None:
    used = parse_list({"memory": "0", "cpu": "500m"})
    total = add(used, parse_list({"memory": "1Gi", "cpu": "1500m", "pods": "1"}))
    assert render(total) == {"cpu": "2", "memory": "1Gi", "pods": "1"}
    assert str(Quantity.parse("1Gi") + Quantity.parse("512Mi")) == "1536Mi"
    assert Quantity.parse("bogus") is None


def test_subtract_less_than_and_pretty_print() -> None:
    delta = subtract_non_negative(parse_list({"a": "3", "b": "1"}), parse_list({"a": "1", "b": "2", "c": "1"}))
    assert render(delta) == {"a": "2", "b": "0", "c": "0"}
    ok, exceeded = less_than_or_equal(parse_list({"pods": "3", "cpu": "1", "x": "9"}),
                                      parse_list({"pods": "2", "cpu": "1"}))
    assert not ok and exceeded == ["pods"]
    assert pretty_print(parse_list({"pods": "1", "cpu": "100m"})) == "cpu=100m,pods=1"


def _pod(*containers: dict, init: tuple[dict, ...] = (), **spec: object) -> dict:
    return {"metadata": {"name": "p", "namespace": "ns", "resourceVersion": "5"},
            "spec": {"containers": list(containers), "initContainers": list(init), **spec}}


def _c(name: str, requests: dict | None = None, limits: dict | None = None, **extra: object) -> dict:
    res: dict = {}
    if requests:
        res["requests"] = requests
    if limits:
        res["limits"] = limits
    return {"name": name, "image": "i", "resources": res, **extra}


def test_pod_usage_sums_containers_init_max_and_overhead() -> None:
    pod = _pod(_c("a", {"cpu": "100m", "memory": "64Mi"}, {"cpu": "200m", "memory": "64Mi"}),
               _c("b", {"cpu": "300m", "hugepages-2Mi": "2Mi", "example.com/gpu": "1"}),
               init=(_c("i", {"cpu": "1", "memory": "32Mi"}),), overhead={"cpu": "10m"})
    usage = render(PodEvaluator().usage(pod))
    assert usage == {
        "count/pods": "1", "pods": "1",
        "cpu": "1010m", "requests.cpu": "1010m", "limits.cpu": "210m",
        "memory": "64Mi", "requests.memory": "64Mi", "limits.memory": "64Mi",
        "hugepages-2Mi": "2Mi", "requests.hugepages-2Mi": "2Mi", "requests.example.com/gpu": "1",
    }


def test_pod_usage_with_sidecars() -> None:
    pod = _pod(_c("a", {"cpu": "100m"}),
               init=(_c("side", {"cpu": "200m"}, restartPolicy="Always"), _c("i", {"cpu": "250m"})))
    # containers 100m + sidecar 200m = 300m; the init container runs beside the sidecar: 450m
    assert str(PodEvaluator().usage(pod)["requests.cpu"]) == "450m"


def test_pod_being_resized_counts_the_larger_of_spec_and_status() -> None:
    pod = _pod(_c("a", {"cpu": "100m"}, {"cpu": "1"}))
    pod["status"] = {"containerStatuses": [{"name": "a", "resources": {"requests": {"cpu": "300m"},
                                                                       "limits": {"cpu": "500m"}}}]}
    usage = render(PodEvaluator().usage(pod))
    assert usage["requests.cpu"] == "300m" and usage["limits.cpu"] == "1"


def test_terminal_and_expired_pods_count_only_as_objects() -> None:
    ev = PodEvaluator()
    done = _pod(_c("a", {"cpu": "1"}))
    done["status"] = {"phase": "Succeeded"}
    assert render(ev.usage(done)) == {"count/pods": "1"}
    deleting = _pod(_c("a", {"cpu": "1"}))
    deleting["metadata"].update(deletionTimestamp="2020-01-01T00:00:00Z", deletionGracePeriodSeconds=30)
    assert render(ev.usage(deleting)) == {"count/pods": "1"}
    early = dt.datetime(2020, 1, 1, 0, 0, 10, tzinfo=dt.timezone.utc)
    assert "requests.cpu" in ev.usage(deleting, early)


def test_pod_constraints_message() -> None:
    ev = PodEvaluator()
    pod = _pod(_c("b", {"cpu": "1"}), _c("a"), init=(_c("init", limits={"memory": "1Gi"}),))
    required = ev.matching_resources(["limits.cpu", "requests.memory", "pods", "limits.memory"])
    assert ev.constraints(required, pod) == ("must specify limits.cpu for: a,b,init; limits.memory for: a,b; "
                                             "requests.memory for: a,b,init")
    assert ev.constraints(["pods", "requests.storage"], pod) == ""


def test_pod_scopes() -> None:
    ev = PodEvaluator()
    best = _pod(_c("a"))
    burst = _pod(_c("a", {"memory": "1Mi"}), activeDeadlineSeconds=10, priorityClassName="high")
    ex = {"operator": "Exists"}
    assert ev.matches_scope({"scopeName": "BestEffort", **ex}, best)
    assert not ev.matches_scope({"scopeName": "BestEffort", **ex}, burst)
    assert ev.matches_scope({"scopeName": "NotBestEffort", **ex}, burst)
    assert ev.matches_scope({"scopeName": "Terminating", **ex}, burst)
    assert ev.matches_scope({"scopeName": "NotTerminating", **ex}, best)
    assert ev.matches_scope({"scopeName": "PriorityClass", **ex}, burst)
    assert not ev.matches_scope({"scopeName": "PriorityClass", **ex}, best)
    assert ev.matches_scope({"scopeName": "PriorityClass", "operator": "In", "values": ["high", "x"]}, burst)
    assert not ev.matches_scope({"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}, best)
    assert ev.matches_scope({"scopeName": "PriorityClass", "operator": "NotIn", "values": ["high"]}, best)
    assert ev.matches_scope({"scopeName": "PriorityClass", "operator": "DoesNotExist"}, best)
    cross = _pod(_c("a"), affinity={"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": {"topologyKey": "k", "namespaceSelector": {}}}]}})
    assert ev.matches_scope({"scopeName": "CrossNamespacePodAffinity", **ex}, cross)
    assert not ev.matches_scope({"scopeName": "CrossNamespacePodAffinity", **ex}, best)


def test_pod_matches_a_quota_by_hard_resources_and_scopes() -> None:
    ev = PodEvaluator()
    quota = {"spec": {"scopes": ["BestEffort"]}, "status": {"hard": {"pods": "2"}}}
    assert ev.matches(quota, _pod(_c("a")))
    assert not ev.matches(quota, _pod(_c("a", {"cpu": "1"})))
    assert not ev.matches({"status": {"hard": {"services": "1"}}}, _pod(_c("a")))
    assert ev.matching_resources(["requests.nvidia.com/gpu", "nvidia.com/gpu", "hugepages-1Gi", "count/pods",
                                  "requests.hugepages-2Mi", "secrets"]) == [
        "count/pods", "requests.nvidia.com/gpu", "hugepages-1Gi", "requests.hugepages-2Mi"]
    assert ev.handles(CREATE, "") and not ev.handles(UPDATE, "") and ev.handles(UPDATE, "resize")
    assert not ev.handles(CREATE, "binding")


def test_services() -> None:
    ev = ServiceEvaluator()
    ports = [{"port": 80}, {"port": 81, "nodePort": 30001}]
    assert render(ev.usage({"spec": {"type": "ClusterIP", "ports": ports}})) == {
        "count/services": "1", "services": "1", "services.loadbalancers": "0", "services.nodeports": "0"}
    assert render(ev.usage({"spec": {"type": "NodePort", "ports": ports}}))["services.nodeports"] == "2"
    lb = render(ev.usage({"spec": {"type": "LoadBalancer", "ports": ports, "allocateLoadBalancerNodePorts": False}}))
    assert lb["services.loadbalancers"] == "1" and lb["services.nodeports"] == "1"
    assert ev.handles(UPDATE, "") and not ev.handles(DELETE, "")
    # no scope matches a service: a scoped quota never counts services
    assert not ev.matches({"spec": {"scopes": ["BestEffort"]}, "status": {"hard": {"services": "1"}}}, {})


def test_claims_per_storage_class() -> None:
    ev = PersistentVolumeClaimEvaluator()
    pvc = {"spec": {"storageClassName": "gold", "resources": {"requests": {"storage": "1.5"}}},
           "status": {"allocatedResources": {"storage": "2Gi"}}}
    assert render(ev.usage(pvc)) == {
        "count/persistentvolumeclaims": "1", "persistentvolumeclaims": "1", "requests.storage": "2Gi",
        "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
        "gold.storageclass.storage.k8s.io/requests.storage": "2Gi"}
    beta = {"metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "silver"}},
            "spec": {"storageClassName": "gold", "resources": {"requests": {"storage": "1500m"}}}}
    assert render(ev.usage(beta))["silver.storageclass.storage.k8s.io/requests.storage"] == "2"
    assert ev.matching_resources(["gold.storageclass.storage.k8s.io/requests.storage", "requests.cpu",
                                  "gold.storageclass.storage.k8s.io/other"]) == [
        "gold.storageclass.storage.k8s.io/requests.storage"]


def test_object_counts_and_registry() -> None:
    assert object_count_name("apps", "deployments") == "count/deployments.apps"
    assert object_count_name("", "secrets") == "count/secrets"
    assert parse_count_name("count/deployments.apps") == ("apps", "deployments")
    assert parse_count_name("count/widgets.example.com") == ("example.com", "widgets")
    evs = Evaluators()
    cm = evs.get("", "configmaps")
    assert type(cm) is Evaluator and cm.names == ("count/configmaps", "configmaps")
    assert render(cm.usage({})) == {"count/configmaps": "1", "configmaps": "1"}
    assert evs.get("", "events") is None and evs.get("events.k8s.io", "events") is None
    found = evs.for_names(["count/deployments.apps", "secrets", "pods", "requests.storage"])
    assert set(found) == {("apps", "deployments"), ("", "secrets"), ("", "pods"), ("", "persistentvolumeclaims")}
    assert cm.handles(CREATE, "") and not cm.handles(UPDATE, "")


def _attrs(operation: str, resource: str, obj: dict, old: dict | None = None):  # type: ignore[no-untyped-def]
    from kapi.admission.plugin import Attributes
    from kapi.apis import BUILTIN
    from kapi.object.access import UserInfo
    from kapi.registry.admit import AdmissionRequest
    from kapi.registry.resources import ResourceTable

    res = ResourceTable(BUILTIN).get("", "v1", resource)
    assert res is not None
    return Attributes(AdmissionRequest(operation, res, "", "ns", "c", obj, old), UserInfo("u"), {}, [])


def test_an_update_is_charged_its_growth_only() -> None:
    from kapi.admission.plugins.resourcequota import QuotaRefused, check_request

    def claim(size: str) -> dict:
        return {"metadata": {"name": "c", "namespace": "ns", "resourceVersion": "3"},
                "spec": {"storageClassName": "gold", "resources": {"requests": {"storage": size}}}}

    quota = {"metadata": {"name": "q", "namespace": "ns"},
             "status": {"hard": {"requests.storage": "10Gi", "persistentvolumeclaims": "1"},
                        "used": {"requests.storage": "4Gi", "persistentvolumeclaims": "1"}}}
    ev = PersistentVolumeClaimEvaluator()
    [after] = check_request([quota], _attrs(UPDATE, "persistentvolumeclaims", claim("6Gi"), claim("4Gi")), ev)
    # 2Gi more; the claim itself was counted already (its count does not grow)
    assert after["status"]["used"] == {"persistentvolumeclaims": "1", "requests.storage": "6Gi"}
    [same] = check_request([quota], _attrs(UPDATE, "persistentvolumeclaims", claim("3Gi"), claim("4Gi")), ev)
    assert same is quota  # shrinking frees nothing at admission (the controller recounts)
    with pytest.raises(QuotaRefused) as refused:
        check_request([quota], _attrs(UPDATE, "persistentvolumeclaims", claim("11Gi"), claim("4Gi")), ev)
    assert refused.value.error.message == (
        'persistentvolumeclaims "c" is forbidden: exceeded quota: q, requested: requests.storage=7Gi, '
        'used: requests.storage=4Gi, limited: requests.storage=10Gi')
    with pytest.raises(QuotaRefused) as refused:  # a create is charged the whole claim
        check_request([quota], _attrs(CREATE, "persistentvolumeclaims", claim("1Gi")), ev)
    assert "requested: persistentvolumeclaims=1, used: persistentvolumeclaims=1" in refused.value.error.message
