"""The ``kubernetes`` Python client against a real ``kapi serve``."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from .conftest import Server


@pytest.fixture
def api_client(server: Server) -> Any:
    return config.new_client_from_config(config_file=str(server.kubeconfig))


def test_version_and_namespaces(api_client: Any) -> None:
    version = client.VersionApi(api_client).get_code()
    assert version.major == "1" and version.minor == "33"
    names = [ns.metadata.name for ns in client.CoreV1Api(api_client).list_namespace().items]
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= set(names)


def test_configmap_crud(api_client: Any, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py", labels={"k": "v"}), data={"a": "1"})
    created = core.create_namespaced_config_map(namespace, body)
    assert created.metadata.uid and created.data == {"a": "1"}
    got = core.read_namespaced_config_map("py", namespace)
    assert got.metadata.resource_version == created.metadata.resource_version
    patched = core.patch_namespaced_config_map("py", namespace, {"data": {"b": "2"}})
    assert patched.data == {"a": "1", "b": "2"}
    listed = core.list_namespaced_config_map(namespace, label_selector="k=v")
    assert [c.metadata.name for c in listed.items] == ["py"]
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map(namespace, body)
    assert exc.value.status == 409
    core.delete_namespaced_config_map("py", namespace)
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_config_map("py", namespace)
    assert exc.value.status == 404


def test_deployment_scale_and_status(api_client: Any, namespace: str) -> None:
    apps = client.AppsV1Api(api_client)
    dep = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="d"),
        spec=client.V1DeploymentSpec(
            replicas=1, selector=client.V1LabelSelector(match_labels={"app": "d"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "d"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]))))
    created = apps.create_namespaced_deployment(namespace, dep)
    assert created.spec.strategy.type == "RollingUpdate"
    assert created.spec.template.spec.containers[0].image_pull_policy == "Always"
    scale = apps.patch_namespaced_deployment_scale("d", namespace, {"spec": {"replicas": 3}})
    assert scale.spec.replicas == 3
    status = apps.patch_namespaced_deployment_status("d", namespace, {"status": {"replicas": 3,
                                                                                "readyReplicas": 3}})
    assert status.status.ready_replicas == 3
    assert status.metadata.generation == 2


def test_pagination(api_client: Any, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    for i in range(7):
        core.create_namespaced_secret(namespace, client.V1Secret(
            metadata=client.V1ObjectMeta(name=f"s{i}"), string_data={"k": str(i)}))
    seen: list[str] = []
    token = None
    while True:
        page = core.list_namespaced_secret(namespace, limit=3, _continue=token)
        seen += [s.metadata.name for s in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert seen == [f"s{i}" for i in range(7)]
    secret = core.read_namespaced_secret("s3", namespace)
    assert secret.type == "Opaque" and secret.data == {"k": "Mw=="}
