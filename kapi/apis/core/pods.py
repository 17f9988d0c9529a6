"""Pods: generation, graceful deletion, field selectors on node and phase, the pod Table."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from kapi.encoding.tables import core as tables
from kapi.errors import Cause
from kapi.object.defaults import default_pod
from kapi.object.selectors import META_FIELDS, FieldLabels, bool_value, text_value, value_at
from kapi.object.validation import validate_pod, validate_pod_update
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy

if TYPE_CHECKING:
    from kapi.registry.deletion import DeleteOptions

_FIELDS: Final = ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                  "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName")


class PodStrategy(Strategy):
    tracks_generation = True
    delete_returns_object = True
    # kube's podStatusStrategy: old kubelets corrupt ownerReferences through /status
    status_keeps_metadata = ("deletionTimestamp", "ownerReferences")
    # Old clients send spec.host; the Pod conversion renames it.
    field_labels = FieldLabels(META_FIELDS | frozenset(_FIELDS), converts=True,
                               aliases=MappingProxyType({"spec.host": "spec.nodeName"}))
    printer = tables.POD
    list_hint = "filter on an indexed field (fieldSelector=spec.nodeName=...) or within a namespace"

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_pod(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_pod(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_pod_update(new, old)

    def own_field_values(self, obj: Obj) -> dict[str, str]:
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        pod_ips = status.get("podIPs") or []
        return {
            "spec.nodeName": text_value(spec.get("nodeName")),
            "spec.restartPolicy": text_value(spec.get("restartPolicy")),
            "spec.schedulerName": text_value(spec.get("schedulerName")),
            "spec.serviceAccountName": text_value(spec.get("serviceAccountName")),
            "spec.hostNetwork": bool_value(spec.get("hostNetwork")),
            "status.phase": text_value(status.get("phase")),
            "status.podIP": text_value(value_at(pod_ips[0], "ip")) if pod_ips else text_value(status.get("podIP")),
            "status.nominatedNodeName": text_value(status.get("nominatedNodeName")),
        }

    def grace_period_s(self, obj: Obj, opts: DeleteOptions) -> int:
        """Graceful deletion applies to pods bound to a node that are still running."""
        spec = obj.get("spec", {})
        grace = opts.grace_period_s
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds", 30)
        if grace < 0:
            grace = 1
        if not spec.get("nodeName") or obj.get("status", {}).get("phase") in ("Failed", "Succeeded"):
            return 0
        return int(grace)


PODS: Final = Resource(group="", version="v1", resource="pods", kind="Pod", short_names=("po",),
                       categories=("all",), subresources=("status",), strategy=PodStrategy())
