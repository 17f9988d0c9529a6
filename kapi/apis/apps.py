"""apps/v1: Deployments, ReplicaSets, StatefulSets and DaemonSets (generation tracked, status and scale)."""

from __future__ import annotations

from typing import Final

from kapi.encoding.tables import apps as tables
from kapi.errors import Cause
from kapi.object.defaults import default_daemon_set, default_deployment, default_replica_set, default_stateful_set
from kapi.object.selectors import META_FIELDS, FieldLabels, int_value
from kapi.object.validation import (RULE_DNS1123_LABEL, validate_daemon_set, validate_daemon_set_update,
    validate_deployment, validate_deployment_update, validate_replica_set, validate_replica_set_update,
    validate_stateful_set, validate_stateful_set_update)
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy

_ALL = ("all",)


class DeploymentStrategy(Strategy):
    tracks_generation = True
    generation_on_annotations = True
    status_keeps_metadata = ("labels",)
    printer = tables.DEPLOYMENT

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_deployment(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_deployment(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_deployment_update(new, old)


class ReplicaSetStrategy(Strategy):
    tracks_generation = True
    field_labels = FieldLabels(META_FIELDS | {"status.replicas"})
    printer = tables.REPLICA_SET

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_replica_set(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_replica_set(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_replica_set_update(new, old)

    def own_field_values(self, obj: Obj) -> dict[str, str]:
        return {"status.replicas": int_value((obj.get("status") or {}).get("replicas"))}


class StatefulSetStrategy(Strategy):
    # StatefulSet pods are named <set>-<ordinal> and must be DNS labels.
    name_rule = RULE_DNS1123_LABEL
    tracks_generation = True

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_stateful_set(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_stateful_set(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_stateful_set_update(new, old)


class DaemonSetStrategy(Strategy):
    tracks_generation = True

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_daemon_set(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_daemon_set(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_daemon_set_update(new, old)


DEPLOYMENTS: Final = Resource(group="apps", version="v1", resource="deployments", kind="Deployment",
                              short_names=("deploy",), categories=_ALL, subresources=("status", "scale"),
                              strategy=DeploymentStrategy())
REPLICA_SETS: Final = Resource(group="apps", version="v1", resource="replicasets", kind="ReplicaSet",
                               short_names=("rs",), categories=_ALL, subresources=("status", "scale"),
                               strategy=ReplicaSetStrategy())
STATEFUL_SETS: Final = Resource(group="apps", version="v1", resource="statefulsets", kind="StatefulSet",
                                short_names=("sts",), categories=_ALL, subresources=("status", "scale"),
                                strategy=StatefulSetStrategy())
DAEMON_SETS: Final = Resource(group="apps", version="v1", resource="daemonsets", kind="DaemonSet",
                              short_names=("ds",), categories=_ALL, subresources=("status",),
                              strategy=DaemonSetStrategy())
