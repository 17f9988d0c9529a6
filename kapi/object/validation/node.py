"""node.k8s.io/v1: RuntimeClasses (kube's ``pkg/apis/node/validation/validation.go``)."""

from __future__ import annotations

from kapi.errors import Cause
from kapi.object.validation.fields import (Obj, _d, _immutable, _l, _s, field_invalid, field_not_supported,
    unique_causes)
from kapi.object.validation.meta import validate_labels
from kapi.object.validation.names import is_dns1123_label, is_qualified_name
from kapi.object.validation.quantity import parse_quantity

_EFFECTS = ("NoExecute", "NoSchedule", "PreferNoSchedule")


def _runtime_class(obj: Obj) -> list[Cause]:
    handler = _s(obj.get("handler"))
    errs = [field_invalid("handler", handler, m) for m in is_dns1123_label(handler)]
    overhead = _d(_d(obj.get("overhead")).get("podFixed"))
    for key, value in overhead.items():
        q = parse_quantity(value)
        if q is not None and q < 0:
            errs.append(field_invalid(f"overhead.podFixed[{key}]", value, "must be greater than or equal to 0"))
    scheduling = obj.get("scheduling")
    if isinstance(scheduling, dict):
        errs.extend(validate_labels(scheduling.get("nodeSelector"), "scheduling.nodeSelector"))
        for i, tol in enumerate(_l(scheduling.get("tolerations"))):
            tol, p = _d(tol), f"scheduling.tolerations[{i}]"
            key = _s(tol.get("key"))
            if key:
                errs.extend(field_invalid(f"{p}.key", key, m) for m in is_qualified_name(key))
            effect = tol.get("effect")
            if effect not in (None, "") and effect not in _EFFECTS:
                errs.append(field_not_supported(f"{p}.effect", effect, _EFFECTS))
    return errs


@unique_causes
def validate_runtime_class(obj: Obj) -> list[Cause]:
    return _runtime_class(obj)


@unique_causes
def validate_runtime_class_update(new: Obj, old: Obj) -> list[Cause]:
    return _runtime_class(new) + _immutable("handler", new.get("handler"), old.get("handler"))
