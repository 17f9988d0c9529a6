"""Table printers of core/v1 ReplicationControllers and ResourceQuotas (``printers.go``); LimitRanges
have none in kube (Name and Age)."""

from __future__ import annotations

from typing import Any, Final

from kapi.encoding.tables.base import (AGE, NAME, Obj, Printer, as_int, as_map, as_str, column, container_cells,
    format_labels, since)

_RC_COLUMNS: Final = (
    NAME,
    column("Desired", "integer", "Replicas is the number of desired replicas. This is a pointer to distinguish "
           "between explicit zero and unspecified. Defaults to 1. More info: "
           "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-"
           "replicationcontroller"),
    column("Current", "integer", "Replicas is the most recently observed number of replicas. More info: "
           "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-"
           "replicationcontroller"),
    column("Ready", "integer", "The number of ready replicas for this replication controller."),
    AGE,
    column("Containers", "string", "Names of each container in the template.", priority=1),
    column("Images", "string", "Images referenced by each container in the template.", priority=1),
    column("Selector", "string", "Selector is a label query over pods that should match the Replicas count. If "
           "Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values "
           "that must match in order to be controlled by this replication controller, if empty defaulted to "
           "labels on Pod template. More info: "
           "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
           priority=1),
)


def _rc_row(obj: Obj, now: float) -> list[Any]:
    md, spec, status = as_map(obj.get("metadata")), as_map(obj.get("spec")), as_map(obj.get("status"))
    names, images = container_cells(as_map(spec.get("template")).get("spec"))
    return [as_str(md.get("name")), as_int(spec.get("replicas"), 1), as_int(status.get("replicas")),
            as_int(status.get("readyReplicas")), since(md.get("creationTimestamp"), now), names, images,
            format_labels(spec.get("selector"))]


_RQ_COLUMNS: Final = (
    NAME,
    AGE,
    column("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
    column("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use "
           "independent of contention on the node."),
)


def _q(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _rq_row(obj: Obj, now: float) -> list[Any]:
    md, status = as_map(obj.get("metadata")), as_map(obj.get("status"))
    hard, used = as_map(status.get("hard")), as_map(status.get("used"))
    request, limit = [], []
    for name in sorted(hard):
        pieces = name.split(".")
        target = limit if len(pieces) > 1 and pieces[0] == "limits" else request
        target.append(f"{name}: {_q(used.get(name, '0'))}/{_q(hard[name])}")
    return [as_str(md.get("name")), since(md.get("creationTimestamp"), now), ", ".join(request), ", ".join(limit)]


REPLICATION_CONTROLLER: Final = Printer(_RC_COLUMNS, _rc_row)
RESOURCE_QUOTA: Final = Printer(_RQ_COLUMNS, _rq_row)
