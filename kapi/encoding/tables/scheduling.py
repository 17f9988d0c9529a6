"""Table printers of the scheduling.k8s.io group (``pkg/printers/internalversion/printers.go``)."""

from __future__ import annotations

from typing import Any, Final

from kapi.encoding.tables.base import AGE, NAME, Obj, Printer, as_int, as_map, as_str, column, since

_PRIORITY_CLASS_COLUMNS: Final = (
    NAME,
    column("Value", "integer", "value represents the integer value of this priority class. This is the actual "
           "priority that pods receive when they have the name of this class in their pod spec."),
    column("Global-Default", "boolean", "globalDefault specifies whether this PriorityClass should be considered "
           "as the default priority for pods that do not have any priority class. Only one PriorityClass can be "
           "marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` "
           "field set to true, the smallest value of such global default PriorityClasses will be used as the "
           "default priority."),
    AGE,
    column("PreemptionPolicy", "string", "preemptionPolicy is the Policy for preempting pods with lower priority. "
           "One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset."),
)


def _priority_class_row(obj: Obj, now: float) -> list[Any]:
    meta = as_map(obj.get("metadata"))
    return [as_str(meta.get("name")), as_int(obj.get("value")), obj.get("globalDefault") is True,
            since(meta.get("creationTimestamp"), now), as_str(obj.get("preemptionPolicy"))]


PRIORITY_CLASS: Final = Printer(_PRIORITY_CLASS_COLUMNS, _priority_class_row)
