"""events.k8s.io/v1 Events: the objects core/v1 Events store, in another shape.

They are stored as core Events (one store, two views) with kube-apiserver's field mapping.
"""

from __future__ import annotations

from typing import Final

from kapi.apis.core.events import EVENT_FIELD_LABELS, event_field_values
from kapi.encoding.tables import core as tables
from kapi.errors import Cause
from kapi.object.validation import validate_events_v1_event, validate_events_v1_event_update
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy

# events.k8s.io/v1 field <- core/v1 field
_EVENT_FIELDS: Final = (
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("reportingInstance", "reportingInstance"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("action", "action"),
    ("reason", "reason"),
    ("related", "related"),
    ("type", "type"),
    ("eventTime", "eventTime"),
    ("series", "series"),
)


class EventStrategy(Strategy):
    create_on_update = True
    field_labels = EVENT_FIELD_LABELS
    # The core Event storage, and so its table convertor.
    printer = tables.EVENT

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_events_v1_event(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_events_v1_event_update(new, old)

    def own_field_values(self, obj: Obj) -> dict[str, str]:
        return event_field_values(obj)

    def to_storage(self, obj: Obj) -> Obj:
        """The core/v1 Event storage holds."""
        out: Obj = {"kind": "Event", "apiVersion": "v1", "metadata": obj.get("metadata", {})}
        for new, old in _EVENT_FIELDS:
            if new in obj and obj[new] is not None:
                out[old] = obj[new]
        out.setdefault("involvedObject", {})
        return out

    def from_storage(self, obj: Obj) -> Obj:
        """A stored core/v1 Event as events.k8s.io/v1 serves it."""
        out: Obj = {"kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": obj.get("metadata", {})}
        for new, old in _EVENT_FIELDS:
            if old in obj and obj[old] not in (None, {}, ""):
                out[new] = obj[old]
        series = out.get("series")
        if isinstance(series, dict):
            out["series"] = {k: v for k, v in series.items() if k in ("count", "lastObservedTime")}
        return out


EVENTS: Final = Resource(group="events.k8s.io", version="v1", resource="events", kind="Event", short_names=("ev",),
                         cacheable=False, storage_of=("", "events"), strategy=EventStrategy())
