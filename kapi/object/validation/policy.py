"""policy/v1: PodDisruptionBudgets (kube's ``pkg/apis/policy/validation/validation.go``)."""

from __future__ import annotations

from kapi.errors import Cause
from kapi.object.validation.apps import _not_more_than_100_percent, _validate_int_or_percent
from kapi.object.validation.fields import Obj, _d, field_invalid, field_not_supported, unique_causes
from kapi.object.validation.meta import _validate_label_selector

_UNHEALTHY_POLICIES = ("AlwaysAllow", "IfHealthyBudget")


def _pdb_spec(spec: Obj) -> list[Cause]:
    errs: list[Cause] = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        errs.append(field_invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set"))
    for key in ("minAvailable", "maxUnavailable"):
        value = spec.get(key)
        if value is not None:
            errs.extend(_validate_int_or_percent(value, f"spec.{key}"))
            errs.extend(_not_more_than_100_percent(value, f"spec.{key}"))
    errs.extend(_validate_label_selector(spec.get("selector"), "spec.selector"))
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in _UNHEALTHY_POLICIES:
        errs.append(field_not_supported("spec.unhealthyPodEvictionPolicy", policy, _UNHEALTHY_POLICIES))
    return errs


@unique_causes
def validate_pod_disruption_budget(obj: Obj) -> list[Cause]:
    return _pdb_spec(_d(obj.get("spec")))


@unique_causes
def validate_pod_disruption_budget_update(new: Obj, old: Obj) -> list[Cause]:
    return _pdb_spec(_d(new.get("spec")))


@unique_causes
def validate_pod_disruption_budget_status_update(new: Obj, old: Obj) -> list[Cause]:
    status = _d(new.get("status"))
    errs: list[Cause] = []
    for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        value = status.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            errs.append(field_invalid(f"status.{key}", value, "must be greater than or equal to 0"))
    return errs
