"""go_roundtrip: objects as Go's decode and encode leave them (issue 10: value structs were dropped)."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from kapi.object.schema import go_roundtrip, load_builtin, load_go_types

SCHEMA = load_builtin()
DATA = Path(__file__).resolve().parents[2] / "kapi" / "object" / "schema" / "go_fields.json.gz"


def rt(gvk: tuple[str, str, str], obj: dict[str, Any]) -> dict[str, Any]:
    return go_roundtrip(SCHEMA, gvk, copy.deepcopy(obj))


TEMPLATE = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def test_deployment_gets_status_strategy_and_template_metadata() -> None:
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": TEMPLATE}}
    out = rt(("apps", "v1", "Deployment"), dep)
    assert out["status"] == {}
    assert out["spec"]["strategy"] == {}
    assert out["spec"]["template"]["metadata"] == {"labels": {"app": "a"}, "creationTimestamp": None}
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "c", "image": "nginx", "resources": {}}]
    assert out["metadata"] == {"name": "d", "creationTimestamp": None}


@pytest.mark.parametrize("kind", ["ReplicaSet", "StatefulSet", "DaemonSet"])
def test_apps_kinds_get_status(kind: str) -> None:
    out = rt(("apps", "v1", kind), {"metadata": {"name": "x"}, "spec": {"template": TEMPLATE}})
    assert isinstance(out["status"], dict)
    if kind == "StatefulSet":  # replicas and availableReplicas have no omitempty
        assert out["status"] == {"replicas": 0, "availableReplicas": 0}
    if kind == "DaemonSet":
        assert out["status"] == {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                                 "desiredNumberScheduled": 0, "numberReady": 0}


def test_deployment_status_zeros_are_dropped_but_pointer_zeros_stay() -> None:
    dep = {"metadata": {"name": "d", "generation": 0}, "spec": {"replicas": 0, "paused": False,
                                                               "minReadySeconds": 0, "template": TEMPLATE},
           "status": {"replicas": 0, "readyReplicas": 2, "terminatingReplicas": 0, "conditions": []}}
    out = rt(("apps", "v1", "Deployment"), dep)
    assert out["spec"]["replicas"] == 0  # *int32: an explicit zero is kept
    assert "paused" not in out["spec"] and "minReadySeconds" not in out["spec"]
    assert out["status"] == {"readyReplicas": 2, "terminatingReplicas": 0}
    assert "generation" not in out["metadata"]


def test_node_gets_spec_and_status() -> None:
    out = rt(("", "v1", "Node"), {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}})
    assert out["spec"] == {}
    status = out["status"]
    assert status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 0}}
    assert status["nodeInfo"]["machineID"] == "" and status["nodeInfo"]["kubeletVersion"] == ""
    assert "swap" not in status["nodeInfo"]  # a pointer


def test_service_status_and_ports() -> None:
    svc = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80, "nodePort": 0, "name": ""}]}}
    out = rt(("", "v1", "Service"), svc)
    assert out["status"] == {"loadBalancer": {}}
    # targetPort is an IntOrString value (always written; defaulting reads 0 as unset), nodePort an omitempty int
    assert out["spec"]["ports"] == [{"port": 80, "targetPort": 0}]


def test_pod_conditions_times_and_null_elements() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "stdin": False, "ports": None}]},
           "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                      "containerStatuses": [{"name": "c", "ready": True}]}}
    out = rt(("", "v1", "Pod"), pod)
    assert out["status"]["conditions"] == [
        {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": None}]
    cs = out["status"]["containerStatuses"][0]
    assert cs["restartCount"] == 0 and cs["image"] == "" and cs["imageID"] == "" and cs["ready"] is True
    assert cs["state"] == {} and cs["lastState"] == {}
    assert out["spec"]["containers"] == [{"name": "c", "resources": {}}]


def test_realistic_pod_is_already_go_shaped(pod_json: dict[str, Any]) -> None:
    # a pod as kube-apiserver wrote it: the round trip changes nothing
    assert rt(("", "v1", "Pod"), pod_json) == pod_json


def test_job_and_cronjob() -> None:
    job = rt(("batch", "v1", "Job"), {"metadata": {"name": "j"}, "spec": {"template": TEMPLATE}})
    assert job["status"] == {}
    assert job["spec"]["template"]["metadata"]["creationTimestamp"] is None
    cj = rt(("batch", "v1", "CronJob"), {"metadata": {"name": "c"}, "spec": {
        "schedule": "* * * * *", "jobTemplate": {"spec": {"template": TEMPLATE}}}})
    assert cj["status"] == {}
    assert cj["spec"]["jobTemplate"]["metadata"] == {"creationTimestamp": None}


def test_configmap_stays_as_it_is() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "creationTimestamp": "2026-01-01T00:00:00Z"},
          "data": {"a": ""}, "binaryData": {}}
    out = rt(("", "v1", "ConfigMap"), cm)
    del cm["binaryData"]  # an empty omitempty map
    assert out == cm
    assert "spec" not in out and "status" not in out


def test_nulls_follow_go() -> None:
    out = rt(("apps", "v1", "Deployment"), {"metadata": {"name": "d", "labels": None, "name2": 1},
                                           "spec": None, "status": None})
    assert out["spec"] == {"template": {"metadata": {"creationTimestamp": None}, "spec": {"containers": None}},
                           "strategy": {}, "selector": None}
    assert out["status"] == {}
    assert out["metadata"] == {"name": "d", "name2": 1, "creationTimestamp": None}  # unknown keys are not ours


def test_pointer_to_empty_struct_and_empty_pointer_string_are_kept() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"securityContext": {}, "containers": [{"name": "c"}],
                                               "hostname": ""}}
    out = rt(("", "v1", "Pod"), pod)
    assert out["spec"]["securityContext"] == {}
    assert "hostname" not in out["spec"]
    svc = rt(("", "v1", "Service"), {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 1, "appProtocol": ""}]}})
    assert svc["spec"]["ports"][0]["appProtocol"] == ""


def test_wrong_types_are_left_for_validation() -> None:
    out = rt(("apps", "v1", "Deployment"), {"metadata": "x", "spec": {"replicas": "3", "paused": 0}, "status": []})
    assert out["metadata"] == "x" and out["status"] == []
    assert out["spec"]["replicas"] == "3" and out["spec"]["paused"] == 0


def test_unknown_kinds_are_unchanged() -> None:
    obj = {"metadata": {"name": "x"}, "spec": {"a": 0}}
    assert rt(("example.com", "v1", "Widget"), obj) == obj


def test_roundtrip_is_idempotent() -> None:
    dep = {"metadata": {"name": "d"}, "spec": {"template": TEMPLATE}}
    once = rt(("apps", "v1", "Deployment"), dep)
    assert rt(("apps", "v1", "Deployment"), once) == once


def test_generated_table_facts() -> None:
    data = json.loads(gzip.decompress(DATA.read_bytes()))
    assert data["format"] == 1
    types = load_go_types()
    spec = types.types["io.k8s.api.apps.v1.DeploymentSpec"]
    assert spec["replicas"].kind == "ptr" and spec["template"].kind == "struct"
    assert spec["selector"].kind == "ptr" and not spec["selector"].omitempty
    assert types.types["io.k8s.api.core.v1.DaemonEndpoint"]["Port"].omitempty is False
    # inline structs are flattened as in JSON
    assert "hostPath" in types.types["io.k8s.api.core.v1.Volume"]
    assert types.value_omitempty("io.k8s.api.core.v1.Container") >= {"stdin", "stdinOnce", "tty", "image"}
    assert "terminatingReplicas" not in types.value_omitempty("io.k8s.api.apps.v1.DeploymentStatus")
