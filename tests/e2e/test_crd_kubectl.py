"""A custom resource's whole story with kubectl 1.33 and 1.27 against a real ``kapi serve`` (issue 14).

One test per kubectl version (each kubectl call is a process): apply a CRD with printer
columns, status and scale subresources, a selectableField and a CEL rule; wait for
Established; apply objects; get (the printer columns), get -o yaml, explain, a field
selector on the selectable field, the status subresource, scale, a CEL-refused object;
delete the CRD and its objects with it.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest
import yaml

from .conftest import Kubectl

pytestmark = pytest.mark.e2e


def crd_manifest(group: str) -> dict:
    """``widgets.<group>``; its short name is ``wdg`` + the group's first label (unique per test: kubectl
    caches discovery per server, and both kubectl versions' tests share one server)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                      "shortNames": [f"wdg{group.split('.')[0]}"], "categories": [f"cat{group.split('.')[0]}"]},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {
                    "type": "object", "description": "A Widget is a test object of kapi's end-to-end tests.",
                    "properties": {
                        "spec": {
                            "type": "object", "description": "What the widget should be.",
                            "x-kubernetes-validations": [
                                {"rule": "self.replicas <= 10", "message": "replicas must be at most 10"}],
                            "properties": {
                                "color": {"type": "string", "description": "The colour of the widget.",
                                          "enum": ["red", "green", "blue"]},
                                "replicas": {"type": "integer", "minimum": 0, "default": 1,
                                             "description": "How many copies."},
                            }},
                        "status": {"type": "object", "properties": {
                            "replicas": {"type": "integer"}, "ready": {"type": "boolean"},
                            "selector": {"type": "string"}}},
                    }}},
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                    "labelSelectorPath": ".status.selector"}},
                "selectableFields": [{"jsonPath": ".spec.color"}],
                "additionalPrinterColumns": [
                    {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
            }],
        },
    }


def widget(group: str, name: str, color: str, replicas: int | None = None) -> dict:
    spec: dict = {"color": color}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": name, "labels": {"app": name}},
            "spec": spec}


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.strip()]


