"""The ``kubernetes`` Python client against a real ``kapi serve``."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from .conftest import Server

pytestmark = pytest.mark.e2e


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


def test_deletes_return_the_deleted_object(api_client: Any, namespace: str) -> None:
    """Issue 10: kube's registries with ReturnDeletedObject answer DELETE with the object, and the
    client's delete_namespaced_service() etc. deserialize it as that kind (a Status failed)."""
    core = client.CoreV1Api(api_client)
    core.create_namespaced_service(namespace, client.V1Service(
        metadata=client.V1ObjectMeta(name="s"), spec=client.V1ServiceSpec(ports=[client.V1ServicePort(port=80)])))
    svc = core.delete_namespaced_service("s", namespace)
    assert isinstance(svc, client.V1Service) and svc.metadata.name == "s" and svc.spec.ports[0].port == 80
    core.create_namespaced_service_account(namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="sa")))
    sa = core.delete_namespaced_service_account("sa", namespace)
    assert isinstance(sa, client.V1ServiceAccount) and sa.metadata.name == "sa"
    core.create_namespaced_persistent_volume_claim(namespace, client.V1PersistentVolumeClaim(
        metadata=client.V1ObjectMeta(name="c"),
        spec=client.V1PersistentVolumeClaimSpec(access_modes=["ReadWriteOnce"],
                                                resources=client.V1VolumeResourceRequirements(
                                                    requests={"storage": "1Gi"}))))
    pvc = core.delete_namespaced_persistent_volume_claim("c", namespace)
    assert isinstance(pvc, client.V1PersistentVolumeClaim) and pvc.metadata.name == "c"
    pv_name = f"pv-{namespace}"
    core.create_persistent_volume(client.V1PersistentVolume(
        metadata=client.V1ObjectMeta(name=pv_name),
        spec=client.V1PersistentVolumeSpec(capacity={"storage": "1Gi"}, access_modes=["ReadWriteOnce"],
                                           host_path=client.V1HostPathVolumeSource(path="/tmp/pv"))))
    pv = core.delete_persistent_volume(pv_name)
    assert isinstance(pv, client.V1PersistentVolume) and pv.metadata.name == pv_name
    core.create_namespaced_pod(namespace, client.V1Pod(
        metadata=client.V1ObjectMeta(name="p"),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")])))
    pod = core.delete_namespaced_pod("p", namespace)
    assert isinstance(pod, client.V1Pod) and pod.metadata.name == "p"
    for read in (lambda: core.read_namespaced_service("s", namespace),
                 lambda: core.read_namespaced_service_account("sa", namespace)):
        with pytest.raises(ApiException) as exc:
            read()
        assert exc.value.status == 404
    # the volume's pv-protection finalizer (StorageObjectInUseProtection) is taken off by the protection
    # controller a moment later, as kube-controller-manager's
    deadline = time.monotonic() + 10
    while True:
        try:
            core.read_persistent_volume(pv_name)
        except ApiException as exc:
            assert exc.status == 404
            break
        assert time.monotonic() < deadline, "the deleted volume is still there"
        time.sleep(0.05)
    core.create_namespaced_config_map(namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm")))
    status = core.delete_namespaced_config_map("cm", namespace)
    # this client models a delete's Status as a plain object
    assert status["kind"] == "Status" and status["status"] == "Success" and status["details"]["name"] == "cm"


def test_value_structs_are_written_as_go_writes_them(api_client: Any, server: Server, namespace: str) -> None:
    """Issue 10: a Deployment comes back with "status": {} and a Node with spec and status (kr8s's
    Deployment.ready() read status["..."] and raised KeyError), as Go always encodes value structs."""
    import json

    apps = client.AppsV1Api(api_client)
    apps.create_namespaced_deployment(namespace, client.V1Deployment(
        metadata=client.V1ObjectMeta(name="d"),
        spec=client.V1DeploymentSpec(
            selector=client.V1LabelSelector(match_labels={"app": "d"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "d"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")])))))
    status, _, body = server.request("GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/d")
    assert status == 200, body
    dep = json.loads(body)
    assert dep["status"] == {}
    assert dep["spec"]["template"]["metadata"]["creationTimestamp"] is None
    assert dep["spec"]["template"]["spec"]["containers"][0]["resources"] == {}
    assert apps.read_namespaced_deployment_status("d", namespace).status is not None

    node = json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n-{namespace}"}}).encode()
    status, _, body = server.request("POST", "/api/v1/nodes", node, {"Content-Type": "application/json"})
    assert status == 201, body
    created = json.loads(body)
    # only TaintNodesByCondition's taint (admission, on by default) in the spec
    assert created["spec"] == {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}
    assert created["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 0}}
    assert created["status"]["nodeInfo"]["machineID"] == ""
    got = client.CoreV1Api(api_client).read_node(f"n-{namespace}")
    assert got.status.node_info.machine_id == "" and got.spec is not None
    client.CoreV1Api(api_client).delete_node(f"n-{namespace}")
