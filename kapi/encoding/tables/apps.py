"""Table printers of the apps group (``pkg/printers/internalversion/printers.go``)."""

from __future__ import annotations

from typing import Any, Final

from kapi.encoding.tables.base import (AGE, NAME, Obj, Printer, as_int, as_map, as_str, column, container_cells,
    format_label_selector, selector_string, since)

_CONTAINERS_DOC: Final = "Names of each container in the template."
_IMAGES_DOC: Final = "Images referenced by each container in the template."

_DEPLOYMENT_COLUMNS: Final = (
    NAME,
    column("Ready", "string", "Number of the pod with ready state"),
    column("Up-to-date", "string", "Total number of non-terminated pods targeted by this "
           "deployment that have the desired template spec."),
    column("Available", "string", "Total number of available pods (ready for at least "
           "minReadySeconds) targeted by this deployment."),
    AGE,
    column("Containers", "string", _CONTAINERS_DOC, priority=1),
    column("Images", "string", _IMAGES_DOC, priority=1),
    column("Selector", "string", "Label selector for pods. Existing ReplicaSets whose pods are "
           "selected by this will be the ones affected by this deployment.", priority=1),
)

_REPLICA_SET_COLUMNS: Final = (
    NAME,
    column("Desired", "integer", "Replicas is the number of desired replicas. This is a pointer "
           "to distinguish between explicit zero and unspecified. Defaults to 1. More info: "
           "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/"
           "#what-is-a-replicationcontroller"),
    column("Current", "integer", "Replicas is the most recently observed number of replicas. "
           "More info: https://kubernetes.io/docs/concepts/workloads/controllers/"
           "replicationcontroller/#what-is-a-replicationcontroller"),
    column("Ready", "integer", "The number of ready replicas for this replica set."),
    AGE,
    column("Containers", "string", _CONTAINERS_DOC, priority=1),
    column("Images", "string", _IMAGES_DOC, priority=1),
    column("Selector", "string", "Selector is a label query over pods that should match the "
           "replica count. If the selector is empty, it is defaulted to the labels present on "
           "the Pod template. Label keys and values that must match in order to be controlled "
           "by this replica set. More info: https://kubernetes.io/docs/concepts/overview/"
           "working-with-objects/labels/#label-selectors", priority=1),
)


def _deployment_row(obj: Obj, now: float) -> list[Any]:
    meta, spec, status = as_map(obj.get("metadata")), as_map(obj.get("spec")), as_map(obj.get("status"))
    # Stored objects are defaulted, so a missing spec.replicas means the default of 1.
    names, images = container_cells(as_map(spec.get("template")).get("spec"))
    return [
        as_str(meta.get("name")),
        f"{as_int(status.get('readyReplicas'))}/{as_int(spec.get('replicas'), 1)}",
        as_int(status.get("updatedReplicas")), as_int(status.get("availableReplicas")),
        since(meta.get("creationTimestamp"), now),
        names, images, selector_string(spec.get("selector")),
    ]


def _replicaset_row(obj: Obj, now: float) -> list[Any]:
    meta, spec, status = as_map(obj.get("metadata")), as_map(obj.get("spec")), as_map(obj.get("status"))
    names, images = container_cells(as_map(spec.get("template")).get("spec"))
    return [
        as_str(meta.get("name")), as_int(spec.get("replicas"), 1), as_int(status.get("replicas")),
        as_int(status.get("readyReplicas")), since(meta.get("creationTimestamp"), now),
        names, images, format_label_selector(spec.get("selector")),
    ]


DEPLOYMENT: Final = Printer(_DEPLOYMENT_COLUMNS, _deployment_row)
REPLICA_SET: Final = Printer(_REPLICA_SET_COLUMNS, _replicaset_row)
