"""What every server keeps in storage: the system namespaces, the system PriorityClasses, and the
``kubernetes`` Service and Endpoints. kube-apiserver's post-start hooks write them through its loopback
client, so here they are the apiserver's writes (``kapi.controllers.writes``), admitted and audited."""

from __future__ import annotations

import ipaddress
import logging
from typing import Any, Iterable

from kapi import errors
from kapi.apis.core.namespaces import INITIAL_NAMESPACES
from kapi.apis.core.services import SERVICE_CIDR
from kapi.apis.scheduling import system_priority_classes
from kapi.controllers.namespace import NamespaceController
from kapi.controllers.writes import Writer, Writes
from kapi.encoding import listitems
from kapi.object.listopts import ListOptions
from kapi.registry.resources import Resource
from kapi.registry.store import Registry

__all__ = ["bootstrap", "ensure_system_priority_classes", "publish_endpoint"]

log = logging.getLogger("kapi")

Obj = dict[str, Any]


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


async def publish_endpoint(registry: Registry, host: str, port: int, writer: Writer | None = None,
                           peers: Iterable[tuple[str, int]] = ()) -> None:
    """The ``kubernetes`` Service, and its Endpoints and EndpointSlice pointing at this server and at ``peers``
    (the other live replicas' addresses, ``kapi.server.replica.endpoints``); logged, not fatal, if it cannot be."""
    try:
        await _publish_endpoint_objects(registry, port, {(host, port), *peers}, writer or Writes(registry).apiserver())
    except errors.Invalid as err:
        # Endpoints refuse loopback, link-local and unspecified addresses (kube's validateEndpointAddress):
        # kube-apiserver advertising 127.0.0.1 (envtest's) fails the same way, and its Service has no endpoints.
        log.warning("the kubernetes Service has no Endpoints: %s is not an address Endpoints may hold "
                    "(serve on a routable --bind-address or give an --advertise-address for clients that read "
                    "them)", host)
        log.debug("kubernetes Endpoints refused: %s", err.message)
    except errors.StatusError as err:  # a corrupt stored Service or Endpoints: serve anyway, as kube's reconciler
        log.error("cannot publish the kubernetes Service and Endpoints: %s", err.message)


_SLICE_LABEL = "kubernetes.io/service-name"


async def _publish_endpoint_objects(registry: Registry, port: int, addresses: set[tuple[str, int]],
                                    writer: Writer) -> None:
    svc_res, ep_res = registry.table.get("", "v1", "services"), registry.table.get("", "v1", "endpoints")
    assert svc_res is not None and ep_res is not None
    labels = {"component": "apiserver", "provider": "kubernetes"}
    await writer.ensure_exists(svc_res, "default", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "kubernetes", "labels": labels},
        "spec": {"clusterIP": str(SERVICE_CIDR.network_address + 1), "type": "ClusterIP",
                 "sessionAffinity": "None",
                 "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]}})
    # One subset per port (replicas on one host serve on different ports), addresses sorted, as kube's
    # lease reconciler writes them (it has one port only).
    by_port: dict[int, list[str]] = {}
    for ip, p in sorted(addresses):
        by_port.setdefault(p, []).append(ip)
    subsets = [{"addresses": [{"ip": ip} for ip in ips], "ports": [{"name": "https", "port": p, "protocol": "TCP"}]}
               for p, ips in sorted(by_port.items())]
    # The addresses and ports may differ from the last run (--secure-port 0) or the last reconciliation:
    # keep the Endpoints true.
    await _ensure(registry, writer, ep_res, {
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "kubernetes", "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": subsets}, ("subsets",))
    slice_res = registry.table.get("discovery.k8s.io", "v1", "endpointslices")
    if slice_res is None:
        return
    # kube's EndpointsAdapter writes the kubernetes EndpointSlice beside the Endpoints (IPv4, as the Service).
    slices = {}
    for p, ips in sorted(by_port.items()):
        v4 = [ip for ip in ips if ipaddress.ip_address(ip).version == 4]
        if v4:
            slices["kubernetes" if not slices else f"kubernetes-{p}"] = {
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "kubernetes" if not slices else f"kubernetes-{p}",
                             "labels": {_SLICE_LABEL: "kubernetes"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": [ip], "conditions": {"ready": True}} for ip in v4],
                "ports": [{"name": "https", "port": p, "protocol": "TCP"}]}
    for obj in slices.values():
        await _ensure(registry, writer, slice_res, obj, ("endpoints", "ports"))
    stale = await registry.list(slice_res, "default", ListOptions(label_selector=f"{_SLICE_LABEL}=kubernetes"))
    for obj in listitems.objects(stale.items):
        if obj["metadata"]["name"] not in slices:
            try:
                await writer.delete(slice_res, "default", obj["metadata"]["name"])
            except errors.NotFound:
                pass


async def _ensure(registry: Registry, writer: Writer, res: Resource, obj: Obj, fields: tuple[str, ...]) -> None:
    """``obj`` in namespace default, created, or updated when one of ``fields`` differs; a write that
    another replica's reconciliation made first is read again (kube's retry on conflict)."""
    name = obj["metadata"]["name"]
    for _ in range(5):
        try:
            current = await registry.get(res, "default", name)
        except errors.NotFound:
            try:
                await writer.create(res, "default", obj)
                return
            except errors.AlreadyExists:
                continue
        if all(current.get(f) == obj[f] for f in fields):
            return
        try:
            await writer.update(res, "default", name, dict(current, **{f: obj[f] for f in fields}))
            return
        except errors.Conflict:
            continue
    raise errors.Conflict(f"{res.resource} default/{name} kept changing while it was reconciled")
