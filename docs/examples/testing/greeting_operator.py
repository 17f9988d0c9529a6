"""A kopf operator: every Greeting gets a ConfigMap that holds its message."""

from typing import Any

import kopf
import kubernetes


@kopf.on.startup()
def login(**_: Any) -> None:
    kubernetes.config.load_kube_config()  # $KUBECONFIG: in the tests, the kapi server's


@kopf.on.create("example.com", "v1", "greetings")
def create_fn(spec: dict[str, Any], name: str, namespace: str, **_: Any) -> dict[str, str]:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-greeting"},
                  "data": {"message": f"Hello, {spec['to']}!"}}
    kopf.adopt(config_map)  # owned by the Greeting: deleted with it
    kubernetes.client.CoreV1Api().create_namespaced_config_map(namespace, config_map)
    return {"configMap": config_map["metadata"]["name"]}
