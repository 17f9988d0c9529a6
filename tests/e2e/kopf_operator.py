"""A small kopf operator in the style of kopf's examples/01-minimal and 02-children, run by
tests/e2e/test_crd_kopf.py with ``kopf run --standalone`` against a real ``kapi serve``.

For every ``KopfExample`` (kopf's examples/crd.yaml): on create, a child ConfigMap adopted
by the object (ownerReferences) and the handler's result in ``status.create_fn`` (kopf
stores it there); on an update of ``spec.field``, ``status["field_fn/spec.field"]``; on delete (kopf's
finalizer), the child is deleted first.
"""

from __future__ import annotations

from typing import Any

import kopf
import kubernetes


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.watching.server_timeout = 30
    settings.watching.client_timeout = 40
    kubernetes.config.load_kube_config()


@kopf.on.create("kopf.dev", "v1", "kopfexamples")
def create_fn(spec: Any, name: str, namespace: str, logger: Any, **_: Any) -> dict[str, Any]:
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-child"},
             "data": {"duration": str(spec.get("duration", "")), "field": str(spec.get("field", ""))}}
    kopf.adopt(child)
    made = kubernetes.client.CoreV1Api().create_namespaced_config_map(namespace, child)
    logger.info("child %s created", made.metadata.name)
    return {"message": "hello world", "children": [made.metadata.name]}


@kopf.on.field("kopf.dev", "v1", "kopfexamples", field="spec.field")
def field_fn(old: Any, new: Any, name: str, namespace: str, **_: Any) -> dict[str, Any]:
    if old is None:  # the creation itself
        return {"seen": new}
    kubernetes.client.CoreV1Api().patch_namespaced_config_map(f"{name}-child", namespace, {"data": {"field": new}})
    return {"old": old, "new": new}


@kopf.on.delete("kopf.dev", "v1", "kopfexamples")
def delete_fn(name: str, namespace: str, logger: Any, **_: Any) -> None:
    try:
        kubernetes.client.CoreV1Api().delete_namespaced_config_map(f"{name}-child", namespace)
    except kubernetes.client.ApiException as err:
        if err.status != 404:
            raise
    logger.info("child of %s deleted", name)
