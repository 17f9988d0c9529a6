"""The kind-independent part of ``as=Table`` output (meta.k8s.io Table): formatting, the default
printer and the Table itself.

Columns and cells follow ``pkg/printers/internalversion/printers.go``; the server always prints
wide, so priority-1 columns and cells are included. A kind's ``Printer`` (its columns and cells)
lives in the module of its group and is named by the kind's strategy; kinds without one get
Name and Age.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from kapi.errors import BadRequest
from kapi.object.selectors import label_selector_from_spec

Obj = Mapping[str, Any]
Column = Mapping[str, Any]

# ------------------------------------------------------------------- durations


def human_duration(seconds: float) -> str:
    """duration.HumanDuration: ~2-3 significant figures of a duration."""
    d = int(round(seconds * 1e9))  # nanoseconds, as time.Duration
    secs = int(d / 1e9)  # Go: int(d.Seconds()) truncates toward zero
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 120:
        return f"{secs}s"
    minutes = d // 60_000_000_000
    if minutes < 10:
        s = (d // 1_000_000_000) % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = d // 3_600_000_000_000
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def parse_time(value: Any) -> float | None:
    """Seconds since the epoch of an RFC 3339 timestamp, None when unset or bad."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def since(value: Any, now: float) -> str:
    """translateTimestampSince."""
    t = parse_time(value)
    return "<unknown>" if t is None else human_duration(now - t)



# --------------------------------------------------------------------- columns

NAME_DOC: Final = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
CREATED_DOC: Final = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is "
    "in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


def column(name: str, type_: str, description: str, *, fmt: str = "", priority: int = 0) -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": description, "priority": priority}


NAME: Final = column("Name", "string", NAME_DOC, fmt="name")
AGE: Final = column("Age", "string", CREATED_DOC)


# ----------------------------------------------------------------------- cells


def as_map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def format_labels(labels: Any) -> str:
    """labels.FormatLabels: sorted ``k=v`` pairs, ``<none>`` when empty."""
    items = sorted(as_map(labels).items())
    return ",".join(f"{k}={v}" for k, v in items) if items else "<none>"


def selector_string(spec: Any) -> str:
    """LabelSelectorAsSelector(...).String(); ``<invalid>`` (Go: error) as the deployment printer."""
    try:
        sel = label_selector_from_spec(spec if isinstance(spec, Mapping) else None)
    except BadRequest:
        return "<invalid>"
    return "" if sel is None else str(sel)


def format_label_selector(spec: Any) -> str:
    """metav1.FormatLabelSelector."""
    try:
        sel = label_selector_from_spec(spec if isinstance(spec, Mapping) else None)
    except BadRequest:
        return "<error>"
    text = "" if sel is None else str(sel)
    return text or "<none>"


def container_cells(pod_spec: Any) -> tuple[str, str]:
    """layoutContainerCells: names and images joined by commas."""
    containers = [as_map(c) for c in as_list(as_map(pod_spec).get("containers"))]
    return (",".join(as_str(c.get("name")) for c in containers),
            ",".join(as_str(c.get("image")) for c in containers))


def has_condition(status: Mapping[str, Any], type_: str) -> bool:
    for cond in as_list(status.get("conditions")):
        if as_map(cond).get("type") == type_:
            return as_map(cond).get("status") == "True"
    return False


def _default_row(obj: Obj, now: float) -> list[Any]:
    meta = as_map(obj.get("metadata"))
    return [as_str(meta.get("name")), since(meta.get("creationTimestamp"), now)]


def _no_conditions(obj: Obj) -> list[dict[str, Any]] | None:
    return None


@dataclass(frozen=True, slots=True)
class Printer:
    """How one kind prints as a Table: its column definitions and the cells of one object."""

    columns: tuple[Column, ...]
    cells: Callable[[Obj, float], list[Any]]  # (object, now in seconds since the epoch) -> cells
    conditions: Callable[[Obj], list[dict[str, Any]] | None] = _no_conditions  # a row's conditions
    # kube's default table convertor appends rows to a nil slice: an empty list's rows are null.
    default: bool = False
    # The order a list's rows print in, when the kind's printer sorts them (FlowSchemas by precedence).
    order: Callable[[list[Obj]], list[Obj]] | None = None

    def column_definitions(self) -> list[dict[str, Any]]:
        """The columns as the Table sends them (fresh dicts)."""
        return [dict(c) for c in self.columns]


# Kinds without a printer of their own: Name and Age.
DEFAULT_PRINTER: Final = Printer((NAME, AGE), _default_row, default=True)


# ---------------------------------------------------------------------- tables


def _row(printer: Printer, obj: Obj, now: float, include_object: str, table_version: str) -> dict[str, Any]:
    row: dict[str, Any] = {"cells": printer.cells(obj, now)}
    conditions = printer.conditions(obj)
    if conditions:
        row["conditions"] = conditions
    if include_object == "Object":
        row["object"] = obj
    elif include_object == "None":
        row["object"] = None
    else:
        row["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": f"meta.k8s.io/{table_version}",
            "metadata": obj.get("metadata") or {},
        }
    return row


def _check_include_object(include_object: str) -> str:
    if include_object == "":
        return "Metadata"
    if include_object not in ("None", "Metadata", "Object"):
        raise BadRequest(f'unrecognized includeObject value: "{include_object}"')
    return include_object


def build_table(
    printer: Printer,
    objs: Iterable[Obj],
    now: float,
    *,
    include_object: str = "Metadata",
    list_meta: Mapping[str, Any],
    no_headers: bool = False,
    table_version: str = "v1",
) -> dict[str, Any]:
    """A meta.k8s.io Table for a LIST answer, printed by ``printer`` (the kind's strategy names it).

    ``list_meta`` is the list's ``metadata`` (resourceVersion, continue,
    remainingItemCount); empty values are left out as kube-apiserver does.

    Raises:
        BadRequest: unknown ``includeObject``.
    """
    include = _check_include_object(include_object)
    if printer.order is not None:
        objs = printer.order(list(objs))
    rows: list[dict[str, Any]] | None = [
        _row(printer, obj, now, include, table_version) for obj in objs
    ]
    if not rows and printer.default:
        rows = None  # the default convertor appends to a nil slice, which encodes as null
    meta = {k: list_meta[k] for k in ("resourceVersion", "continue", "remainingItemCount")
            if list_meta.get(k) not in (None, "")}
    return {
        "kind": "Table",
        "apiVersion": f"meta.k8s.io/{table_version}",
        "metadata": meta,
        "columnDefinitions": None if no_headers else printer.column_definitions(),
        "rows": rows,
    }


def build_object_table(
    printer: Printer,
    obj: Obj,
    now: float,
    *,
    include_object: str = "Metadata",
    no_headers: bool = False,
    table_version: str = "v1",
) -> dict[str, Any]:
    """A Table with one row, as GET answers with ``as=Table``."""
    rv = as_map(obj.get("metadata")).get("resourceVersion")
    return build_table(printer, [obj], now, include_object=include_object,
                       list_meta={"resourceVersion": rv}, no_headers=no_headers,
                       table_version=table_version)
