"""Table printer of apiregistration.k8s.io APIServices (kube-aggregator's printers)."""

from __future__ import annotations

from typing import Any, Final

from kapi.encoding.tables.base import AGE, NAME, Obj, Printer, as_list, as_map, as_str, column, since

_COLUMNS: Final = (
    NAME,
    column("Service", "string", "The reference to the service that hosts this API endpoint."),
    column("Available", "string", "Whether this service is available."),
    AGE,
)


def _row(obj: Obj, now: float) -> list[Any]:
    md, spec = as_map(obj.get("metadata")), as_map(obj.get("spec"))
    service = "Local"
    if isinstance(spec.get("service"), dict):
        svc = as_map(spec.get("service"))
        service = f"{as_str(svc.get('namespace'))}/{as_str(svc.get('name'))}"
    available = "Unknown"
    for cond in as_list(as_map(obj.get("status")).get("conditions")):
        cond = as_map(cond)
        if cond.get("type") == "Available":
            st = as_str(cond.get("status"))
            available = st if st == "True" else f"{st} ({as_str(cond.get('reason'))})"
            break
    return [as_str(md.get("name")), service, available, since(md.get("creationTimestamp"), now)]


API_SERVICE: Final = Printer(_COLUMNS, _row)
