"""The everyday kubectl verbs against a real ``kapi serve``, with kubectl 1.33 and 1.27."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest
import yaml

from .conftest import Kubectl

pytestmark = pytest.mark.e2e

KNOWN_GAPS: dict[str, str] = {}


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_version(kubectl: Kubectl) -> None:
    out = json.loads(kubectl.run("version", "-o", "json").stdout)
    assert out["serverVersion"]["major"] == "1"
    assert out["serverVersion"]["minor"] == "33"
    assert out["serverVersion"]["gitVersion"].startswith("v1.33.")


def test_api_resources(kubectl: Kubectl) -> None:
    out = kubectl.run("api-resources").stdout
    lines = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert "pods" in lines and "po" in lines["pods"]
    assert "deployments" in lines and "deploy" in lines["deployments"] and "apps/v1" in lines["deployments"]
    assert "customresourcedefinitions" in lines
    assert "leases" in lines
    namespaced = kubectl.run("api-resources", "--namespaced=false", "-o", "name").stdout.split()
    assert "namespaces" in namespaced and "nodes" in namespaced and "pods" not in namespaced


def test_namespace_create_get_describe_delete(kubectl: Kubectl) -> None:
    ns = _name("ns")
    manifest = json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    if kubectl.version == "1.27":
        kubectl.run("create", "namespace", ns)
    else:
        kubectl.run("create", "-f", "-", input=manifest)
    got = json.loads(kubectl.run("get", "namespace", ns, "-o", "json").stdout)
    assert got["status"]["phase"] == "Active"
    table = kubectl.run("get", "ns", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "STATUS", "AGE"]
    assert table[1].split()[:2] == [ns, "Active"]
    described = kubectl.run("describe", "namespace", ns).stdout
    assert f"Name:         {ns}" in described and "Active" in described
    kubectl.run("-n", ns, "create", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "inside"}, "data": {"a": "b"}}))
    out = kubectl.run("delete", "namespace", ns, "--timeout=60s")
    assert f'namespace "{ns}" deleted' in out.stdout
    gone = kubectl.run("get", "namespace", ns, check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr


_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
# One request or response as kubectl -v=8 logs it: `"Request" verb="POST" url="..." headers=<` then
# tab-indented `Name: value` lines up to ` >`.
_LOGGED = re.compile(r'"(Request|Response)"(?P<attrs>[^\n]*) headers=<\n(?P<headers>(?:\t[^\n]*\n)*) >')


def _logged_http(stderr: str) -> list[tuple[str, str, dict[str, str]]]:
    """(Request or Response, the line's attributes, its headers) of each exchange kubectl -v=8 logged."""
    return [(m[1], m["attrs"], dict(line.strip().split(": ", 1) for line in m["headers"].splitlines()))
            for m in _LOGGED.finditer(stderr)]


def _volatile(obj: dict[str, Any]) -> dict[str, Any]:
    """The object with its uid, resourceVersion and timestamps checked for form and replaced by placeholders."""
    md = obj["metadata"]
    assert _UID.fullmatch(md["uid"]) and md["resourceVersion"].isdigit(), md
    assert _RFC3339.fullmatch(md["creationTimestamp"]), md
    for entry in md.get("managedFields", []):
        assert _RFC3339.fullmatch(entry["time"]), entry
        entry["time"] = "<time>"
    md.update(uid="<uid>", resourceVersion="<rv>", creationTimestamp="<time>")
    return obj


def _create_namespace_133(kubectl133: Kubectl, *flags: str) -> tuple[str, dict[str, Any], str]:
    name = _name("pb")
    out = kubectl133.run("create", "namespace", name, "-o", "json", "-v=8", *flags)
    return name, json.loads(out.stdout), out.stderr


def test_kubectl_133_create_namespace_sends_protobuf_and_gets_the_object(kubectl133: Kubectl) -> None:
    """kubectl 1.33's ``create <type>`` subcommands POST a protobuf body (typed clients prefer protobuf);
    kapi answers 201 in protobuf, and the object is the one kube-apiserver makes."""
    name, created, log = _create_namespace_133(kubectl133)
    posts = [(kind, attrs, headers) for kind, attrs, headers in _logged_http(log)
             if kind == "Request" and 'verb="POST"' in attrs]
    assert len(posts) == 1, log
    _, attrs, headers = posts[0]
    assert "/api/v1/namespaces?fieldManager=kubectl-create&fieldValidation=Strict" in attrs
    assert headers["Content-Type"] == "application/vnd.kubernetes.protobuf"
    assert headers["Accept"] == "application/vnd.kubernetes.protobuf,application/json"
    assert '"Request Body" body=<\n\t00000000  6b 38 73 00' in log  # the protobuf envelope's magic, k8s\0
    responses = [(attrs, headers) for kind, attrs, headers in _logged_http(log) if kind == "Response"]
    assert len(responses) == 1 and 'status="201 Created"' in responses[0][0], log
    assert responses[0][1]["Content-Type"] == "application/vnd.kubernetes.protobuf"
    expected = {
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "uid": "<uid>", "resourceVersion": "<rv>", "creationTimestamp": "<time>",
                     "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }
    uid = created["metadata"]["uid"]
    assert _volatile(created) == expected
    got = json.loads(kubectl133.run("get", "namespace", name, "-o", "json").stdout)
    assert got["metadata"]["uid"] == uid and _volatile(got) == expected
    kubectl133.run("delete", "namespace", name, "--wait=false")


def test_kubectl_133_create_namespace_managed_fields(kubectl133: Kubectl) -> None:
    """kube-apiserver records the fields of the decoded, defaulted body (the name label) before the
    strategy's PrepareForCreate adds the ``kubernetes`` finalizer, so kubectl-create does not own it."""
    name, created, _ = _create_namespace_133(kubectl133, "--show-managed-fields")
    kubectl133.run("delete", "namespace", name, "--wait=false")
    assert _volatile(created)["metadata"]["managedFields"] == [{
        "apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kubectl-create", "operation": "Update",
        "time": "<time>",
        "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}},
    }]


def test_configmap_from_literals(kubectl127: Kubectl, namespace: str) -> None:
    kubectl127.run("create", "configmap", "lit", "--from-literal=a=1", "--from-literal=b=two", namespace=namespace)
    got = json.loads(kubectl127.run("get", "cm", "lit", "-o", "json", namespace=namespace).stdout)
    assert got["data"] == {"a": "1", "b": "two"}
    table = kubectl127.run("get", "cm", namespace=namespace).stdout.splitlines()
    assert table[0].split() == ["NAME", "DATA", "AGE"]
    row = next(line.split() for line in table[1:] if line.startswith("lit "))
    assert row[1] == "2"


def _deployment(name: str, image: str = "nginx:1.25", replicas: int = 1) -> str:
    return yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "web", "image": image,
                                                       "ports": [{"containerPort": 80}]}]}}}})


