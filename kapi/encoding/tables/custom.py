"""The Table printer of a custom resource: apiextensions-apiserver's ``tableconvertor``.

Columns: ``Name`` first, then the version's ``additionalPrinterColumns`` (or kube's default, an
``Age`` column of type date at ``.metadata.creationTimestamp``, when none are given). A cell is the
first value the column's JSONPath reaches (null when none): ``string`` columns print it as
kubectl's jsonpath does, the other types take the value only when it has that type
(``integer``, ``number``, ``boolean``; ``date`` prints the age of an RFC 3339 time, ``<invalid>``
when it is not one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kapi.encoding.tables.base import CREATED_DOC, NAME, Printer, as_map, human_duration, parse_time
from kapi.object.jsonpath import Path, compile_path, print_value

__all__ = ["DEFAULT_COLUMNS", "custom_printer"]

DEFAULT_COLUMNS: tuple[dict[str, Any], ...] = (
    {"name": "Age", "type": "date", "description": CREATED_DOC, "jsonPath": ".metadata.creationTimestamp"},)


def _cell(type_: str, value: Any, now: float) -> Any:
    if value is None:
        return None
    if type_ == "integer":
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            return int(value)
        return None
    if type_ == "number":
        if isinstance(value, bool):
            return None
        if isinstance(value, (int, float)):
            return float(value)
        return None
    if type_ == "boolean":
        return value if isinstance(value, bool) else None
    if type_ == "string":
        return value if isinstance(value, str) else None
    if type_ == "date":
        if isinstance(value, str):
            t = parse_time(value)
            return "<invalid>" if t is None else human_duration(now - t)
        return None
    return None


def custom_printer(columns: Sequence[Mapping[str, Any]] | None) -> Printer:
    """The Printer of one CRD version from its ``additionalPrinterColumns`` (JSONPaths compiled once)."""
    cols = list(columns or ()) or list(DEFAULT_COLUMNS)
    headers: list[dict[str, Any]] = [dict(NAME)]
    paths: list[tuple[str, Path | None]] = []
    for col in cols:
        json_path = str(col.get("jsonPath", ""))
        try:
            path: Path | None = compile_path(json_path)
        except ValueError:
            path = None  # kube refuses such a CRD; a column that never prints is the lenient answer
        headers.append({"name": col.get("name", ""), "type": col.get("type", ""), "format": col.get("format", "") or "",
                        "description": col.get("description") or
                        f"Custom resource definition column (in JSONPath format): {json_path}",
                        "priority": int(col.get("priority", 0) or 0)})
        paths.append((str(col.get("type", "")), path))

    def cells(obj: Mapping[str, Any], now: float) -> list[Any]:
        out: list[Any] = [as_map(obj.get("metadata")).get("name", "")]
        for type_, path in paths:
            if path is None:
                out.append(None)
                continue
            found, value = path.first(obj)
            if not found:
                out.append(None)
            elif type_ == "string":
                out.append(print_value(value))
            else:
                out.append(_cell(type_, value, now))
        return out

    return Printer(tuple(headers), cells)
