"""apiextensions.k8s.io/v1: custom resource definitions."""

from __future__ import annotations

from kapi.object.defaults.fields import Obj, _obj, _unset, defaulter


@defaulter
def default_custom_resource_definition(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    names = _obj(spec, "names")
    kind = names.get("kind")
    if _unset(names, "singular") and isinstance(kind, str) and kind:
        names["singular"] = kind.lower()
    if _unset(names, "listKind") and isinstance(kind, str) and kind:
        names["listKind"] = kind + "List"
    conversion = spec.get("conversion")
    if not isinstance(conversion, dict):
        spec["conversion"] = {"strategy": "None"}
    elif _unset(conversion, "strategy"):
        conversion["strategy"] = "None"