def test_apply_then_reapply_a_change(kubectl: Kubectl, namespace: str) -> None:
    out = kubectl.run("apply", "-f", "-", input=_deployment("web"), namespace=namespace)
    assert "deployment.apps/web created" in out.stdout
    out = kubectl.run("apply", "-f", "-", input=_deployment("web"), namespace=namespace)
    assert "deployment.apps/web unchanged" in out.stdout
    out = kubectl.run("apply", "-f", "-", input=_deployment("web", image="nginx:1.27", replicas=2),
                      namespace=namespace)
    assert "deployment.apps/web configured" in out.stdout
    got = json.loads(kubectl.run("get", "deploy", "web", "-o", "json", namespace=namespace).stdout)
    assert got["spec"]["replicas"] == 2
    assert got["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert got["metadata"]["generation"] == 2
    assert "kubectl.kubernetes.io/last-applied-configuration" in got["metadata"]["annotations"]
    table = kubectl.run("get", "deployments", namespace=namespace).stdout.splitlines()
    assert table[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    wide = kubectl.run("get", "deployments", "-o", "wide", namespace=namespace).stdout.splitlines()
    assert wide[0].split()[5:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert "nginx:1.27" in wide[1]


def test_get_pods_table(kubectl: Kubectl, namespace: str, pod_json: dict) -> None:  # type: ignore[type-arg]
    pod = dict(pod_json)
    pod["metadata"] = {"name": "p1", "labels": {"app": "demo"}}
    pod.pop("status", None)
    spec = dict(pod["spec"])
    spec.pop("nodeName", None)
    pod["spec"] = spec
    kubectl.run("create", "-f", "-", input=json.dumps(pod), namespace=namespace)
    lines = kubectl.run("get", "pods", namespace=namespace).stdout.splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert lines[1].split()[:3] == ["p1", f"0/{len(spec['containers'])}", "Pending"]
    wide = kubectl.run("get", "pods", "-o", "wide", namespace=namespace).stdout.splitlines()
    assert wide[0].split()[5:] == ["IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"]


def test_label_and_selectors(kubectl: Kubectl, namespace: str) -> None:
    for name in ("a", "b", "c"):
        kubectl.run("create", "-f", "-", namespace=namespace, input=json.dumps(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}))
    kubectl.run("label", "cm", "a", "b", "tier=front", namespace=namespace)
    kubectl.run("label", "cm", "c", "tier=back", namespace=namespace)
    names = kubectl.run("get", "cm", "-l", "tier=front", "-o", "name", namespace=namespace).stdout.split()
    assert names == ["configmap/a", "configmap/b"]
    names = kubectl.run("get", "cm", "-l", "tier in (back)", "-o", "name", namespace=namespace).stdout.split()
    assert names == ["configmap/c"]
    names = kubectl.run("get", "cm", "-l", "tier!=front,tier", "-o", "name", namespace=namespace).stdout.split()
    assert names == ["configmap/c"]
    kubectl.run("label", "cm", "a", "tier=back", "--overwrite", namespace=namespace)
    kubectl.run("label", "cm", "b", "tier-", namespace=namespace)
    names = kubectl.run("get", "cm", "-l", "tier=back", "-o", "name", namespace=namespace).stdout.split()
    assert names == ["configmap/a", "configmap/c"]
    bad = kubectl.run("get", "cm", "-l", "tier in ", namespace=namespace, check=False)
    assert bad.returncode != 0


def test_patch_all_three_types(kubectl: Kubectl, namespace: str) -> None:
    kubectl.run("apply", "-f", "-", input=_deployment("pt"), namespace=namespace)
    kubectl.run("patch", "deploy", "pt", "--type=json", "-p",
                '[{"op":"replace","path":"/spec/replicas","value":3}]', namespace=namespace)
    kubectl.run("patch", "deploy", "pt", "--type=merge", "-p", '{"metadata":{"labels":{"x":"y"}}}',
                namespace=namespace)
    kubectl.run("patch", "deploy", "pt", "-p",
                '{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox"}]}}}}',
                namespace=namespace)
    got = json.loads(kubectl.run("get", "deploy", "pt", "-o", "json", namespace=namespace).stdout)
    assert got["spec"]["replicas"] == 3
    assert got["metadata"]["labels"]["x"] == "y"
    names = [c["name"] for c in got["spec"]["template"]["spec"]["containers"]]
    assert sorted(names) == ["side", "web"]


def test_scale(kubectl: Kubectl, namespace: str) -> None:
    kubectl.run("apply", "-f", "-", input=_deployment("sc"), namespace=namespace)
    out = kubectl.run("scale", "deployment", "sc", "--replicas=4", namespace=namespace)
    assert "deployment.apps/sc scaled" in out.stdout
    got = json.loads(kubectl.run("get", "deploy", "sc", "-o", "json", namespace=namespace).stdout)
    assert got["spec"]["replicas"] == 4


def test_delete(kubectl: Kubectl, namespace: str) -> None:
    kubectl.run("create", "-f", "-", namespace=namespace, input=json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "del"}}))
    out = kubectl.run("delete", "cm", "del", namespace=namespace)
    assert 'configmap "del" deleted' in out.stdout
    gone = kubectl.run("get", "cm", "del", namespace=namespace, check=False)
    assert gone.returncode != 0 and 'configmaps "del" not found' in gone.stderr


