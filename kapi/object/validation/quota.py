"""core/v1 LimitRanges and ResourceQuotas (kube's pkg/apis/core/validation: ValidateLimitRange,
ValidateResourceQuota, ValidateResourceQuotaStatusUpdate): resource names and quantities."""

from __future__ import annotations

from fractions import Fraction

from kapi.errors import Cause
from kapi.object.validation.fields import (IS_NEGATIVE, Obj, _d, _l, _s, field_duplicate, field_forbidden,
    field_invalid, field_required, unique_causes)
from kapi.object.validation.names import is_qualified_name
from kapi.object.validation.quantity import QUANTITY_FORMAT_ERROR, parse_quantity

_LIMIT_TYPES = frozenset({"Container", "Pod", "PersistentVolumeClaim"})
_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_STANDARD_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "storage", "requests.cpu", "requests.memory", "requests.storage",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services",
    "replicationcontrollers", "resourcequotas", "secrets", "configmaps", "persistentvolumeclaims",
    "services.nodeports", "services.loadbalancers"})
_QUOTA_RESOURCES = _STANDARD_RESOURCES
_INTEGER_RESOURCES = frozenset({"pods", "services", "replicationcontrollers", "resourcequotas", "secrets",
                                "configmaps", "persistentvolumeclaims", "services.nodeports",
                                "services.loadbalancers"})
_QUOTA_SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
                 "CrossNamespacePodAffinity", "VolumeAttributesClass")
_NOT_INTEGER = "must be an integer"


def _hugepages(name: str) -> bool:
    return name.startswith("hugepages-") or name.startswith("requests.hugepages-")


def _native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _qualified(name: str, path: str) -> list[Cause]:
    return [field_invalid(path, name, m) for m in is_qualified_name(name)]


def _resource_name(name: str, path: str) -> list[Cause]:
    """validateResourceName: standard or fully qualified."""
    errs = _qualified(name, path)
    if not errs and "/" not in name and name not in _STANDARD_RESOURCES and not _hugepages(name):
        errs.append(field_invalid(path, name, "must be a standard resource type or fully qualified"))
    return errs


def _container_resource_name(name: str, path: str) -> list[Cause]:
    errs = _resource_name(name, path)
    if not errs and "/" not in name and name not in _CONTAINER_RESOURCES and not name.startswith("hugepages-"):
        errs.append(field_invalid(path, name, "must be a standard resource for containers"))
    return errs


def _quota_resource_name(name: str, path: str) -> list[Cause]:
    errs = _qualified(name, path)
    if not errs and "/" not in name and name not in _QUOTA_RESOURCES and not _hugepages(name):
        errs.append(field_invalid(path, name, "must be a standard resource for quota"))
    return errs


def _quantity(value: object, path: str) -> tuple[Fraction | None, list[Cause]]:
    qty = parse_quantity(value)
    if qty is None:
        return None, [field_invalid(path, value, QUANTITY_FORMAT_ERROR)]
    return qty, []


def _integer_resource(name: str) -> bool:
    return name in _INTEGER_RESOURCES or name.startswith("count/") or not _native(name)


def _quota_values(values: object, path: str) -> list[Cause]:
    errs: list[Cause] = []
    for name, value in sorted(_d(values).items()):
        p = f"{path}[{name}]"
        errs += _quota_resource_name(str(name), p)
        qty, bad = _quantity(value, p)
        errs += bad
        if qty is None:
            continue
        if qty < 0:
            errs.append(field_invalid(p, value, IS_NEGATIVE))
        if _integer_resource(str(name)) and qty.denominator != 1:
            errs.append(field_invalid(p, value, _NOT_INTEGER))
    return errs


