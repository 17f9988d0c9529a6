"""Core (v1) Events: kept out of the watch cache; events.k8s.io serves the same objects."""

from __future__ import annotations

from typing import Final

from kapi.encoding.tables import core as tables
from kapi.errors import Cause
from kapi.object.selectors import META_FIELDS, FieldLabels, text_value, value_at
from kapi.object.validation import RULE_PATH_SEGMENT, validate_event, validate_event_update
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy

_FIELDS: Final = ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
                  "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
                  "reason", "reportingComponent", "source", "type")
# Both Event resources select on the core fields (what storage holds).
EVENT_FIELD_LABELS: Final = FieldLabels(META_FIELDS | frozenset(_FIELDS), converts=True)


def event_field_values(obj: Obj) -> dict[str, str]:
    """The selectable fields of an Event beyond metadata, in core/v1 field names."""
    inv = obj.get("involvedObject") or {}
    out = {f"involvedObject.{f}": text_value(inv.get(f))
           for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")}
    out["reason"] = text_value(obj.get("reason"))
    out["reportingComponent"] = text_value(obj.get("reportingComponent"))
    out["source"] = text_value(value_at(obj, "source", "component"))
    out["type"] = text_value(obj.get("type"))
    return out


class EventStrategy(Strategy):
    # Legacy events get no name rule of their own, only the generic path-segment check.
    name_rule = RULE_PATH_SEGMENT
    core_finalizers = False
    create_on_update = True
    field_labels = EVENT_FIELD_LABELS
    printer = tables.EVENT

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_event(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_event_update(new, old)

    def own_field_values(self, obj: Obj) -> dict[str, str]:
        return event_field_values(obj)


EVENTS: Final = Resource(group="", version="v1", resource="events", kind="Event", short_names=("ev",),
                         cacheable=False, strategy=EventStrategy())