def test_explain_pods(kubectl: Kubectl) -> None:
    out = kubectl.run("explain", "pods").stdout
    assert "KIND:" in out and "Pod" in out
    assert "spec" in out and "status" in out
    out = kubectl.run("explain", "pods.spec.containers.image").stdout
    assert "image" in out.lower()


def test_duplicate_create_and_stale_update_errors(kubectl: Kubectl, namespace: str) -> None:
    manifest = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dup"}, "data": {"v": "1"}})
    kubectl.run("create", "-f", "-", input=manifest, namespace=namespace)
    again = kubectl.run("create", "-f", "-", input=manifest, namespace=namespace, check=False)
    assert again.returncode != 0
    assert 'configmaps "dup" already exists' in again.stderr
    current = json.loads(kubectl.run("get", "cm", "dup", "-o", "json", namespace=namespace).stdout)
    stale = dict(current, data={"v": "stale"})
    current["data"] = {"v": "2"}
    kubectl.run("replace", "-f", "-", input=json.dumps(current), namespace=namespace)
    out = kubectl.run("replace", "-f", "-", input=json.dumps(stale), namespace=namespace, check=False)
    assert out.returncode != 0
    assert "the object has been modified; please apply your changes to the latest version" in out.stderr


def _owned_replicaset(owner: dict, name: str) -> str:  # type: ignore[type-arg]
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "ownerReferences": [{
            "apiVersion": "apps/v1", "kind": "Deployment", "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})


def test_delete_cascade_orphan_and_foreground(kubectl: Kubectl, namespace: str) -> None:
    for cascade in ("orphan", "foreground", "background"):
        kubectl.run("apply", "-f", "-", input=_deployment(f"gc-{cascade}"), namespace=namespace)
        owner = json.loads(kubectl.run("get", "deploy", f"gc-{cascade}", "-o", "json", namespace=namespace).stdout)
        kubectl.run("create", "-f", "-", input=_owned_replicaset(owner, f"rs-{cascade}"), namespace=namespace)
        out = kubectl.run("delete", "deploy", f"gc-{cascade}", f"--cascade={cascade}", "--timeout=60s",
                          namespace=namespace)
        assert f'deployment.apps "gc-{cascade}" deleted' in out.stdout
        gone = kubectl.run("get", "deploy", f"gc-{cascade}", namespace=namespace, check=False)
        assert gone.returncode != 0
        if cascade == "orphan":
            rs = json.loads(kubectl.run("get", "rs", f"rs-{cascade}", "-o", "json", namespace=namespace).stdout)
            assert "ownerReferences" not in rs["metadata"]
        else:
            out = kubectl.run("wait", "--for=delete", f"rs/rs-{cascade}", "--timeout=30s", namespace=namespace,
                              check=False)
            assert kubectl.run("get", "rs", f"rs-{cascade}", namespace=namespace, check=False).returncode != 0


def test_field_validation_strict_and_warn(kubectl: Kubectl, namespace: str) -> None:
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fv"}, "bogus": 1})
    strict = kubectl.run("create", "--validate=strict", "-f", "-", input=body, namespace=namespace, check=False)
    assert strict.returncode != 0
    assert 'unknown field "bogus"' in strict.stderr
    warn = kubectl.run("create", "--validate=warn", "-f", "-", input=body, namespace=namespace)
    assert 'unknown field "bogus"' in warn.stderr
    got = json.loads(kubectl.run("get", "cm", "fv", "-o", "json", namespace=namespace).stdout)
    assert "bogus" not in got
