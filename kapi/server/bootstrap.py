"""What every server keeps in storage: the system namespaces, the system PriorityClasses, and the
``kubernetes`` Service and Endpoints. kube-apiserver's post-start hooks write them through its loopback
client, so here they are the apiserver's writes (``kapi.controllers.writes``), admitted and audited."""

from __future__ import annotations

import logging

from kapi import errors
from kapi.apis.core.namespaces import INITIAL_NAMESPACES
from kapi.apis.core.services import SERVICE_CIDR
from kapi.apis.scheduling import system_priority_classes
from kapi.controllers.namespace import NamespaceController
from kapi.controllers.writes import Writer, Writes
from kapi.registry.store import Registry, WriteOptions

__all__ = ["bootstrap", "ensure_system_priority_classes", "publish_endpoint"]

log = logging.getLogger("kapi")


async def bootstrap(registry: Registry, namespaces: NamespaceController, writer: Writer | None = None) -> None:
    """The system namespaces kube-apiserver keeps, with their contents, and the system PriorityClasses."""
    ns_res = registry.table.get("", "v1", "namespaces")
    assert ns_res is not None
    writer = writer or Writes(registry).apiserver()
    for name in INITIAL_NAMESPACES:
        try:
            await writer.ensure_exists(ns_res, "", {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": name}})
        except errors.StatusError as err:  # nothing stored may stop the start (issue 10)
            log.error("cannot ensure namespace %s: %s", name, err.message)
        await namespaces.ensure_namespace_contents(name)
    await ensure_system_priority_classes(registry, writer)


async def ensure_system_priority_classes(registry: Registry, writer: Writer | None = None) -> None:
    """system-node-critical and system-cluster-critical, as kube's scheduling post-start hook keeps them
    (created when missing; a stored one is left as it is)."""
    res = registry.table.get("scheduling.k8s.io", "v1", "priorityclasses")
    if res is None:
        return
    writer = writer or Writes(registry).apiserver()
    for obj in system_priority_classes():
        try:
            await writer.ensure_exists(res, "", obj)
        except errors.StatusError as err:  # nothing stored may stop the start (issue 10)
            log.error("cannot ensure priority class %s: %s", obj["metadata"]["name"], err.message)


async def publish_endpoint(registry: Registry, host: str, port: int, writer: Writer | None = None) -> None:
    """The ``kubernetes`` Service and its Endpoints pointing at this server (logged, not fatal, if it cannot be)."""
    try:
        await _publish_endpoint_objects(registry, host, port, writer or Writes(registry).apiserver())
    except errors.Invalid as err:
        # Endpoints refuse loopback, link-local and unspecified addresses (kube's validateEndpointAddress):
        # kube-apiserver advertising 127.0.0.1 (envtest's) fails the same way, and its Service has no endpoints.
        log.warning("the kubernetes Service has no Endpoints: %s is not an address Endpoints may hold "
                    "(serve on a routable --bind-address for clients that read them)", host)
        log.debug("kubernetes Endpoints refused: %s", err.message)
    except errors.StatusError as err:  # a corrupt stored Service or Endpoints: serve anyway, as kube's reconciler
        log.error("cannot publish the kubernetes Service and Endpoints: %s", err.message)


async def _publish_endpoint_objects(registry: Registry, host: str, port: int, writer: Writer) -> None:
    svc_res, ep_res = registry.table.get("", "v1", "services"), registry.table.get("", "v1", "endpoints")
    assert svc_res is not None and ep_res is not None
    labels = {"component": "apiserver", "provider": "kubernetes"}
    await writer.ensure_exists(svc_res, "default", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "kubernetes", "labels": labels},
        "spec": {"clusterIP": str(SERVICE_CIDR.network_address + 1), "type": "ClusterIP",
                 "sessionAffinity": "None",
                 "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]}})
    endpoints = {"apiVersion": "v1", "kind": "Endpoints",
                 "metadata": {"name": "kubernetes", "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
                 "subsets": [{"addresses": [{"ip": host}],
                              "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}
    await writer.ensure_exists(ep_res, "default", endpoints)
    # The port may differ from the last run (--secure-port 0): keep the Endpoints true.
    current = await registry.get(ep_res, "default", "kubernetes")
    if current.get("subsets") != endpoints["subsets"]:
        current["subsets"] = endpoints["subsets"]
        await writer.update(ep_res, "default", "kubernetes", current, WriteOptions())