@unique_causes
def validate_limit_range(obj: Obj) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, item in enumerate(_l(_d(obj.get("spec")).get("limits"))):
        item, p = _d(item), f"spec.limits[{i}]"
        kind = _s(item.get("type"))
        errs += _qualified(kind, f"{p}.type")
        if not is_qualified_name(kind) and "/" not in kind and kind not in _LIMIT_TYPES:
            errs.append(field_invalid(f"{p}.type", kind, "must be a standard limit type or fully qualified"))
        if kind in seen:
            errs.append(field_duplicate(f"{p}.type", kind))
        seen.add(kind)
        values: dict[str, dict[str, Fraction]] = {}
        keys: list[str] = []
        check = _container_resource_name if kind in ("Pod", "Container") else _resource_name
        for part in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
            values[part] = {}
            if kind == "Pod" and part == "maxLimitRequestRatio":
                pass
            for name, value in _d(item.get(part)).items():
                kp = f"{p}.{part}[{name}]"
                if part != "maxLimitRequestRatio" or kind != "Pod":
                    errs += check(str(name), kp)
                qty, bad = _quantity(value, kp)
                errs += bad
                if qty is not None:
                    values[part][name] = qty
                    if name not in keys:
                        keys.append(name)
        if kind == "Pod":
            if _d(item.get("default")):
                errs.append(field_forbidden(f"{p}.default", "may not be specified when `type` is 'Pod'"))
            if _d(item.get("defaultRequest")):
                errs.append(field_forbidden(f"{p}.defaultRequest", "may not be specified when `type` is 'Pod'"))
        if kind == "PersistentVolumeClaim" and "storage" not in _d(item.get("min")) and \
                "storage" not in _d(item.get("max")):
            errs.append(field_required(f"{p}.limits", "either minimum or maximum storage value is required, but "
                                       "neither was provided"))
        raw = {part: _d(item.get(part)) for part in values}
        for k in keys:
            mn, mx = values["min"].get(k), values["max"].get(k)
            df, dr = values["default"].get(k), values["defaultRequest"].get(k)
            ratio = values["maxLimitRequestRatio"].get(k)

            def txt(part: str) -> str:
                return str(raw[part][k])

            if mn is not None and mx is not None and mn > mx:
                errs.append(field_invalid(f"{p}.min[{k}]", raw["min"][k],
                                          f"min value {txt('min')} is greater than max value {txt('max')}"))
            if dr is not None and mn is not None and mn > dr:
                errs.append(field_invalid(f"{p}.defaultRequest[{k}]", raw["defaultRequest"][k],
                                          f"min value {txt('min')} is greater than default request value "
                                          f"{txt('defaultRequest')}"))
            if dr is not None and mx is not None and dr > mx:
                errs.append(field_invalid(f"{p}.defaultRequest[{k}]", raw["defaultRequest"][k],
                                          f"default request value {txt('defaultRequest')} is greater than max "
                                          f"value {txt('max')}"))
            if dr is not None and df is not None and dr > df:
                errs.append(field_invalid(f"{p}.defaultRequest[{k}]", raw["defaultRequest"][k],
                                          f"default request value {txt('defaultRequest')} is greater than default "
                                          f"limit value {txt('default')}"))
            if df is not None and mn is not None and mn > df:
                errs.append(field_invalid(f"{p}.default[{k}]", raw["default"][k],
                                          f"min value {txt('min')} is greater than default value {txt('default')}"))
            if df is not None and mx is not None and df > mx:
                errs.append(field_invalid(f"{p}.default[{k}]", raw["default"][k],
                                          f"default value {txt('default')} is greater than max value {txt('max')}"))
            if ratio is not None and ratio < 1:
                errs.append(field_invalid(f"{p}.maxLimitRequestRatio[{k}]", raw["maxLimitRequestRatio"][k],
                                          f"ratio {txt('maxLimitRequestRatio')} is less than 1"))
            if ratio is not None and mn is not None and mx is not None and mn > 0 and ratio < mx / mn:
                errs.append(field_invalid(f"{p}.maxLimitRequestRatio[{k}]", raw["maxLimitRequestRatio"][k],
                                          f"ratio {txt('maxLimitRequestRatio')} is greater than max/min = "
                                          f"{float(mx / mn):f}"))
    return errs


@unique_causes
def validate_limit_range_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_limit_range(new)


def _quota_spec(spec: Obj) -> list[Cause]:
    errs = _quota_values(spec.get("hard"), "spec.hard")
    scopes = _l(spec.get("scopes"))
    for scope in scopes:
        if scope not in _QUOTA_SCOPES:
            errs.append(field_invalid("spec.scopes", scopes, "unsupported scope"))
    selector = _d(spec.get("scopeSelector"))
    for i, expr in enumerate(_l(selector.get("matchExpressions"))):
        expr, p = _d(expr), f"spec.scopeSelector.matchExpressions[{i}]"
        if expr.get("scopeName") not in _QUOTA_SCOPES:
            errs.append(field_invalid(f"{p}.scopeName", expr.get("scopeName"), "unsupported scope"))
        op = expr.get("operator")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            errs.append(field_invalid(f"{p}.operator", op, "not a valid selector operator"))
        elif op in ("In", "NotIn") and not _l(expr.get("values")):
            errs.append(field_required(f"{p}.values", "must be at least one value when `operator` is 'In' or "
                                       "'NotIn' for scope selector"))
        elif op in ("Exists", "DoesNotExist") and _l(expr.get("values")):
            errs.append(field_invalid(f"{p}.values", expr.get("values"), "must be no value when `operator` is "
                                      "'Exist' or 'DoesNotExist' for scope selector"))
    return errs


def _quota_status(status: Obj) -> list[Cause]:
    return _quota_values(status.get("hard"), "status.hard") + _quota_values(status.get("used"), "status.used")


@unique_causes
def validate_resource_quota(obj: Obj) -> list[Cause]:
    return _quota_spec(_d(obj.get("spec")))


@unique_causes
def validate_resource_quota_update(new: Obj, old: Obj) -> list[Cause]:
    return _quota_spec(_d(new.get("spec")))


@unique_causes
def validate_resource_quota_status_update(new: Obj, old: Obj) -> list[Cause]:
    return _quota_status(_d(new.get("status")))
