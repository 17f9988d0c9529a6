"""Table printers of the policy group (``pkg/printers/internalversion/printers.go``)."""

from __future__ import annotations

from typing import Any, Final

from kapi.encoding.tables.base import AGE, NAME, Obj, Printer, as_int, as_map, as_str, column, since

_PDB_COLUMNS: Final = (
    NAME,
    column("Min Available", "string", "The minimum number of pods that must be available."),
    column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
    column("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
    AGE,
)


def _int_or_string(value: Any) -> str:
    if value is None:
        return "N/A"
    return str(value) if not isinstance(value, bool) else "N/A"


def _pdb_row(obj: Obj, now: float) -> list[Any]:
    meta, spec = as_map(obj.get("metadata")), as_map(obj.get("spec"))
    return [as_str(meta.get("name")), _int_or_string(spec.get("minAvailable")),
            _int_or_string(spec.get("maxUnavailable")),
            as_int(as_map(obj.get("status")).get("disruptionsAllowed")), since(meta.get("creationTimestamp"), now)]


POD_DISRUPTION_BUDGET: Final = Printer(_PDB_COLUMNS, _pdb_row)
