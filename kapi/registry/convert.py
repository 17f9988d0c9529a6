"""Conversion between a resource's served shape and its storage shape.

Only events need it: events.k8s.io/v1 Events are stored as core/v1 Events (one
store, two views), with kube-apiserver's field mapping.
"""

from __future__ import annotations

import base64
from typing import Any

from kapi.registry.resources import Resource

Obj = dict[str, Any]

# events.k8s.io/v1 field <- core/v1 field
_EVENT_FIELDS = (
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


def _is_events_v1(res: Resource) -> bool:
    return res.group == "events.k8s.io"


def from_storage(res: Resource, obj: Obj) -> Obj:
    """The stored object as ``res`` serves it."""
    if not _is_events_v1(res):
        return obj
    out: Obj = {"kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": obj.get("metadata", {})}
    for new, old in _EVENT_FIELDS:
        if old in obj and obj[old] not in (None, {}, ""):
            out[new] = obj[old]
    series = out.get("series")
    if isinstance(series, dict):
        out["series"] = {k: v for k, v in series.items() if k in ("count", "lastObservedTime")}
    return out


def to_storage(res: Resource, obj: Obj) -> Obj:
    """An object of ``res`` in the shape it is stored in."""
    if not _is_events_v1(res):
        return obj
    out: Obj = {"kind": "Event", "apiVersion": "v1", "metadata": obj.get("metadata", {})}
    for new, old in _EVENT_FIELDS:
        if new in obj and obj[new] is not None:
            out[old] = obj[new]
    out.setdefault("involvedObject", {})
    return out


def normalize_write(res: Resource, obj: Obj) -> None:
    """Field folding kube-apiserver's conversion does on every write (in place).

    Secret ``stringData`` is write-only: it is merged into ``data`` (base64) and dropped.
    """
    if res.resource == "secrets" and res.group == "":
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict) and string_data:
            data = obj.get("data")
            if not isinstance(data, dict):
                data = {}
                obj["data"] = data
            for k, v in string_data.items():
                data[k] = base64.b64encode(str(v).encode()).decode()