def _whole_story(kubectl: Kubectl, namespace: str) -> None:
    group = f"w{uuid.uuid4().hex[:8]}.e2e.kapi.dev"
    crd_name = f"widgets.{group}"
    out = kubectl.run("apply", "-f", "-", input=yaml.safe_dump(crd_manifest(group)))
    assert f"customresourcedefinition.apiextensions.k8s.io/{crd_name} created" in out.stdout

    out = kubectl.run("wait", "--for", "condition=established", "--timeout=60s", f"crd/{crd_name}")
    assert f"customresourcedefinition.apiextensions.k8s.io/{crd_name} condition met" in out.stdout
    got = json.loads(kubectl.run("get", "crd", crd_name, "-o", "json").stdout)
    conds = {c["type"]: c["status"] for c in got["status"]["conditions"]}
    assert conds["NamesAccepted"] == "True" and conds["Established"] == "True"
    assert got["status"]["acceptedNames"]["kind"] == "Widget"
    assert got["status"]["storedVersions"] == ["v1"]

    # kubectl's discovery cache may lag a fresh group by a moment: retry apply until the kind is known.
    objects = yaml.safe_dump_all([widget(group, "a", "red", 2), widget(group, "b", "blue")])
    for _ in range(30):
        out = kubectl.run("apply", "-f", "-", input=objects, namespace=namespace, check=False)
        if out.returncode == 0 or "no matches for kind" not in out.stderr:
            break
        time.sleep(1)
    assert out.returncode == 0, out.stderr
    assert f"widget.{group}/a created" in out.stdout and f"widget.{group}/b created" in out.stdout

    rows = _rows(kubectl.run("get", f"widgets.{group}", namespace=namespace).stdout)
    assert rows[0] == ["NAME", "COLOR", "REPLICAS", "READY", "AGE"]
    assert [r[:3] for r in rows[1:]] == [["a", "red", "2"], ["b", "blue", "1"]]  # b's replicas defaulted
    rows = _rows(kubectl.run("get", f"wdg{group.split('.')[0]}", "-o", "wide", namespace=namespace).stdout)  # the short name
    assert rows[0][:2] == ["NAME", "COLOR"] and len(rows) == 3

    label = group.split(".")[0]
    rows = _rows(kubectl.run("api-resources", f"--api-group={group}").stdout)
    assert rows[1] == ["widgets", f"wdg{label}", f"{group}/v1", "true", "Widget"]
    rows = _rows(kubectl.run("get", f"cat{label}", namespace=namespace).stdout)  # the category
    assert [r[0] for r in rows[1:]] == ["a", "b"]  # one kind in the category: plain names

    doc = yaml.safe_load(kubectl.run("get", f"widgets.{group}", "a", "-o", "yaml", namespace=namespace).stdout)
    assert doc["apiVersion"] == f"{group}/v1" and doc["kind"] == "Widget"
    assert doc["metadata"]["namespace"] == namespace and doc["metadata"]["generation"] == 1
    assert doc["spec"] == {"color": "red", "replicas": 2}

    explained = kubectl.run("explain", "widgets.spec", f"--api-version={group}/v1").stdout
    assert "Widget" in explained and "What the widget should be." in explained
    assert "color" in explained and "The colour of the widget." in explained and "replicas" in explained

    # selectableFields: a field selector on .spec.color
    rows = _rows(kubectl.run("get", f"widgets.{group}", "--field-selector", "spec.color=blue",
                             namespace=namespace).stdout)
    assert [r[0] for r in rows[1:]] == ["b"]
    refused = kubectl.run("get", f"widgets.{group}", "--field-selector", "spec.size=1", namespace=namespace,
                          check=False)
    assert refused.returncode != 0 and "field label not supported" in refused.stderr

    # the status subresource: spec is not changed through it, generation does not move
    kubectl.run("patch", f"widgets.{group}", "a", "--subresource=status", "--type=merge", "-p",
                json.dumps({"status": {"ready": True, "replicas": 2, "selector": "app=a"}, "spec": {"color": "green"}}),
                namespace=namespace)
    doc = json.loads(kubectl.run("get", f"widgets.{group}", "a", "-o", "json", namespace=namespace).stdout)
    assert doc["status"] == {"ready": True, "replicas": 2, "selector": "app=a"}
    assert doc["spec"]["color"] == "red" and doc["metadata"]["generation"] == 1
    rows = _rows(kubectl.run("get", f"widgets.{group}", "a", namespace=namespace).stdout)
    assert rows[1][:4] == ["a", "red", "2", "true"]

    # the scale subresource
    out = kubectl.run("scale", f"widgets.{group}/a", "--replicas=5", namespace=namespace)
    assert f"widget.{group}/a scaled" in out.stdout
    doc = json.loads(kubectl.run("get", f"widgets.{group}", "a", "-o", "json", namespace=namespace).stdout)
    assert doc["spec"]["replicas"] == 5 and doc["metadata"]["generation"] == 2
    scale = json.loads(kubectl.run("get", "--raw",
                                   f"/apis/{group}/v1/namespaces/{namespace}/widgets/a/scale").stdout)
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 5} and scale["status"] == {"replicas": 2, "selector": "app=a"}

    # the CEL rule and the schema refuse objects with kube's messages
    bad = kubectl.run("apply", "-f", "-", input=yaml.safe_dump(widget(group, "bad", "red", 20)),
                      namespace=namespace, check=False)
    assert bad.returncode != 0
    assert 'The Widget "bad" is invalid' in bad.stderr and "replicas must be at most 10" in bad.stderr
    assert "spec: Invalid value" in bad.stderr
    bad = kubectl.run("apply", "-f", "-", input=yaml.safe_dump(widget(group, "bad", "pink")),
                      namespace=namespace, check=False)
    assert bad.returncode != 0 and 'The Widget "bad" is invalid' in bad.stderr
    assert 'spec.color: Unsupported value: "pink"' in bad.stderr
    assert kubectl.run("get", f"widgets.{group}", "bad", namespace=namespace, check=False).returncode != 0

    # deleting the CRD removes its objects, then the CRD, then the resource
    out = kubectl.run("delete", "crd", crd_name, "--timeout=60s")
    assert f'customresourcedefinition.apiextensions.k8s.io "{crd_name}" deleted' in out.stdout
    gone = kubectl.run("get", "crd", crd_name, check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    status, _, _ = kubectl.server.request("GET", f"/apis/{group}/v1/namespaces/{namespace}/widgets")
    assert status == 404
    status, _, _ = kubectl.server.request("GET", f"/apis/{group}")
    assert status == 404
    groups = json.loads(kubectl.run("get", "--raw", "/apis").stdout)
    assert group not in {g["name"] for g in groups["groups"]}
    # the objects went with it: the same CRD again serves an empty list
    kubectl.run("apply", "-f", "-", input=yaml.safe_dump(crd_manifest(group)))
    kubectl.run("wait", "--for", "condition=established", "--timeout=60s", f"crd/{crd_name}")
    status, _, text = kubectl.server.request("GET", f"/apis/{group}/v1/namespaces/{namespace}/widgets")
    assert status == 200 and json.loads(text)["items"] == []
    kubectl.run("delete", "crd", crd_name, "--timeout=60s")


def test_crd_story_kubectl_133(kubectl133: Kubectl, namespace: str) -> None:
    _whole_story(kubectl133, namespace)


def test_crd_story_kubectl_127(kubectl127: Kubectl, namespace: str) -> None:
    _whole_story(kubectl127, namespace)


def test_reapply_of_a_changed_custom_object(kubectl: Kubectl, namespace: str) -> None:
    """``kubectl apply -f`` of a changed object that exists: kubectl chooses the patch type from the server's
    OpenAPI (the PATCH ``consumes``); a custom kind's lists no strategic merge patch (kube's CRD builder), so
    kubectl sends a JSON merge patch (with strategic merge it got 415)."""
    group = f"r{uuid.uuid4().hex[:8]}.e2e.kapi.dev"
    crd_name = f"widgets.{group}"
    kubectl.run("apply", "-f", "-", input=yaml.safe_dump(crd_manifest(group)))
    try:
        kubectl.run("wait", "--for", "condition=established", "--timeout=60s", f"crd/{crd_name}")
        for _ in range(30):
            out = kubectl.run("apply", "-f", "-", input=yaml.safe_dump(widget(group, "b", "blue")),
                              namespace=namespace, check=False)
            if out.returncode == 0 or "no matches for kind" not in out.stderr:
                break
            time.sleep(1)
        assert out.returncode == 0, out.stderr
        out = kubectl.run("apply", "-f", "-", input=yaml.safe_dump(widget(group, "b", "blue", 3)),
                          namespace=namespace)
        assert f"widget.{group}/b configured" in out.stdout
        doc = json.loads(kubectl.run("get", f"widgets.{group}", "b", "-o", "json", namespace=namespace).stdout)
        assert doc["spec"] == {"color": "blue", "replicas": 3} and doc["metadata"]["generation"] == 2
        out = kubectl.run("apply", "-f", "-", input=yaml.safe_dump(widget(group, "b", "blue", 3)),
                          namespace=namespace)
        assert f"widget.{group}/b unchanged" in out.stdout
    finally:
        kubectl.run("delete", "crd", crd_name, "--timeout=60s", check=False)
