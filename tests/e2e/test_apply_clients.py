"""Server-side apply with real clients against a real ``kapi serve`` (issue 16): kubectl 1.33 and 1.27,
the ``kubernetes`` Python client (dynamic and typed) and lightkube."""

from __future__ import annotations

import json
import uuid
from typing import Any, Iterator

import pytest
import yaml
from kubernetes import client, config, dynamic, utils
from kubernetes.client.rest import ApiException

from .conftest import Kubectl, Server

pytestmark = pytest.mark.e2e


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _deployment(name: str, *, image: str = "nginx:1.25", replicas: int | None = 1,
                labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": name}},
                            "template": {"metadata": {"labels": {"app": name}},
                                         "spec": {"containers": [{"name": "web", "image": image}]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": labels or {"app": name}}, "spec": spec}


def _get(kubectl: Kubectl, kind: str, name: str, namespace: str) -> dict[str, Any]:
    return json.loads(kubectl.run("get", kind, name, "-o", "json", "--show-managed-fields",
                                  namespace=namespace).stdout)


def _managers(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["manager"]: e for e in obj["metadata"].get("managedFields", [])}


def _ssa_story(kubectl: Kubectl, namespace: str) -> None:
    name = _name("ssa")
    out = kubectl.run("apply", "--server-side", "-f", "-", input=yaml.safe_dump(_deployment(name)),
                      namespace=namespace)
    assert f"deployment.apps/{name} serverside-applied" in out.stdout
    got = _get(kubectl, "deployment", name, namespace)
    entry = _managers(got)["kubectl"]
    assert entry["operation"] == "Apply" and entry["apiVersion"] == "apps/v1"
    assert "f:replicas" in entry["fieldsV1"]["f:spec"]

    # re-apply with a changed field
    kubectl.run("apply", "--server-side", "-f", "-", input=yaml.safe_dump(_deployment(name, replicas=3)),
                namespace=namespace)
    got = _get(kubectl, "deployment", name, namespace)
    assert got["spec"]["replicas"] == 3 and got["metadata"]["generation"] == 2

    # a second manager changing a field kubectl owns: a conflict, nothing written
    other = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {"replicas": 5}}
    out = kubectl.run("apply", "--server-side", "--field-manager=other", "-f", "-", input=yaml.safe_dump(other),
                      namespace=namespace, check=False)
    assert out.returncode != 0
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas' in out.stderr, out.stderr
    assert _get(kubectl, "deployment", name, namespace)["spec"]["replicas"] == 3
    out = kubectl.run("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-",
                      input=yaml.safe_dump(other), namespace=namespace)
    got = _get(kubectl, "deployment", name, namespace)
    assert got["spec"]["replicas"] == 5
    managers = _managers(got)
    assert "f:replicas" in managers["other"]["fieldsV1"]["f:spec"]
    assert "f:replicas" not in managers["kubectl"]["fieldsV1"]["f:spec"]

    # a label removed from kubectl's manifest is removed from the object
    kubectl.run("apply", "--server-side", "-f", "-", namespace=namespace, input=yaml.safe_dump(
        _deployment(name, replicas=None, labels={"app": name, "tier": "web"})))
    assert _get(kubectl, "deployment", name, namespace)["metadata"]["labels"] == {"app": name, "tier": "web"}
    kubectl.run("apply", "--server-side", "-f", "-", namespace=namespace, input=yaml.safe_dump(
        _deployment(name, replicas=None)))
    got = _get(kubectl, "deployment", name, namespace)
    assert got["metadata"]["labels"] == {"app": name}
    assert got["spec"]["replicas"] == 5  # still owned by "other"

    # diff --server-side shows the change and changes nothing
    changed = yaml.safe_dump(_deployment(name, image="nginx:1.27", replicas=None))
    out = kubectl.run("diff", "--server-side", "-f", "-", input=changed, namespace=namespace, check=False)
    assert out.returncode == 1, out.stderr  # 1: differences found
    lines = out.stdout.splitlines()
    assert any(x.startswith("-") and x.endswith("image: nginx:1.25") for x in lines), out.stdout
    assert any(x.startswith("+") and x.endswith("image: nginx:1.27") for x in lines), out.stdout
    rv = got["metadata"]["resourceVersion"]
    assert _get(kubectl, "deployment", name, namespace)["metadata"]["resourceVersion"] == rv

    # dry-run=server answers the merged object and writes nothing
    out = kubectl.run("apply", "--server-side", "--dry-run=server", "-o", "json", "-f", "-", input=changed,
                      namespace=namespace)
    assert json.loads(out.stdout)["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    after = _get(kubectl, "deployment", name, namespace)
    assert after["metadata"]["resourceVersion"] == rv
    assert after["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"


def test_server_side_apply_kubectl_133(kubectl133: Kubectl, namespace: str) -> None:
    _ssa_story(kubectl133, namespace)


def test_server_side_apply_kubectl_127(kubectl127: Kubectl, namespace: str) -> None:
    _ssa_story(kubectl127, namespace)


def test_client_side_to_server_side_upgrade(kubectl133: Kubectl, namespace: str) -> None:
    name = _name("csa")
    kubectl133.run("apply", "-f", "-", input=yaml.safe_dump(_deployment(name)), namespace=namespace)
    got = _get(kubectl133, "deployment", name, namespace)
    assert "kubectl-client-side-apply" in _managers(got)
    key = "kubectl.kubernetes.io/last-applied-configuration"
    assert json.loads(got["metadata"]["annotations"][key])["spec"]["replicas"] == 1

    out = kubectl133.run("apply", "--server-side", "-f", "-", input=yaml.safe_dump(_deployment(name, replicas=2)),
                         namespace=namespace)
    assert f"deployment.apps/{name} serverside-applied" in out.stdout
    got = _get(kubectl133, "deployment", name, namespace)
    assert got["spec"]["replicas"] == 2
    managers = _managers(got)
    assert managers["kubectl"]["operation"] == "Apply"
    assert "f:replicas" in managers["kubectl"]["fieldsV1"]["f:spec"]
    csa = managers.get("kubectl-client-side-apply")
    assert csa is None or "f:replicas" not in csa["fieldsV1"].get("f:spec", {})
    assert json.loads(got["metadata"]["annotations"][key])["spec"]["replicas"] == 2


def _listmap_crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "properties": {"ports": {
                                       "type": "array", "x-kubernetes-list-type": "map",
                                       "x-kubernetes-list-map-keys": ["name"],
                                       "items": {"type": "object", "required": ["name"], "properties": {
                                           "name": {"type": "string"}, "port": {"type": "integer"}}}}}},
                                   "status": {"type": "object", "properties": {
                                       "phase": {"type": "string"}}}}}}}]}}


