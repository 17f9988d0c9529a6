"""scheduling.k8s.io/v1: PriorityClasses (kube's ``pkg/apis/scheduling/validation/validation.go``)."""

from __future__ import annotations

from typing import Final

from kapi.errors import Cause
from kapi.object.validation.fields import (Obj, _d, _immutable, _s, field_forbidden, field_not_supported,
    unique_causes)

SYSTEM_PRIORITY_CLASS_PREFIX: Final = "system-"
HIGHEST_USER_DEFINABLE_PRIORITY: Final = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY: Final = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
# kube's systemPriorityClasses: (name, value, globalDefault, description).
SYSTEM_PRIORITY_CLASSES: Final = (
    ("system-node-critical", SYSTEM_CRITICAL_PRIORITY + 1000, False,
     "Used for system critical pods that must not be moved from their current node."),
    ("system-cluster-critical", SYSTEM_CRITICAL_PRIORITY, False,
     "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
)
_PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


def _known_system_class(name: str, value: object, global_default: bool) -> str:
    """"" when ``name`` is a system class with its value and globalDefault, else kube's reason."""
    for known, known_value, known_default, _ in SYSTEM_PRIORITY_CLASSES:
        if known == name:
            if value != known_value:
                return f"value of {known} PriorityClass must be {known_value}"
            if global_default != known_default:
                return f"globalDefault of {known} PriorityClass must be {'true' if known_default else 'false'}"
            return ""
    return f"{name} is not a known system priority class"


@unique_causes
def validate_priority_class(obj: Obj) -> list[Cause]:
    errs: list[Cause] = []
    name = _s(_d(obj.get("metadata")).get("name"))
    value = obj.get("value", 0)
    if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        reason = _known_system_class(name, value, obj.get("globalDefault") is True)
        if reason:
            errs.append(field_forbidden("metadata.name", f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' "
                                        f"prefix are reserved for system use only. error: {reason}"))
    elif isinstance(value, int) and value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(field_forbidden("value", "maximum allowed value of a user defined priority is "
                                    f"{HIGHEST_USER_DEFINABLE_PRIORITY}"))
    policy = obj.get("preemptionPolicy")
    if policy is not None and policy not in _PREEMPTION_POLICIES:
        errs.append(field_not_supported("preemptionPolicy", policy, _PREEMPTION_POLICIES))
    return errs


@unique_causes
def validate_priority_class_update(new: Obj, old: Obj) -> list[Cause]:
    errs = validate_priority_class(new)
    if new.get("value", 0) != old.get("value", 0):
        errs.append(field_forbidden("value", "may not be changed in an update."))
    errs.extend(_immutable("preemptionPolicy", new.get("preemptionPolicy"), old.get("preemptionPolicy")))
    return errs
