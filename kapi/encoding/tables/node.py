"""Table printers of the node.k8s.io group (``pkg/printers/internalversion/printers.go``)."""

from __future__ import annotations

from typing import Any, Final

from kapi.encoding.tables.base import AGE, NAME, Obj, Printer, as_map, as_str, column, since

# kube describes the column with ObjectMeta's (absent) "handler" doc: an empty description.
_RUNTIME_CLASS_COLUMNS: Final = (NAME, column("Handler", "string", ""), AGE)


def _runtime_class_row(obj: Obj, now: float) -> list[Any]:
    meta = as_map(obj.get("metadata"))
    return [as_str(meta.get("name")), as_str(obj.get("handler")), since(meta.get("creationTimestamp"), now)]


RUNTIME_CLASS: Final = Printer(_RUNTIME_CLASS_COLUMNS, _runtime_class_row)