def test_custom_resource_list_map_and_status(kubectl133: Kubectl, server: Server, namespace: str) -> None:
    group = f"g{uuid.uuid4().hex[:8]}.e2e.kapi.dev"
    crd = f"gadgets.{group}"
    kubectl133.run("apply", "--server-side", "-f", "-", input=yaml.safe_dump(_listmap_crd(group)))
    try:
        kubectl133.run("wait", "--for", "condition=established", "--timeout=60s", f"crd/{crd}")
        path = f"/apis/{group}/v1/namespaces/{namespace}/gadgets/g"

        def apply(body: dict[str, Any], manager: str, sub: str = "") -> tuple[int, dict[str, Any]]:
            status, _, text = server.request("PATCH", f"{path}{sub}?fieldManager={manager}",
                                             json.dumps(body).encode(),
                                             {"Content-Type": "application/apply-patch+yaml"})
            return status, json.loads(text)

        base = {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g"}}
        status, obj = apply({**base, "spec": {"ports": [{"name": "http", "port": 80}]}}, "alice")
        assert status == 201, obj
        status, obj = apply({**base, "spec": {"ports": [{"name": "metrics", "port": 9090}]}}, "bob")
        assert status == 200, obj
        assert obj["spec"]["ports"] == [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]
        status, obj = apply({**base, "spec": {"ports": [{"name": "http", "port": 8080}]}}, "bob")
        assert status == 409 and obj["reason"] == "Conflict", obj
        assert 'conflict with "alice"' in obj["message"] and '.spec.ports[name="http"].port' in obj["message"]

        # status through its subresource, with kubectl 1.33's --subresource
        doc = yaml.safe_dump({**base, "status": {"phase": "Ready"}})
        kubectl133.run("apply", "--server-side", "--subresource=status", "--field-manager=ctrl", "-f", "-",
                       input=doc, namespace=namespace)
        status, _, text = server.request("GET", path)
        obj = json.loads(text)
        assert obj["status"] == {"phase": "Ready"}
        assert "ctrl" in _managers(obj), obj["metadata"]
        entry = _managers(obj)["ctrl"]
        assert entry["subresource"] == "status" and entry["fieldsV1"] == {"f:status": {"f:phase": {}}}
        assert len(obj["spec"]["ports"]) == 2
    finally:
        kubectl133.run("delete", "crd", crd, "--timeout=60s", check=False)


@pytest.fixture
def api_client(server: Server) -> Iterator[Any]:
    api = config.new_client_from_config(config_file=str(server.kubeconfig))
    yield api
    api.close()  # its connection pool's sockets, closed before the next test


def _configmap(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_python_dynamic_client_server_side_apply(api_client: Any, namespace: str) -> None:
    cms = dynamic.DynamicClient(api_client).resources.get(api_version="v1", kind="ConfigMap")
    created = cms.server_side_apply(body=_configmap("dyn", {"a": "1"}), namespace=namespace, field_manager="py")
    assert created.data.a == "1" and created.metadata.managedFields[0].manager == "py"
    updated = cms.server_side_apply(body=_configmap("dyn", {"a": "2", "b": "x"}), namespace=namespace,
                                    field_manager="py")
    assert dict(updated.data) == {"a": "2", "b": "x"}
    with pytest.raises(ApiException) as err:
        cms.server_side_apply(body=_configmap("dyn", {"a": "3"}), namespace=namespace, field_manager="other")
    assert err.value.status == 409
    assert 'Apply failed with 1 conflict: conflict with "py": .data.a' in json.loads(err.value.body)["message"]
    forced = cms.server_side_apply(body=_configmap("dyn", {"a": "3"}), namespace=namespace,
                                   field_manager="other", force_conflicts=True)
    assert dict(forced.data) == {"a": "3", "b": "x"}


def test_python_typed_client_apply_patch(api_client: Any, namespace: str) -> None:
    apps = client.AppsV1Api(api_client)
    name = _name("typed")
    dep = apps.patch_namespaced_deployment(name, namespace, _deployment(name, replicas=2), field_manager="typed",
                                           _content_type="application/apply-patch+yaml")
    assert dep.spec.replicas == 2 and dep.metadata.managed_fields[0].operation == "Apply"
    with pytest.raises(ApiException) as err:
        apps.patch_namespaced_deployment(name, namespace, {"spec": {"replicas": 3}},
                                         _content_type="application/apply-patch+yaml")
    assert err.value.status == 422
    assert "fieldManager: Required value: is required for apply patch" in err.value.body


def test_python_client_own_dry_run_apply(api_client: Any, namespace: str) -> None:
    """Ported from the client's dynamic e2e test ``test_server_side_apply_api``: a dry-run apply of a pod."""
    pods = dynamic.DynamicClient(api_client).resources.get(api_version="v1", kind="Pod")
    name = _name("pod")
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"name": name}, "name": name},
                "spec": {"containers": [{"image": "nginx", "name": "nginx",
                                         "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}
    resp = pods.server_side_apply(namespace=namespace, body=manifest, field_manager="kubernetes-unittests",
                                  dry_run="All")
    assert resp.metadata.managedFields[0].manager == "kubernetes-unittests"
    with pytest.raises(ApiException) as err:
        client.CoreV1Api(api_client).read_namespaced_pod(name, namespace)
    assert err.value.status == 404


def test_python_client_create_from_yaml_apply(api_client: Any, namespace: str) -> None:
    name = _name("util")
    utils.create_from_dict(api_client, _configmap(name, {"k": "v"}), namespace=namespace, apply=True)
    utils.create_from_dict(api_client, _configmap(name, {"k": "w"}), namespace=namespace, apply=True)
    cm = client.CoreV1Api(api_client).read_namespaced_config_map(name, namespace)
    assert cm.data == {"k": "w"} and [e.manager for e in cm.metadata.managed_fields] == ["python-client"]


def test_lightkube_apply(server: Server, namespace: str) -> None:
    from lightkube import Client, KubeConfig
    from lightkube.core.exceptions import ApiError
    from lightkube.resources.apps_v1 import Deployment
    from lightkube.resources.core_v1 import ConfigMap

    with Client(KubeConfig.from_file(str(server.kubeconfig)), namespace=namespace, field_manager="lk") as lk:
        cm = lk.apply(ConfigMap.from_dict(_configmap("lk", {"a": "1"})))
        assert cm.data == {"a": "1"} and cm.metadata.managedFields[0].manager == "lk"
        cm = lk.apply(ConfigMap.from_dict(_configmap("lk", {"a": "2"})))
        assert cm.data == {"a": "2"}
        with pytest.raises(ApiError) as err:
            lk.apply(ConfigMap.from_dict(_configmap("lk", {"a": "3"})), field_manager="rival")
        assert err.value.status.code == 409 and 'conflict with "lk"' in err.value.status.message
        cm = lk.apply(ConfigMap.from_dict(_configmap("lk", {"a": "3"})), field_manager="rival", force=True)
        assert cm.data == {"a": "3"}
        name = _name("lkdep")
        dep = lk.apply(Deployment.from_dict(_deployment(name, replicas=2)))
        assert dep.spec.replicas == 2
        dep = lk.apply(Deployment.from_dict(_deployment(name, image="nginx:1.27", replicas=2)))
        assert dep.spec.template.spec.containers[0].image == "nginx:1.27" and dep.metadata.generation == 2


async def test_lightkube_async_apply(server: Server, namespace: str) -> None:
    from lightkube import AsyncClient, KubeConfig
    from lightkube.resources.core_v1 import ConfigMap

    lk = AsyncClient(KubeConfig.from_file(str(server.kubeconfig)), namespace=namespace, field_manager="alk")
    try:
        cm = await lk.apply(ConfigMap.from_dict(_configmap("alk", {"a": "1"})))
        assert cm.data == {"a": "1"} and cm.metadata.managedFields[0].manager == "alk"
    finally:
        await lk.close()
