"""Table printers of the coordination.k8s.io group."""

from __future__ import annotations

from typing import Any, Final

from kapi.encoding.tables.base import AGE, NAME, Obj, Printer, as_map, as_str, column, since
_LEASE_COLUMNS: Final = (
    NAME,
    column("Holder", "string", "holderIdentity contains the identity of the holder of a "
           "current lease. If Coordinated Leader Election is used, the holder identity must be "
           "equal to the elected LeaseCandidate.metadata.name field."),
    AGE,
)


def _lease_row(obj: Obj, now: float) -> list[Any]:
    meta = as_map(obj.get("metadata"))
    return [as_str(meta.get("name")), as_str(as_map(obj.get("spec")).get("holderIdentity")),
            since(meta.get("creationTimestamp"), now)]


LEASE: Final = Printer(_LEASE_COLUMNS, _lease_row)
