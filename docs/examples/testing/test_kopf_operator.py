"""Test greeting_operator.py, a kopf operator, against a real API server."""

import time
from pathlib import Path
from typing import Any, Callable

import kubernetes
import pytest
from kopf.testing import KopfRunner

from kapi.testing import Server

OPERATOR = Path(__file__).with_name("greeting_operator.py")

GREETING_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "greetings.example.com"},
    "spec": {
        "group": "example.com", "scope": "Namespaced",
        "names": {"plural": "greetings", "singular": "greeting", "kind": "Greeting"},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {
                "spec": {"type": "object", "properties": {"to": {"type": "string"}}},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}],
    },
}


def eventually(check: Callable[[], Any], timeout_s: float = 30.0) -> Any:
    """``check()``'s first true result, polling until ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not (result := check()):
        assert time.monotonic() < deadline, f"{check.__name__} is still false after {timeout_s} s"
        time.sleep(0.1)
    return result


@pytest.fixture(scope="session")
def greeting_crd(kapi_server: Server) -> None:
    """The CRD, installed once for the session's server."""
    status, body = kapi_server.request(
        "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", GREETING_CRD)
    assert status == 201, body

    def established() -> bool:
        _, crd = kapi_server.request(
            "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/greetings.example.com")
        conditions = crd.get("status", {}).get("conditions", [])
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    eventually(established)


def test_a_greeting_gets_its_config_map(greeting_crd: None, kapi_server: Server, kapi_namespace: str,
                                        kapi_kubeconfig: Path) -> None:
    api = kubernetes.client.ApiClient(kapi_server.kubernetes_configuration())
    core, custom = kubernetes.client.CoreV1Api(api), kubernetes.client.CustomObjectsApi(api)

    # kopf finds the server through $KUBECONFIG, which kapi_kubeconfig sets for this test
    with api, KopfRunner(["run", "--standalone", "--namespace", kapi_namespace, str(OPERATOR)]) as runner:
        custom.create_namespaced_custom_object("example.com", "v1", kapi_namespace, "greetings", {
            "apiVersion": "example.com/v1", "kind": "Greeting", "metadata": {"name": "world"},
            "spec": {"to": "World"}})

        def config_map_made() -> Any:
            try:
                return core.read_namespaced_config_map("world-greeting", kapi_namespace)
            except kubernetes.client.ApiException as err:
                if err.status == 404:
                    return None
                raise

        config_map = eventually(config_map_made)
        assert config_map.data == {"message": "Hello, World!"}
        assert config_map.metadata.owner_references[0].kind == "Greeting"

        def status_written() -> Any:
            greeting = custom.get_namespaced_custom_object("example.com", "v1", kapi_namespace, "greetings", "world")
            return greeting.get("status", {}).get("create_fn")

        assert eventually(status_written) == {"configMap": "world-greeting"}

        # the operator's finalizer goes, then the server's garbage collector deletes the ConfigMap
        custom.delete_namespaced_custom_object("example.com", "v1", kapi_namespace, "greetings", "world")
        eventually(lambda: config_map_made() is None)

    assert runner.exception is None
    assert runner.exit_code == 0
