"""Defaults as kube-apiserver fills them, on realistic objects."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kapi.apis import BUILTIN
from kapi.object import defaults
from kapi.object.defaults.batch import generate_job_selector
from kapi.object.defaults import (default_cron_job, default_custom_resource_definition, default_daemon_set,
    default_deployment, default_job, default_namespace, default_node, default_persistent_volume,
    default_persistent_volume_claim, default_pod, default_role_binding, default_secret, default_service,
    default_stateful_set, fill_service_ip_families, image_pull_policy, pod_qos_class)
from kapi.registry.resources import Resource
from kapi.registry.strategy import Strategy

Obj = dict[str, Any]


def _builtin(resource: str, group: str) -> Resource:
    return next(r for r in BUILTIN if (r.resource, r.group) == (resource, group))


def _fresh_pod(pod_json: Obj) -> Obj:
    pod_json["metadata"].pop("resourceVersion")
    pod_json.pop("status")
    for ctr in pod_json["spec"]["containers"]:
        for key in ("imagePullPolicy", "terminationMessagePath", "terminationMessagePolicy"):
            ctr.pop(key, None)
    for key in ("dnsPolicy", "restartPolicy", "schedulerName", "terminationGracePeriodSeconds", "securityContext",
                "enableServiceLinks", "priority", "preemptionPolicy", "tolerations", "serviceAccountName",
                "serviceAccount"):
        pod_json["spec"].pop(key, None)
    return pod_json


def test_pod_defaults(pod_json: Obj) -> None:
    pod = _fresh_pod(pod_json)
    default_pod(pod, None)
    spec = pod["spec"]
    assert (spec["restartPolicy"], spec["dnsPolicy"], spec["schedulerName"]) == ("Always", "ClusterFirst",
                                                                              "default-scheduler")
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["securityContext"] == {}
    assert spec["enableServiceLinks"] is True
    # the service account, priority and default tolerations are admission's (kapi.admission.plugins)
    assert not {"priority", "preemptionPolicy", "serviceAccountName", "tolerations"} & set(spec)
    ctr = spec["containers"][0]
    assert ctr["terminationMessagePath"] == "/dev/termination-log"
    assert ctr["terminationMessagePolicy"] == "File"
    assert ctr["imagePullPolicy"] == "IfNotPresent"
    assert ctr["ports"][0]["protocol"] == "TCP"
    assert spec["volumes"][0]["configMap"]["defaultMode"] == 420
    assert pod["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}


def test_pod_minimal_and_idempotent() -> None:
    pod: Obj = {"metadata": {"name": "p", "namespace": "d"},
                "spec": {"containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 80}],
                                         "resources": {"limits": {"cpu": "1"}},
                                         "livenessProbe": {"httpGet": {"port": 80}}}],
                         "volumes": [{"name": "scratch"}],
                         "tolerations": [{"operator": "Exists"}]}}
    default_pod(pod, None)
    ctr = pod["spec"]["containers"][0]
    assert ctr["imagePullPolicy"] == "Always"
    assert ctr["resources"] == {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}
    assert ctr["livenessProbe"] == {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                                    "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
    assert pod["spec"]["volumes"] == [{"name": "scratch", "emptyDir": {}}]
    # a toleration of everything already covers not-ready and unreachable
    assert pod["spec"]["tolerations"] == [{"operator": "Exists"}]
    assert pod["status"]["qosClass"] == "Burstable"
    again = copy.deepcopy(pod)
    default_pod(again, pod)
    assert again == pod


def test_pod_update_skips_create_only_steps() -> None:
    pod: Obj = {"metadata": {"name": "p", "namespace": "d", "resourceVersion": "7"},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    default_pod(pod, None)
    assert "status" not in pod and "tolerations" not in pod["spec"]
    assert "serviceAccountName" not in pod["spec"]


@pytest.mark.parametrize(("image", "policy"), [
    ("nginx", "Always"), ("nginx:latest", "Always"), ("nginx:1.27", "IfNotPresent"),
    ("registry.example.com:5000/team/app:v2", "IfNotPresent"), ("registry.example.com:5000/team/app", "Always"),
    ("nginx@sha256:" + "a" * 64, "IfNotPresent"), ("nginx:latest@sha256:" + "a" * 64, "Always"),
    ("NGINX", "IfNotPresent"), ("", "IfNotPresent"),
])
def test_image_pull_policy(image: str, policy: str) -> None:
    assert image_pull_policy(image) == policy


def test_qos_classes() -> None:
    def pod(*resources: Obj) -> Obj:
        return {"spec": {"containers": [{"name": f"c{i}", "resources": r} for i, r in enumerate(resources)]}}

    assert pod_qos_class(pod({})) == "BestEffort"
    both = {"cpu": "500m", "memory": "1Gi"}
    assert pod_qos_class(pod({"limits": both, "requests": {"cpu": "0.5", "memory": "1024Mi"}})) == "Guaranteed"
    assert pod_qos_class(pod({"limits": both, "requests": both}, {})) == "Burstable"
    assert pod_qos_class(pod({"requests": {"memory": "1Gi"}})) == "Burstable"


def _template() -> Obj:
    return {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}


def test_deployment_defaults() -> None:
    dep: Obj = {"metadata": {"name": "web", "namespace": "d"},
                "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": _template()}}
    default_deployment(dep, None)
    spec = dep["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)
    pod_spec = spec["template"]["spec"]
    assert pod_spec["restartPolicy"] == "Always" and pod_spec["terminationGracePeriodSeconds"] == 30
    # pod-only defaults stay out of templates
    assert "enableServiceLinks" not in pod_spec and "tolerations" not in pod_spec
    recreate: Obj = {"spec": {"strategy": {"type": "Recreate"}, "template": _template()}}
    default_deployment(recreate, None)
    assert recreate["spec"]["strategy"] == {"type": "Recreate"}


def test_statefulset_and_daemonset_defaults() -> None:
    sts: Obj = {"metadata": {"name": "db", "namespace": "d"},
                "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "web"}}, "template": _template(),
                         "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                                   "spec": {"accessModes": ["ReadWriteOnce"],
                                                            "resources": {"requests": {"storage": "1Gi"}}}}]}}
    default_stateful_set(sts, None)
    spec = sts["spec"]
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert (spec["replicas"], spec["revisionHistoryLimit"]) == (1, 10)
    claim = spec["volumeClaimTemplates"][0]
    assert (claim["apiVersion"], claim["kind"]) == ("v1", "PersistentVolumeClaim")
    assert claim["spec"]["volumeMode"] == "Filesystem" and claim["status"] == {"phase": "Pending"}
    ds: Obj = {"spec": {"selector": {"matchLabels": {"app": "web"}}, "template": _template()}}
    default_daemon_set(ds, None)
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert ds["spec"]["revisionHistoryLimit"] == 10


def test_job_defaults_and_generated_selector() -> None:
    job: Obj = {"metadata": {"name": "pi", "namespace": "d", "uid": "u-1"},
                "spec": {"template": {"metadata": {"labels": {"app": "pi"}},
                                      "spec": {"restartPolicy": "Never",
                                               "containers": [{"name": "pi", "image": "perl"}]}}}}
    generate_job_selector(job)  # the strategy's PrepareForCreate, before the defaults
    default_job(job, None)
    spec = job["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert (spec["completionMode"], spec["suspend"], spec["podReplacementPolicy"]) == (
        "NonIndexed", False, "TerminatingOrFailed")
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}
    expected = {"app": "pi", "batch.kubernetes.io/controller-uid": "u-1", "batch.kubernetes.io/job-name": "pi",
                "controller-uid": "u-1", "job-name": "pi"}
    assert spec["template"]["metadata"]["labels"] == expected
    assert job["metadata"]["labels"] == expected
    manual: Obj = {"metadata": {"name": "m", "uid": "u-2"},
                   "spec": {"manualSelector": True, "selector": {"matchLabels": {"a": "b"}},
                            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}}}}
    generate_job_selector(manual)
    default_job(manual, None)
    assert manual["spec"]["selector"] == {"matchLabels": {"a": "b"}}
    assert manual["metadata"]["labels"] == {"a": "b"}  # SetDefaults_Job copies template labels


def test_cronjob_defaults() -> None:
    cj: Obj = {"spec": {"schedule": "0 * * * *",
                        "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}}}
    default_cron_job(cj, None)
    spec = cj["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"]) == ("Allow", False)
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)
    job_spec = spec["jobTemplate"]["spec"]
    assert "backoffLimit" not in job_spec  # Job defaults apply to Jobs, not templates
    assert job_spec["template"]["spec"]["dnsPolicy"] == "ClusterFirst"


def test_service_defaults() -> None:
    svc: Obj = {"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
    default_service(svc, None)
    spec = svc["spec"]
    assert (spec["type"], spec["sessionAffinity"], spec["internalTrafficPolicy"]) == ("ClusterIP", "None", "Cluster")
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    # a create's IP families are the strategy's, after its managedFields (kube's service REST)
    assert "ipFamilyPolicy" not in spec and "ipFamilies" not in spec
    fill_service_ip_families(svc)
    assert (spec["ipFamilyPolicy"], spec["ipFamilies"]) == ("SingleStack", ["IPv4"])
    assert "externalTrafficPolicy" not in spec and "clusterIP" not in spec
    assert svc["status"] == {"loadBalancer": {}}
    lb: Obj = {"spec": {"type": "LoadBalancer", "ports": [{"port": 443, "targetPort": "https"}]}}
    default_service(lb, None)
    assert (lb["spec"]["externalTrafficPolicy"], lb["spec"]["allocateLoadBalancerNodePorts"]) == ("Cluster", True)
    assert lb["spec"]["ports"][0]["targetPort"] == "https"
    headless: Obj = {"spec": {"clusterIP": "None"}}
    default_service(headless, None)
    fill_service_ip_families(headless)
    assert headless["spec"]["clusterIPs"] == ["None"]
    assert headless["spec"]["ipFamilyPolicy"] == "RequireDualStack"
    ext: Obj = {"spec": {"type": "ExternalName", "externalName": "example.com"}}
    default_service(ext, None)
    fill_service_ip_families(ext)
    assert "ipFamilies" not in ext["spec"] and "internalTrafficPolicy" not in ext["spec"]
    affinity: Obj = {"spec": {"sessionAffinity": "ClientIP", "ports": [{"port": 1}]}}
    default_service(affinity, None)
    assert affinity["spec"]["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}


def test_service_update_keeps_allocated_values() -> None:
    old: Obj = {"spec": {"type": "NodePort", "clusterIP": "10.0.0.5", "ports": [{"name": "http", "port": 80, "nodePort": 30080}]}}
    default_service(old, None)
    new: Obj = {"spec": {"type": "NodePort", "ports": [{"name": "http", "port": 80}]}}
    default_service(new, old)
    assert new["spec"]["clusterIP"] == "10.0.0.5" and new["spec"]["clusterIPs"] == ["10.0.0.5"]
    assert new["spec"]["ports"][0]["nodePort"] == 30080


def test_namespace_defaults() -> None:
    ns: Obj = {"metadata": {"name": "team-a"}}
    default_namespace(ns, None)
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert "spec" not in ns  # the kubernetes finalizer is the strategy's, after the create's managedFields
    assert ns["status"] == {"phase": "Active"}
    finalized: Obj = {"metadata": {"name": "team-a", "resourceVersion": "9"}, "spec": {"finalizers": []},
                      "status": {"phase": "Terminating"}}
    default_namespace(finalized, copy.deepcopy(finalized))
    assert finalized["spec"]["finalizers"] == [] and finalized["status"]["phase"] == "Terminating"


def test_storage_and_config_defaults() -> None:
    pvc: Obj = {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    default_persistent_volume_claim(pvc, None)
    assert pvc["spec"]["volumeMode"] == "Filesystem" and pvc["status"] == {"phase": "Pending"}
    pv: Obj = {"spec": {"hostPath": {"path": "/d"}}}
    default_persistent_volume(pv, None)
    assert (pv["spec"]["persistentVolumeReclaimPolicy"], pv["spec"]["volumeMode"]) == ("Retain", "Filesystem")
    assert pv["spec"]["hostPath"] == {"path": "/d", "type": ""}
    secret: Obj = {"data": {"a": "YQ=="}}
    default_secret(secret, None)
    assert secret["type"] == "Opaque"
    cm: Obj = {"data": {"a": "1"}}
    _builtin("configmaps", "").strategy.default(cm, None)
    assert cm == {"data": {"a": "1"}}


def test_rbac_and_crd_defaults() -> None:
    rb: Obj = {"roleRef": {"kind": "Role", "name": "view"},
               "subjects": [{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "default"}]}
    default_role_binding(rb, None)
    assert rb["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
    assert rb["subjects"] == [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"},
                              {"kind": "ServiceAccount", "name": "default"}]
    crd: Obj = {"spec": {"names": {"plural": "widgets", "kind": "Widget"}}}
    default_custom_resource_definition(crd, None)
    assert crd["spec"]["names"] == {"plural": "widgets", "kind": "Widget", "singular": "widget", "listKind": "WidgetList"}
    assert crd["spec"]["conversion"] == {"strategy": "None"}


def test_node_allocatable_and_unknown_kind() -> None:
    node: Obj = {"status": {"capacity": {"cpu": "4"}}}
    default_node(node, None)
    assert node["status"]["allocatable"] == {"cpu": "4"}
    widget: Obj = {"spec": {}}
    Strategy().default(widget, None)
    assert widget == {"spec": {}}


def test_every_defaulter_shares_the_create_or_update_rule() -> None:
    """issue 11: what apply_defaults did for every kind now belongs to every default_<kind> function."""
    per_kind = [name for name in defaults.__all__ if name.startswith("default_")]
    assert "default_pod" in per_kind and "default_custom_resource_definition" in per_kind
    assert [name for name in per_kind if not hasattr(getattr(defaults, name), "__wrapped__")] == []
    body: Any = ["not", "an", "object"]
    default_service(body, None)
    assert body == ["not", "an", "object"]
