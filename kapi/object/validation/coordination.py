"""coordination.k8s.io/v1: leases."""

from __future__ import annotations

from kapi.errors import Cause
from kapi.object.validation.fields import IS_NEGATIVE, Obj, _d, _i, field_invalid, unique_causes


@unique_causes
def validate_lease(obj: Obj) -> list[Cause]:
    spec = _d(obj.get("spec"))
    errs: list[Cause] = []
    duration = _i(spec.get("leaseDurationSeconds"))
    if duration is not None and duration <= 0:
        errs.append(field_invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = _i(spec.get("leaseTransitions"))
    if transitions is not None and transitions < 0:
        errs.append(field_invalid("spec.leaseTransitions", transitions, IS_NEGATIVE))
    return errs


@unique_causes
def validate_lease_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_lease(new)
