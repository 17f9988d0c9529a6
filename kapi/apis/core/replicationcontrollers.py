"""core/v1 ReplicationControllers: generation tracked, status and scale subresources (the scale's
selector is the plain ``spec.selector`` map)."""

from __future__ import annotations

from typing import Final

from kapi.encoding.tables import quota as tables
from kapi.errors import Cause
from kapi.object.defaults import default_replication_controller
from kapi.object.selectors import META_FIELDS, FieldLabels, int_value
from kapi.object.validation import validate_replication_controller, validate_replication_controller_update
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy


class ReplicationControllerStrategy(Strategy):
    tracks_generation = True
    field_labels = FieldLabels(META_FIELDS | {"status.replicas"})
    printer = tables.REPLICATION_CONTROLLER

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_replication_controller(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_replication_controller(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_replication_controller_update(new, old)

    def own_field_values(self, obj: Obj) -> dict[str, str]:
        return {"status.replicas": int_value((obj.get("status") or {}).get("replicas"))}

    def scale_of(self, obj: Obj) -> tuple[int, int, str]:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        selector = spec.get("selector") or {}
        text = ",".join(f"{k}={v}" for k, v in sorted(selector.items())) if isinstance(selector, dict) else ""
        return spec.get("replicas", 0), status.get("replicas", 0), text


REPLICATION_CONTROLLERS: Final = Resource(group="", version="v1", resource="replicationcontrollers",
                                          kind="ReplicationController", short_names=("rc",), categories=("all",),
                                          subresources=("status", "scale"), strategy=ReplicationControllerStrategy())
